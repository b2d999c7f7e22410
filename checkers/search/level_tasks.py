"""What the Spark tasks of one level of `distributed.py`'s search run, in the Python workers.

`expand` takes a frontier file of states and does what the local explorer does with them (each
state's invariants, then its successors within the bounds, each step's invariants), keeping a
successor the task produces twice once, and writes the successors' states to the task's
candidate file; `select` copies the level's new states from the candidate files into the next
frontier's files. Both report to the driver in small Arrow rows. A read or write of the work
directory that fails raises an OSError whose message starts with IO_ERROR, which the driver
finds in Spark's error and reports with the file and the reason.
"""

from __future__ import annotations

import gc
import json
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import pyarrow as pa

from rmqcheck.model.config import Config
from rmqcheck.outputs import write_atomically

from rmqcheck.checkers.search import explore
from rmqcheck.checkers.search.coverage import Coverage, WITNESSES

# One row schema for everything a worker reports: successors (s), violations (v) and the
# task's tallies (c: transitions, pruned, action counts and witnesses reached, as JSON). `rank`
# is the parent's (or the violating state's) place in its level's canonical order.
OUT = pa.schema([("kind", pa.string()), ("inv", pa.string()), ("msg", pa.string()), ("parent", pa.int64()),
                 ("action", pa.string()), ("fp", pa.int64()), ("src", pa.int32()), ("rank", pa.int64())])
OUT_DDL = "kind string, inv string, msg string, parent long, action string, fp long, src int, rank long"

IO_ERROR = "rmqcheck work directory"  # how a worker's failed read or write starts, for the driver to find


def io_error_reason(text: str) -> str | None:
    """What follows IO_ERROR in `text` (an OSError's message, or Spark's error that quotes one)."""
    line = next((line for line in text.splitlines() if IO_ERROR in line), None)
    return None if line is None else line[line.index(IO_ERROR) + len(IO_ERROR) + 2:].strip()[:400]


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


# --- files of states ----------------------------------------------------------------------------
# A frontier file holds [(fingerprint, state, sleep set, rank), ...] pickled as one object, so
# the structure its states share is written and read once; a candidate file holds (fingerprint,
# state, sleep set) for the successors one task kept. A rank orders a level as the local
# explorer takes it: by its states' least paths, compared action text by action text.


def save_states(path: Path, rows: list[tuple]) -> None:
    """Write `rows` to `path` whole or not at all (a task Spark retries may write it again)."""
    try:
        write_atomically(path, pickle.dumps(rows, protocol=5))
    except OSError as exc:
        raise OSError(f"{IO_ERROR}: cannot write {path}: {exc.strerror or exc}") from None


def load_states(path: Path) -> list[tuple]:
    try:
        with open(path, "rb") as f:
            rows = pickle.load(f)
    except OSError as exc:
        raise OSError(f"{IO_ERROR}: cannot read {path}: {exc.strerror or exc}") from None
    except MemoryError:
        raise
    except Exception as exc:  # cut short or overwritten: pickle raises many kinds
        raise OSError(f"{IO_ERROR}: cannot read {path}: not a whole file of states "
                      f"({type(exc).__name__}: {str(exc)[:100]})") from None
    if not isinstance(rows, list):
        raise OSError(f"{IO_ERROR}: cannot read {path}: not a file of states")
    return rows


class _NoGC:
    """States are acyclic tuples: the cyclic collector only walks the millions a task holds,
    again and again (measured: a fifth of a task's time). Off for a task, back on after."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc) -> None:
        if self.was:
            gc.enable()


def _injected_failure(fail_once: str | None, name: str) -> None:
    """A test's injected task failure: the first attempt of the first task of each job fails."""
    if fail_once:
        marker = Path(fail_once) / name
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            raise RuntimeError("injected task failure (the first attempt)")


def _batch(rows: list[tuple]) -> pa.RecordBatch:
    columns = list(zip(*rows)) if rows else [()] * len(OUT)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, OUT)], schema=OUT)


class Files(NamedTuple):
    """Where one level's expansion reads and writes (absolute, so any executor finds them)."""

    frontier: tuple[str, ...]  # the level's frontier files; task i expands file i
    candidates: str  # the folder of candidate files, one per task
    next_frontier: str  # the folder of the next level's frontier files

    def candidate(self, src: int) -> Path:
        return Path(self.candidates) / f"{src:05d}.pkl"


def expand(job: Job, depth: int, targets: frozenset[str], files: Files, batches: Iterator[pa.RecordBatch],
           fail_once: str | None = None) -> Iterator[pa.RecordBatch]:
    """The frontier files numbered in `batches` expanded: each state's invariants, then (within
    the bounds) its successors with each step's invariants. A successor produced twice in a task
    is kept once, the least (parent's rank, action); its state goes to the task's candidate file."""
    _injected_failure(fail_once, f"{depth}-expand")
    space = _space(job)
    sleeping = space.footprint is not None
    with _NoGC():
        for b in batches:
            for src in b.column("id").to_pylist():
                coverage = Coverage(job.cfg)
                transitions = pruned = slept = 0
                best: dict[int, tuple[int, str, int, Any, frozenset]] = {}
                # Per invariant the least (is a step's, rank, step, message, state): a state's
                # violation is one step shorter than a step's from it.
                violations: dict[str, tuple[bool, int, str, str, int]] = {}

                def note(found: list, rank: int, action: str, fp: int) -> None:
                    for v in found:
                        key = (action != "", rank, action, v.message, fp)
                        if v.invariant not in violations or key < violations[v.invariant]:
                            violations[v.invariant] = key

                for fp, s, sleep, rank in load_states(Path(files.frontier[src])):
                    note(space.check_state(s, targets), rank, "", fp)
                    if not space.expands(s, depth):
                        pruned += 1
                        continue
                    succ = space.successors(s, sleep)
                    slept += len(sleep)
                    sets = explore.SleepSets(space, s, [a for a, _ in succ] + list(sleep)) if sleeping else None
                    for a, n in succ:
                        transitions += 1
                        coverage.record(s, a, n)
                        action = explore.action_text(a)
                        k = space.key(n)
                        note(space.check_transition(s, a, n, targets), rank, action, fp)
                        kept = best.get(k)
                        if kept is None or (rank, action) < kept[:2]:
                            best[k] = (rank, action, fp, n, sets.after(a) if sets else explore.NO_SLEEP)
                save_states(files.candidate(src), [(k, n, z) for k, (_, _, _, n, z) in best.items()])
                tally = {"transitions": transitions, "pruned": pruned, "slept": slept, "actions": coverage.actions,
                         "hashes": hashes(),
                         "reached": [w.name for w in WITNESSES if w.applies(job.cfg) and w not in coverage.pending]}
                rows = [("v", inv, msg, fp, action, None, src, rank)
                        for inv, (_, rank, action, msg, fp) in violations.items()]
                rows.append(("c", None, json.dumps(tally), None, None, None, src, None))
                rows += [("s", None, None, parent, action, k, src, rank)
                         for k, (rank, action, parent, _, _) in best.items()]
                for i in range(0, len(rows), 50_000):
                    yield _batch(rows[i:i + 50_000])


def select(files: Files, chunk: int, depth: int, batches: Iterator[pa.RecordBatch],
           fail_once: str | None = None) -> Iterator[pa.RecordBatch]:
    """The next frontier: each new state (fingerprint, the task that produced it, its rank)
    copied from that task's candidate file into frontier files of `chunk` states (the last
    fewer), named after this task's first source so that a retry writes the same files. One row
    (file, states) per file written."""
    _injected_failure(fail_once, f"{depth}-select")
    wanted: dict[int, dict[int, int]] = defaultdict(dict)
    for b in batches:
        for fp, src, rank in zip(b.column("fp").to_pylist(), b.column("src").to_pylist(),
                                 b.column("rank").to_pylist()):
            wanted[src][fp] = rank
    written: list[dict] = []

    def write(rows: list[tuple]) -> None:
        path = Path(files.next_frontier) / f"{min(wanted):05d}-{len(written):04d}.pkl"
        save_states(path, rows)
        written.append({"file": path.name, "states": len(rows)})

    pool: list[tuple] = []
    with _NoGC():
        for src in sorted(wanted):
            fps = wanted[src]
            rows = [(fp, n, z, fps[fp]) for fp, n, z in load_states(files.candidate(src)) if fp in fps]
            if len(rows) != len(fps):
                raise OSError(f"{IO_ERROR}: cannot read {files.candidate(src)}: it holds {len(rows)} of its "
                              f"{len(fps)} new states")
            pool += rows
            while len(pool) >= chunk:
                write(pool[:chunk])
                pool = pool[chunk:]
        if pool:
            write(pool)
    yield pa.RecordBatch.from_pylist(written, schema=pa.schema([("file", pa.string()), ("states", pa.int64())]))


def hashes() -> str:
    """How this process hashes what states hold: a string (PYTHONHASHSEED) and None (its address)."""
    return f"{hash('rmqcheck')}:{hash(None)}"


def initial_fingerprint(job: Job, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The initial state's fingerprint, and how this worker hashes (level 0's one task)."""
    for _ in batches:
        space = _space(job)
        yield pa.RecordBatch.from_pylist([{"fp": space.key(space.initial), "hashes": hashes()}])
