"""Exhaustive breadth-first exploration of a bounded configuration.

Stores one 64-bit fingerprint per distinct state (the hash of its timeless view, or the least
hash over broker renamings with symmetry on: model/abstraction.py) with a parent pointer and
the action that first reached it, as TLC and Stateright do; a path is rebuilt by following the
parents and replayed concretely. Breadth-first order makes the first violation of each
invariant a shortest one. A state's successors are taken in the order of their actions' text,
so each level is in a canonical order (by least path) and the counterexample kept for each
invariant does not depend on the order the model lists steps in; the Spark explorer keeps the
same one (distributed.py). A violation ends a search at the end of its level. `Bounds` adds
TLC-style constraints: a state past them is checked but not expanded.

Fingerprints may collide (two states, one hash): like TLC we report the probability bound
n^2 / 2^64 for n states.
"""

from __future__ import annotations

import inspect
import itertools
import json
import math

import time
from array import array
from typing import Any, Callable, Generator, Iterable, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID, Violation, check_start, check_state, check_transition
from rmqcheck.model import dledger
from rmqcheck.model.classic import ClassicConfig
from rmqcheck.model.dledger import DLedgerConfig
from rmqcheck.model.recovery import RecoveryConfig
from rmqcheck.model.abstraction import canonical_key, symmetries, timeless
from rmqcheck.model.config import Config
from rmqcheck.model.footprint import Footprint, footprint, independent, rank
from rmqcheck.model.step import Action, initial_state, successors
from rmqcheck.model.world import State, heartbeats

from rmqcheck.checkers.search.coverage import ActionCounts, Coverage
from rmqcheck.checkers.search.modes import MODES, Mode, mode_for


class Bounds(NamedTuple):
    """What the explorer adds to a configuration's own bounds (messages, fault budget)."""

    # States past these controller epochs are checked but not expanded. Epochs grow without
    # any fault (a SyncStateSet member lags, is shrunk, catches up, is expanded again ...).
    max_epoch: int = 2  # masterEpoch
    max_sss_epoch: int = 2  # syncStateSetEpoch
    max_depth: int | None = None  # states at this depth are checked, not expanded
    # A live broker heartbeats every second against a 10 s timeout, so it never looks dead
    # without a fault: the clock does not advance past a tick in which a live broker that
    # reaches the controller has not heartbeated yet. Lost heartbeats are the `hb_timeout`
    # fault. Off: the model's freedom to delay heartbeats for ever.
    timely_heartbeats: bool = True
    symmetry: bool = False  # identify states up to broker renaming (model/abstraction.py)
    # Skip a step when another order of the same independent steps reaches its state at the
    # same depth (`SleepSets`): the same states, fewer transitions.
    sleep_sets: bool = False

    def expands(self, s: State, depth: int) -> bool:
        applied = s.ctrl.applied
        return (
            applied.master_epoch <= self.max_epoch
            and applied.sss_epoch <= self.max_sss_epoch
            and (self.max_depth is None or depth < self.max_depth)
        )


def heartbeat_due(s: State) -> bool:
    """Some broker that heartbeats and reaches the controller has not heartbeated in this tick
    (a heartbeat the controller dropped is marked in `ran`)."""
    for b in s.brokers:
        if heartbeats(s, b.id):
            info = s.ctrl.live[b.id - 1]
            if (info is None or info.last_update < s.now) and f"heartbeat:{b.id}" not in s.ran:
                return True
    return False


def bounded_successors(
    s: State, cfg: Config, bounds: Bounds, skip: frozenset = frozenset()
) -> list[tuple[Action, State]]:
    out = successors(s, cfg, skip)
    if bounds.timely_heartbeats and heartbeat_due(s):
        out = [x for x in out if x[0][0] != "tick"]
    return out


class Hit(NamedTuple):
    """The first (so shortest) violation of one invariant."""

    invariant: str
    message: str
    actions: tuple[Action, ...]


class Progress(NamedTuple):
    states: int
    transitions: int
    queue: int
    depth: int
    seconds: float


class Result(NamedTuple):
    states: int  # distinct (up to the views in use)
    transitions: int
    depth: int  # of the deepest level explored
    seconds: float
    exhaustive: bool  # every reachable state within the bounds was expanded
    stopped: str  # why it ended: "exhausted", "budget", "violation"; in a hunt, "settled" (scoped.py)
    pruned: int  # states checked but not expanded because of the bounds
    hits: dict[str, Hit]
    coverage: Coverage
    collision_bound: float
    graph: "Graph | None"
    levels: tuple[int, ...] = ()  # distinct states first reached at each depth (0: the initial state)
    slept: int = 0  # steps skipped by sleep sets (each leads to a state reached another way)


class Graph(NamedTuple):
    """The explored space, kept for liveness: edges as (source, target, action) state numbers,
    and a per-state label from `label`."""

    edges: list[tuple[int, int, Action]]
    labels: list
    expanded: bytearray  # 1 where the state's successors are all in `edges`


# The one invariant that reads the model's ghost state (`State.reports`).
GHOST_READER = "I7"


class Space(NamedTuple):
    """What the explorer needs of a model: where it starts, what is enabled, the fingerprint
    of a state, which states are expanded, and the invariants (a list of violations for the
    ids asked)."""

    initial: Any
    successors: Callable[..., list]  # (state, sleep set to skip)
    key: Callable[[Any], int]
    expands: Callable[[Any, int], bool]
    check_state: Callable[[Any, frozenset], list[Violation]]
    check_start: Callable[[Any, frozenset], list[Violation]]  # of the initial state (and how it was built)
    check_transition: Callable[[Any, Action, Any, frozenset], list[Violation]]
    coverage: Callable[[], Any]  # a fresh recorder with record(pre, action, post)
    invariants: frozenset[str]
    # With sleep sets (controller mode only): what a step reads and writes, and their order.
    footprint: Callable[[Any, Action], Footprint | None] | None = None
    rank: Callable[[Any, Action], tuple] | None = None


def controller_space(cfg: Config, bounds: Bounds, ghost: bool = True) -> Space:
    """Controller mode (model/step.py) with the explorer's bounds and views; without `ghost`,
    states that differ only in what no rule reads (the heartbeat reports I7 judges) are one."""
    group = symmetries(cfg) if bounds.symmetry else []

    def key(s: State) -> int:
        return canonical_key(s, cfg, group, ghost) if len(group) > 1 else hash(timeless(s, cfg, ghost))

    symmetric = len(group) > 1
    return Space(
        initial_state(cfg),
        lambda s, skip=frozenset(): bounded_successors(s, cfg, bounds, skip),
        key,
        bounds.expands,
        lambda s, ids: check_state(s, cfg, ids),
        lambda s, ids: check_start(s, cfg, ids),
        lambda s, a, n, ids: check_transition(s, a, n, cfg, ids),
        lambda: Coverage(cfg),
        frozenset(BY_ID),
        (lambda s, a: footprint(s, a, cfg)) if bounds.sleep_sets else None,
        lambda s, a: rank(s, a, symmetric),
    )


def mode_space(mode: Mode, cfg: Any, max_depth: int | None = None, key: Callable = hash) -> Space:
    """Classic HA, DLedger or store recovery (checkers/search/modes.py): finite by the configuration's budgets."""
    return Space(
        mode.initial_state(cfg),
        lambda s, skip=frozenset(): mode.successors(s, cfg),
        key,
        lambda s, depth: max_depth is None or depth < max_depth,
        lambda s, ids: mode.check_state(s, cfg, ids),
        lambda s, ids: mode.check_state(s, cfg, ids),
        lambda s, a, n, ids: mode.check_transition(s, a, n, cfg, ids),
        ActionCounts,
        frozenset(inv.id for inv in mode.invariants),
    )


NO_SLEEP: frozenset = frozenset()


class SleepSets:
    """Sleep sets (Godefroid 1996), one step deep, for breadth-first search with state matching.

    A state n kept when step c first reached it from p skips every action a enabled in p that
    is independent of c there (model/footprint.py) and ranks below c: p.c.a is p.a.c, one
    level up the same. No state is lost: take a state t first reachable at depth d + 1 and,
    among the steps into it from states kept at depth d, one (s, a) of the highest rank. Were a
    asleep in s, reached by c from p, then p.a would be at depth d, kept (up to renaming) and
    expanded (a sleeping step changes nothing the bounds read), and its step c would reach t
    with c's rank, above a's (footprints and ranks read only what the other step leaves
    alone): a contradiction. Nor is a step invariant's first violation lost: a sleeping step
    changes the brokers it writes as the same step from p did, which was taken or asleep in
    turn, back to the initial state; I3b, I4 and I9 compare each broker with itself, and I7,
    I7b and I10 judge only steps that are never put to sleep. Only the transitions counted,
    the action counts and the coverage witnesses seen on steps change."""

    def __init__(self, space: Space, s: State, enabled: list[Action]) -> None:
        self.space, self.s, self.enabled = space, s, enabled
        self.ranked: list | None = None  # (rank, action, footprint), taken when a new state needs them

    def after(self, c: Action) -> frozenset:
        """The sleep set of the state `c` leads to."""
        if self.ranked is None:
            s, space = self.s, self.space
            self.ranked = sorted((space.rank(s, a), a, f) for a in self.enabled
                                 if (f := space.footprint(s, a)) is not None)
            self.index = {a: i for i, (_, a, _) in enumerate(self.ranked)}
        i = self.index.get(c)
        if i is None:
            return NO_SLEEP
        rc, _, fc = self.ranked[i]
        return frozenset([a for r, a, fa in self.ranked[:i] if r < rc and independent(fa, fc)])


class Explorer:
    def __init__(
        self,
        cfg: Config | ClassicConfig | DLedgerConfig | RecoveryConfig,
        bounds: Bounds = Bounds(),
        invariants: Iterable[str] | None = None,
    ):
        self.cfg = cfg
        self.bounds = bounds
        if isinstance(cfg, Config):
            self.space = controller_space(cfg, bounds, ghost=invariants is None or GHOST_READER in invariants)
        elif isinstance(cfg, DLedgerConfig):
            # members are interchangeable: a state is stored once for all renamings
            perms = list(itertools.permutations(range(cfg.nodes)))
            key = (lambda s: dledger.symmetric_key(s, perms)) if bounds.symmetry else hash
            self.space = mode_space(MODES["dledger"], cfg, bounds.max_depth, key)
        else:
            self.space = mode_space(mode_for(cfg), cfg, bounds.max_depth)
        self.targets = self.space.invariants if invariants is None else frozenset(invariants)
        self.key = self.space.key
        self.parent = array("q")
        self.via = array("l")
        self.action_ids: dict[Action, int] = {}
        self.action_list: list[Action] = []
        self.hits: dict[str, Hit] = {}
        self.known: float = 0  # a running search knows every violation at most this long (inf: exhausted)
        self.expanded = 0  # states its search has expanded (each a yield)

    def _action_id(self, a: Action) -> int:
        i = self.action_ids.get(a)
        if i is None:
            i = self.action_ids[a] = len(self.action_list)
            self.action_list.append(a)
        return i

    def path(self, index: int) -> tuple[Action, ...]:
        out = []
        while self.parent[index] >= 0:
            out.append(self.action_list[self.via[index]])
            index = self.parent[index]
        return tuple(reversed(out))

    def run(
        self,
        budget: float | None = None,
        stop_on: Iterable[str] = (),
        label: Callable[[State], object] | None = None,
        progress: Callable[[Progress], None] | None = None,
        progress_every: float = 1.0,
        states: int | None = None,
    ) -> Result:
        """Explore until the space is exhausted, `budget` seconds pass (or `states` states are
        expanded), or an invariant in `stop_on` is violated. With `label`, keep the graph (small
        configurations only)."""
        search = self.search(stop_on, label)
        return advance(search, budget, progress, progress_every, states) or stop(search)

    def search(
        self, stop_on: Iterable[str] = (), label: Callable[[State], object] | None = None
    ) -> Generator[Progress, object, Result]:
        """The search as a coroutine, so that several can share a budget (`hunt`): it yields
        after each expanded state, and returns its Result when the space is exhausted, an
        invariant in `stop_on` is violated, or it is sent STOP. Its seconds are its own
        running time."""
        space = self.space
        stop_on = frozenset(stop_on)
        remaining = set(self.targets)
        hits: dict[str, Hit] = {}
        self.hits = hits  # grows while the search runs (a portfolio reads it between turns)
        coverage = space.coverage()
        graph = Graph([], [], bytearray()) if label is not None else None
        resumed = time.perf_counter()
        seconds = 0.0

        # A level's violations per invariant, published when the level ends (so `hits` only
        # ever holds what no shorter or earlier counterexample can displace): the first step
        # violation, else the first state violation, in the level's canonical order (below).
        level_hits: dict[str, tuple[bool, Hit]] = {}

        def note(violations: list[Violation], prefix: tuple[Action, ...], by_step: bool) -> bool:
            for v in violations:
                kept = level_hits.get(v.invariant)
                if kept is None or (by_step and not kept[0]):
                    level_hits[v.invariant] = (by_step, Hit(v.invariant, v.message, prefix))
            return any(v.invariant in stop_on for v in violations)

        def publish(length: int) -> None:
            for inv, (_, hit) in level_hits.items():
                hits.setdefault(inv, hit)
                remaining.discard(inv)
            level_hits.clear()
            self.known = length

        s0 = space.initial
        seen = {self.key(s0): 0}
        self.parent.append(-1)
        self.via.append(-1)
        if graph is not None:
            graph.labels.append(label(s0))
            graph.expanded.append(0)
        stop = note(space.check_start(s0, frozenset(remaining)), (), False)
        publish(0)
        # (index, state, its sleep set): the steps it skips
        frontier: list[tuple[int, State, frozenset]] = [(0, s0, NO_SLEEP)]
        levels = [1]
        depth = transitions = pruned = slept = 0
        stopped = "violation" if stop else None
        sleeping = space.footprint is not None and graph is None  # liveness needs every edge
        while frontier and stopped is None:
            level: list[tuple[int, State, frozenset]] = []
            for idx, s, sleep in frontier:
                if not space.expands(s, depth):
                    pruned += 1
                    continue
                ids = frozenset(remaining)
                if graph is not None:
                    graph.expanded[idx] = 1
                # Successors in the order of their actions' text, so each level is in the
                # canonical order of its paths and each state's parent is its least path's:
                # the Spark explorer keeps the same (distributed.py), whatever the partitions.
                succ = sorted(space.successors(s, sleep), key=lambda an: action_text(an[0]))
                slept += len(sleep)
                sets = SleepSets(space, s, [a for a, _ in succ] + list(sleep)) if sleeping else None
                for a, n in succ:
                    transitions += 1
                    k = self.key(n)
                    j = seen.get(k)
                    new = j is None
                    if new:
                        j = seen[k] = len(self.parent)
                        self.parent.append(idx)
                        self.via.append(self._action_id(a))
                        level.append((j, n, sets.after(a) if sets else NO_SLEEP))
                        if graph is not None:
                            graph.labels.append(label(n))
                            graph.expanded.append(0)
                    coverage.record(s, a, n)
                    if graph is not None:
                        graph.edges.append((idx, j, a))
                    if ids:
                        step_vs = space.check_transition(s, a, n, ids)
                        state_vs = space.check_state(n, ids) if new else []
                        if step_vs or state_vs:
                            prefix = self.path(idx) + (a,)
                            stop = note(step_vs, prefix, True) | note(state_vs, prefix, False) | stop
                now = time.perf_counter()
                seconds += now - resumed
                self.expanded += 1
                told = yield Progress(len(seen), transitions, len(level) + len(frontier), depth, seconds)
                resumed = time.perf_counter()
                if told is STOP:
                    stopped = "violation" if stop else "budget"
                    publish(self.known)  # what the cut level found, though not all as short
                    break
            if stopped is None:
                publish(depth + 1)  # the level is whole: every violation this short is known
                if level:
                    levels.append(len(level))
                if stop:
                    stopped = "violation"  # at the end of its level, so that every one as short is known
            frontier = level
            depth += 1
        if stopped is None:
            self.known = math.inf
        seconds += time.perf_counter() - resumed
        n = len(seen)
        return Result(
            states=n,
            transitions=transitions,
            depth=depth if frontier else depth - 1,
            seconds=seconds,
            exhaustive=stopped is None,
            stopped=stopped or "exhausted",
            pruned=pruned,
            hits=hits,
            coverage=coverage,
            collision_bound=n * n / 2.0**64,
            graph=graph,
            levels=tuple(levels),
            slept=slept,
        )


STOP = object()  # sent to a search: end now, with what it has

_ACTION_TEXT: dict[Action, str] = {}


def action_text(a: Action) -> str:
    """An action as JSON text, as the Spark explorer records it: the order of these texts is
    the order in which both explorers take a state's successors (the canonical order)."""
    text = _ACTION_TEXT.get(a)
    if text is None:
        if len(_ACTION_TEXT) > 100_000:
            _ACTION_TEXT.clear()
        text = _ACTION_TEXT[a] = json.dumps(a, default=repr)
    return text


def advance(
    search: Generator[Progress, object, Result],
    seconds: float | None,
    progress: Callable[[Progress], None] | None = None,
    progress_every: float = 1.0,
    states: int | None = None,
    until: Callable[[], bool] | None = None,
) -> Result | None:
    """Run `search` for about `seconds` more, or exactly `states` more expanded states (None:
    to its end), or until `until()` holds. Its Result if it ended."""
    now = time.perf_counter()
    end = None if seconds is None else now + seconds
    next_report = now + progress_every
    left = math.inf if states is None else states
    try:
        while True:
            p = next(search)
            left -= 1
            now = time.perf_counter()
            if progress is not None and now >= next_report:
                next_report = now + progress_every
                progress(p)
            if (end is not None and now >= end) or left <= 0 or (until is not None and until()):
                return None
    except StopIteration as done:
        return done.value


def stop(search: Generator[Progress, object, Result]) -> Result:
    """End a search that `advance` left running (or never started)."""
    try:
        if inspect.getgeneratorstate(search) == inspect.GEN_CREATED:
            next(search)
        search.send(STOP)
    except StopIteration as done:
        return done.value
    raise AssertionError("a search went on after STOP")
