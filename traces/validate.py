"""What `rmqcheck validate` reads and reports, and the local (single-process, streaming) engine.

Inputs under the given paths: v1 event traces (`*.ndjson`, `*.parquet`), OpenChaos histories
(files with `history` in the name), replica sets of RocketMQ store directories (holding
`epochFileCheckpoint`), sets of RocketMQ's logs (`broker.log`, `store.log`,
`controller.log`, a folder a node) and recorded runs of the cluster (a folder holding `run.json`).
Four check families: conformance (of a model walk's trace: traces/conformance.py; of a recorded
cluster run: traces/real_runs.py, traces/run_records.py), client history (traces/history.py), store artefacts
(traces/stores.py) and logs (traces/logs.py). The Spark engine (traces/spark.py) must return the
same Report, violation for violation.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from . import history, log_records, logs, openchaos, run_records, stores
from .conformance import RunVerdict, replay_table
from .files import FORMATS, BadRecord, read_table
from .history import Violation
from .schema import TraceError

FAMILIES: dict[str, tuple[str, ...]] = {
    "conformance": ("conformance", *run_records.CHECKS),
    "history": history.CHECKS,
    "stores": stores.CHECKS,
    "logs": logs.CHECKS,
}
CHECK_FAMILY = {c: fam for fam, checks in FAMILIES.items() for c in checks}
# Findings that break no safety guarantee: reported, and failing the run only with --strict.
REPORTED: dict[str, str] = {
    "duplicate": "at-least-once delivery allows it",
    "consistent_point": "availability: the replica retries its handshake forever (as PR #9942 reports)",
    **logs.REPORTED,
}

CLIENT_OPS = pa.array([history.SEND, history.READ])  # what units["client_ops"] counts
# What a report counts: trace files, their records (events) and runs, OpenChaos histories and
# their records (lines), replica sets of store files, log sets and their records, recorded cluster
# runs with their steps and the steps the model explains, and the client operations (sends and reads).
UNITS = ("files", "events", "runs", "histories", "history_records", "store_sets", "log_sets", "log_records",
         "real_runs", "real_run_steps", "real_run_steps_explained", "client_ops")
Progress = Callable[[str, int, int], None]  # (what, done, total)


class SparkUnavailable(Exception):
    """Spark could not start with the master asked for (unreachable, refused, killed)."""


# The master URLs Spark takes (checked before starting it, which fails slowly and loudly).
MASTER_FORMS = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|"
                          r"spark://[^\s/:]+:\d+(,[^\s/:]+:\d+)*|yarn|k8s://\S+")


class Inputs(NamedTuple):
    traces: list[str]
    histories: list[str]
    store_sets: list[str]
    log_sets: list[str] = []
    real_runs: list[str] = []

    def empty(self) -> bool:
        return not (self.traces or self.histories or self.store_sets or self.log_sets or self.real_runs)


def discover(paths: Iterable[str]) -> Inputs:
    """Sorted inputs under `paths`. Every file under them is looked at, and whatever cannot be
    (a dangling symbolic link, a link loop, an unreadable file or folder) is a TraceError, as is
    a path that does not exist, holds nothing to validate or is named twice."""
    traces: set[str] = set()
    hist: set[str] = set()
    sets: set[str] = set()
    log_sets: set[str] = set()
    runs: set[str] = set()
    given: dict[Path, str] = {}  # real path -> the name it was given by
    for name in paths:
        p = Path(name)
        _check_entry(p, "path")
        real = p.resolve()
        for other_real, other in given.items():
            if real == other_real or other_real in real.parents or real in other_real.parents:
                raise TraceError(name, "path", f"named twice: {other} already includes it" if real != other_real
                                 or real.is_file() else f"named twice (as {other})")
        given[real] = name
        before = len(traces) + len(hist) + len(sets) + len(log_sets) + len(runs)
        for f in [p] if p.is_file() else _files(p):
            if f.suffix[1:] in FORMATS:
                traces.add(str(f))
            elif f.name in (stores.FILE, stores.BAK):
                sets.add(str(f.parent.parent))
            elif openchaos.is_history(str(f)):
                hist.add(openchaos.first_part(str(f)))
            elif log_records.FILES.fullmatch(f.name):
                log_sets.add(str(f.parent.parent))
            elif f.name == run_records.RUN:
                runs.add(str(f.parent))
        if len(traces) + len(hist) + len(sets) + len(log_sets) + len(runs) == before:
            raise TraceError(name, "path", "no traces (.ndjson/.parquet), OpenChaos histories, epoch files, "
                                           "RocketMQ logs or recorded cluster runs in it")
    return Inputs(sorted(traces), sorted(hist), sorted(sets), sorted(log_sets), sorted(runs))


def _check_entry(p: Path, where: str) -> None:
    """A TraceError unless `p` is a readable file or folder (following symbolic links)."""
    try:
        p.stat()
    except FileNotFoundError:
        raise TraceError(str(p), where, "a symbolic link to nothing (dangling)" if p.is_symlink()
                         else "no such file or directory") from None
    except OSError as exc:  # ELOOP and the like
        raise TraceError(str(p), where, f"cannot be read: {exc.strerror}") from None
    if not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0)):
        raise TraceError(str(p), where, "cannot be read: permission denied")


def _files(root: Path) -> list[Path]:
    """Every file under `root`, following symbolic links once each; a link that leads back to a
    folder above it (a loop) or anything that cannot be read is a TraceError."""
    out: list[Path] = []
    seen: set[Path] = set()
    stack: list[tuple[Path, frozenset[Path]]] = [(root, frozenset())]
    while stack:
        folder, above = stack.pop()
        real = folder.resolve()
        if real in above:
            raise TraceError(str(folder), "folder", f"a symbolic link loop: it leads back to {real}")
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise TraceError(str(folder), "folder", f"cannot be read: {exc.strerror}") from None
        for e in entries:
            path = Path(e.path)
            _check_entry(path, "file")
            if path.is_dir():
                stack.append((path, above | {real}))
            elif path.resolve() not in seen:  # two links to one file: read once
                seen.add(path.resolve())
                out.append(path)
    return sorted(out)


class Report(NamedTuple):
    engine: str
    units: dict[str, int]  # UNITS
    violations: list[Violation]  # sorted
    bad: list[BadRecord]  # skipped records (only with skip)
    seconds: dict[str, float]  # per family

    def by_check(self) -> dict[str, list[Violation]]:
        out: dict[str, list[Violation]] = {c: [] for checks in FAMILIES.values() for c in checks}
        for v in self.violations:
            out[v.check].append(v)
        return out

    def records(self) -> int:
        """Every record read: trace events, history lines, store sets, log records and recorded steps."""
        u = self.units
        return u["events"] + u["history_records"] + u["store_sets"] + u["log_records"] + u["real_run_steps"]

    def failed(self, strict: bool = False) -> bool:
        return any(strict or v.check not in REPORTED for v in self.violations)


def conformance_violation(v: RunVerdict) -> Violation:
    return Violation(
        "conformance", v.run, f"seq {v.failed_seq}", 1, f"matched {v.matched} of {v.transitions} transitions: {v.problem}"
    )


def spans_error(run: str, files: Iterable[str]) -> TraceError:
    a, b = sorted(files)[:2]
    return TraceError(b, "run " + run, f"the run also has records in {a}; a run must stay in one file")


def validate_local(inputs: Inputs, skip: bool = False, progress: Progress | None = None) -> Report:
    # Every unit is reported, none of a kind given included (an OpenChaos history alone has no events).
    units = dict.fromkeys(UNITS, 0)
    seconds: dict[str, float] = defaultdict(float)
    bad: list[BadRecord] = []
    violations: list[Violation] = []
    hist_tables: list[pa.Table] = []
    run_files: dict[str, set[str]] = defaultdict(set)
    for i, path in enumerate(inputs.traces):
        t = time.perf_counter()
        table, rejected = read_table(path, skip)
        bad += rejected
        seconds["read"] += time.perf_counter() - t
        units["events"] += table.num_rows
        t = time.perf_counter()
        for verdict in replay_table(table):
            run_files[verdict.run].add(path)
            if verdict.failed_seq is not None:
                violations.append(conformance_violation(verdict))
        seconds["conformance"] += time.perf_counter() - t
        t = time.perf_counter()
        hist_tables.append(history.from_events(table))
        seconds["history"] += time.perf_counter() - t
        if progress:
            progress("trace files", i + 1, len(inputs.traces))
    spanning = sorted(run for run, fs in run_files.items() if len(fs) > 1)
    if spanning:
        raise spans_error(spanning[0], run_files[spanning[0]])
    units["files"] = len(inputs.traces)
    units["runs"] = len(run_files)
    t = time.perf_counter()
    for path in inputs.histories:
        table, rejected = openchaos.read_history(path, skip)
        hist_tables.append(table)
        bad += rejected
        units["history_records"] += openchaos.count_records(path)
    units["histories"] = len(inputs.histories)
    units["client_ops"] = sum(pc.sum(pc.is_in(t.column("op"), CLIENT_OPS)).as_py() or 0 for t in hist_tables)
    violations += history.check_runs(hist_tables)
    seconds["history"] += time.perf_counter() - t
    t = time.perf_counter()
    for s in inputs.store_sets:
        violations += stores.check_set(s)
    units["store_sets"] = len(inputs.store_sets)
    seconds["stores"] = time.perf_counter() - t
    t = time.perf_counter()
    for s in inputs.log_sets:
        found, records = logs.judge_set(s)
        violations += found
        units["log_records"] += records
    units["log_sets"] = len(inputs.log_sets)
    seconds["logs"] = time.perf_counter() - t
    t = time.perf_counter()
    for run in inputs.real_runs:
        found, steps, explained = run_records.judge_run(run)
        violations += found
        units["real_run_steps"] += steps
        units["real_run_steps_explained"] += explained
    units["real_runs"] = len(inputs.real_runs)
    seconds["real runs"] = time.perf_counter() - t
    return Report("local", units, sorted(violations), bad, dict(seconds))
