"""Client-history checks, as Jepsen's Kafka checker and OpenChaos's queue checkers make them.

A history is a table of client operations, one row each, from either source:
recorded traces (send / put_complete / put_timeout / consume / run_end records) or OpenChaos
history files. Columns: run, seq (order in the run), op, msg (message id as text), key (queue or
sharding key), offset (queue offset, null when unknown) and status (ok, fail or info:
indeterminate, as Jepsen's :info). Ops: `send` (one row per status change of a send; the row
with the highest seq carries the final status), `read` (one consumed message), `end` (the run's
stores were inspected at its end) and `held` (a message some replica still held then).

Checks (one meaning for both engines; `traces/spark.py` computes the same violations with
DataFrame operations, keeping held messages as a list per run rather than as rows):
- offset_agreement: one message per (queue, queue offset) across all reads (Jepsen: no divergence).
- lost_ack: an acked send never read although a later offset of its queue was read (Jepsen's
  lost-write watermark; with no offsets, as OpenChaos: acked and never read).
- duplicate: a message read more than once (allowed by at-least-once delivery; reported).
- order: per queue, acked messages first read in an order other than the order they were sent.
- read_failed: a read of a message whose send definitely failed.
- read_truncated: a read of a message no replica held at the end of the run (read, then lost).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterable, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from rmqcheck.model.world import IN_SYNC_REPLICAS_NOT_ENOUGH, PUT_OK

SEND, READ, END, HELD = "send", "read", "end", "held"
OK, FAIL, INFO = "ok", "fail", "info"

CHECKS: tuple[str, ...] = ("offset_agreement", "lost_ack", "duplicate", "order", "read_failed", "read_truncated")

SCHEMA = pa.schema(
    [
        pa.field("run", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
        pa.field("msg", pa.string()),
        pa.field("key", pa.string()),
        pa.field("offset", pa.int64()),
        pa.field("status", pa.string()),
    ]
)


class Violation(NamedTuple):
    check: str
    run: str
    subject: str
    count: int  # occurrences (reads, extra reads) the violation stands for
    detail: str


SHAPE = re.compile(r"the shape (\w+) leaves: ")


def shape(finding: str, what: str) -> str:
    """A violation's note that it has the shape `finding` (docs/findings/) leaves: matched by its
    shape, where no model followed the run (a soak)."""
    return f"the shape {finding} leaves: {what}"


def send_status(status: str | None) -> str:
    """A model send status as the client sees it."""
    if status == PUT_OK:
        return OK
    if status == IN_SYNC_REPLICAS_NOT_ENOUGH:
        return FAIL
    return INFO  # PENDING, FLUSH_SLAVE_TIMEOUT, NO_RESPONSE: outcome unknown or not durable


_SENDS = pa.array(["send", "put_complete", "put_timeout"])


def from_events(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """The history rows of v1 event records."""
    kind = batch.column("kind")
    has_msg = pc.is_valid(batch.column("msg"))
    parts = []
    sends = batch.filter(pc.and_(pc.is_in(kind, _SENDS), has_msg))
    if sends.num_rows:
        status = [send_status(x) for x in sends.column("status").to_pylist()]
        parts.append(_rows(sends, SEND, pa.array(status, pa.string())))
    reads = batch.filter(pc.and_(pc.equal(kind, "consume"), has_msg))
    if reads.num_rows:
        parts.append(_rows(reads, READ, pa.nulls(reads.num_rows, pa.string())))
    ends = batch.filter(pc.equal(kind, "run_end"))
    if ends.num_rows:
        parts.append(_ends(ends))
    if not parts:
        return SCHEMA.empty_table()
    return pa.concat_tables(parts)


def _rows(b: pa.RecordBatch | pa.Table, op: str, status: pa.Array) -> pa.Table:
    n = b.num_rows
    return pa.Table.from_arrays(
        [
            b.column("run"),
            b.column("seq"),
            pa.array([op] * n, pa.string()),
            pc.cast(b.column("msg"), pa.string()),
            pc.cast(b.column("queue"), pa.string()),
            b.column("queue_offset"),
            status,
        ],
        schema=SCHEMA,
    )


def _ends(b: pa.RecordBatch | pa.Table) -> pa.Table:
    rows: list[dict[str, Any]] = []
    for run, seq, held in zip(b.column("run").to_pylist(), b.column("seq").to_pylist(), b.column("held").to_pylist()):
        rows.append({"run": run, "seq": seq, "op": END})
        rows += [{"run": run, "seq": seq, "op": HELD, "msg": str(m)} for m in held or ()]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _dash(v: Any) -> str:
    return "-" if v is None else str(v)


class _Run:
    """What the checks need of one run, gathered in one streaming pass."""

    def __init__(self) -> None:
        self.sends: dict[str, list] = {}  # msg -> [first seq, last seq, final status, key, offset]
        self.reads: list[tuple[int, str, str | None, int | None]] = []  # (seq, msg, key, offset)
        self.ended = False
        self.held: set[str] = set()

    def add(self, seq: int, op: str, msg: str | None, key: str | None, offset: int | None, status: str | None) -> None:
        if op == SEND:
            s = self.sends.get(msg)
            if s is None:
                self.sends[msg] = [seq, seq, status, key, offset]
            else:
                if seq < s[0]:  # key and offset as the first send row gives them
                    s[0], s[3], s[4] = seq, key, offset
                if seq > s[1]:
                    s[1], s[2] = seq, status
        elif op == READ:
            self.reads.append((seq, msg, key, offset))
        elif op == END:
            self.ended = True
        elif op == HELD:
            self.held.add(msg)

    def check(self, run: str) -> Iterable[Violation]:
        reads = sorted(self.reads)
        by_slot: dict[tuple[str | None, int], set[str]] = defaultdict(set)
        times_read: dict[str, int] = defaultdict(int)
        top: dict[str | None, int] = {}
        for _, msg, key, offset in reads:
            times_read[msg] += 1
            if offset is not None:
                by_slot[key, offset].add(msg)
                top[key] = max(top.get(key, offset), offset)
        for (key, offset), msgs in by_slot.items():
            if len(msgs) > 1:
                yield Violation("offset_agreement", run, f"queue {_dash(key)} offset {offset}", len(msgs), "messages " + ",".join(sorted(msgs)))
        for msg, (_, _, status, key, offset) in self.sends.items():
            if status == OK and msg not in times_read and (offset is None or top.get(key, -1) > offset):
                yield Violation("lost_ack", run, f"message {msg}", 1, f"queue {_dash(key)} offset {_dash(offset)}, reads reached {_dash(top.get(key))}")
        for msg, n in times_read.items():
            if n > 1:
                yield Violation("duplicate", run, f"message {msg}", n - 1, f"read {n} times")
            send = self.sends.get(msg)
            if send is not None and send[2] == FAIL:
                yield Violation("read_failed", run, f"message {msg}", n, f"send failed, read {n} times")
            if self.ended and msg not in self.held:
                yield Violation("read_truncated", run, f"message {msg}", n, f"read {n} times, held by no replica at the end")
        latest_sent: dict[str | None, int] = {}
        seen: set[str] = set()
        for _, msg, key, _ in reads:
            send = self.sends.get(msg)
            if msg in seen or send is None or send[2] != OK:
                continue
            seen.add(msg)
            before = latest_sent.get(key)
            if before is not None and send[0] < before:
                yield Violation("order", run, f"message {msg}", 1, f"queue {_dash(key)}: first read after a message sent later")
            latest_sent[key] = send[0] if before is None else max(before, send[0])


def check_runs(tables: Iterable[pa.Table]) -> list[Violation]:
    """The violations in a stream of history tables (rows of a run may be in several tables)."""
    runs: dict[str, _Run] = defaultdict(_Run)
    for t in tables:
        cols = [t.column(n).to_pylist() for n in SCHEMA.names]
        for run, seq, op, msg, key, offset, status in zip(*cols):
            runs[run].add(seq, op, msg, key, offset, status)
    out: list[Violation] = []
    for run, r in runs.items():
        out += r.check(run)
    return out
