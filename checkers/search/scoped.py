"""Hunting by growing scopes, with one answer whatever the engine.

`scopes(cfg)` cuts a configuration into growing scopes (Alloy's small-scope hypothesis); each
is explored breadth-first, side by side in turns, by the local explorer (`hunt`, below) or by
Spark (`distributed.hunt`). The first counterexample found is not the answer: which scope finds
first depends on the engine, the machine and its load. The hunt goes on until every other scope
is known to hold nothing that would come first (`_need`), and answers the least by
(length, scope, invariant in the catalogue's order). Within a scope both explorers take each
level in the canonical order of its paths (`explore.action_text`), so the answer is the same
counterexample on either engine and any number of cores, unless the budget ended first: then
`ScopedHit.shortest` is false and the hunt says which scopes it could not settle.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Callable, Iterable, NamedTuple, Protocol

from rmqcheck.invariants.catalogue import BY_ID
from rmqcheck.model.config import NO_FAULTS, Config, FaultBudget
from rmqcheck.model.controller import ELECT_MASTER_MAX_RETRY

from rmqcheck.checkers.search.explore import Bounds, Explorer, Hit, Progress, Result, advance, stop


def scopes(cfg: Config) -> list[tuple[Config, Bounds]]:
    """Growing scopes for hunting, smallest first: no faults, then one fault of a single kind,
    then one of each kind the configuration allows, each with one message of the smallest size
    and then two of every size; then higher epochs, then the whole configuration. Each is
    explored exhaustively, so what one finds is a shortest counterexample within it (fewer kinds
    of noise keep the early spaces small); the whole configuration holds every other scope.

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
    result: Result  # of the scope's search
    # Every scope was explored far enough to show nothing comes first; if not, which were not.
    shortest: bool = True
    unsettled: tuple[str, ...] = ()


class ScopeSearch(Protocol):
    """One scope's breadth-first search as an engine runs it, a turn at a time."""

    known: float  # every violation at most this long is known (math.inf once exhausted)
    ended: bool  # it stopped (on a violation, or exhausted) and can go no further

    def turn(self, need: float) -> None:
        """Advance one turn, or less once `known` reaches `need`."""

    def hits(self) -> dict[str, Hit]: ...

    def result(self) -> Result:
        """Stop it if it runs; what it did."""


class Budget:
    """Seconds, or expanded states (the same hunt on any machine under any load). Once a
    counterexample is found, settling the other scopes gets as much again as finding took,
    `settle_floor` at least, within the budget."""

    def __init__(self, seconds: float, states: int | None, settle_floor: float) -> None:
        self.start = time.perf_counter()
        self.seconds, self.states, self.spent = seconds, states, 0
        self.floor = settle_floor

    def _used(self) -> float:
        return time.perf_counter() - self.start if self.states is None else self.spent

    def left(self) -> float:
        limit = self.seconds if self.states is None else self.states
        return limit - self._used()

    def settle(self) -> None:
        used = self._used()
        if self.states is None:
            self.seconds = min(self.seconds, used + max(used, self.floor))
        else:
            self.states = min(self.states, self.spent + max(self.spent, int(self.floor)))


_ORDER = {inv: k for k, inv in enumerate(BY_ID)}


def _need(i: int, best: tuple[int, int, int] | None) -> float:
    """How long a violation scope `i` must be known to lack: as long as the best found, for a
    scope before the best one's (a tie goes to the earlier scope); one step shorter after it."""
    if best is None:
        return math.inf
    length, scope, _ = best
    return length if i < scope else length - 1


def hunt_scopes(
    plan: list[tuple[Config, Bounds]], searches: list[ScopeSearch], targets: frozenset[str], budget: Budget,
) -> tuple[ScopedHit | None, list[tuple[Config, Bounds, Result]]]:
    """Run the scopes' searches in turns until every one is settled (`_need`) or the budget ends;
    the least (length, scope, invariant) of the targets' violations, and each scope's result."""
    best: tuple[int, int, int] | None = None
    best_hit: Hit | None = None
    turns = deque(range(len(plan)))
    while turns and budget.left() > 0:
        i = turns.popleft()
        search = searches[i]
        if search.known >= _need(i, best):
            continue
        search.turn(_need(i, best))
        for inv, hit in sorted(search.hits().items()):
            key = (len(hit.actions), i, _ORDER[inv])
            if inv in targets and (best is None or key < best):
                if best is None:
                    budget.settle()
                best, best_hit = key, hit
        if not search.ended:
            turns.append(i)
    unsettled = tuple(describe_scope(*plan[i]) for i in turns if searches[i].known < _need(i, best))
    results = [s.result() for s in searches]
    for i, (s, r) in enumerate(zip(searches, results)):
        if r is not None and not s.ended and s.known >= _need(i, best):
            results[i] = r._replace(stopped="settled")  # explored as deep as the answer needs
    tried = [(*plan[i], results[i]) for i in range(len(plan)) if results[i] is not None]
    if best is None or best_hit is None:
        return None, tried
    i = best[1]
    return ScopedHit(*plan[i], best_hit, results[i], not unsettled, unsettled), tried


SLICE = 1.0  # seconds a scope runs before the next one's turn in `hunt`
SLICE_STATES = 5_000  # expanded states a turn when `hunt` counts states (about SLICE on this machine)
MIN_SETTLE = 10.0  # seconds settling the other scopes gets at least
MIN_SETTLE_STATES = 50_000  # expanded states, when counting them (about MIN_SETTLE on this machine)


class _LocalScope:
    """A scope on the local explorer: its search as a coroutine, advanced a slice at a time."""

    def __init__(self, scope: Config, bounds: Bounds, targets: frozenset[str], budget: Budget,
                 report: Callable[[Progress], None] | None) -> None:
        self.explorer = Explorer(scope, bounds, targets)
        self.search = self.explorer.search(stop_on=targets)
        self.budget, self.report = budget, report
        self.ended, self._result = False, None

    @property
    def known(self) -> float:
        return self.explorer.known

    def turn(self, need: float) -> None:
        left = self.budget.left()
        until = lambda: self.explorer.known >= need  # noqa: E731
        if self.budget.states is None:
            r = advance(self.search, min(SLICE, left), self.report, SLICE / 2, until=until)
        else:
            before = self.explorer.expanded
            r = advance(self.search, None, self.report, SLICE / 2, int(min(SLICE_STATES, left)), until=until)
            self.budget.spent += max(self.explorer.expanded - before, 1)
        if r is not None:
            self.ended, self._result = True, r

    def hits(self) -> dict[str, Hit]:
        return self.explorer.hits

    def result(self) -> Result:
        if self._result is None:
            self._result = stop(self.search)
        return self._result


def hunt(
    cfg: Config, targets: Iterable[str], budget: float, progress: Callable[[str, Progress], None] | None = None,
    states: int | None = None,
) -> tuple[ScopedHit | None, list[tuple[Config, Bounds, Result]]]:
    """`hunt_scopes` on the local explorer, in turns of SLICE seconds: sharing the time keeps a
    large scope that cannot finish from starving the one with the counterexample. With `states`
    the budget is that many expanded states, in turns of SLICE_STATES, and the clock is not
    looked at: the same hunt on any machine under any load."""
    targets = frozenset(targets)
    plan = scopes(cfg)
    left = Budget(budget, states, MIN_SETTLE if states is None else MIN_SETTLE_STATES)
    searches = [
        _LocalScope(scope, bounds, targets, left,
                    None if progress is None else (lambda p, label=describe_scope(scope, bounds): progress(label, p)))
        for scope, bounds in plan
    ]
    return hunt_scopes(plan, searches, targets, left)
