"""Reading and writing v1 event traces: NDJSON (one record per line) and Parquet.

A corpus is a directory of part files (`part-00000.ndjson` or `.parquet`); a run never spans
two files, so files are the unit of parallel work and a run's history stays in one place.
Readers yield Arrow record batches of the v1 schema. A bad record (malformed, truncated, wrong
type, unknown version) raises TraceError naming the file and line (NDJSON) or row group and row
(Parquet); with `skip=True` it is yielded as a BadRecord instead, for the caller to write to a
side file and count. Nothing is dropped silently.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .schema import ARROW, FIELDS, KINDS, RUN_START, VERSION, TraceError, check_record, row_problem, schema_problem

NDJSON = "ndjson"
PARQUET = "parquet"
FORMATS = (NDJSON, PARQUET)
BATCH_ROWS = 8192  # NDJSON records per Arrow batch
ROW_GROUP_ROWS = 65536  # records per Parquet row group


class BadRecord(NamedTuple):
    path: str
    where: str
    what: str
    raw: str  # the record as read (the line, or the Parquet row as JSON)
    # (run, checks) whose verdict the skipped record may change, where nothing else reports the
    # gap it leaves (an OpenChaos line; a trace's gap fails its run's conformance check instead)
    affects: tuple[str, tuple[str, ...]] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.path, "where": self.where, "what": self.what, "raw": self.raw}
        if self.affects:
            out["affects"] = {"run": self.affects[0], "checks": list(self.affects[1])}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "BadRecord":
        affects = data.get("affects")
        return cls(data["file"], data["where"], data["what"], data["raw"],
                   (affects["run"], tuple(affects["checks"])) if affects else None)


Item = pa.RecordBatch | BadRecord


# --- writing ---------------------------------------------------------------------------------


def write_part(path: Path, records: Iterable[dict[str, Any]], fmt: str) -> int:
    """Write records to one part file; returns how many."""
    if fmt == NDJSON:
        n = 0
        with open(path, "w") as f:
            for rec in records:
                f.write(json.dumps({k: v for k, v in rec.items() if v is not None}, separators=(",", ":")))
                f.write("\n")
                n += 1
        return n
    if fmt == PARQUET:
        n = 0
        rows = iter(records)
        with pq.ParquetWriter(path, ARROW) as w:
            while chunk := list(islice(rows, ROW_GROUP_ROWS)):
                w.write_table(pa.Table.from_pylist(chunk, schema=ARROW))
                n += len(chunk)
        return n
    raise ValueError(f"unknown format {fmt!r}, expected one of {FORMATS}")


def part_name(index: int, fmt: str) -> str:
    return f"part-{index:05d}.{fmt}"


# --- reading ---------------------------------------------------------------------------------


def read_file(path: str, skip: bool = False) -> Iterator[Item]:
    """The records of one trace file as Arrow batches (and BadRecords when `skip`)."""
    if path.endswith("." + PARQUET):
        yield from _read_parquet(path, skip)
    else:
        yield from _read_ndjson(path, skip)


def read_table(path: str, skip: bool = False) -> tuple[pa.Table, list[BadRecord]]:
    """The file's good records as one table, and its bad ones (only with `skip`)."""
    batches: list[pa.RecordBatch] = []
    bad: list[BadRecord] = []
    for item in read_file(path, skip):
        (bad if isinstance(item, BadRecord) else batches).append(item)
    return pa.Table.from_batches(batches, schema=ARROW), bad


def _bad(path: str, where: str, what: str, raw: str, skip: bool) -> BadRecord:
    if not skip:
        raise TraceError(path, where, what)
    return BadRecord(path, where, what, raw)


def _read_ndjson(path: str, skip: bool) -> Iterator[Item]:
    rows: list[dict[str, Any]] = []
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise TraceError(path, "file", f"cannot read: {exc.strerror}") from None
    with f:
        for n, raw in enumerate(f, start=1):
            where = f"line {n}"
            try:
                text = raw.decode("utf-8")
                if not text.endswith("\n"):
                    yield _bad(path, where, "truncated: the last line has no newline", text, skip)
                    continue
                rec = json.loads(text)
                rows.append(check_record(rec, path, where))
            except UnicodeDecodeError:
                yield _bad(path, where, "not UTF-8 text", repr(raw), skip)
            except json.JSONDecodeError as exc:
                yield _bad(path, where, f"not JSON: column {exc.colno}: {exc.msg}", raw.decode("utf-8", "replace"), skip)
            except RecursionError:
                yield _bad(path, where, "not a record: JSON nested too deeply", raw.decode("utf-8", "replace"), skip)
            except TraceError as exc:
                yield _bad(path, where, exc.what, text, skip)
            except ValueError as exc:  # a number of more than 4,300 digits
                yield _bad(path, where, f"not a record: {exc}", raw.decode("utf-8", "replace"), skip)
            if len(rows) == BATCH_ROWS:
                yield pa.RecordBatch.from_pylist(rows, schema=ARROW)
                rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=ARROW)


def parquet_file(path: str) -> pq.ParquetFile:
    """The file, opened and its schema checked; TraceError if it cannot be read as v1."""
    try:
        f = pq.ParquetFile(path)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        raise TraceError(path, "file", f"not a readable Parquet file: {exc}") from None
    problem = schema_problem(f.schema_arrow)
    if problem:
        raise TraceError(path, "schema", problem)
    return f


def parquet_location(f: pq.ParquetFile, row: int) -> str:
    """'row group G row R' of the file's row `row` (counted from 0 over the whole file)."""
    for g in range(f.num_row_groups):
        n = f.metadata.row_group(g).num_rows
        if row < n:
            return f"row group {g} row {row}"
        row -= n
    raise IndexError(row)


def _read_parquet(path: str, skip: bool) -> Iterator[Item]:
    f = parquet_file(path)
    for g in range(f.num_row_groups):
        try:
            table = _conform(f.read_row_group(g))
            table.validate(full=True)  # strings must be UTF-8 (Arrow does not check them on reading)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            raise TraceError(path, f"row group {g}", f"unreadable: {exc}") from None
        if not table.num_rows:
            continue
        batch = table.combine_chunks().to_batches()[0]
        bad = suspect_rows(batch)
        if not bad:
            yield batch
            continue
        keep = []
        for i in range(batch.num_rows):
            row = batch.slice(i, 1).to_pylist()[0] if i in bad else None
            problem = row_problem(row) if row is not None else None
            if problem is None:
                keep.append(i)
            else:
                yield _bad(path, f"row group {g} row {i}", problem, json.dumps(row), skip)
        if keep:
            yield batch.take(pa.array(keep))


def _conform(table: pa.Table) -> pa.Table:
    """The table with the v1 columns in order, absent optional columns as nulls."""
    cols = [table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in ARROW]
    return pa.Table.from_arrays(cols, schema=ARROW)


def suspect_rows(batch: pa.RecordBatch) -> set[int]:
    """Rows `row_problem` may reject (a vectorised superset, so clean batches cost no Python loop)."""
    kind = batch.column("kind")
    masks = [
        pc.not_equal(batch.column("v"), VERSION),
        pc.invert(pc.is_in(kind, pa.array(KINDS))),
        pc.less(batch.column("seq"), 0),
        pc.and_(pc.equal(kind, RUN_START), pc.is_null(batch.column("config"))),
    ]
    masks += [pc.is_null(batch.column(f.name)) for f in FIELDS if f.required]
    out: set[int] = set()
    for m in masks:
        out.update(pc.indices_nonzero(pc.fill_null(m, True)).to_pylist())
    return out
