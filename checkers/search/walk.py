"""Random-walk (simulation) mode for configurations too large to explore exhaustively.

Each walk starts at the initial state and takes uniformly random enabled actions up to a depth
bound, checking every invariant after every step (TLC's -simulate). Walk i of a run with seed S
uses `random.Random(f"{S}:{i}")`, so any walk can be re-run alone; a violating walk is shrunk
by delta debugging (checkers/counterexamples/replay.py) before it is reported.

Guided walks (`guided`, `mode_guided`) add a corpus, as AFL's fuzzing loop and novelty search
do: every state whose coarse key (a few fields per broker, `controller_key`) was never seen
before is kept with the actions that reached it, and each round restarts from a kept state for
`GUIDED_HOP` steps. A state that needs a long, particular prefix (a second failover after a
truncation, an old entry overwritten two terms later) is then one short hop from a kept state
instead of a rare event of a walk from the start. The run is one stream `random.Random(S)`: the
same seed and a long enough budget find the same violation.

Stratified swarm rounds (`guided(..., stratified=True)`, `hunt --method guided --stratified`,
controller mode) keep the walks from spending the fault budget at once (issue 43: a saved
confirmOffset inside a message, then a crash and restart, was reached by no walk: faults are a
large share of the enabled actions, so the corpus filled with states whose crashes were spent
before any partial batch was acknowledged):
- half the rounds (STRATIFIED) start from a uniformly chosen *stratum*, then a state in it: the
  stratum is where the brokers' confirm, flushed and dispatch offsets fall against message
  boundaries, torn tails (coverage.shape), and the faults used; a rare shape with faults left is
  then as likely a start as the many states after every fault (the other half start from any
  kept state);
- swarm rounds (Groce et al., "Swarm testing", ISSTA 2012): each round leaves out each action
  kind with probability LEAVE_OUT, so some rounds send without transferring, or transfer without
  crashing, and reach what a uniform choice among all actions almost never does.
They are not the default: they reach that restart and find some toggles sooner (A12, A2), but
find others later or not at all within the bug table's 60 s (docs/exploration.md has both).
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Hashable, Iterable, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID, check_start, check_state, check_transition
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, NotEnabled, initial_state, successors
from rmqcheck.model.world import State

from rmqcheck.checkers.search.coverage import Coverage, shape
from rmqcheck.checkers.search.modes import Mode
from rmqcheck.checkers.counterexamples.replay import ddmin, shrink


GUIDED_HOP = 10  # steps from a kept state per round of a guided walk
LEAVE_OUT = 0.5  # stratified swarm rounds: the chance a round leaves out an action kind
STRATIFIED = 0.5  # stratified swarm rounds: the share of rounds that start from a uniformly chosen stratum
WALK_DEPTH = 60  # steps per plain walk unless told otherwise (hunt --depth, the swarm, the bug table)


class WalkHit(NamedTuple):
    invariant: str
    message: str
    walk: int  # index of the violating walk (guided: of the round)
    actions: tuple[Action, ...]  # as walked, up to the violation
    shrunk: tuple[Action, ...]  # after delta debugging


class WalkResult(NamedTuple):
    walks: int
    steps: int
    seconds: float
    hit: WalkHit | None
    coverage: Coverage
    kept: int = 0  # guided: states kept as starting points


def one_walk(
    cfg: Config, seed: int, index: int, depth: int, ids: frozenset[str], coverage: Coverage | None = None
) -> tuple[list[Action], tuple[str, str] | None]:
    """Walk `index` of seed `seed`: (actions taken, (invariant, message) of the first violation)."""
    rng = random.Random(f"{seed}:{index}")
    s = initial_state(cfg)
    actions: list[Action] = []
    vs = check_start(s, cfg, ids)
    if vs:
        return actions, (vs[0].invariant, vs[0].message)
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
                return _mode_hit(mode, cfg, index, actions, (vs[0].invariant, vs[0].message))
            s = n
        index += 1
    return None


def _mode_hit(mode: Mode, cfg: Any, index: int, actions: list[tuple], violation: tuple[str, str]) -> WalkHit:
    inv, message = violation
    shrunk = ddmin(actions, lambda acts: _mode_lenient(mode, cfg, acts, inv))
    return WalkHit(inv, message, index, tuple(actions), tuple(shrunk))


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


def controller_key(s: State) -> Hashable:
    """What a guided walk counts as new in controller mode: per broker, whether it is up and
    running, its role, master epoch and master, log length, epoch list, confirm offset, client
    and connections; the controller's applied log, the faults used, the partition and the
    controller cuts. Offsets
    inside the log, timers and the ghosts are left out, so the corpus stays thousands of states
    rather than millions."""
    brokers = tuple(
        (b.up, b.running, b.role, b.master_epoch, b.master_id, len(b.log.cells), b.epochs, b.confirm, b.client, b.conns)
        for b in s.brokers
    )
    return brokers, s.ctrl.applied, s.used, s.cut, s.off_controller


def _dledger_key(s: Any) -> Hashable:
    """DLedger: per member, up, term, vote, role, leader, the terms of its log, the
    ledgerEndTerm its votes compare (which A4 sets wrong) and its commit index; and the crashes
    used."""
    return tuple((m.up, m.term, m.voted, m.role, m.leader, tuple(e.term for e in m.log), m.end_term, m.committed)
                 for m in s.members), s.crashes


def _stratum(s: State) -> Hashable:
    """Where a guided round of controller mode starts from: the offsets' places and the faults used."""
    return shape(s), s.used


# Classic HA and recovery spaces are small: every distinct state is new.
MODE_KEYS: dict[str, Callable[[Any], Hashable]] = {"dledger": _dledger_key}


class _Run(NamedTuple):
    rounds: int
    steps: int
    kept: int
    actions: list  # the violating round's actions from the initial state; [] if none
    violation: tuple[str, str] | None  # (invariant, message)


def _guided_search(
    s0: Any,
    successors_of: Callable[[Any], list],
    violation_of: Callable[[Any, Any, Any], tuple[str, str] | None],
    key: Callable[[Any], Hashable],
    seed: int,
    budget: float,
    hop: int,
    progress: Callable[[int, int, float], None] | None = None,
    on_step: Callable[[Any, Any, Any], None] | None = None,
    max_steps: int | None = None,
    stratum: Callable[[Any], Hashable] | None = None,
    leave_out: float = 0.0,
) -> _Run:
    """Rounds from kept states: a STRATIFIED share of them (with `stratum`) from a uniformly
    chosen stratum, then a state in it, the others from any kept state; each round leaves out
    each action kind seen so far with probability `leave_out` (all of them if that leaves
    nothing enabled). Without either, the draws are those of plain guided rounds."""
    rng = random.Random(seed)
    corpus: list[tuple[tuple, Any]] = [((), s0)]
    strata: dict[Hashable, list[tuple[tuple, Any]]] = {} if stratum is None else {stratum(s0): [corpus[0]]}
    order = list(strata)  # the strata in the order found: the draws depend on the seed alone
    kinds: dict[str, None] = {}  # action kinds in the order seen
    seen = {key(s0)}
    start = time.perf_counter()
    next_report = start + 1.0
    rounds = steps = 0
    while time.perf_counter() - start < budget and (max_steps is None or steps < max_steps):
        pool = strata[order[rng.randrange(len(order))]] if len(order) > 1 and rng.random() < STRATIFIED else corpus
        prefix, s = pool[rng.randrange(len(pool))]
        actions = list(prefix)
        rounds += 1
        left_out = {k for k in kinds if rng.random() < leave_out} if leave_out else set()
        for _ in range(hop):
            succ = successors_of(s)
            if not succ:
                break
            if leave_out:
                kinds.update(dict.fromkeys(a[0] for a, _ in succ))
                succ = [x for x in succ if x[0][0] not in left_out] or succ
            a, n = succ[rng.randrange(len(succ))]
            actions.append(a)
            steps += 1
            if on_step is not None:
                on_step(s, a, n)
            violation = violation_of(s, a, n)
            if violation is not None:
                return _Run(rounds, steps, len(corpus), actions, violation)
            k = key(n)
            if k not in seen:
                seen.add(k)
                corpus.append((tuple(actions), n))
                if stratum is not None:
                    group = stratum(n)
                    if group not in strata:
                        strata[group] = []
                        order.append(group)
                    strata[group].append(corpus[-1])
            s = n
        now = time.perf_counter()
        if progress is not None and now >= next_report:
            next_report = now + 1.0
            progress(rounds, steps, now - start)
    return _Run(rounds, steps, len(corpus), [], None)


def guided(
    cfg: Config,
    seed: int = 0,
    budget: float = 60.0,
    invariants: Iterable[str] | None = None,
    hop: int = GUIDED_HOP,
    progress: Callable[[int, int, float], None] | None = None,
    max_steps: int | None = None,
    stratified: bool = False,
) -> WalkResult:
    """Coverage-guided walks of controller mode (see the module docstring); the violating
    round's actions, from the initial state, delta-debugged. `max_steps` ends the walks after
    that many steps whatever the time (a seeded run then does the same on any machine);
    `stratified`: stratified swarm rounds."""
    ids = frozenset(BY_ID if invariants is None else invariants)
    coverage = Coverage(cfg)

    def violation_of(s: State, a: Action, n: State) -> tuple[str, str] | None:
        vs = check_transition(s, a, n, cfg, ids) + check_state(n, cfg, ids)
        return (vs[0].invariant, vs[0].message) if vs else None

    start = time.perf_counter()
    s0 = initial_state(cfg)
    first = check_start(s0, cfg, ids)
    if first:
        hit = WalkHit(first[0].invariant, first[0].message, 0, (), ())
        return WalkResult(0, 0, time.perf_counter() - start, hit, coverage, 1)
    rounds = {"stratum": _stratum, "leave_out": LEAVE_OUT} if stratified else {}
    r = _guided_search(s0, lambda s: successors(s, cfg), violation_of, controller_key,
                       seed, budget, hop, progress, coverage.record, max_steps, **rounds)
    hit = None
    if r.violation is not None:
        inv, message = r.violation
        hit = WalkHit(inv, message, r.rounds - 1, tuple(r.actions), tuple(shrink(cfg, r.actions, inv)))
    return WalkResult(r.rounds, r.steps, time.perf_counter() - start, hit, coverage, r.kept)


def mode_guided(mode: Mode, cfg: Any, seed: int = 0, budget: float = 60.0, hop: int = GUIDED_HOP) -> WalkHit | None:
    """`guided` for another mode, with its key from MODE_KEYS (default: the whole state)."""

    def violation_of(s: Any, a: tuple, n: Any) -> tuple[str, str] | None:
        vs = mode.check_transition(s, a, n, cfg) + mode.check_state(n, cfg)
        return (vs[0].invariant, vs[0].message) if vs else None

    r = _guided_search(mode.initial_state(cfg), lambda s: mode.successors(s, cfg), violation_of,
                       MODE_KEYS.get(mode.name, lambda s: s), seed, budget, hop)
    return r.violation and _mode_hit(mode, cfg, r.rounds - 1, r.actions, r.violation)
