"""Exhaustive breadth-first exploration of a bounded configuration.

Stores one 64-bit fingerprint per distinct state (the hash of its timeless view, or the least
hash over broker renamings with symmetry on: model/abstraction.py) with a parent pointer and
the action that first reached it, as TLC and Stateright do; a path is rebuilt by following the
parents and replayed concretely. Breadth-first order makes the first violation of each
invariant a shortest one. `Bounds` adds TLC-style constraints: a state past them is checked
but not expanded.

Fingerprints may collide (two states, one hash): like TLC we report the probability bound
n^2 / 2^64 for n states.

One module on purpose (just over 500 lines): the scoped hunt at the end drives `Explorer.search`
as a coroutine and shares its bounds, results and progress records.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections import deque

import time
from array import array
from typing import Any, Callable, Generator, Iterable, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID, Violation, check_start, check_state, check_transition
from rmqcheck.model import dledger
from rmqcheck.model.classic import ClassicConfig
from rmqcheck.model.dledger import DLedgerConfig
from rmqcheck.model.recovery import RecoveryConfig
from rmqcheck.model.abstraction import canonical_key, symmetries, timeless
from rmqcheck.model.controller import ELECT_MASTER_MAX_RETRY
from rmqcheck.model.config import NO_FAULTS, SYNC_FLUSH, Config, FaultBudget
from rmqcheck.model.footprint import Footprint, footprint, independent, rank
from rmqcheck.model.step import Action, initial_state, successors
from rmqcheck.model.world import State

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
    """Some live, unfenced broker that reaches the controller has not heartbeated in this tick
    (a heartbeat the controller dropped is marked in `ran`)."""
    for b in s.brokers:
        if b.up and b.running and b.id not in s.cut:
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


class Standard(NamedTuple):
    cfg: Config
    bounds: Bounds
    description: str


_SAFE = dict(all_ack=True, flush=SYNC_FLUSH, bugs=frozenset(), message_sizes=(1,))

# Standard configurations: the safe settings (allAckInSyncStateSet, SYNC_FLUSH, no unclean
# election) on the intended baseline. Their state counts are in docs/exploration.md.
STANDARD: dict[str, Standard] = {
    "std2": Standard(
        Config(brokers=2, max_messages=1, faults=NO_FAULTS._replace(crashes=1), **_SAFE),
        Bounds(max_epoch=2, max_sss_epoch=3, max_depth=24),
        "2 brokers, 1 one-byte message, 1 crash, masterEpoch <= 2, syncStateSetEpoch <= 3, depth <= 24",
    ),
    "std3": Standard(
        Config(brokers=3, max_messages=1, faults=NO_FAULTS._replace(crashes=1), **_SAFE),
        Bounds(max_epoch=2, max_sss_epoch=3, max_depth=15, symmetry=True),
        "3 brokers, 1 one-byte message, 1 crash, masterEpoch <= 2, syncStateSetEpoch <= 3, depth <= 15, "
        "symmetry over broker renaming",
    ),
}


# Classic master/slave HA (model/classic.py), the snapshot's form: SYNC_MASTER, inSyncReplicas 2.
CLASSIC: dict[str, tuple[ClassicConfig, str]] = {
    "classic": (
        ClassicConfig(slaves=2, sync_flush=True, max_messages=2, file_size=8, resets=1),
        "classic HA: SYNC_MASTER + 2 slaves, inSyncReplicas 2, SYNC_FLUSH, 2 one-byte messages in one file, "
        "1 crash, 1 connection reset",
    ),
    "classic-async-flush": (
        ClassicConfig(max_messages=2, file_size=8),
        "classic HA: SYNC_MASTER + 1 slave, inSyncReplicas 2, ASYNC_FLUSH (a crash loses the unflushed tail), "
        "2 one-byte messages, 1 crash",
    ),
}

# DLedger mode (model/dledger.py): the snapshot's DLedger 0.3.1.2 unless a name says otherwise.
DLEDGER: dict[str, tuple[DLedgerConfig, str]] = {
    "dledger": (
        DLedgerConfig(max_term=1, crashes=0, bugs=frozenset()),
        "DLedger mode, intended (dledger 93d6ff1 commit rule, a no-op on election): 3 members, one election "
        "round (terms up to 1), 1 message, no crash",
    ),
    "dledger-snapshot": (
        DLedgerConfig(max_term=3, crashes=0, noop_on_election=False),
        "DLedger mode as the snapshot pins it (dledger-all-0.3.1.2, no no-op): 3 members, terms up to 3, "
        "1 message, no crash",
    ),
}

# Store crash recovery (model/recovery.py): 2-byte commit-log files, messages of 1 and 2 bytes
# (so a file can end in a BLANK), 1 crash (any page-cache loss), 1 clean shutdown.
RECOVERY: dict[str, tuple[RecoveryConfig, str]] = {
    "recovery": (
        RecoveryConfig(message_sizes=(1, 2), max_time=3, bugs=frozenset()),
        "store recovery, intended (logicsMsgTimestamp of flushed entries, #10073; no dispatch in normal "
        "recovery): ASYNC_FLUSH, 3 messages of 1-2 bytes in 2-byte files, 3 ticks, 1 crash, 1 clean shutdown",
    ),
    "recovery-snapshot": (
        RecoveryConfig(message_sizes=(1, 2), max_time=3),
        "store recovery as the snapshot writes it: ASYNC_FLUSH, 3 messages of 1-2 bytes in 2-byte files, "
        "3 ticks, 1 crash, 1 clean shutdown",
    ),
    "recovery-controller": (
        RecoveryConfig(controller_mode=True, max_time=0),
        "a controller-mode slave's store as the snapshot writes it: dispatch up to confirmOffset, "
        "3 one-byte messages in 2-byte files, 1 crash, 1 clean shutdown",
    ),
}

# Every named configuration of the other modes.
MODE_CONFIGS: dict[str, tuple[Any, str]] = {**CLASSIC, **DLEDGER, **RECOVERY}


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
    stopped: str  # why it ended: "exhausted", "budget", "violation"
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

        def note(violations: list[Violation], prefix: tuple[Action, ...]) -> bool:
            for v in violations:
                if v.invariant not in hits:
                    hits[v.invariant] = Hit(v.invariant, v.message, prefix)
                    remaining.discard(v.invariant)
            return any(v.invariant in stop_on for v in violations)

        s0 = space.initial
        seen = {self.key(s0): 0}
        self.parent.append(-1)
        self.via.append(-1)
        if graph is not None:
            graph.labels.append(label(s0))
            graph.expanded.append(0)
        stop = note(space.check_start(s0, frozenset(remaining)), ())
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
                succ = space.successors(s, sleep)
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
                        vs = space.check_transition(s, a, n, ids)
                        if new:
                            vs += space.check_state(n, ids)
                        if vs:
                            stop = note(vs, self.path(idx) + (a,)) or stop
                            ids = frozenset(remaining)
                if stop:
                    stopped = "violation"
                    break
                now = time.perf_counter()
                seconds += now - resumed
                told = yield Progress(len(seen), transitions, len(level) + len(frontier), depth, seconds)
                resumed = time.perf_counter()
                if told is STOP:
                    stopped = "budget"
                    break
            if stopped is None and level:
                levels.append(len(level))
            frontier = level
            depth += 1
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


def advance(
    search: Generator[Progress, object, Result],
    seconds: float | None,
    progress: Callable[[Progress], None] | None = None,
    progress_every: float = 1.0,
    states: int | None = None,
) -> Result | None:
    """Run `search` for about `seconds` more, or exactly `states` more expanded states (None:
    to its end). Its Result if it ended."""
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
            if (end is not None and now >= end) or left <= 0:
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


def scopes(cfg: Config) -> list[tuple[Config, Bounds]]:
    """Growing scopes for hunting, smallest first (Alloy's small-scope hypothesis): no faults,
    then one fault of a single kind, then one of each kind the configuration allows, each with
    one message of the smallest size and then two of every size; then higher epochs, then the
    whole configuration. Each is explored exhaustively, so what one finds is a shortest
    counterexample within it (fewer kinds of noise keep the early spaces small).

    syncStateSetEpoch gets one more than masterEpoch: every election bumps both, so with equal
    bounds a failover after any SyncStateSet change would never be expanded. masterEpoch also
    gets what the scope's faults can burn: a scan that finds no electable broker applies up to
    electMasterMaxRetryCount failed elections, each bumping it (reference §7 item 10), so one
    heartbeat timeout can take it from 1 to 5 (A9 needs exactly that). Only faults start such
    a scan, so this stays finite where the SyncStateSet epoch (growing with no fault) does not."""
    kinds = [NO_FAULTS._replace(**{k: 1}) for k, n in cfg.faults._asdict().items() if n > 0]
    one_each = FaultBudget(*(min(n, 1) for n in cfg.faults))
    messages = ((1, (min(cfg.message_sizes),)), (2, cfg.message_sizes))
    plan = [(m, sizes, NO_FAULTS, 2) for m, sizes in messages]
    plan += [(m, sizes, faults, 2) for faults in (*kinds, one_each) for m, sizes in messages]
    plan += [(2, cfg.message_sizes, one_each, 3), (cfg.max_messages, cfg.message_sizes, cfg.faults, 3)]
    out: list[tuple[Config, Bounds]] = []
    for msgs, sizes, faults, epochs in plan:
        scope = cfg._replace(max_messages=min(msgs, cfg.max_messages), message_sizes=sizes, faults=faults)
        burnt = ELECT_MASTER_MAX_RETRY * faults.total()
        bounds = Bounds(max_epoch=epochs + burnt, max_sss_epoch=epochs + 1)
        if (scope, bounds) not in out:
            out.append((scope, bounds))
    return out


def fault_text(cfg: Config) -> str:
    return ", ".join(f"{k}={v}" for k, v in cfg.faults._asdict().items() if v) or "none"


def describe_scope(scope: Config, bounds: Bounds) -> str:
    return (
        f"{scope.max_messages} msg, sizes {list(scope.message_sizes)}, faults {fault_text(scope)}, "
        f"epochs <= {bounds.max_epoch}/{bounds.max_sss_epoch}"
    )


class ScopedHit(NamedTuple):
    cfg: Config  # the scope's configuration, which replays the counterexample
    bounds: Bounds
    hit: Hit
    result: Result


SLICE = 1.0  # seconds a scope runs before the next one's turn in `hunt`
SLICE_STATES = 5_000  # expanded states a turn when `hunt` counts states (about SLICE on this machine)
MIN_WHOLE = 10.0  # seconds, or 10 * SLICE_STATES states, `_shorter_in_whole` gets at least


def hunt(
    cfg: Config, targets: Iterable[str], budget: float, progress: Callable[[str, Progress], None] | None = None,
    states: int | None = None,
) -> tuple[ScopedHit | None, list[tuple[Config, Bounds, Result]]]:
    """Explore `scopes(cfg)` side by side, in turns of SLICE seconds, until one violates a
    target invariant or the budget ends. Sharing the time keeps a large scope that cannot finish
    from starving the one with the counterexample; a scope that is exhausted leaves its turns
    to the others. With `states` the budget is that many expanded states, in turns of
    SLICE_STATES, and the clock is not looked at: the same hunt on any machine under any load."""
    targets = frozenset(targets)
    start = time.perf_counter()
    spent = 0  # expanded states, when counting them
    plan = scopes(cfg)
    searches = [Explorer(scope, bounds, targets).search(stop_on=targets) for scope, bounds in plan]
    turns = deque(range(len(plan)))
    ended: dict[int, Result] = {}
    found: ScopedHit | None = None
    while turns and found is None:
        left = budget - (time.perf_counter() - start) if states is None else states - spent
        if left <= 0:
            break
        i = turns.popleft()
        label = describe_scope(*plan[i])
        report = None if progress is None else lambda p: progress(label, p)
        if states is None:
            result = advance(searches[i], min(SLICE, left), report, SLICE / 2)
        else:
            turn = min(SLICE_STATES, left)
            spent += turn
            result = advance(searches[i], None, report, SLICE / 2, turn)
        if result is None:
            turns.append(i)
            continue
        ended[i] = result
        hit = next((h for h in result.hits.values() if h.invariant in targets), None)
        if hit is not None:
            found = ScopedHit(*plan[i], hit, result)
    for i in turns:
        ended[i] = stop(searches[i])
    tried = [(*plan[i], ended[i]) for i in sorted(ended)]
    if found is not None and (found.cfg, found.bounds) != plan[-1]:
        if states is None:
            left = budget - (time.perf_counter() - start)
            whole = dict(budget=min(left, max(sum(r.seconds for _, _, r in tried), MIN_WHOLE)))
        else:
            whole = dict(states=min(states - spent, max(spent, int(MIN_WHOLE) * SLICE_STATES)))
        found = _shorter_in_whole(found, plan[-1], targets, whole, tried)
    return found, tried


def _shorter_in_whole(found: ScopedHit, whole: tuple[Config, Bounds], targets: frozenset[str], budget: dict,
                      tried: list) -> ScopedHit:
    """A small scope's counterexample is shortest within that scope only: a fault it leaves out
    may give a shorter one. Explore the whole configuration up to one step less, for at most as
    long as finding took (MIN_WHOLE at least), and keep what it finds."""
    scope, bounds = whole[0], whole[1]._replace(max_depth=len(found.hit.actions) - 1)
    result = Explorer(scope, bounds, targets).run(stop_on=targets, **budget)
    tried.append((scope, bounds, result))
    hit = next((h for h in result.hits.values() if h.invariant in targets), None)
    return found if hit is None else ScopedHit(scope, bounds, hit, result)
