"""CommitLog: byte-granular content, message boundaries, written vs flushed position.

A log is a tuple of cells, one per model byte (`unit` bytes of the real log); a cell names the
message and which of its parts it is. Replication copies cells, so a slave holds exactly the master's bytes, and a
transfer batch (not message-aligned, reference §2.4) can leave a partial message at the
tail, or bytes of two different messages can meet at one offset after a divergence. Those
are the torn and invalid messages that `truncateInvalidMsg` and recovery cut.

Every message has a fixed offset (the writer appended it at its max offset and replication
preserves offsets), so "message m is in log L" is a comparison of cells at m.offset.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

PART_BITS = 3  # message sizes up to 7 model bytes


def cell(msg_id: int, part: int) -> int:
    return (msg_id << PART_BITS) | part


def cell_msg(c: int) -> int:
    return c >> PART_BITS


def cell_part(c: int) -> int:
    return c & ((1 << PART_BITS) - 1)


class Message(NamedTuple):
    """A message as the writer master appended it. Immutable and global: replicas hold its
    bytes, not a copy of this record. Offsets and sizes are in bytes (a log's `unit` of them
    to a cell)."""

    id: int
    size: int
    queue: int
    queue_offset: int  # assigned from the writer's topicQueueTable
    offset: int  # physical offset
    epoch: int  # the writer's epoch-file attribution when it wrote (its lastEpoch)
    writer: int  # broker id

    @property
    def end(self) -> int:
        return self.offset + self.size  # wroteOffset + wroteBytes: a long, far from overflow (Config.validate)

    def cells(self, unit: int = 1) -> tuple[int, ...]:
        return tuple(cell(self.id, k) for k in range(self.size // unit))


class CommitLog(NamedTuple):
    """The bytes of one store. Offsets are Java's (`long` physical offsets): the first cell
    starts at `base` (where the store's first commit-log file starts) and each cell stands for
    `unit` bytes, so the same runs can be checked with offsets near 2^31 or 2^63 and offset
    differences of gigabytes (Config.base_offset, Config.unit_bytes); functions here take and
    return offsets and do the indexing."""

    cells: tuple[int, ...] = ()
    flushed: int = 0  # end of the durable prefix (an offset); the rest lives in the page cache only
    files: bool = False  # a commit-log file exists (created by the first append; survives crashes)
    base: int = 0
    unit: int = 1


EMPTY = CommitLog()

Messages = Sequence[Message]  # indexed by id - 1


def empty(base: int, unit: int) -> CommitLog:
    """A store's log before its first message. At a base offset above 0 the first file exists
    already (it starts there: the files before it were deleted, as on a long-running broker)."""
    return CommitLog((), base, base > 0, base, unit)


def max_phy(log: CommitLog) -> int:
    """`getMaxPhyOffset()`: end of written data (exclusive)."""
    return log.base + log.unit * len(log.cells)


def _index(log: CommitLog, offset: int) -> int:
    """The cell holding byte `offset` (offsets the model makes fall on cell boundaries)."""
    return (offset - log.base) // log.unit


def read(log: CommitLog, offset: int, size: int) -> tuple[int, ...]:
    """The cells of [offset, offset + size)."""
    return log.cells[max(_index(log, offset), 0) : max(_index(log, offset + size), 0)]


def unflushed(log: CommitLog) -> int:
    """Cells written past the durable prefix (what a crash may lose)."""
    return (max_phy(log) - log.flushed) // log.unit


def append(log: CommitLog, data: tuple[int, ...], sync_flush: bool) -> CommitLog:
    """Append bytes at the end; SYNC_FLUSH flushes before the put or the HA append returns.

    Model assumption: on a SYNC_FLUSH slave the GroupCommitService flushes within ~10 ms of an
    HA append; the model makes that flush immediate and so does not explore a crash inside
    that window (docs/model-scope.md)."""
    log = log._replace(cells=log.cells + data, files=True)
    return log._replace(flushed=max_phy(log)) if sync_flush else log


def flush(log: CommitLog) -> CommitLog:
    """FlushRealTimeService (ASYNC_FLUSH): everything written becomes durable."""
    return log._replace(flushed=max_phy(log))


def crash(log: CommitLog, keep: int) -> CommitLog:
    """Process and page-cache loss: only the flushed prefix plus `keep` more cells survive
    (pages the OS happened to write back), which can tear a message."""
    n = min(len(log.cells), _index(log, log.flushed) + max(keep, 0))
    log = log._replace(cells=log.cells[:n])
    return log._replace(flushed=max_phy(log))


def truncate(log: CommitLog, offset: int) -> CommitLog:
    """`MappedFileQueue.truncateDirtyFiles` plus the flushed-position clamp of
    `CommitLog.truncateDirtyFiles`."""
    if offset >= max_phy(log):
        return log
    offset = max(offset, log.base)  # nothing lies below the first file's start
    return log._replace(cells=log.cells[: _index(log, offset)], flushed=min(log.flushed, offset))


def check_message(log: CommitLog, offset: int, msgs: Messages) -> tuple[bool, int]:
    """`checkMessageAndReturnSize` at `offset`: (valid, size).

    (False, 0): no data, or a header that cannot be parsed (a partial message at the end of
    the written data, or bytes that start mid-message). (False, size): the header is readable
    but the body is not this message's (two messages' bytes met at a divergence).
    """
    i, cells = _index(log, offset), log.cells
    if offset >= max_phy(log) or i < 0:
        return False, 0
    head = cells[i]
    if cell_part(head) != 0:
        return False, 0
    msg = msgs[cell_msg(head) - 1]
    parts = msg.size // log.unit
    if i + parts > len(cells):
        return False, 0
    for k in range(1, parts):
        if cells[i + k] != head + k:
            return False, msg.size
    return True, msg.size


def scan_valid(log: CommitLog, start: int, msgs: Messages) -> int:
    """Advance over valid messages from `start`; the offset of the first invalid one (or the end)."""
    off = start
    while True:
        ok, size = check_message(log, off, msgs)
        if not ok:
            return off
        off += size


def has_message(log: CommitLog, msg: Message) -> bool:
    return msg.offset >= log.base and read(log, msg.offset, msg.size) == msg.cells(log.unit)


def message_at(log: CommitLog, offset: int, msgs: Messages) -> Message | None:
    ok, _ = check_message(log, offset, msgs)
    return msgs[cell_msg(log.cells[_index(log, offset)]) - 1] if ok else None


def messages_in(log: CommitLog, start: int, end: int, msgs: Messages) -> list[Message]:
    """Valid messages that start and end inside [start, end), walking from `start`."""
    out = []
    off = start
    while off < end:
        ok, size = check_message(log, off, msgs)
        if not ok or off + size > end:
            break
        out.append(msgs[cell_msg(log.cells[_index(log, off)]) - 1])
        off += size
    return out


def offsets(log: CommitLog, end: int | None = None) -> range:
    """The offset of every cell up to `end` (default: the whole log)."""
    return range(log.base, max_phy(log) if end is None else min(end, max_phy(log)), log.unit)


def message_floor(log: CommitLog, offset: int) -> int:
    """The start of the message holding byte `offset` (`offset` itself on a boundary or
    outside the data)."""
    if log.base <= offset < max_phy(log):
        return offset - cell_part(log.cells[_index(log, offset)]) * log.unit
    return offset
