"""Store crash recovery (seed 004): one broker's `DefaultMessageStore` through crashes, clean
shutdowns and restarts, as the snapshot 8fc57f1468 writes it (store/.../DefaultMessageStore.java
`load`/`recover`/`start`/`shutdown`, CommitLog.java `recoverNormally`/`recoverAbnormally`,
StoreCheckpoint.java, ConsumeQueue.java, queue/ConsumeQueueStore.java, index/IndexService.java).

What a crash keeps: a kill -9 keeps the page cache, so every write survives; an OS crash or a
power loss keeps what was flushed plus whatever dirty pages the kernel had written back. One
action covers both: `crash(keep, meta)` keeps `keep` unflushed commit-log bytes (a partial
message is torn) and, with meta=1, every unflushed consume-queue and index entry (kill -9 is
keep = all, meta = 1).

Files:
- commit log: `file_size` model bytes per mapped file. A message never spans two files: the
  rest of a file that cannot hold it is a BLANK record (`doAppend`'s END_FILE_MIN_BLANK_LENGTH
  case), which recovery and dispatch read as "go to the next file".
- abort: created by `start`, deleted by a clean `shutdown` unless dispatch is behind; present at
  `load`, it selects abnormal recovery.
- checkpoint (`StoreCheckpoint`): physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp and
  confirmPhyOffset live in memory and reach the disk only through `flush()`: every second
  (`addScheduleTask`), after a thorough consume-queue flush, when an index file fills, and at
  shutdown.
- consume queues: one entry per message at its queue offset, flushed on their own
  (FlushConsumeQueueService, modelled as its thorough flush).
- index files: `index_entries` entries each; when one fills, the next is created and the full
  one flushed, recording its last store timestamp as indexMsgTimestamp.

Time is in seconds (`tick`), so `getMinTimestamp`'s 3 s margin is three ticks; timestamps start
at 1 because a store timestamp of 0 never matches a recovery file.

Controller mode is a controller-mode slave's store: dispatch and abnormal recovery stop at
confirmOffset, which the master's acks raise (`ack`); recovery clamps it (reference §2.5).

One module on purpose (over 500 lines): the store's files and the recovery that reads them are
one rule set; each recovery path reads what the others write.

Abstraction: the page cache that recovery adopts (it sets flushedWhere to the recovered end
without an fsync) is taken as written back before the next power loss.
"""

from __future__ import annotations

from typing import NamedTuple

from . import commitlog as cl
from . import table
from .commitlog import Message
from .step import NotEnabled
from .table import Rule, Toggle, check_toggles

BLANK = -1  # a cell of the BLANK record at a file's end (no message cell is negative)


TOGGLES: tuple[Toggle, ...] = (
    Toggle(
        "checkpoint_logics_at_dispatch",
        "apache/rocketmq#678 (2019), #1434, #10073 (2026, after the snapshot): ConsumeQueue."
        "putMessagePositionInfoWrapper sets logicsMsgTimestamp when an entry is written, not flushed",
        "The checkpoint's logicsMsgTimestamp is the latest consume-queue entry in memory, and the "
        "one-second checkpoint flush (or an index file filling) writes it to disk before the consume "
        "queue is flushed. After a power loss abnormal recovery starts from a commit-log file chosen by "
        "that timestamp, after messages whose consume-queue entries the crash took: they are never "
        "dispatched again and consumers cannot reach them.",
        True,
    ),
    Toggle(
        "checkpoint_no_margin",
        "before 0f8f5899fb (2014, alibaba/RocketMQ#467): StoreCheckpoint.getMinTimestamp without the 3 s back-off",
        "Recovery starts from the last file whose first message is no later than min(physic, logics) "
        "itself: a message stored in the same second as the checkpoint's timestamp but in an earlier "
        "file, and not yet in the flushed consume queue, is skipped.",
        False,
    ),
    Toggle(
        "normal_recovery_dispatches_after_cq_end",
        "9d9431dc1c (apache/rocketmq#9256, 2025-06, in the snapshot): recoverNormally's "
        "doDispatch = commitLogOffset > dispatchFromPhyOffset",
        "Normal recovery dispatches every message whose offset is greater than the consume queues' "
        "largest end offset: the first undispatched message starts exactly there and is skipped, and in "
        "controller mode messages past confirmOffset become visible. A controller-mode slave shut down "
        "cleanly with an unconfirmed tail (dispatch is never 'behind' past confirmOffset) comes back "
        "with that message missing from its consume queue. Before #9256 normal recovery did not dispatch.",
        True,
    ),
    Toggle(
        "recovery_keeps_dirty_cq",
        "harness mutant: drop truncateDirtyLogicFiles from recovery (PR #501, 2018, added it to "
        "recoverNormally; recoverAbnormally always had it)",
        "Consume-queue entries flushed (or written back) beyond the recovered commit-log end survive "
        "recovery and point at bytes that are not there, later at other messages.",
        False,
    ),
    Toggle(
        "blank_ends_recovery",
        "harness mutant: the size-0 (BLANK, end of file) case of the recovery scan read as the end of data",
        "Recovery stops at the first file's padding and truncates every later file, flushed messages "
        "included.",
        False,
    ),
    Toggle(
        "recovery_keeps_torn_tail",
        "harness mutant: drop mappedFileQueue.truncateDirtyFiles(processOffset) from recovery",
        "A torn message stays at the end of the log, the next message is appended after it, and the "
        "next recovery's scan stops at the torn bytes and drops everything after them.",
        False,
    ),
)
TOGGLE_NAMES = frozenset(t.name for t in TOGGLES)
SNAPSHOT = frozenset(t.name for t in TOGGLES if t.in_snapshot)


class RecoveryConfig(NamedTuple):
    message_sizes: tuple[int, ...] = (1,)
    max_messages: int = 3
    queues: int = 1
    file_size: int = 2  # mappedFileSizeCommitLog, model bytes
    sync_flush: bool = False  # flushDiskType
    controller_mode: bool = False  # a controller-mode slave: dispatch up to confirmOffset
    index_entries: int = 2  # entries per index file (maxIndexNum)
    index_safe: bool = False  # messageIndexSafe
    margin: int = 3  # getMinTimestamp's back-off, seconds
    max_time: int = 5  # ticks the clock may advance
    crashes: int = 1
    shutdowns: int = 1  # clean shutdowns
    bugs: frozenset[str] = SNAPSHOT

    def has(self, bug: str) -> bool:
        return bug in self.bugs


def validate(cfg: RecoveryConfig) -> RecoveryConfig:
    if not cfg.message_sizes or min(cfg.message_sizes) < 1 or max(cfg.message_sizes) > cfg.file_size:
        raise ValueError(f"message sizes must be between 1 and file_size={cfg.file_size}, got {list(cfg.message_sizes)}")
    if max(cfg.message_sizes) >= 1 << cl.PART_BITS:
        raise ValueError(f"message sizes must be below {1 << cl.PART_BITS}")
    if not 1 <= cfg.queues <= 3 or cfg.index_entries < 1:
        raise ValueError("queues must be 1-3 and index_entries at least 1")
    check_toggles(cfg.bugs, TOGGLE_NAMES, "recovery")
    return cfg


class Queue(NamedTuple):
    """One `ConsumeQueue`."""

    min: int = 0  # minLogicOffset: the queue offset of the first entry (fillPreBlank raises it)
    ids: tuple[int, ...] = ()  # message ids at queue offsets min, min+1, ...
    flushed: int = 0  # entries on disk
    max_end: int = -1  # maxPhysicOffset: offset + size of the last entry written


class Checkpoint(NamedTuple):
    phys: int = 0  # physicMsgTimestamp
    logics: int = 0  # logicsMsgTimestamp
    index: int = 0  # indexMsgTimestamp
    confirm: int = 0  # confirmPhyOffset


class RState(NamedTuple):
    now: int = 1
    up: bool = True
    abort: bool = True  # the abort file exists (the first start created it)
    cells: tuple[int, ...] = ()  # the commit log as written (page cache)
    flushed: int = 0  # flushedWhere: the durable prefix
    msgs: tuple[Message, ...] = ()
    stamps: tuple[int, ...] = ()  # store timestamp per message id
    queues: tuple[Queue, ...] = ()
    queue_table: tuple[int, ...] = ()  # topicQueueTable: next queue offset per queue
    reput: int = 0  # ReputMessageService.reputFromOffset
    index: tuple[int, ...] = ()  # message ids in index order, index_entries per file
    index_flushed: int = 0  # entries in flushed (full) index files
    confirm: int = 0  # CommitLog.confirmOffset (controller mode)
    ckpt: Checkpoint = Checkpoint()  # in memory
    disk: Checkpoint = Checkpoint()  # on disk
    cq_latest: int = 0  # logicsMsgTempTimestamp of the #10073 fix (intended model)
    durable: frozenset[int] = frozenset()  # ghost: ids of the messages ever wholly flushed (R2)
    confirmed: frozenset[int] = frozenset()  # ghost: ids of the messages the master ever confirmed (R5)
    crashes: int = 0
    shutdowns: int = 0


Action = tuple


def initial_state(cfg: RecoveryConfig) -> RState:
    return RState(queues=(Queue(),) * cfg.queues, queue_table=(0,) * cfg.queues)


def max_phy(s: RState) -> int:
    return len(s.cells)


def _with_flushed(s: RState, flushed: int) -> RState:
    now_durable = {m.id for m in whole_messages(s._replace(cells=s.cells[:flushed]))}
    return s._replace(flushed=flushed, durable=s.durable | now_durable)


def _replace_at(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1 :]


# --- commit log ----------------------------------------------------------------------------


def _next_file(offset: int, cfg: RecoveryConfig) -> int:
    return (offset // cfg.file_size + 1) * cfg.file_size


class Scan(NamedTuple):
    end: int  # processOffset: where the scan stopped
    messages: tuple[Message, ...]  # valid messages in order


def scan(s: RState, start: int, cfg: RecoveryConfig) -> Scan:
    """The recovery loop over `checkMessageAndReturnSize` from `start`: a valid message
    advances by its size; a BLANK (size 0) moves to the next file if there is one, else ends
    at the blank; anything else (no data, a torn message) ends the scan."""
    off, found = start, []
    while off < len(s.cells):
        if s.cells[off] == BLANK:
            nxt = _next_file(off, cfg)
            if nxt >= len(s.cells) or cfg.has("blank_ends_recovery"):
                break
            off = nxt
            continue
        m = cl.message_at(cl.CommitLog(s.cells), off, s.msgs)
        if m is None:
            break
        found.append(m)
        off = m.end
    return Scan(off, tuple(found))


def whole_messages(s: RState) -> tuple[Message, ...]:
    """Messages whose bytes are all in the log where they were written."""
    return tuple(m for m in s.msgs if cl.has_message(cl.CommitLog(s.cells), m))


# --- dispatch: consume queue, index, checkpoint timestamps ---------------------------------


def _flush_queues(s: RState) -> RState:
    return s._replace(queues=tuple(q._replace(flushed=len(q.ids)) for q in s.queues))


def _max_end(s: RState, ids: tuple[int, ...]) -> int:
    """maxPhysicOffset of a consume queue holding `ids`: the last entry's end, -1 if empty."""
    return s.msgs[ids[-1] - 1].end if ids else -1


def put_position(q: Queue, m: Message) -> Queue:
    """`ConsumeQueue.putMessagePositionInfo`: skip a message already covered (end <= maxPhysicOffset,
    or a queue offset below the current one); an empty queue starts at the message's queue offset
    (`fillPreBlank`); a gap is logged ("[BUG]logic queue order maybe wrong") and the entry is
    written at the current position anyway."""
    if m.end <= q.max_end:
        return q
    if not q.ids and m.queue_offset != 0:
        q = q._replace(min=m.queue_offset, flushed=0)
    if m.queue_offset != 0 and m.queue_offset < q.min + len(q.ids):
        return q
    return q._replace(ids=q.ids + (m.id,), max_end=m.end)


def _flush_checkpoint(s: RState) -> RState:
    return s._replace(disk=s.ckpt)


def build_index(s: RState, m: Message, cfg: RecoveryConfig) -> RState:
    """`IndexService.buildIndex`: skip messages below the last indexed one; when the last file
    is full, create the next and flush the full one (`flush(IndexFile)`: indexMsgTimestamp :=
    its end timestamp, then the whole checkpoint is flushed)."""
    if s.index and m.offset < s.msgs[s.index[-1] - 1].offset:
        return s
    if s.index and len(s.index) % cfg.index_entries == 0:
        s = s._replace(index_flushed=len(s.index), ckpt=s.ckpt._replace(index=s.stamps[s.index[-1] - 1]))
        s = _flush_checkpoint(s)
    return s._replace(index=s.index + (m.id,))


def dispatch(s: RState, m: Message, cfg: RecoveryConfig) -> RState:
    """`doDispatch`: the consume-queue entry (CommitLogDispatcherBuildConsumeQueue), the
    logics timestamp, and the index entry (CommitLogDispatcherBuildIndex)."""
    s = s._replace(queues=_replace_at(s.queues, m.queue, put_position(s.queues[m.queue], m)))
    stamp = s.stamps[m.id - 1]
    if cfg.has("checkpoint_logics_at_dispatch"):
        s = s._replace(ckpt=s.ckpt._replace(logics=stamp))
    else:
        s = s._replace(cq_latest=stamp)
    return build_index(s, m, cfg)


def confirm_offset(s: RState, cfg: RecoveryConfig) -> int:
    """`CommitLog.getConfirmOffset`: a controller-mode slave returns the stored value; outside
    controller mode (and without duplication) it is the max offset."""
    return s.confirm if cfg.controller_mode else max_phy(s)


# --- rules ---------------------------------------------------------------------------------


def rule_put(s: RState, cfg: RecoveryConfig, queue: int, size: int) -> RState:
    """`CommitLog.asyncPutMessage` and `doAppend`: the queue offset comes from the
    topicQueueTable; a message that does not fit in the current file's rest pads it with a
    BLANK and goes to the next file; SYNC_FLUSH's GroupCommitService flushes before the put
    returns and records physicMsgTimestamp."""
    if not s.up or len(s.msgs) >= cfg.max_messages or size not in cfg.message_sizes or not 0 <= queue < cfg.queues:
        raise NotEnabled
    cells = s.cells
    if len(cells) % cfg.file_size + size > cfg.file_size:
        cells += (BLANK,) * (_next_file(len(cells), cfg) - len(cells))
    qo = s.queue_table[queue]
    m = Message(len(s.msgs) + 1, size, queue, qo, len(cells), 0, 0)
    s = s._replace(
        cells=cells + m.cells(),
        msgs=s.msgs + (m,),
        stamps=s.stamps + (s.now,),
        queue_table=_replace_at(s.queue_table, queue, qo + 1),
    )
    if cfg.sync_flush:
        s = _with_flushed(s, max_phy(s))._replace(ckpt=s.ckpt._replace(phys=s.now))
    return s


def rule_tick(s: RState, cfg: RecoveryConfig) -> RState:
    """One second passes."""
    if s.now > cfg.max_time:
        raise NotEnabled
    return s._replace(now=s.now + 1)


def flush_log(s: RState) -> RState:
    """Flush the commit log, then physicMsgTimestamp := the store timestamp of the last message written."""
    return _with_flushed(s, max_phy(s))._replace(ckpt=s.ckpt._replace(phys=s.stamps[-1]))


def rule_flush_log(s: RState, cfg: RecoveryConfig) -> RState:
    """FlushRealTimeService (ASYNC_FLUSH)."""
    if not s.up or s.flushed >= max_phy(s):
        raise NotEnabled
    return flush_log(s)


def rule_dispatch(s: RState, cfg: RecoveryConfig) -> RState:
    """ReputMessageService.doReput: dispatch the message at reputFromOffset, up to
    getConfirmOffset; a BLANK moves reputFromOffset to the next file (`rollNextFile`)."""
    if not s.up or s.reput >= confirm_offset(s, cfg):
        raise NotEnabled
    if s.cells[s.reput] == BLANK:
        return s._replace(reput=_next_file(s.reput, cfg))
    m = cl.message_at(cl.CommitLog(s.cells), s.reput, s.msgs)
    if m is None or m.end > confirm_offset(s, cfg):
        raise NotEnabled
    return dispatch(s, m, cfg)._replace(reput=m.end)


def flush_consume_queues(s: RState, cfg: RecoveryConfig) -> RState:
    """FlushConsumeQueueService's thorough flush: read logicsMsgTimestamp, flush every queue,
    set logicsMsgTimestamp back to what was read, flush the checkpoint. The #10073 fix reads the
    in-memory latest (logicsMsgTempTimestamp) instead, so the disk value covers only flushed entries."""
    s = _flush_queues(s)
    if not cfg.has("checkpoint_logics_at_dispatch"):
        s = s._replace(ckpt=s.ckpt._replace(logics=s.cq_latest))
    return _flush_checkpoint(s)


def rule_flush_cq(s: RState, cfg: RecoveryConfig) -> RState:
    if not s.up or all(q.flushed == len(q.ids) for q in s.queues):
        raise NotEnabled
    return flush_consume_queues(s, cfg)


def rule_flush_checkpoint(s: RState, cfg: RecoveryConfig) -> RState:
    """The one-second scheduled `storeCheckpoint.flush()`: the in-memory values go to disk."""
    if not s.up or s.disk == s.ckpt:
        raise NotEnabled
    return _flush_checkpoint(s)


def rule_ack(s: RState, cfg: RecoveryConfig) -> RState:
    """Controller mode: the master's confirmOffset in a transfer header covers the next message
    (`confirmOffset = min(header, maxPhyOffset)`); setConfirmOffset records it in the checkpoint
    (in memory)."""
    if not s.up or not cfg.controller_mode:
        raise NotEnabled
    rest = scan(s, s.confirm, cfg)
    if not rest.messages:
        raise NotEnabled
    m = rest.messages[0]
    return s._replace(confirm=m.end, ckpt=s.ckpt._replace(confirm=m.end), confirmed=s.confirmed | {m.id})


def rule_shutdown(s: RState, cfg: RecoveryConfig) -> RState:
    """`DefaultMessageStore.shutdown`: flush the commit log, the consume queues and the index
    files, flush the checkpoint, and delete the abort file only when dispatch is not behind
    (`dispatchBehindBytes() == 0`, measured against getConfirmOffset)."""
    if not s.up or s.shutdowns >= cfg.shutdowns:
        raise NotEnabled
    behind = confirm_offset(s, cfg) > s.reput
    if s.stamps and s.flushed < max_phy(s):
        s = flush_log(s)
    s = flush_consume_queues(s, cfg)._replace(index_flushed=len(s.index))
    return s._replace(up=False, abort=behind, shutdowns=s.shutdowns + 1, ckpt=s.disk)


def rule_crash(s: RState, cfg: RecoveryConfig, keep: int, meta: int) -> RState:
    """Fault: the process dies; `keep` unflushed commit-log bytes survive, and with meta=1 the
    unflushed consume-queue and index entries too (kill -9 keeps everything). Memory is lost:
    the checkpoint is what its last flush wrote."""
    if not s.up or s.crashes >= cfg.crashes or not 0 <= keep <= max_phy(s) - s.flushed or meta not in (0, 1):
        raise NotEnabled
    s = s._replace(cells=s.cells[: s.flushed + keep], up=False, crashes=s.crashes + 1, ckpt=s.disk)
    if not meta:
        s = s._replace(
            queues=tuple(q._replace(ids=q.ids[: q.flushed]) for q in s.queues), index=s.index[: s.index_flushed]
        )
    return s


def rule_restart(s: RState, cfg: RecoveryConfig) -> RState:
    """`DefaultMessageStore.load` then `start`."""
    if s.up:
        raise NotEnabled
    return start(load(s, cfg), cfg)


# --- load and recovery ---------------------------------------------------------------------


def _recover_queue(q: Queue, s: RState) -> Queue:
    """`ConsumeQueue.recover`: every surviving entry is valid; maxPhysicOffset is the last one's end."""
    return q._replace(flushed=len(q.ids), max_end=_max_end(s, q.ids))


def load_index(s: RState, clean: bool, cfg: RecoveryConfig) -> RState:
    """`IndexService.load`: after an abnormal exit, index files whose end timestamp is later
    than the checkpoint's indexMsgTimestamp are destroyed (they may index messages the crash
    took). Store timestamps only grow, so those are the last files."""
    if clean:
        return s
    n = cfg.index_entries
    keep = 0
    while keep < len(s.index):
        last = s.index[min(keep + n, len(s.index)) - 1]
        if s.stamps[last - 1] > s.disk.index:
            break
        keep = min(keep + n, len(s.index))
    return s._replace(index=s.index[:keep], index_flushed=min(s.index_flushed, keep))


def load(s: RState, cfg: RecoveryConfig) -> RState:
    """`load`: abort file → lastExitOK; consume queues recovered; the checkpoint read
    (`loadCheckPoint` sets confirmOffset from it); index files loaded; then `recover`."""
    clean = not s.abort
    s = s._replace(queues=tuple(_recover_queue(q, s) for q in s.queues), ckpt=s.disk, confirm=s.disk.confirm)
    s = load_index(s, clean, cfg)
    s = recover_normally(s, cfg) if clean else recover_abnormally(s, cfg)
    return recover_topic_queue_table(s, cfg)


def _matched(s: RState, file: int, normal: bool, dispatch_from: int, cfg: RecoveryConfig) -> bool:
    """`isMappedFileMatchedRecover`: the file's first message is valid, its timestamp is not 0,
    with messageIndexSafe not after indexMsgTimestamp, and (ConsumeQueueStore) normal: its offset
    is within what the consume queues cover; abnormal: its timestamp is not after the checkpoint's
    min(physic, logics) minus the margin (`getMinTimestamp`, never below 0)."""
    m = cl.message_at(cl.CommitLog(s.cells), file * cfg.file_size, s.msgs)
    if m is None or s.stamps[m.id - 1] == 0:
        return False
    stamp = s.stamps[m.id - 1]
    if cfg.index_safe and stamp > s.disk.index:
        return False
    if normal:
        return m.offset <= dispatch_from
    margin = 0 if cfg.has("checkpoint_no_margin") else cfg.margin
    return stamp <= max(min(s.disk.phys, s.disk.logics) - margin, 0)


def _files(s: RState, cfg: RecoveryConfig) -> int:
    """Mapped files holding data; a file whose bytes a crash took still exists but reads as no data."""
    return -(-len(s.cells) // cfg.file_size)


def _truncate(s: RState, end: int, cfg: RecoveryConfig) -> RState:
    """The end of both recoveries: clamp confirmOffset (controller mode), `truncateDirtyLogicFiles`
    (consume-queue entries at or past the end go), then flushedWhere := end and
    `truncateDirtyFiles` (the commit log's tail goes)."""
    if not cfg.has("recovery_keeps_dirty_cq") and max((q.max_end for q in s.queues), default=-1) >= end:
        queues = []
        for q in s.queues:
            ids = tuple(i for i in q.ids if s.msgs[i - 1].offset < end)
            queues.append(q._replace(ids=ids, flushed=min(q.flushed, len(ids)),
                                     max_end=_max_end(s, ids)))
        s = s._replace(queues=tuple(queues))
    cells = s.cells if cfg.has("recovery_keeps_torn_tail") else s.cells[:end]
    return _with_flushed(s._replace(cells=cells), end)


def _clamp_confirm(s: RState, high: int, cfg: RecoveryConfig) -> RState:
    """Controller mode (§2.5): confirmOffset below minPhyOffset (0) is raised to it, above `high` lowered to it."""
    if not cfg.controller_mode:
        return s
    confirm = 0 if s.confirm < 0 else min(s.confirm, high)
    return s._replace(confirm=confirm, ckpt=s.ckpt._replace(confirm=confirm))


def _no_files(s: RState) -> RState:
    """No commit-log file was ever created (the first put creates one, and a crash does not
    delete it): flushedWhere 0 and `destroyConsumeQueueStore`."""
    return _with_flushed(s, 0)._replace(queues=tuple(Queue() for _ in s.queues))


def recover_normally(s: RState, cfg: RecoveryConfig) -> RState:
    """`CommitLog.recoverNormally(dispatchFromPhyOffset)`, dispatchFromPhyOffset being the
    consume queues' largest maxPhysicOffset: start at the last file (index > 0) whose first
    message is within it, scan, dispatch (snapshot: offset > dispatchFromPhyOffset; before
    #9256: nothing), clamp confirmOffset to the scan's end, truncate."""
    if not s.msgs:
        return _no_files(s)
    dispatch_from = max((q.max_end for q in s.queues), default=-1)
    file = max(_files(s, cfg) - 1, 0)
    while file > 0 and not _matched(s, file, True, dispatch_from, cfg):
        file -= 1
    found = scan(s, file * cfg.file_size, cfg)
    if cfg.has("normal_recovery_dispatches_after_cq_end"):
        for m in found.messages:
            if m.offset > dispatch_from:
                s = dispatch(s, m, cfg)
    return _truncate(_clamp_confirm(s, found.end, cfg), found.end, cfg)


def recover_abnormally(s: RState, cfg: RecoveryConfig) -> RState:
    """`CommitLog.recoverAbnormally`: start at the last file matched by the checkpoint's
    timestamps (file 0 if none), scan and dispatch every valid message (controller mode: those
    ending at or before confirmOffset, tracking lastConfirmValidMsgPhyOffset), clamp
    confirmOffset to that, flush the consume queues (not the checkpoint), truncate."""
    if not s.msgs:
        return _no_files(s)
    file = _files(s, cfg) - 1
    while file >= 0 and not _matched(s, file, False, -1, cfg):
        file -= 1
    start = max(file, 0) * cfg.file_size
    found = scan(s, start, cfg)
    last_confirmed = start
    for m in found.messages:
        if not cfg.controller_mode or m.end <= s.confirm:
            s = dispatch(s, m, cfg)
            last_confirmed = m.end
    s = _flush_queues(s)  # getQueueStore().flush()
    return _truncate(_clamp_confirm(s, last_confirmed, cfg), found.end, cfg)


def recover_topic_queue_table(s: RState, cfg: RecoveryConfig) -> RState:
    """`recoverTopicQueueTable`: each queue's next offset is its max offset; in controller mode
    `compensateForHA` continues from the messages past confirmOffset (#7689)."""
    table_ = [q.min + len(q.ids) for q in s.queues]
    if cfg.controller_mode:
        for m in scan(s, s.confirm, cfg).messages:
            table_[m.queue] = m.queue_offset + 1
    return s._replace(queue_table=tuple(table_))


def start(s: RState, cfg: RecoveryConfig) -> RState:
    """`start`: reputFromOffset := getConfirmOffset() (recheckReputOffsetFromCq is off by
    default), the abort file is created, the store runs."""
    return s._replace(up=True, abort=True, reput=confirm_offset(s, cfg))


# --- the transition table ------------------------------------------------------------------


def _none(s: RState, cfg: RecoveryConfig) -> list[tuple]:
    return [()]


def _puts(s: RState, cfg: RecoveryConfig) -> list[tuple]:
    return [(q, z) for q in range(cfg.queues) for z in cfg.message_sizes]


def _crashes(s: RState, cfg: RecoveryConfig) -> list[tuple]:
    return [(k, meta) for k in range(max_phy(s) - s.flushed + 1) for meta in (0, 1)]


RULES: dict[str, Rule] = {
    "put": Rule(rule_put, _puts),
    "tick": Rule(rule_tick, _none),
    "flush_log": Rule(rule_flush_log, _none),
    "dispatch": Rule(rule_dispatch, _none),
    "flush_cq": Rule(rule_flush_cq, _none),
    "flush_checkpoint": Rule(rule_flush_checkpoint, _none),
    "ack": Rule(rule_ack, _none),
    "shutdown": Rule(rule_shutdown, _none),
    "crash": Rule(rule_crash, _crashes, fault=True),
    "restart": Rule(rule_restart, _none),
}

ARGS = {"put": ("queue", "size"), "crash": ("keep", "meta")}


def arg_names(kind: str) -> tuple[str, ...]:
    return ARGS.get(kind, ())


def step(s: RState, action: Action, cfg: RecoveryConfig) -> RState:
    return table.step(RULES, s, action, cfg)


def successors(s: RState, cfg: RecoveryConfig) -> list[tuple[Action, RState]]:
    return table.successors(RULES, s, cfg)
