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
The whole file is one run, named after the file.
"""

from __future__ import annotations

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


def is_history(path: str) -> bool:
    return "history" in Path(path).name and not Path(path).name.endswith((".ndjson", ".parquet"))


def count_records(path: str) -> int:
    """The records (lines, the last one maybe without its newline) a history file holds, so that
    what was read can be checked against it."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def read_history(path: str, skip: bool = False) -> tuple[pa.Table, list[BadRecord]]:
    """The history table of one OpenChaos file. A bad record raises TraceError naming the line;
    with `skip` it is returned among the BadRecords instead and the rest is read."""
    bad: list[BadRecord] = []
    run = Path(path).name
    rows: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}  # clientId -> its enqueue in flight
    try:
        f = open(path, encoding="utf-8", newline="\n")
        lines = list(f)
        f.close()
    except OSError as exc:
        raise TraceError(path, "file", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(path, "file", f"not UTF-8 text (byte {exc.start})") from None
    skipped: set[str] = set()  # clients with a skipped line ("*": a line naming no client)
    for n, line in enumerate(lines, start=1):
        try:
            _record(path, run, n, line, rows, pending, skipped)
        except TraceError as exc:
            if not skip:
                raise
            client = line.split("\t", 1)[0]
            if client == "fault":  # a fault line carries no client operation: no check is affected
                bad.append(BadRecord(path, exc.where, exc.what, line, (run, ())))
                continue
            skipped.add(client if client.isdigit() else "*")
            bad.append(BadRecord(path, exc.where, exc.what, line, (run, _affected(line))))
    rows += pending.values()  # enqueues whose response never came: outcome unknown
    return pa.Table.from_pylist(rows, schema=h.SCHEMA), bad


def _affected(line: str) -> tuple[str, ...]:
    """The checks whose verdict on this history a skipped line may change: a send's result
    (lost_ack, order, read_failed) or a read (those and duplicate); all four when the line says
    neither."""
    parts = line.split("\t")
    if len(parts) > 1 and parts[1] == "enqueue":
        return ("lost_ack", "order", "read_failed")
    return ("lost_ack", "duplicate", "order", "read_failed")


def _record(path: str, run: str, n: int, line: str, rows: list[dict[str, Any]], pending: dict[str, dict[str, Any]],
            skipped: set[str] = frozenset()) -> None:
    """Add one line's rows (or its enqueue in flight); TraceError if it is malformed. A client
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
            pending[client] = {"run": run, "seq": n, "op": h.SEND, "msg": parts[3], "key": _null(parts[4]), "status": h.INFO}
    elif kind == "RESPONSE":
        if len(parts) != 10:
            raise TraceError(path, where, f"a response has 10 fields, this one {len(parts)}")
        result = RESULTS.get(parts[3])
        if result is None:
            raise TraceError(path, where, f"unknown result {shown(parts[3])} (expected {', '.join(RESULTS)})")
        if op == "enqueue":
            send = pending.pop(client, None)
            if send is None and {client, "*"} & skipped:  # its request was the skipped line
                send = {"run": run, "seq": n, "op": h.SEND, "msg": parts[4], "key": _null(parts[5]), "status": h.INFO}
            if send is None:
                raise TraceError(path, where, f"enqueue response of client {client} without a request")
            if parts[4] != send["msg"]:
                pending[client] = send  # still in flight: this line is the bad one
                raise TraceError(path, where, f"enqueue response value {shown(parts[4])}, its request sent {shown(send['msg'])}")
            rows.append({**send, "status": result})
            skipped.discard(client)  # a request and its response paired again: later lines are judged as usual
        elif result == h.OK:
            rows.append({"run": run, "seq": n, "op": h.READ, "msg": parts[4], "key": _null(parts[5])})
    else:
        raise TraceError(path, where, f"unknown record type {shown(kind)} (expected REQUEST, RESPONSE or fault)")
