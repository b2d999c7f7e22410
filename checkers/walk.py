"""Random-walk (simulation) mode for configurations too large to explore exhaustively.

Each walk starts at the initial state and takes uniformly random enabled actions up to a depth
bound, checking every invariant after every step (TLC's -simulate). Walk i of a run with seed S
uses `random.Random(f"{S}:{i}")`, so any walk can be re-run alone; a violating walk is shrunk
by delta debugging (checkers/replay.py) before it is reported.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Iterable, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID, check_state, check_transition
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, NotEnabled, initial_state, successors

from .coverage import Coverage
from .modes import Mode
from .replay import ddmin, shrink


class WalkHit(NamedTuple):
    invariant: str
    message: str
    walk: int  # index of the violating walk
    actions: tuple[Action, ...]  # as walked, up to the violation
    shrunk: tuple[Action, ...]  # after delta debugging


class WalkResult(NamedTuple):
    walks: int
    steps: int
    seconds: float
    hit: WalkHit | None
    coverage: Coverage


def one_walk(
    cfg: Config, seed: int, index: int, depth: int, ids: frozenset[str], coverage: Coverage | None = None
) -> tuple[list[Action], tuple[str, str] | None]:
    """Walk `index` of seed `seed`: (actions taken, (invariant, message) of the first violation)."""
    rng = random.Random(f"{seed}:{index}")
    s = initial_state(cfg)
    actions: list[Action] = []
    for _ in range(depth):
        succ = successors(s, cfg)
        a, n = succ[rng.randrange(len(succ))]
        actions.append(a)
        if coverage is not None:
            coverage.record(s, a, n)
        vs = check_transition(s, a, n, cfg, ids) + check_state(n, cfg, ids)
        if vs:
            return actions, (vs[0].invariant, vs[0].message)
        s = n
    return actions, None


def walk(
    cfg: Config,
    seed: int = 0,
    depth: int = 60,
    budget: float = 60.0,
    invariants: Iterable[str] | None = None,
    max_walks: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> WalkResult:
    ids = frozenset(BY_ID if invariants is None else invariants)
    coverage = Coverage(cfg)
    start = time.perf_counter()
    walks = steps = 0
    next_report = start + 1.0
    while (max_walks is None or walks < max_walks) and time.perf_counter() - start < budget:
        actions, violation = one_walk(cfg, seed, walks, depth, ids, coverage)
        walks += 1
        steps += len(actions)
        if violation is not None:
            inv, message = violation
            shrunk = tuple(shrink(cfg, actions, inv))
            hit = WalkHit(inv, message, walks - 1, tuple(actions), shrunk)
            return WalkResult(walks, steps, time.perf_counter() - start, hit, coverage)
        now = time.perf_counter()
        if progress is not None and now >= next_report:
            next_report = now + 1.0
            progress(walks, steps, now - start)
    return WalkResult(walks, steps, time.perf_counter() - start, None, coverage)


def mode_walk(mode: Mode, cfg: Any, seed: int = 0, depth: int = 60, budget: float = 60.0) -> WalkHit | None:
    """Seeded random walks of another mode (classic, DLedger, recovery), as `walk` does for
    controller mode, until an invariant fails or the budget ends; the walk delta-debugged."""
    start = time.perf_counter()
    index = 0
    while time.perf_counter() - start < budget:
        rng = random.Random(f"{seed}:{index}")
        s, actions = mode.initial_state(cfg), []
        for _ in range(depth):
            succ = mode.successors(s, cfg)
            if not succ:
                break
            a, n = succ[rng.randrange(len(succ))]
            actions.append(a)
            vs = mode.check_transition(s, a, n, cfg) + mode.check_state(n, cfg)
            if vs:
                inv = vs[0].invariant
                shrunk = ddmin(actions, lambda acts: _mode_lenient(mode, cfg, acts, inv))
                return WalkHit(inv, vs[0].message, index, tuple(actions), tuple(shrunk))
            s = n
        index += 1
    return None


def _mode_lenient(mode: Mode, cfg: Any, actions: list[tuple], invariant: str) -> list[tuple] | None:
    """`replay.run_lenient` for another mode: the actions that ran up to the first violation of
    `invariant`, skipping those not enabled; None if it is not violated."""
    ids = frozenset({invariant})
    s, ran = mode.initial_state(cfg), []
    for a in actions:
        try:
            nxt = mode.step(s, a, cfg)
        except (NotEnabled, TypeError):
            continue
        ran.append(a)
        if mode.check_transition(s, a, nxt, cfg, ids) or mode.check_state(nxt, cfg, ids):
            return ran
        s = nxt
    return None
