"""OpenChaos history files (`...-history`) as a client-history table (traces/history.py).

The file is tab-separated, one record per line, written by one synchronized writer, so the
line number orders the records (reference/anchors.md §3.3):

    request:  clientId  operation  REQUEST   value   shardingKey  timestamp  [extraInfo]
    response: clientId  operation  RESPONSE  result  value  shardingKey  timestamp  sendLatency  extraInfo  endToEndLatency
    fault:    fault     faultName  start|end timestamp

An `enqueue` is one send, placed at its request's line, with the response's result as status
(SUCCESS ok, FAILURE fail, UNKNOWN info; a request with no response is info). Every `dequeue`
SUCCESS response is one read (a pull returns several; a push consumer logs responses with no
request). Queue offsets are not recorded, so offset_agreement has nothing to check and
lost_ack falls back to OpenChaos's own rule: acked and never read.
The whole file is one run, named after the file. A history written in rotating parts
(`NAME-history.00000`, `.00001`, ...: `rmqcheck cluster --soak`) is one run named NAME-history:
its parts are read in order as one file (a send's request and response may sit in two parts),
and a missing part is bad input, never a shorter run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import history as h
from .files import BadRecord
from .schema import TraceError, shown

RESULTS = {"SUCCESS": h.OK, "FAILURE": h.FAIL, "UNKNOWN": h.INFO}
OPERATIONS = ("enqueue", "dequeue")


def _null(text: str) -> str | None:
    return None if text == "null" else text


PART = re.compile(r"(?P<run>.*history)\.(?P<index>\d{5})")  # a rotated history's part


def is_history(path: str) -> bool:
    return "history" in Path(path).name and not Path(path).name.endswith((".ndjson", ".parquet"))


def part_path(run: Path, index: int) -> Path:
    """Where part `index` of the rotated history `run` (a path ending in `history`) is written."""
    return run.with_name(f"{run.name}.{index:05d}")


def first_part(path: str) -> str:
    """The history `path` belongs to, as validate names it: the file itself, or for a part of a
    rotated history its first part (TraceError when that is missing)."""
    m = PART.fullmatch(Path(path).name)
    if m is None or m["index"] == "00000":
        return path
    first = part_path(Path(path).with_name(m["run"]), 0)
    if not first.exists():
        raise TraceError(path, "file", f"a part of a rotated history whose first part, {first.name}, is missing")
    return str(first)


def part_files(path: str) -> list[str]:
    """The files of the history `first_part` named: one, or every part of a rotated history in
    order (TraceError when one between is missing)."""
    m = PART.fullmatch(Path(path).name)
    if m is None:
        return [path]
    run = Path(path).with_name(m["run"])
    named = (PART.fullmatch(f.name) for f in run.parent.iterdir())
    indexes = sorted(int(q["index"]) for q in named if q and q["run"] == m["run"])
    for expected, index in enumerate(indexes):
        if index != expected:
            raise TraceError(str(part_path(run, index)), "file",
                             f"part {expected:05d} of this rotated history is missing: a run must be read whole")
    return [str(part_path(run, i)) for i in indexes]


def count_records(path: str) -> int:
    """The records (lines, the last one maybe without its newline) a history holds (every part
    of a rotated one), so that what was read can be checked against it."""
    total = 0
    for part in part_files(path):
        n, last = 0, b"\n"
        with open(part, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                n += block.count(b"\n")
                last = block[-1:]
        total += n + (last != b"\n")
    return total


def read_history(path: str, skip: bool = False) -> tuple[pa.Table, list[BadRecord]]:
    """The history table of one OpenChaos history (every part of a rotated one, in order). A bad
    record raises TraceError naming the file and line; with `skip` it is returned among the
    BadRecords instead and the rest is read."""
    bad: list[BadRecord] = []
    m = PART.fullmatch(Path(path).name)
    run = m["run"] if m else Path(path).name
    tables: list[pa.Table] = []
    pending: dict[str, dict[str, Any]] = {}  # clientId -> its enqueue in flight
    skipped: set[str] = set()  # clients with a skipped line ("*": a line naming no client)
    seq = 0  # the line's place in the whole history: parts follow one another
    for part in part_files(path):
        rows: list[dict[str, Any]] = []  # a table a part: memory follows the part, not the run
        try:
            with open(part, encoding="utf-8", newline="\n") as f:
                lines = list(f)
        except OSError as exc:
            raise TraceError(part, "file", f"cannot read: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise TraceError(part, "file", f"not UTF-8 text (byte {exc.start})") from None
        for n, line in enumerate(lines, start=1):
            try:
                _record(part, run, n, seq + n, line, rows, pending, skipped)
            except TraceError as exc:
                if not skip:
                    raise
                client = line.split("\t", 1)[0]
                if client == "fault":  # a fault line carries no client operation: no check is affected
                    bad.append(BadRecord(part, exc.where, exc.what, line, (run, ())))
                    continue
                skipped.add(client if client.isdigit() else "*")
                bad.append(BadRecord(part, exc.where, exc.what, line, (run, _affected(line))))
        seq += len(lines)
        tables.append(pa.Table.from_pylist(rows, schema=h.SCHEMA))
    tables.append(pa.Table.from_pylist(list(pending.values()), schema=h.SCHEMA))  # no response came: unknown
    return pa.concat_tables(tables), bad


def _affected(line: str) -> tuple[str, ...]:
    """The checks whose verdict on this history a skipped line may change: a send's result
    (lost_ack, order, read_failed) or a read (those and duplicate); all four when the line says
    neither."""
    parts = line.split("\t")
    if len(parts) > 1 and parts[1] == "enqueue":
        return ("lost_ack", "order", "read_failed")
    return ("lost_ack", "duplicate", "order", "read_failed")


def _record(path: str, run: str, n: int, seq: int, line: str, rows: list[dict[str, Any]],
            pending: dict[str, dict[str, Any]], skipped: set[str] = frozenset()) -> None:
    """Add line `n` of `path`'s rows (or its enqueue in flight), at `seq` in its run; TraceError
    if it is malformed. A client
    in `skipped` had a line skipped: its next request may follow a request whose response was
    the skipped line (that send's outcome is then unknown), and its next response may answer
    the skipped request (the response alone then stands for the send)."""
    where = f"line {n}"
    if not line.endswith("\n"):
        raise TraceError(path, where, "truncated: the last line has no newline")
    parts = line[:-1].split("\t")
    if parts[0] == "fault":
        if len(parts) != 4 or parts[2] not in ("start", "end"):
            raise TraceError(path, where, "a fault record is: fault, name, start|end, timestamp")
        return
    if len(parts) < 3 or not parts[0].isdigit():
        raise TraceError(path, where, f"expected clientId, operation, REQUEST|RESPONSE; got {line[:80]!r}")
    client, op, kind = parts[0], parts[1], parts[2]
    if op not in OPERATIONS:
        raise TraceError(path, where, f"unknown operation {shown(op)} (a queue history has {OPERATIONS})")
    if kind == "REQUEST":
        if len(parts) not in (6, 7):
            raise TraceError(path, where, f"a request has 6 or 7 fields, this one {len(parts)}")
        if op == "enqueue":
            if client in pending and {client, "*"} & skipped:
                rows.append(pending.pop(client))  # its response was the skipped line: outcome unknown
            if client in pending:
                raise TraceError(path, where, f"client {client} sends again before its previous enqueue's response")
            pending[client] = {"run": run, "seq": seq, "op": h.SEND, "msg": parts[3], "key": _null(parts[4]), "status": h.INFO}
    elif kind == "RESPONSE":
        if len(parts) != 10:
            raise TraceError(path, where, f"a response has 10 fields, this one {len(parts)}")
        result = RESULTS.get(parts[3])
        if result is None:
            raise TraceError(path, where, f"unknown result {shown(parts[3])} (expected {', '.join(RESULTS)})")
        if op == "enqueue":
            send = pending.pop(client, None)
            if send is None and {client, "*"} & skipped:  # its request was the skipped line
                send = {"run": run, "seq": seq, "op": h.SEND, "msg": parts[4], "key": _null(parts[5]), "status": h.INFO}
            if send is None:
                raise TraceError(path, where, f"enqueue response of client {client} without a request")
            if parts[4] != send["msg"]:
                pending[client] = send  # still in flight: this line is the bad one
                raise TraceError(path, where, f"enqueue response value {shown(parts[4])}, its request sent {shown(send['msg'])}")
            rows.append({**send, "status": result})
            skipped.discard(client)  # a request and its response paired again: later lines are judged as usual
        elif result == h.OK:
            rows.append({"run": run, "seq": seq, "op": h.READ, "msg": parts[4], "key": _null(parts[5])})
    else:
        raise TraceError(path, where, f"unknown record type {shown(kind)} (expected REQUEST, RESPONSE or fault)")
