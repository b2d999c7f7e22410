"""A swarm: N independent seeds of one seeded method on one configuration, run side by side;
the first finding wins and the others are stopped.

Each seed is one task: a process of this machine (`engine="local"`), or a Spark task on any
cluster (`engine="spark"`: each seed its own Spark job, in its own job group, so the losers are
cancelled when one finds). A seed's result does not depend on where it ran: a task runs the same
method with the same seed and budget as `rmqcheck hunt --seed S` does.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, Callable, Iterable, NamedTuple

from rmqcheck.model.config import Config
from rmqcheck.processes import workers

from rmqcheck.checkers.search.hunting import Finding, explain, find
from rmqcheck.checkers.search.walk import WALK_DEPTH, guided, walk

METHODS = ("stateful", "walk", "guided")


class SeedRun(NamedTuple):
    seed: int
    finding: Finding | None
    seconds: float


def run_seed(task: tuple[Config, frozenset[str], str, int, float]) -> SeedRun:
    """One seed of one method, as `rmqcheck hunt --method M --seed S --budget B` runs it."""
    cfg, targets, method, seed, budget = task
    start = time.perf_counter()
    if method == "stateful":
        finding, _ = find(cfg, targets, budget, seed)
    else:
        r = (walk(cfg, seed, WALK_DEPTH, budget, targets) if method == "walk" else guided(cfg, seed, budget, targets))
        h = r.hit
        finding = h and explain(cfg, list(h.shrunk), h.invariant, h.message, seed, method, len(h.actions))
    return SeedRun(seed, finding, time.perf_counter() - start)


def swarm(cfg: Config, targets: Iterable[str], method: str, seeds: Iterable[int], budget: float, jobs: int = 1,
          spark: Any = None, on_run: Callable[[SeedRun], None] | None = None) -> tuple[SeedRun | None, list[SeedRun]]:
    """Run every seed (jobs at a time locally, as Spark schedules them with `spark`) until one
    finds: (the first finding's run, every run that ended)."""
    tasks = [(cfg, frozenset(targets), method, seed, budget) for seed in seeds]
    runner = _spark_swarm if spark is not None else _local_swarm
    ended: list[SeedRun] = []

    def done(r: SeedRun) -> bool:
        ended.append(r)
        if on_run is not None:
            on_run(r)
        return r.finding is not None

    winner = runner(tasks, jobs if spark is None else spark, done)
    return winner, ended


def _local_swarm(tasks: list, jobs: int, done: Callable[[SeedRun], bool]) -> SeedRun | None:
    with workers(max(1, min(jobs, len(tasks)))) as pool:  # leaving the block terminates the losers
        for r in pool.imap_unordered(run_seed, tasks):
            if done(r):
                return r
    return None


def _spark_swarm(tasks: list, spark: Any, done: Callable[[SeedRun], bool]) -> SeedRun | None:
    sc = spark.sparkContext
    lock = threading.Lock()
    won: list[SeedRun] = []

    def one(i: int, task: tuple) -> SeedRun | None:
        sc.setJobGroup(f"rmqcheck-swarm-{i}", f"swarm seed {task[3]}", interruptOnCancel=True)
        try:
            return sc.parallelize([task], 1).map(run_seed).collect()[0]
        except Exception:
            if won:  # cancelled: another seed won
                return None
            raise

    def one_unless_won(i: int, task: tuple) -> SeedRun | None:
        return None if won else one(i, task)  # a seed not started when another won never starts

    with ThreadPoolExecutor(len(tasks)) as threads:
        pending = {threads.submit(one_unless_won, i, t): i for i, t in enumerate(tasks)}
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    pending.pop(f)
                    r = f.result()
                    with lock:
                        if r is not None and not won and done(r):
                            won.append(r)
                            for i in pending.values():
                                sc.cancelJobGroup(f"rmqcheck-swarm-{i}")
        finally:  # an error or Ctrl-C: stop every seed still running
            won.append(None)
            for i in range(len(tasks)):
                sc.cancelJobGroup(f"rmqcheck-swarm-{i}")
    return won[0]
