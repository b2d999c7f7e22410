"""CommitLog: byte-granular content, message boundaries, written vs flushed position.

A log is a tuple of cells, one per model byte; a cell names the message and which of its
bytes it is. Replication copies cells, so a slave holds exactly the master's bytes, and a
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
    bytes, not a copy of this record."""

    id: int
    size: int
    queue: int
    queue_offset: int  # assigned from the writer's topicQueueTable
    offset: int  # physical offset
    epoch: int  # the writer's epoch-file attribution when it wrote (its lastEpoch)
    writer: int  # broker id

    @property
    def end(self) -> int:
        return self.offset + self.size

    def cells(self) -> tuple[int, ...]:
        return tuple(cell(self.id, k) for k in range(self.size))


class CommitLog(NamedTuple):
    cells: tuple[int, ...] = ()
    flushed: int = 0  # durable prefix; the rest lives in the page cache only
    files: bool = False  # a commit-log file exists (created by the first append; survives crashes)


EMPTY = CommitLog()

Messages = Sequence[Message]  # indexed by id - 1


def max_phy(log: CommitLog) -> int:
    """`getMaxPhyOffset()`: end of written data (exclusive)."""
    return len(log.cells)


def append(log: CommitLog, data: tuple[int, ...], sync_flush: bool) -> CommitLog:
    """Append bytes at the end; SYNC_FLUSH flushes before the put or the HA append returns.

    Model assumption: on a SYNC_FLUSH slave the GroupCommitService flushes within ~10 ms of an
    HA append; the model makes that flush immediate and so does not explore a crash inside
    that window (documented in the README)."""
    cells = log.cells + data
    return CommitLog(cells, len(cells) if sync_flush else log.flushed, True)


def flush(log: CommitLog) -> CommitLog:
    """FlushRealTimeService (ASYNC_FLUSH): everything written becomes durable."""
    return log._replace(flushed=len(log.cells))


def crash(log: CommitLog, keep: int) -> CommitLog:
    """Process and page-cache loss: only the flushed prefix plus `keep` more bytes survive
    (pages the OS happened to write back), which can tear a message."""
    n = min(len(log.cells), log.flushed + max(keep, 0))
    return CommitLog(log.cells[:n], n, log.files)


def truncate(log: CommitLog, offset: int) -> CommitLog:
    """`MappedFileQueue.truncateDirtyFiles` plus the flushed-position clamp of
    `CommitLog.truncateDirtyFiles`."""
    if offset >= len(log.cells):
        return log
    return log._replace(cells=log.cells[:offset], flushed=min(log.flushed, offset))


def check_message(cells: tuple[int, ...], offset: int, msgs: Messages) -> tuple[bool, int]:
    """`checkMessageAndReturnSize` at `offset`: (valid, size).

    (False, 0): no data, or a header that cannot be parsed (a partial message at the end of
    the written data, or bytes that start mid-message). (False, size): the header is readable
    but the body is not this message's (two messages' bytes met at a divergence).
    """
    if offset >= len(cells):
        return False, 0
    head = cells[offset]
    if cell_part(head) != 0:
        return False, 0
    msg_id = cell_msg(head)
    size = msgs[msg_id - 1].size
    if offset + size > len(cells):
        return False, 0
    for k in range(1, size):
        if cells[offset + k] != head + k:
            return False, size
    return True, size


def scan_valid(cells: tuple[int, ...], start: int, msgs: Messages) -> int:
    """Advance over valid messages from `start`; the offset of the first invalid one (or the end)."""
    off = start
    while True:
        ok, size = check_message(cells, off, msgs)
        if not ok:
            return off
        off += size


def has_message(log: CommitLog, msg: Message) -> bool:
    return log.cells[msg.offset : msg.end] == msg.cells()


def message_at(cells: tuple[int, ...], offset: int, msgs: Messages) -> Message | None:
    ok, _ = check_message(cells, offset, msgs)
    return msgs[cell_msg(cells[offset]) - 1] if ok else None


def messages_in(cells: tuple[int, ...], start: int, end: int, msgs: Messages) -> list[Message]:
    """Valid messages that start and end inside [start, end), walking from `start`."""
    out = []
    off = start
    while off < end:
        ok, size = check_message(cells, off, msgs)
        if not ok or off + size > end:
            break
        out.append(msgs[cell_msg(cells[off]) - 1])
        off += size
    return out
