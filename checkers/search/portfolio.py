"""A portfolio hunt: every search method on one configuration, sharing one budget.

No single method finds every bug soonest (the bug table in docs/bugs.md says which found each):
the Hypothesis stateful hunt shrinks well, guided walks reach deep states from a corpus,
breadth-first exploration of growing scopes finds the shortest counterexample of a small one.
So a portfolio runs them in rounds, each method a slice of the budget per round, and each round
with fresh seeds (stateful batches continue where the last slice stopped; guided walks take
seed, seed + 1, ...; exploration is deterministic and resumes where it stopped). A target
invariant found by one method is dropped from every method's targets; the first finding of
each says which method, which seed and how many seconds into the hunt it took.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable, Iterable, NamedTuple

from rmqcheck.model.config import Config

from rmqcheck.checkers.search import explore, scoped
from rmqcheck.checkers.search.hunting import Finding, explain, find
from rmqcheck.checkers.search.walk import guided

# In this order within a round: a stateful batch overshoots its slice (up to the portfolio's end; the budget is checked
# between batches), so it goes last and the next round's shares absorb it.
METHODS = ("guided", "explore", "stateful")


class Found(NamedTuple):
    finding: Finding
    method: str
    seed: int | None  # None for exploration (deterministic)
    at: float  # seconds into the portfolio when the method reported it


class MethodRun(NamedTuple):
    """What one method did over the whole portfolio."""

    method: str
    seconds: float
    seeds: tuple[int, ...]  # the seeds it ran (stateful: its batches); () for exploration
    found: tuple[str, ...]  # invariants it found first

    def describe(self) -> str:
        if self.method == "explore":
            how = "growing scopes"
        elif not self.seeds:
            return f"{self.method}: no turn left"
        else:
            how = f"seeds {self.seeds[0]}-{self.seeds[-1]}" if len(self.seeds) > 1 else f"seed {self.seeds[0]}"
        return f"{self.method} {self.seconds:.1f}s ({how}): " + (", ".join(self.found) or "nothing")


class PortfolioResult(NamedTuple):
    found: tuple[Found, ...]
    methods: tuple[MethodRun, ...]
    seconds: float


class _ScopedExploration:
    """`scoped.hunt`'s growing scopes as one resumable search: each turn advances the scopes in
    SLICE-second turns for a given time, and new violations of the targets are read off the
    explorers' hits (the searches never stop on one, so each scope yields the shortest
    counterexample it has of every invariant)."""

    def __init__(self, cfg: Config, targets: frozenset[str]) -> None:
        self.plan = scoped.scopes(cfg)
        self.explorers = [explore.Explorer(scope, bounds, targets) for scope, bounds in self.plan]
        self.searches = [e.search() for e in self.explorers]
        self.turns = deque(range(len(self.plan)))

    def run(self, seconds: float, targets: frozenset[str]) -> list[tuple[Config, explore.Hit]]:
        """Advance for about `seconds`; (scope configuration, hit) for each target newly violated."""
        end = time.perf_counter() + seconds
        new: dict[str, tuple[Config, explore.Hit]] = {}
        while self.turns and not new and time.perf_counter() < end:
            i = self.turns.popleft()
            if explore.advance(self.searches[i], min(scoped.SLICE, end - time.perf_counter())) is None:
                self.turns.append(i)
            for inv, hit in self.explorers[i].hits.items():
                if inv in targets and inv not in new:
                    new[inv] = (self.plan[i][0], hit)
        return list(new.values())

    def close(self) -> None:
        for i in self.turns:
            explore.stop(self.searches[i])


def portfolio(
    cfg: Config,
    targets: Iterable[str],
    budget: float,
    seed: int = 0,
    rounds: int = 4,
    on_found: Callable[[Found], None] | None = None,
    on_turn: Callable[[str, float], None] | None = None,
) -> PortfolioResult:
    """Hunt `targets` on `cfg` with every method in `rounds` rounds of equal slices of `budget`
    (a method's unused time goes to the slices after it); stops early once every target is
    violated. Each target is reported once, by the method that found it first."""
    start = time.perf_counter()
    remaining = set(targets)
    found: list[Found] = []
    spent = {m: 0.0 for m in METHODS}
    seeds: dict[str, list[int]] = {m: [] for m in METHODS}
    first: dict[str, list[str]] = {m: [] for m in METHODS}
    stateful_seed = seed
    exploration = _ScopedExploration(cfg, frozenset(remaining))

    def record(finding: Finding, method: str, run_seed: int | None) -> None:
        inv = finding.counterexample.invariant
        if inv not in remaining:
            return
        remaining.discard(inv)
        first[method].append(inv)
        f = Found(finding, method, run_seed, time.perf_counter() - start)
        found.append(f)
        if on_found is not None:
            on_found(f)

    try:
        slices = [(r, m) for r in range(rounds) for m in METHODS]
        for k, (r, method) in enumerate(slices):
            left = budget - (time.perf_counter() - start)
            if not remaining or left <= 0:
                break
            share = left / (len(slices) - k)
            if on_turn is not None:
                on_turn(method, share)
            began = time.perf_counter()
            if method == "stateful":
                finding, result = find(cfg, remaining, share, stateful_seed, deadline=start + budget)
                seeds[method] += range(stateful_seed, stateful_seed + result.batches)
                stateful_seed += result.batches
                if finding is not None:
                    record(finding, method, result.seed)
            elif method == "guided":
                run_seed = seed + r
                seeds[method].append(run_seed)
                hit = guided(cfg, run_seed, share, remaining).hit
                if hit is not None:
                    record(explain(cfg, list(hit.shrunk), hit.invariant, hit.message, run_seed, "guided",
                                   len(hit.actions)), method, run_seed)
            else:
                for scope, hit in exploration.run(share, frozenset(remaining)):
                    record(explain(scope, list(hit.actions), hit.invariant, hit.message, None, "explore",
                                   len(hit.actions)), method, None)
            spent[method] += time.perf_counter() - began
    finally:
        exploration.close()
    runs = tuple(MethodRun(m, spent[m], tuple(seeds[m]), tuple(first[m])) for m in METHODS)
    return PortfolioResult(tuple(found), runs, time.perf_counter() - start)
