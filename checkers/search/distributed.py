"""Breadth-first exploration on Spark: the local explorer's search, one level at a time.

The local explorer (explore.py) is one core and one process's memory. Here each level's
frontier is split into files of states under the work directory, one Spark task a file
(`level_tasks.py`: what the tasks run); Python workers expand them with the very functions the
local explorer calls (`explore.controller_space`: `successors` with its bounds, the fingerprint
with its symmetry reduction, the invariants), so the model is not written twice.

Spark holds the fingerprints; the states stay in the work directory. Each state of a level
has a rank, its place in the order the local explorer takes the level in (by least path,
compared action text by action text: `explore.action_text`). A task reports each successor as a
small row (fingerprint, parent fingerprint, action, the task's number, the parent's rank), at
most one a fingerprint (the least (rank, action) the task produced), and writes those
successors' states beside them in one candidate file. Spark de-duplicates the level's rows (one
per fingerprint: the least (rank, action), the parent the local explorer keeps, whatever the
partitioning), anti-joins them against every fingerprint seen, which it keeps partitioned and
spills to disk, and ranks the new states; then each is copied from the candidate file of the
task that produced its winning row into the next frontier's files. A level's links
(fingerprint, parent fingerprint, action) are written as Parquet and kept for good: a
counterexample is rebuilt from them as the local explorer rebuilds it from its parent
pointers, and is the same one. Its frontier is dropped once the next level is done.

Why the states bypass Spark's shuffle: a pickled state is about 1 KB on its own, but a batch of
states from one lineage shares most of its structure (pickle writes a shared object once), so a
file of them costs about a quarter as much to write and an eighth as much to read, and the
executor JVMs only move fingerprints. Measured (docs/performance.md), this doubled each executor's rate and
took two executors from 1.52x one's rate to nearly 2x. On a real cluster the work directory must
be a folder every executor sees at the same path (NFS, say: a rename must be atomic), as the
Parquet links already need.

A level is marked done last, so an interrupted run resumes from the last level done; a run
resumed with other options is refused, naming the option. Files are written under a temporary
name and renamed when complete, so a task that Spark retries leaves nothing half-written.

A state is checked by the worker that expands it (the invariants of a state when it is taken
from the frontier, those of a step when it is taken), so a violation is reported with the level
after the one that reached it, at the depth the local explorer reports it. Fingerprints are
Python hashes, so every worker must hash alike: the workers run `stable_python` (string hashing
seeded with 0, address randomisation off, see there), every level checks that all of them hash
a string and None as level 0 did, and the initial state's fingerprint is taken on a worker.
"""

from __future__ import annotations

import json
import math
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID
from rmqcheck.model import configs
from rmqcheck.model.config import Config
from rmqcheck.outputs import write_atomically

from rmqcheck.checkers.search import explore, scoped
from rmqcheck.checkers.search import level_tasks as tasks
from rmqcheck.checkers.search.coverage import Coverage
from rmqcheck.checkers.search.level_tasks import Files, Job

VERSION = 7  # 4: frontier states carry their rank in the level's canonical order; 5: State.off_controller;
# 6: EpochFile.synced; 7: Broker.closing, FaultBudget.second_removals
ROWS_PER_TASK = 20_000  # at most this many states in a frontier file (one task of the next level)
TASKS_PER_CORE = 4  # a level is cut into about this many tasks a core, while files hold 500 states
MIN_FREE_BYTES = 256 * 2**20  # a level is not started with less free space in the work directory


class ExploreError(Exception):
    """A run that cannot go on: the message says why (a refused resume, a full disk)."""


class _BudgetEnded(Exception):
    """The budget ended while a level was being expanded: its jobs were cancelled."""


class Level(NamedTuple):
    depth: int  # the depth of the states this level's expansion reached
    states: int  # distinct states so far
    new: int  # new at this depth
    transitions: int
    seconds: float  # this level's expansion


def stable_python(cache: Path) -> str:
    """A command running this interpreter with address-space randomisation off (`setarch -R`).

    Fingerprints are Python hashes: string hashing must be seeded alike in every worker
    (PYTHONHASHSEED=0 here, whatever the driver's is), and on Python 3.11 `hash(None)` is the
    address of None, so two worker processes started apart (two executors, or Spark's two kinds
    of Python worker) give one state two fingerprints. With randomisation off every process of
    this interpreter has None at one address. On a real cluster the returned path must exist on
    every executor (the same interpreter and this wrapper at the same path). ExploreError when the
    machine does not allow it."""
    import platform
    import subprocess
    import sys

    setarch = shutil.which("setarch")
    if setarch is None:
        raise ExploreError("setarch (util-linux) is not installed: Spark workers would hash states differently")
    cmd = [setarch, platform.machine(), "-R", sys.executable, "-c", "print(id(None))"]
    try:
        seen = {subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout for _ in range(2)}
    except (OSError, subprocess.SubprocessError) as exc:
        raise ExploreError(f"cannot run Python with address randomisation off ({exc}): Spark workers would hash "
                           f"states differently") from None
    if len(seen) != 1:
        raise ExploreError("address randomisation stays on under setarch -R: Spark workers would hash states differently")
    cache.mkdir(parents=True, exist_ok=True)
    wrapper = cache / "python-no-aslr"
    text = (f'#!/bin/sh\nPYTHONHASHSEED=0 exec "{setarch}" "{platform.machine()}" -R "{sys.executable}" "$@"\n')
    if not wrapper.exists() or wrapper.read_text() != text:
        wrapper.write_text(text)
        wrapper.chmod(0o755)
    return str(wrapper.resolve())


def options(cfg: Config, bounds: explore.Bounds, targets: frozenset[str], stop_on: frozenset[str]) -> dict[str, Any]:
    """What a run's answers depend on: a resumed run must have the same."""
    return {"version": VERSION, "config": configs.to_dict(cfg), "bounds": bounds._asdict(),
            "invariants": sorted(targets), "stop_on": sorted(stop_on)}


class SparkExplorer:
    """`explore.Explorer`'s breadth-first search as Spark jobs (see the module docstring)."""

    def __init__(self, spark: Any, cfg: Config, bounds: explore.Bounds, work_dir: str | Path,
                 invariants: set[str] | frozenset[str] | None = None, fail_once: str | None = None) -> None:
        self.spark, self.cfg, self.bounds = spark, cfg, bounds
        self.work = Path(work_dir).absolute()
        self.targets = frozenset(BY_ID if invariants is None else invariants)
        self.job = Job(cfg, bounds, invariants is None or explore.GHOST_READER in self.targets)
        self.fail_once = fail_once
        self._cut = threading.Event()  # set when the budget ends within the level being expanded
        self.known: float = 0  # every violation at most this long is known (inf: exhausted)

    # --- the work directory ----------------------------------------------------------------------

    def _level_dir(self, depth: int) -> Path:
        return self.work / f"level-{depth:04d}"

    def _done(self) -> list[dict]:
        """The done marks of the levels written, in order (stops at the first level not done)."""
        out = []
        while (self._level_dir(len(out)) / "DONE").exists():
            out.append(_read_json(self._level_dir(len(out)) / "DONE"))
        return out

    def _open(self, opts: dict[str, Any]) -> list[dict]:
        manifest = self.work / "manifest.json"
        if manifest.exists():
            old = _read_json(manifest)
            for key in opts:
                was, now = old.get(key), opts[key]
                if was != now:
                    if isinstance(was, dict) and isinstance(now, dict):  # name the fields that differ
                        was, now = ({k: d.get(k) for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k)}
                                    for d in (was, now))
                    raise ExploreError(f"{self.work} holds a run with other {key.replace('_', ' ')} ({was}, now {now}): "
                                       f"resume it with the same options, or use another --work-dir")
            return self._done()
        self.work.mkdir(parents=True, exist_ok=True)
        if any(self.work.iterdir()):
            raise ExploreError(f"{self.work} is not empty and holds no exploration to resume")
        write_atomically(manifest, json.dumps(opts, indent=1))
        return []

    def _check_space(self) -> None:
        free = shutil.disk_usage(self.work).free
        if free < MIN_FREE_BYTES:
            raise ExploreError(f"{self.work}: only {free / 2**20:.0f} MiB free; a level needs room to spill and write "
                               f"(at least {MIN_FREE_BYTES / 2**20:.0f} MiB): free some or use another --work-dir")

    def _write(self, df: Any, path: Path) -> None:
        try:
            self._spark(f"writing {path}", lambda: df.write.mode("overwrite").parquet(str(path)))
        except (ExploreError, _BudgetEnded):
            raise
        except Exception as exc:  # the JVM's IOException, e.g. no space left on the device
            first = next((line for line in str(exc).splitlines() if "Exception" in line or "space" in line),
                         str(exc)[:300])
            raise ExploreError(f"{path}: could not write the level ({first.strip()[:300]})") from None

    def _spark(self, what: str, action: Callable[[], Any]) -> Any:
        """Run a Spark action. A worker's failed read or write of the work directory (a full
        disk, say) is an ExploreError naming the file, not a Java stack trace; an action the
        budget's end cancelled, or one due after it, is _BudgetEnded."""
        if self._cut.is_set():
            raise _BudgetEnded()
        try:
            result = action()
        except Exception as exc:
            reason = tasks.io_error_reason(str(exc))
            if reason is not None:
                raise ExploreError(f"{what}: {reason}") from None
            if self._cut.is_set():
                raise _BudgetEnded() from None
            raise
        if self._cut.is_set():
            raise _BudgetEnded()
        return result

    # --- the search ------------------------------------------------------------------------------

    def _start(self) -> dict:
        """Level 0: the initial state, its fingerprint taken on a worker, and the bootstrap's checks."""
        space = explore.controller_space(self.cfg, self.bounds, self.job.ghost)
        s0 = space.initial
        job = self.job
        first = self.spark.range(1, numPartitions=1).mapInArrow(
            lambda it: tasks.initial_fingerprint(job, it), "fp long, hashes string").first()
        fp0, hashes = first["fp"], first["hashes"]
        level = self._level_dir(0)
        df = self.spark.createDataFrame([(fp0, None, None)], "fp long, parent long, action string")
        self._write(df, level / "links")
        try:
            tasks.save_states(level / "frontier" / "00000-0000.pkl", [(fp0, s0, explore.NO_SLEEP, 0)])
        except OSError as exc:
            raise ExploreError(tasks.io_error_reason(str(exc))) from None
        hits = {v.invariant: {"message": v.message, "fp": None, "depth": 0, "action": None}
                for v in space.check_start(s0, self.targets)}
        done = {"depth": 0, "states": 1, "new": 1, "transitions": 0, "pruned": 0, "slept": 0, "seconds": 0.0,
                "hits": hits, "actions": {}, "reached": [], "hashes": hashes, "frontier": ["00000-0000.pkl"]}
        write_atomically(level / "DONE", json.dumps(done))
        return done

    def _expand_level(self, last: dict, targets: frozenset[str]) -> tuple[list, int, list[str]]:
        """Expand the frontier at `last`'s depth and write the next level's links and frontier:
        (the workers' tallies and violations, the number of new states, the new frontier files)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        depth = last["depth"]
        job, fail_once = self.job, self.fail_once
        here, there = self._level_dir(depth), self._level_dir(depth + 1)
        shutil.rmtree(there, ignore_errors=True)  # what an interrupted expansion left
        files = Files(tuple(str(here / "frontier" / f) for f in last["frontier"]), str(there / "candidates"),
                      str(there / "frontier"))
        seen = self.spark.read.parquet(*[str(self._level_dir(d) / "links") for d in range(depth + 1)]).select("fp")
        one_a_file = self.spark.range(len(files.frontier), numPartitions=len(files.frontier))
        out = one_a_file.mapInArrow(lambda it: tasks.expand(job, depth, targets, files, it, fail_once), tasks.OUT_DDL)
        succ = out.filter(F.col("kind") == "s").select("fp", "parent", "action", "src", "rank")
        best = succ.groupBy("fp").agg(F.min(F.struct("rank", "action", "parent", "src")).alias("m"))
        best = best.select("fp", "m.rank", "m.action", "m.parent", "m.src")
        new = best.join(seen, "fp", "left_anti")
        out.persist(StorageLevel.MEMORY_AND_DISK)  # marks only: nothing runs before the try
        new.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            small = self._spark(f"expanding level {depth}", lambda: out.filter(F.col("kind") != "s").collect())
            count = self._spark(f"de-duplicating level {depth + 1}", new.count)
            frontier: list[str] = []
            if count:
                self._write(new.select("fp", "parent", "action"), there / "links")
                parallelism = self.spark.sparkContext.defaultParallelism
                chunk = max(min(ROWS_PER_TASK, -(-count // (TASKS_PER_CORE * parallelism))), 500)
                # The new level's ranks: its order by (parent's rank, action), as increasing ids
                # (a sort's partitions are in order, and so are the ids within each).
                ranked = new.orderBy("rank", "action").select("fp", "src", F.monotonically_increasing_id().alias("rank"))
                winners = ranked.repartition(max(parallelism, -(-count // ROWS_PER_TASK)), "src")
                written = self._spark(f"writing level {depth + 1}", lambda: winners.mapInArrow(
                    lambda it: tasks.select(files, chunk, depth, it, fail_once), "file string, states long").collect())
                if sum(r["states"] for r in written) != count:
                    raise ExploreError(f"{there}: the frontier files hold {sum(r['states'] for r in written)} states, "
                                       f"not the level's {count}")
                frontier = sorted(r["file"] for r in written)
        finally:
            new.unpersist()
            out.unpersist()
        shutil.rmtree(there / "candidates", ignore_errors=True)
        return small, count, frontier

    def _expand_cut_at(self, last: dict, targets: frozenset[str], deadline: float | None):
        """`_expand_level`, its Spark jobs cancelled at `deadline` (_BudgetEnded, and the
        level's partial files removed)."""
        self._cut = flag = threading.Event()  # a new one a level: a late timer cannot cut the next
        if deadline is None:
            return self._expand_level(last, targets)
        sc = self.spark.sparkContext
        tag = f"rmqcheck-explore-{id(self)}-level-{last['depth'] + 1}"  # this thread's jobs of this level only
        sc.addJobTag(tag)
        sc.setInterruptOnCancel(True)

        def cut() -> None:
            flag.set()
            sc.cancelJobsWithTag(tag)

        timer = threading.Timer(max(deadline - time.perf_counter(), 0.0), cut)
        timer.start()
        try:
            return self._expand_level(last, targets)
        except _BudgetEnded:
            self._await_cancelled_tasks()
            shutil.rmtree(self._level_dir(last["depth"] + 1), ignore_errors=True)
            raise
        finally:
            timer.cancel()
            sc.removeJobTag(tag)
            sc.setInterruptOnCancel(False)

    def _await_cancelled_tasks(self, seconds: float = 60.0) -> None:
        """Wait (a while at most) until the executors have killed the cancelled tasks, so that
        stopping Spark does not cut them off mid-request and few still write into the level's
        folder when it is removed (what a late one writes there is harmless: a level without its
        done mark is removed before it is expanded again)."""
        tracker = self.spark.sparkContext._jsc.sc().statusTracker()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end and sum(e.numRunningTasks() for e in tracker.getExecutorInfos()):
            time.sleep(0.2)

    def run(self, budget: float | None = None, stop_on: set[str] | frozenset[str] = (),
            progress: Callable[[Level], None] | None = None, cut: bool = True,
            until: float | None = None) -> explore.Result:
        """Explore until the space is exhausted, `budget` seconds pass, an invariant in
        `stop_on` is violated (once the level of that violation's state has been expanded, so
        that every violation as short is known), or every violation at most `until` steps long
        is known (stopped "depth"). The first level of a call is always completed,
        so that every call advances; the level running when the budget ends is cancelled (its
        states are not counted, and a resumed run starts it again), or with `cut` off completed."""
        stop_on = frozenset(stop_on)
        done = self._open(options(self.cfg, self.bounds, self.targets, stop_on))
        start = time.perf_counter()
        if not done:
            done = [self._start()]
        last = done[-1]
        hits: dict[str, dict] = dict(last["hits"])
        # Violations up to the last level expanded are all known (level 0: the start's checks).
        known = max(last["depth"] - 1, 0)
        stopped = "violation" if any(_length(hits[i]) <= known for i in stop_on & hits.keys()) else None
        depth = last["depth"]
        while stopped is None:
            if depth > 0 and last["new"] == 0:
                break  # the space is exhausted
            if until is not None and max(depth - 1, 0) >= until:
                stopped = "depth"
                break
            if budget is not None and depth > done[-1]["depth"] and time.perf_counter() - start >= budget:
                stopped = "budget"  # checked between levels, after one level at least
                break
            self._check_space()
            began = time.perf_counter()
            remaining = self.targets - hits.keys()
            # Shuffle partitions for the level's successor rows (about three a state, 40 bytes
            # each); AQE merges small ones.
            shuffle = max(8, 2 * self.spark.sparkContext.defaultParallelism, 3 * last["new"] // 200_000)
            self.spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
            first = depth == done[-1]["depth"]
            deadline = None if budget is None or first or not cut else start + budget
            try:
                small, count, frontier = self._expand_cut_at(last, frozenset(remaining), deadline)
            except _BudgetEnded:
                stopped = "budget"
                break
            totals = _merge(last, small, depth, remaining, hits)
            last = {**totals, "depth": depth + 1, "states": last["states"] + count, "new": count,
                    "seconds": time.perf_counter() - began, "hits": hits, "frontier": frontier}
            level = self._level_dir(depth + 1)
            level.mkdir(parents=True, exist_ok=True)
            write_atomically(level / "DONE", json.dumps(last))
            shutil.rmtree(self._level_dir(depth) / "frontier", ignore_errors=True)
            if progress is not None:
                progress(Level(depth + 1, last["states"], count, last["transitions"], last["seconds"]))
            # Every violation up to this depth is known once its states were expanded (a step's
            # violation one step deeper is known, a state's there not yet): stop then, so the
            # shortest of each invariant is the local explorer's.
            if any(_length(hits[i]) <= depth for i in stop_on & hits.keys()):
                stopped = "violation"
            depth += 1
        self.known = math.inf if stopped is None else max(depth - 1, 0)
        levels = tuple(d["new"] for d in self._done())
        if levels and levels[-1] == 0:
            levels = levels[:-1]
        coverage = Coverage(self.cfg)
        coverage.actions = dict(last["actions"])
        coverage.pending = [w for w in coverage.pending if w.name not in last["reached"]]
        n = last["states"]
        return explore.Result(
            states=n, transitions=last["transitions"], depth=len(levels) - 1, seconds=time.perf_counter() - start,
            exhaustive=stopped is None, stopped=stopped or "exhausted", pruned=last["pruned"],
            hits={inv: explore.Hit(inv, h["message"], self._path(h)) for inv, h in hits.items()},
            coverage=coverage, collision_bound=n * n / 2.0**64, graph=None, levels=levels, slept=last["slept"],
        )

    def _path(self, hit: dict) -> tuple:
        """The actions from the initial state to a violation: the parent links followed back from
        the state it was found at (`fp` at `depth`), plus the step that violated, if any."""
        from pyspark.sql import functions as F

        actions = [] if hit["action"] is None else [tuple(json.loads(hit["action"]))]
        fp, depth = hit["fp"], hit["depth"]
        while depth > 0:
            row = (self.spark.read.parquet(str(self._level_dir(depth) / "links"))
                   .filter(F.col("fp") == fp).select("parent", "action").first())
            actions.append(tuple(json.loads(row["action"])))
            fp, depth = row["parent"], depth - 1
        return tuple(reversed(actions))


def _read_json(path: Path) -> dict:
    """A manifest or done mark of the work directory; ExploreError, naming it, if damaged."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExploreError(f"{path}: cannot read this run's record ({exc}): restore it, or use another "
                           f"--work-dir") from None


def _length(hit: dict) -> int:
    """A hit's counterexample length: the depth of its state, plus its step if it is a step's."""
    return hit["depth"] + (hit["action"] is not None)


def _merge(last: dict, small: list, depth: int, targets: frozenset[str], hits: dict) -> dict:
    """Add a level's tallies to the totals and record its violations in `hits`: per invariant
    the least (state's rank, step) of the level, the one the local explorer meets first."""
    transitions, pruned, slept = last["transitions"], last["pruned"], last["slept"]
    actions = dict(last["actions"])
    reached = set(last["reached"])
    found: dict[str, tuple] = {}
    for r in small:
        if r["kind"] == "c":
            t = json.loads(r["msg"])
            if t["hashes"] != last["hashes"]:
                raise ExploreError("Spark workers hash differently (PYTHONHASHSEED, or address randomisation on in "
                                   "some), so one state would get two fingerprints: run the workers with "
                                   "`stable_python`'s wrapper")
            transitions += t["transitions"]
            pruned += t["pruned"]
            slept += t["slept"]
            for k, v in t["actions"].items():
                actions[k] = actions.get(k, 0) + v
            reached.update(t["reached"])
        elif r["inv"] in targets:
            key = (r["action"] != "", r["rank"], r["action"], r["msg"], r["parent"])
            if r["inv"] not in found or key < found[r["inv"]]:
                found[r["inv"]] = key
    for inv, (_, _, action, message, parent) in found.items():
        hits[inv] = {"message": message, "fp": parent, "depth": depth, "action": action or None}
    return {"transitions": transitions, "pruned": pruned, "slept": slept, "actions": actions,
            "reached": sorted(reached), "hashes": last["hashes"]}


SLICE = 30.0  # seconds a scope's exploration runs (a level at least) before the next scope's turn
SETTLE = 120.0  # seconds settling the other scopes gets at least: each level costs a few Spark jobs


class _SparkScope:
    """A scope on Spark for `scoped.hunt_scopes`: its exploration resumed a SLICE at a time."""

    def __init__(self, explorer: SparkExplorer, targets: frozenset[str], budget: scoped.Budget,
                 progress: Callable[[Level], None] | None) -> None:
        self.explorer, self.targets, self.budget, self.progress = explorer, targets, budget, progress
        self.ended, self.last = False, None

    @property
    def known(self) -> float:
        return self.explorer.known

    def turn(self, need: float) -> None:
        self.last = self.explorer.run(min(SLICE, self.budget.left()), stop_on=self.targets, cut=False,
                                      progress=self.progress, until=None if need == math.inf else need)
        self.ended = self.last.stopped in ("violation", "exhausted")

    def hits(self) -> dict[str, explore.Hit]:
        return {} if self.last is None else self.last.hits

    def result(self) -> explore.Result | None:
        return self.last  # None if it never had a turn


def hunt(spark: Any, cfg: Config, targets: set[str] | frozenset[str], budget: float, work_root: str | Path,
         progress: Callable[[str, Level], None] | None = None) -> tuple[scoped.ScopedHit | None, list]:
    """`scoped.hunt` on Spark: the same scopes, each explored level by level under `work_root`
    in turns of SLICE seconds (a level at least, so a turn can overshoot the budget by a level),
    and the same answer."""
    targets = frozenset(targets)
    plan = scoped.scopes(cfg)
    left = scoped.Budget(budget, None, SETTLE)
    searches = [
        _SparkScope(SparkExplorer(spark, scope, bounds, Path(work_root) / f"scope-{i}", targets), targets, left,
                    None if progress is None else
                    (lambda p, label=scoped.describe_scope(scope, bounds): progress(label, p)))
        for i, (scope, bounds) in enumerate(plan)
    ]
    return scoped.hunt_scopes(plan, searches, targets, left)
