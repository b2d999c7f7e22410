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
from typing import Any, Iterable, NamedTuple

import numpy as np
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


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each row's value as a whole number (null one of them), and the values by number."""
    if pa.types.is_string(column.type):  # one string array holds 2 GiB of text at most
        column = pc.cast(column, pa.large_string())
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary


def _spans(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each span of consecutive rows equal in every column starts and ends (exclusive)."""
    n = len(columns[0])
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.zeros(n - 1, bool)
    for c in columns:
        change |= c[1:] != c[:-1]
    starts = np.flatnonzero(np.r_[True, change])
    return starts, np.r_[starts[1:], n].astype(np.int64)


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each value is in `sorted_set` (sorted, distinct)."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.searchsorted(sorted_set, values).clip(0, len(sorted_set) - 1)
    return sorted_set[at] == values


def check_runs(tables: Iterable[pa.Table]) -> list[Violation]:
    """The violations in a stream of history tables (rows of a run may be in several tables).

    Columnar: run, message and queue become whole numbers and every check is a sort and a pass
    over arrays, so memory follows the history's columns (a 30-minute soak's 7.8 million rows:
    4.8 GB as Python objects a message, see docs/performance.md), not a Python object a row."""
    t = pa.concat_tables([x.select(SCHEMA.names).cast(SCHEMA) for x in tables] or [SCHEMA.empty_table()])
    run, runs = _codes(t.column("run"))
    msg, msgs = _codes(t.column("msg"))
    key, keys = _codes(t.column("key"))
    op, ops = _codes(t.column("op"))
    status, statuses = _codes(t.column("status"))
    seq = t.column("seq").to_numpy()
    has_offset = pc.is_valid(t.column("offset")).to_numpy(zero_copy_only=False)
    offset = pc.fill_null(t.column("offset"), 0).to_numpy()
    del t

    def code(values: pa.Array, value: str) -> int:
        found = values.index(value).as_py()
        return -2 if found < 0 else found  # -2: no row has it

    def name(values: pa.Array, c: int) -> str | None:
        return values[int(c)].as_py()

    pair = run * len(msgs) + msg  # (run, message) as one number
    queue = run * len(keys) + key  # (run, queue)
    out: list[Violation] = []

    # per (run, message): its sends (the first one's queue and offset, the last one's status) ...
    s = np.flatnonzero(op == code(ops, SEND))
    s = s[np.lexsort((seq[s], pair[s]))]
    first, last = _spans(pair[s])
    s_pair, s_first, s_status = pair[s[first]], s[first], status[s[last - 1]]
    ok, fail = code(statuses, OK), code(statuses, FAIL)
    # ... and its reads (how many; the first one's row)
    r = np.flatnonzero(op == code(ops, READ))
    r = r[np.lexsort((seq[r], pair[r]))]
    first, last = _spans(pair[r])
    r_pair, r_first, r_count = pair[r[first]], r[first], last - first

    # offset_agreement: reads with an offset by (queue, offset, message); and each queue's highest offset read
    ro = r[has_offset[r]]
    ro = ro[np.lexsort((msg[ro], offset[ro], queue[ro]))]
    q_first, q_last = _spans(queue[ro])
    tops = dict(zip(queue[ro[q_first]].tolist(), offset[ro[q_last - 1]].tolist()))
    starts, ends = _spans(queue[ro], offset[ro])
    several = msg[ro[starts]] != msg[ro[ends - 1]]  # sorted by message within a slot
    for a, b in zip(starts[several].tolist(), ends[several].tolist()):
        names = sorted({name(msgs, m) for m in msg[ro[a:b]].tolist()})
        i = ro[a]
        out.append(Violation("offset_agreement", name(runs, run[i]), f"queue {_dash(name(keys, key[i]))} offset "
                             f"{int(offset[i])}", len(names), "messages " + ",".join(names)))

    def top(i: int) -> int | None:
        return tops.get(int(queue[i]))

    # lost_ack: acked, never read, and a later offset of its queue read (or no offsets at all)
    unread = ~_member(s_pair, r_pair)
    for i in s_first[unread & (s_status == ok)].tolist():
        got = top(i)
        if not has_offset[i] or (-1 if got is None else got) > offset[i]:
            out.append(Violation("lost_ack", name(runs, run[i]), f"message {name(msgs, msg[i])}", 1,
                                 f"queue {_dash(name(keys, key[i]))} offset {_dash(int(offset[i]) if has_offset[i] else None)}, "
                                 f"reads reached {_dash(got)}"))

    # duplicate, read_failed, read_truncated: per message read
    failed = _member(r_pair, s_pair[s_status == fail])  # s_pair is sorted
    ended = np.unique(run[op == code(ops, END)])
    held_rows = op == code(ops, HELD)
    truncated = _member(run[r_first], ended) & ~_member(r_pair, np.unique(pair[held_rows]))
    some = (r_count > 1) | failed | truncated
    for i, n, bad_send, lost in zip(r_first[some].tolist(), r_count[some].tolist(), failed[some].tolist(),
                                    truncated[some].tolist()):
        who, subject = name(runs, run[i]), f"message {name(msgs, msg[i])}"
        if n > 1:
            out.append(Violation("duplicate", who, subject, n - 1, f"read {n} times"))
        if bad_send:
            out.append(Violation("read_failed", who, subject, n, f"send failed, read {n} times"))
        if lost:
            out.append(Violation("read_truncated", who, subject, n, f"read {n} times, held by no replica at the end"))

    # order: per queue, acked messages first read after one sent later had been
    acked = _member(r_pair, s_pair[s_status == ok])
    f = r_first[acked]
    sent = seq[s_first[np.searchsorted(s_pair, r_pair[acked])]] if len(f) else np.zeros(0, np.int64)
    by_queue = np.lexsort((seq[f], queue[f]))
    q_first, q_last = _spans(queue[f][by_queue])
    for a, b in zip(q_first.tolist(), q_last.tolist()):
        rows = by_queue[a:b]
        before = np.maximum.accumulate(sent[rows])[:-1]
        for j in np.flatnonzero(sent[rows][1:] < before).tolist():
            i = f[rows[j + 1]]
            out.append(Violation("order", name(runs, run[i]), f"message {name(msgs, msg[i])}", 1,
                                 f"queue {_dash(name(keys, key[i]))}: first read after a message sent later"))
    return out
