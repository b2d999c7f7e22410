"""Breadth-first exploration on Spark: the local explorer's search, one level at a time.

The local explorer (explore.py) is one core and one process's memory. Here each level's
frontier is a Spark dataset of (fingerprint, state); Python workers expand it with the very
functions the local explorer calls (`explore.controller_space`: `successors` with its bounds,
the fingerprint with its symmetry reduction, the invariants), so the model is not written twice.
A level's successors are de-duplicated (one row per fingerprint: the least (parent, action), so
the result does not depend on partitioning) and anti-joined against every fingerprint seen,
which Spark keeps partitioned and spills to disk. Each level is written under the work
directory as Parquet: its links (fingerprint, parent fingerprint, action), kept for good, from
which the shortest counterexample is rebuilt as the local explorer rebuilds it from its parent
pointers, and its frontier (fingerprint, pickled state and its sleep set), dropped once the next
level is written.
A level is marked done last, so an interrupted run resumes from the last level done; a run
resumed with other options is refused, naming the option.

A state is checked by the worker that expands it (the invariants of a state when it is taken
from the frontier, those of a step when it is taken), so a violation is reported with the level
after the one that reached it, at the depth the local explorer reports it. Fingerprints are
Python hashes, so every worker must hash alike: the workers run `stable_python` (string hashing
seeded with 0, address randomisation off, see there), every level checks that all of them hash
a string and None as level 0 did, and the initial state's fingerprint is taken on a worker.
"""

from __future__ import annotations

import json
import pickle
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

import pyarrow as pa

from rmqcheck.invariants.catalogue import BY_ID
from rmqcheck.model import configs
from rmqcheck.model.config import Config

from rmqcheck.checkers.search import explore
from rmqcheck.checkers.search.coverage import Coverage, WITNESSES

VERSION = 2  # 2: a frontier row holds (state, sleep set)
# One row schema for everything a worker reports: successors (s), violations (v) and the
# partition's tallies (c: transitions, pruned, action counts and witnesses reached, as JSON).
OUT = pa.schema([("kind", pa.string()), ("inv", pa.string()), ("msg", pa.string()), ("parent", pa.int64()),
                 ("action", pa.string()), ("fp", pa.int64()), ("state", pa.binary())])
OUT_DDL = "kind string, inv string, msg string, parent long, action string, fp long, state binary"
ROWS_PER_TASK = 20_000  # frontier rows per task of the next level
MIN_FREE_BYTES = 256 * 2**20  # a level is not started with less free space in the work directory


class ExploreError(Exception):
    """A run that cannot go on: the message says why (a refused resume, a full disk)."""


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


class Job(NamedTuple):
    """What a worker needs to build the search space: the same as the local explorer's."""

    cfg: Config
    bounds: explore.Bounds
    ghost: bool


_SPACES: dict[Job, explore.Space] = {}  # per worker process


def _space(job: Job) -> explore.Space:
    space = _SPACES.get(job)
    if space is None:
        space = _SPACES[job] = explore.controller_space(job.cfg, job.bounds, job.ghost)
    return space


def _batch(rows: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*rows)) if rows else [()] * len(OUT)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, OUT)], schema=OUT)


def expand(job: Job, depth: int, targets: frozenset[str], batches: Iterator[pa.RecordBatch],
           fail_once: str | None = None) -> Iterator[pa.RecordBatch]:
    """A partition of one level's frontier expanded: each state's invariants, then (within the
    bounds) its successors with each step's invariants; successors already produced in this
    partition are kept once, the least (parent, action) among them."""
    if fail_once:  # a test's injected task failure: the first attempt of each task fails
        marker = Path(fail_once) / f"{depth}"
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            raise RuntimeError("injected task failure (the first attempt)")
    space = _space(job)
    coverage = Coverage(job.cfg)
    transitions = pruned = slept = 0
    sleeping = space.footprint is not None
    best: dict[int, tuple[int, str, Any]] = {}
    # Per invariant the least (is a step's, state, step, message): a state's violation is one
    # step shorter than a step's from it.
    violations: dict[str, tuple[bool, int, str, str]] = {}

    def note(found: list, fp: int, action: str) -> None:
        for v in found:
            key = (action != "", fp, action, v.message)
            if v.invariant not in violations or key < violations[v.invariant]:
                violations[v.invariant] = key

    for b in batches:
        for fp, blob in zip(b.column("fp").to_pylist(), b.column("state").to_pylist()):
            s, sleep = pickle.loads(blob)
            note(space.check_state(s, targets), fp, "")
            if not space.expands(s, depth):
                pruned += 1
                continue
            succ = space.successors(s, sleep)
            slept += len(sleep)
            sets = explore.SleepSets(space, s, [a for a, _ in succ] + list(sleep)) if sleeping else None
            for a, n in succ:
                transitions += 1
                coverage.record(s, a, n)
                action = json.dumps(a)
                k = space.key(n)
                note(space.check_transition(s, a, n, targets), fp, action)
                kept = best.get(k)
                if kept is None or (fp, action) < kept[:2]:
                    best[k] = (fp, action, (n, sets.after(a) if sets else explore.NO_SLEEP))
    tally = {"transitions": transitions, "pruned": pruned, "slept": slept, "actions": coverage.actions,
             "hashes": _hashes(),
             "reached": [w.name for w in WITNESSES if w.applies(job.cfg) and w not in coverage.pending]}
    rows = [("v", inv, msg, fp, action, None, None) for inv, (_, fp, action, msg) in violations.items()]
    rows.append(("c", None, json.dumps(tally), None, None, None, None))
    yield _batch(rows)
    chunk: list[tuple] = []
    for k, (parent, action, state_and_sleep) in best.items():
        chunk.append(("s", None, None, parent, action, k, pickle.dumps(state_and_sleep, protocol=5)))
        if len(chunk) == 5000:
            yield _batch(chunk)
            chunk = []
    if chunk:
        yield _batch(chunk)


def options(cfg: Config, bounds: explore.Bounds, targets: frozenset[str], stop_on: frozenset[str]) -> dict[str, Any]:
    """What a run's answers depend on: a resumed run must have the same."""
    return {"version": VERSION, "config": configs.to_dict(cfg), "bounds": bounds._asdict(),
            "invariants": sorted(targets), "stop_on": sorted(stop_on)}


class SparkExplorer:
    """`explore.Explorer`'s breadth-first search as Spark jobs (see the module docstring)."""

    def __init__(self, spark: Any, cfg: Config, bounds: explore.Bounds, work_dir: str | Path,
                 invariants: set[str] | frozenset[str] | None = None, fail_once: str | None = None) -> None:
        self.spark, self.cfg, self.bounds = spark, cfg, bounds
        # A frontier task gets about ROWS_PER_TASK states (a pickled state is under 1 KB): small
        # files are packed into one split up to this size.
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(ROWS_PER_TASK * 1024))
        self.work = Path(work_dir)
        self.targets = frozenset(BY_ID if invariants is None else invariants)
        self.job = Job(cfg, bounds, invariants is None or explore.GHOST_READER in self.targets)
        self.fail_once = fail_once

    # --- the work directory ----------------------------------------------------------------------

    def _level_dir(self, depth: int) -> Path:
        return self.work / f"level-{depth:04d}"

    def _done(self) -> list[dict]:
        """The done marks of the levels written, in order (stops at the first level not done)."""
        out = []
        while (self._level_dir(len(out)) / "DONE").exists():
            out.append(json.loads((self._level_dir(len(out)) / "DONE").read_text()))
        return out

    def _open(self, opts: dict[str, Any]) -> list[dict]:
        manifest = self.work / "manifest.json"
        if manifest.exists():
            old = json.loads(manifest.read_text())
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
        manifest.write_text(json.dumps(opts, indent=1))
        return []

    def _check_space(self) -> None:
        free = shutil.disk_usage(self.work).free
        if free < MIN_FREE_BYTES:
            raise ExploreError(f"{self.work}: only {free / 2**20:.0f} MiB free; a level needs room to spill and write "
                               f"(at least {MIN_FREE_BYTES / 2**20:.0f} MiB): free some or use another --work-dir")

    def _write(self, df: Any, path: Path) -> None:
        try:
            df.write.mode("overwrite").parquet(str(path))
        except Exception as exc:  # the JVM's IOException, e.g. no space left on the device
            first = next((line for line in str(exc).splitlines() if "Exception" in line or "space" in line),
                         str(exc)[:300])
            raise ExploreError(f"{path}: could not write the level ({first.strip()[:300]})") from None

    # --- the search ------------------------------------------------------------------------------

    def _start(self) -> dict:
        """Level 0: the initial state, its fingerprint taken on a worker, and the bootstrap's checks."""
        from pyspark.sql import functions as F  # noqa: F401 (Spark is imported only where it runs)

        space = explore.controller_space(self.cfg, self.bounds, self.job.ghost)
        s0 = space.initial
        job = self.job

        def initial(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for _ in batches:
                yield pa.RecordBatch.from_pylist([{"fp": _space(job).key(_space(job).initial), "hashes": _hashes()}])

        first = self.spark.range(1, numPartitions=1).mapInArrow(initial, "fp long, hashes string").first()
        fp0, hashes = first["fp"], first["hashes"]
        rows = [(fp0, None, None, pickle.dumps((s0, explore.NO_SLEEP), protocol=5))]
        df = self.spark.createDataFrame(rows, "fp long, parent long, action string, state binary")
        level = self._level_dir(0)
        self._write(df.select("fp", "parent", "action"), level / "links")
        self._write(df.select("fp", "state"), level / "frontier")
        hits = {v.invariant: {"message": v.message, "fp": None, "depth": 0, "action": None}
                for v in space.check_start(s0, self.targets)}
        done = {"depth": 0, "states": 1, "new": 1, "transitions": 0, "pruned": 0, "slept": 0, "seconds": 0.0,
                "hits": hits, "actions": {}, "reached": [], "hashes": hashes}
        (level / "DONE").write_text(json.dumps(done))
        return done

    def _expand_level(self, depth: int, targets: frozenset[str]) -> tuple[dict, Any]:
        """Expand the frontier at `depth`: (tallies and violations, the new states' DataFrame)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        job, fail_once = self.job, self.fail_once
        frontier = self.spark.read.parquet(str(self._level_dir(depth) / "frontier"))
        out = frontier.mapInArrow(lambda it: expand(job, depth, targets, it, fail_once), OUT_DDL)
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        small = out.filter(F.col("kind") != "s").collect()
        succ = out.filter(F.col("kind") == "s").select("fp", "parent", "action", "state")
        best = succ.groupBy("fp").agg(F.min(F.struct("parent", "action", "state")).alias("m"))
        best = best.select("fp", "m.parent", "m.action", "m.state")
        seen = self.spark.read.parquet(*[str(self._level_dir(d) / "links") for d in range(depth + 1)]).select("fp")
        new = best.join(seen, "fp", "left_anti")
        return {"small": small, "out": out}, new

    def run(self, budget: float | None = None, stop_on: set[str] | frozenset[str] = (),
            progress: Callable[[Level], None] | None = None) -> explore.Result:
        """Explore until the space is exhausted, a level ends after `budget` seconds (one level is
        expanded in any case, so a level can overshoot it), or an invariant in `stop_on` is
        violated (once the level of that violation's state has been expanded, so that every
        violation as short is known)."""
        from pyspark import StorageLevel

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
            if budget is not None and depth > done[-1]["depth"] and time.perf_counter() - start >= budget:
                stopped = "budget"  # checked between levels, after one level at least
                break
            self._check_space()
            began = time.perf_counter()
            remaining = self.targets - hits.keys()
            # shuffle partitions for the level's successors (about three per state); AQE merges small ones
            shuffle = max(8, 2 * self.spark.sparkContext.defaultParallelism, 3 * last["new"] // ROWS_PER_TASK)
            self.spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
            tallies, new = self._expand_level(depth, frozenset(remaining))
            new = new.persist(StorageLevel.MEMORY_AND_DISK)
            count = new.count()
            level = self._level_dir(depth + 1)
            if count:
                parts = max(self.spark.sparkContext.defaultParallelism, -(-count // ROWS_PER_TASK))
                self._write(new.select("fp", "parent", "action"), level / "links")
                self._write(new.select("fp", "state").repartition(parts), level / "frontier")
            new.unpersist()
            tallies["out"].unpersist()
            totals = _merge(last, tallies["small"], depth, remaining, hits)
            last = {**totals, "depth": depth + 1, "states": last["states"] + count, "new": count,
                    "seconds": time.perf_counter() - began, "hits": hits}
            level.mkdir(parents=True, exist_ok=True)
            (level / "DONE").write_text(json.dumps(last))
            shutil.rmtree(self._level_dir(depth) / "frontier", ignore_errors=True)
            if progress is not None:
                progress(Level(depth + 1, last["states"], count, last["transitions"], last["seconds"]))
            # Every violation up to this depth is known once its states were expanded (a step's
            # violation one step deeper is known, a state's there not yet): stop then, so the
            # shortest of each invariant is the local explorer's.
            if any(_length(hits[i]) <= depth for i in stop_on & hits.keys()):
                stopped = "violation"
            depth += 1
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


def _hashes() -> str:
    """How this process hashes what states hold: a string (PYTHONHASHSEED) and None (its address)."""
    return f"{hash('rmqcheck')}:{hash(None)}"


def _length(hit: dict) -> int:
    """A hit's counterexample length: the depth of its state, plus its step if it is a step's."""
    return hit["depth"] + (hit["action"] is not None)


def _merge(last: dict, small: list, depth: int, targets: frozenset[str], hits: dict) -> dict:
    """Add a level's tallies to the totals and record its violations in `hits`: per invariant
    the least (state, step) of the level, so the answer does not depend on partitioning."""
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
            key = (r["action"] != "", r["parent"], r["action"], r["msg"])
            if r["inv"] not in found or key < found[r["inv"]]:
                found[r["inv"]] = key
    for inv, (_, parent, action, message) in found.items():
        hits[inv] = {"message": message, "fp": parent, "depth": depth, "action": action or None}
    return {"transitions": transitions, "pruned": pruned, "slept": slept, "actions": actions,
            "reached": sorted(reached), "hashes": last["hashes"]}


SLICE = 30.0  # seconds a scope's exploration runs (a level at least) before the next scope's turn


def hunt(spark: Any, cfg: Config, targets: set[str] | frozenset[str], budget: float, work_root: str | Path,
         progress: Callable[[str, Level], None] | None = None) -> tuple[explore.ScopedHit | None, list]:
    """`explore.hunt` on Spark: the growing scopes of `explore.scopes`, each explored level by
    level under `work_root`, in turns of SLICE seconds (a level at least, so the last turn can
    overshoot the budget by a level), until one violates a target or the budget ends. (scope,
    bounds, result of its last turn) of each scope tried, and the first hit. Unlike the local
    hunt it does not then look for a shorter counterexample in the whole configuration: the hit
    is shortest within its scope."""
    targets = frozenset(targets)
    start = time.perf_counter()
    plan = explore.scopes(cfg)
    explorers = [SparkExplorer(spark, scope, bounds, Path(work_root) / f"scope-{i}", targets)
                 for i, (scope, bounds) in enumerate(plan)]
    results: dict[int, explore.Result] = {}
    turns = list(range(len(plan)))
    while turns:
        left = budget - (time.perf_counter() - start)
        if left <= 0:
            break
        i = turns.pop(0)
        label = explore.describe_scope(*plan[i])
        r = explorers[i].run(min(SLICE, left), stop_on=targets,
                             progress=None if progress is None else (lambda p, label=label: progress(label, p)))
        results[i] = r
        hit = next((r.hits[inv] for inv in sorted(r.hits) if inv in targets), None)
        if hit is not None:
            tried = [(*plan[j], results[j]) for j in sorted(results)]
            return explore.ScopedHit(*plan[i], hit, r), tried
        if not r.exhaustive:
            turns.append(i)
    return None, [(*plan[j], results[j]) for j in sorted(results)]
