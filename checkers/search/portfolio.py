"""A portfolio hunt: every search method on one configuration, sharing one budget.

No single method finds every bug soonest (the bug table in docs/bugs.md says which found each):
the Hypothesis stateful hunt shrinks well, guided walks reach deep states from a corpus,
breadth-first exploration of growing scopes finds the shortest counterexample of a small one.
So a portfolio runs them all, each in turns (`rounds` of them) with fresh seeds per turn
(stateful batches continue where the last turn stopped; guided walks take seed, seed + 1, ...,
optionally with stratified swarm rounds every STRATIFIED_EVERY-th turn; exploration is
deterministic and resumes where it stopped). A target invariant found by one method is dropped
from every method's targets; the first finding of each says which method, which seed and how
many seconds into the hunt it took.

With one job the methods take turns on one core, each a third of the budget. With two or more
they run side by side, a process each, every one for the whole budget: on two cores each gets
two thirds of a core instead of one third of one, so a method that needs a minute of its own
(the reach issue's stateful find at 64 s, starved to 44-65 s of turns in a 120 s portfolio)
gets it. bench/portfolio_split.py measures both against the bug table.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
import traceback
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Callable, Iterable, NamedTuple

from rmqcheck.model.config import Config

from rmqcheck.checkers.search import explore, scoped
from rmqcheck.checkers.search.hunting import Finding, explain, find
from rmqcheck.checkers.search.walk import guided

# In this order within a round: a stateful batch overshoots its slice (up to the portfolio's end; the budget is checked
# between batches), so it goes last and the next round's shares absorb it.
METHODS = ("guided", "explore", "stateful")
# With STRATIFIED_EVERY = k > 0, every k-th guided turn (with 2: the second, the fourth, ...) runs
# stratified swarm rounds (walk.py), which reach a restart with the saved confirmOffset inside a
# message that plain rounds never reach (issue 43); the first turn, where plain rounds find most
# toggles, stays plain. 0 (none): with 2, `bench/portfolio_split.py --compare stratified` found two
# toggles later and as many sooner (docs/exploration.md).
STRATIFIED_EVERY = 0


class Found(NamedTuple):
    finding: Finding
    method: str
    seed: int | None  # None for exploration (deterministic)
    at: float  # seconds into the portfolio when the method reported it


class MethodRun(NamedTuple):
    """What one method did over the whole portfolio."""

    method: str
    seconds: float  # in turns: its turns' time; side by side: the wall time its process ran
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


class _Turns:
    """One method's turns: each `turn` runs it for about `seconds` on the targets still left and
    returns what it found, as (finding, seed) pairs."""

    def __init__(self, method: str, cfg: Config, targets: frozenset[str], seed: int, deadline: float) -> None:
        self.method, self.cfg, self.deadline = method, cfg, deadline
        self.seeds: list[int] = []
        self.next_seed = seed  # stateful: the next batch; guided: the next turn's seed
        self.exploration = _ScopedExploration(cfg, targets) if method == "explore" else None

    def turn(self, seconds: float, remaining: set[str]) -> list[tuple[Finding, int | None]]:
        cfg = self.cfg
        if self.method == "stateful":
            finding, result = find(cfg, remaining, seconds, self.next_seed, deadline=self.deadline)
            self.seeds += range(self.next_seed, self.next_seed + result.batches)
            self.next_seed += result.batches
            return [] if finding is None else [(finding, result.seed)]
        if self.method == "guided":
            run_seed = self.next_seed
            stratified = STRATIFIED_EVERY > 0 and len(self.seeds) % STRATIFIED_EVERY == STRATIFIED_EVERY - 1
            self.seeds.append(run_seed)
            self.next_seed += 1
            hit = guided(cfg, run_seed, seconds, remaining, stratified=stratified).hit
            if hit is None:
                return []
            return [(explain(cfg, list(hit.shrunk), hit.invariant, hit.message, run_seed, "guided", len(hit.actions)),
                     run_seed)]
        assert self.exploration is not None
        return [(explain(scope, list(hit.actions), hit.invariant, hit.message, None, "explore", len(hit.actions)), None)
                for scope, hit in self.exploration.run(seconds, frozenset(remaining))]

    def close(self) -> None:
        if self.exploration is not None:
            self.exploration.close()


def portfolio(
    cfg: Config,
    targets: Iterable[str],
    budget: float,
    seed: int = 0,
    rounds: int = 4,
    on_found: Callable[[Found], None] | None = None,
    on_turn: Callable[[str, float], None] | None = None,
    jobs: int = 1,
) -> PortfolioResult:
    """Hunt `targets` on `cfg` with every method, `rounds` turns each (in turns on one core with
    one job, each turn an equal slice of what is left; side by side with more); stops early once
    every target is violated. Each target is reported once, by the method that found it first."""
    start = time.perf_counter()
    remaining = set(targets)
    found: list[Found] = []
    first: dict[str, list[str]] = {m: [] for m in METHODS}

    def record(finding: Finding, method: str, run_seed: int | None) -> bool:
        """Whether it was new."""
        inv = finding.counterexample.invariant
        if inv not in remaining:
            return False
        remaining.discard(inv)
        first[method].append(inv)
        f = Found(finding, method, run_seed, time.perf_counter() - start)
        found.append(f)
        if on_found is not None:
            on_found(f)
        return True

    if jobs > 1:
        spent, seeds = _side_by_side(cfg, remaining, budget, seed, rounds, record, on_turn)
    else:
        spent, seeds = _in_turns(cfg, remaining, budget, seed, rounds, record, on_turn)
    runs = tuple(MethodRun(m, spent[m], tuple(seeds[m]), tuple(first[m])) for m in METHODS)
    return PortfolioResult(tuple(found), runs, time.perf_counter() - start)


def _in_turns(cfg, remaining, budget, seed, rounds, record, on_turn):
    start = time.perf_counter()
    methods = {m: _Turns(m, cfg, frozenset(remaining), seed, start + budget) for m in METHODS}
    spent = {m: 0.0 for m in METHODS}
    try:
        slices = [m for _ in range(rounds) for m in METHODS]
        for k, method in enumerate(slices):
            left = budget - (time.perf_counter() - start)
            if not remaining or left <= 0:
                break
            share = left / (len(slices) - k)
            if on_turn is not None:
                on_turn(method, share)
            began = time.perf_counter()
            for finding, run_seed in methods[method].turn(share, remaining):
                record(finding, method, run_seed)
            spent[method] += time.perf_counter() - began
    finally:
        for m in methods.values():
            m.close()
    return spent, {m: methods[m].seeds for m in METHODS}


def _side_by_side(cfg, remaining, budget, seed, rounds, record, on_turn):
    """A process per method until the portfolio's deadline. Each sends ("turn", seeds) as a turn
    starts (the seeds it runs, as far as known then: a stateful turn's later batches come with
    its end), ("found", finding, seed) for each finding, ("turn ended", seeds) and ("done",) at its
    end; the parent sends each a target another found, read between turns. Once every target is
    found the others stop. Forked while the progress bar's thread runs, as processes.workers
    does: the children never print."""
    context = multiprocessing.get_context("fork")
    start = time.perf_counter()
    deadline = start + budget  # perf_counter is the system's monotonic clock: the same in every process
    procs: dict[Connection, tuple[str, multiprocessing.process.BaseProcess]] = {}
    seeds: dict[str, list[int]] = {m: [] for m in METHODS}
    spent = {m: 0.0 for m in METHODS}
    if on_turn is not None:
        on_turn("side by side", budget)
    try:
        # Ctrl-C is held back while forking (processes.workers says why); a child ignores it, and
        # the parent, which gets it once the mask is lifted, stops every method at once.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for method in METHODS:
                ours, theirs = context.Pipe()
                p = context.Process(target=_method_process, name=f"portfolio-{method}", daemon=True,
                                    args=(method, cfg, frozenset(remaining), seed, rounds, deadline, theirs))
                p.start()
                theirs.close()
                procs[ours] = (method, p)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        running = set(procs)
        while running and remaining:
            for conn in wait(running):
                method, p = procs[conn]
                try:
                    message = conn.recv()
                except EOFError:
                    p.join()
                    raise RuntimeError(f"the portfolio's {method} process ended with exit code {p.exitcode} "
                                       "and no result") from None
                if message[0] in ("turn", "turn ended"):
                    seeds[method] += message[1]
                elif message[0] == "found":
                    _, finding, run_seed = message
                    if record(finding, method, run_seed):
                        for other in running - {conn}:
                            _tell(other, finding.counterexample.invariant)
                elif message[0] == "error":
                    raise RuntimeError(f"the portfolio's {method} process failed:\n{message[1]}")
                elif message[0] == "done":
                    spent[method] = time.perf_counter() - start
                    running.discard(conn)
                else:
                    raise AssertionError(f"the portfolio's {method} process sent {message!r}")
        for conn in running:
            spent[procs[conn][0]] = time.perf_counter() - start
    finally:
        for conn, (_, p) in procs.items():
            if p.is_alive():
                p.terminate()
            p.join()
            conn.close()
    return spent, seeds


def _tell(conn: Connection, invariant: str) -> None:
    try:
        conn.send(invariant)
    except (BrokenPipeError, ConnectionResetError):
        pass  # that method has just ended


def _method_process(method: str, cfg: Config, targets: frozenset[str], seed: int, rounds: int, deadline: float,
                    conn: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops every method at once
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    remaining = set(targets)
    turns = None
    try:
        turns = _Turns(method, cfg, targets, seed, deadline)
        for k in range(rounds):
            while conn.poll():
                remaining.discard(conn.recv())
            left = deadline - time.perf_counter()
            if not remaining or left <= 0:
                break
            conn.send(("turn", [] if method == "explore" else [turns.next_seed]))
            before = len(turns.seeds)
            for finding, run_seed in turns.turn(left / (rounds - k), remaining):
                remaining.discard(finding.counterexample.invariant)
                conn.send(("found", finding, run_seed))
            conn.send(("turn ended", turns.seeds[before + 1:]))  # a stateful turn's later batches
        conn.send(("done",))
    except Exception:
        conn.send(("error", traceback.format_exc()))
    finally:
        if turns is not None:
            turns.close()
        conn.close()
