"""One broker replica: store positions, SyncStateSet bookkeeping and the rules local to it.

Mirrors `DefaultMessageStore` / `CommitLog` (store positions, truncation, dispatch, recovery),
`AutoSwitchHAService` (confirmOffset, SyncStateSet, role changes of the store) and the
`ReplicasManager` fields it needs (reference §2.5-2.10). Rules that touch two brokers (HA
connections) live in `model/ha.py`; the world step in `model/step.py`.

Every function is pure: it takes a Broker and returns a new one.
"""

from __future__ import annotations

from typing import NamedTuple

from . import commitlog as cl
from . import epochfile as ef
from .commitlog import CommitLog, Messages
from .config import Config
from .connections import EPOCH_ZERO, Conn, conn_of, replace_conn
from .epochfile import EpochFile

MASTER = "MASTER"  # BrokerRole.SYNC_MASTER: controller mode always makes masters SYNC_MASTER
SLAVE = "SLAVE"
NONE = "NONE"  # after a restart, before the controller gave a role (fenced)

READY = "READY"
TRANSFER = "TRANSFER"



class Client(NamedTuple):
    """`AutoSwitchHAClient`, the slave's end (§2.3). HANDSHAKE happens inside one action."""

    state: str = READY
    master: int | None = None  # the broker this client is connected to
    received_epoch: int = -1  # currentReceivedEpoch: survives reconnects, reset by reOpen
    reported: int = 0  # currentReportedOffset
    ack: int | None = None  # the last ack written to the socket and not yet read by the master


class PendingPut(NamedTuple):
    """A GroupCommitRequest waiting in GroupTransferService (§2.8)."""

    msg: int
    next_offset: int
    deadline: int
    need_ack: int  # -1: every SyncStateSet member (allAckInSyncStateSet)


class Broker(NamedTuple):
    id: int
    up: bool = True
    running: bool = True  # ReplicasManager RUNNING and unfenced; False from restart until a role is known
    # The broker metadata file exists (written at the first registration, kept across restarts),
    # so heartbeats carry the id whatever ReplicasManager's state (see `heartbeats`).
    metadata_file: bool = True
    role: str = SLAVE
    promoting: int = 0  # epoch of a changeToMaster blocked on dispatch (§2.7.1 step 7); 0 = none
    master_epoch: int = 0  # ReplicasManager.masterEpoch (memory only)
    master_id: int | None = None  # ReplicasManager.masterBrokerId
    sss: frozenset[int] = frozenset()  # the local (confirmed) SyncStateSet
    sss_epoch: int = 0
    remote_sss: frozenset[int] = frozenset()  # the last proposed set
    synchronizing: bool = False  # isSynchronizingSyncStateSet
    log: CommitLog = cl.EMPTY
    epochs: EpochFile = ef.EMPTY
    confirm: int = -1  # CommitLog.confirmOffset, persisted in the store checkpoint
    # The checkpoint file's confirmPhyOffset: what StoreCheckpoint.flush() last wrote. Tracked only
    # within the `checkpoint_reverts` budget (`rule_flush_checkpoint`); elsewhere it stays -1.
    checkpoint_confirm: int = -1
    reput: int = 0  # ReputMessageService.reputFromOffset
    cq: tuple[tuple[int, ...], ...] = ()  # consume queues: message ids by queue offset
    queue_table: tuple[int, ...] = ()  # topicQueueTable: next queue offset per queue
    consumer_offsets: tuple[int, ...] = ()  # ConsumerOffsetManager: committed offsets per queue
    caught_up: tuple[tuple[int, int], ...] = ()  # connectionCaughtUpTimeTable: never cleared
    conns: tuple[Conn, ...] = ()
    client: Client = Client()
    # AlterSyncStateSet proposals queued on the executor: (set, masterEpoch, syncStateSetEpoch)
    # as they were when proposed.
    alters: tuple[tuple[frozenset[int], int, int], ...] = ()
    puts: tuple[PendingPut, ...] = ()
    was_master: bool = False  # the role at the last crash (only the B1 toggle reads it)
    # The scheduled checkSyncStateSetAndDoReport task died (only the C2 toggle kills it); a
    # restart schedules it again.
    shrink_task_dead: bool = False
    # Ghost, for invariant I4: the last ack this broker read from each slave while master.
    last_acks: tuple[tuple[int, int], ...] = ()
    # Slaves whose closed connection's second service has yet to call removeConnection
    # (`rule_ha_second_removal`; only with the `second_removals` budget).
    closing: frozenset[int] = frozenset()


def new_broker(broker_id: int, queues: int, log: CommitLog = cl.EMPTY) -> Broker:
    """A broker with an empty store whose log is `log` (`commitlog.empty` at the configuration's
    base offset); dispatch starts at the log's first offset."""
    zeros = (0,) * queues
    return Broker(id=broker_id, log=log, reput=cl.max_phy(log), cq=((),) * queues, queue_table=zeros,
                  consumer_offsets=zeros)


def max_phy(b: Broker) -> int:
    return cl.max_phy(b.log)


def _set_pair(pairs: tuple[tuple[int, int], ...], key: int, value: int) -> tuple[tuple[int, int], ...]:
    return tuple(sorted({**dict(pairs), key: value}.items()))


# --- SyncStateSet views (§2.6) ---------------------------------------------------------------


def sync_state_set(b: Broker, cfg: Config) -> frozenset[int]:
    """`getSyncStateSet()`: local ∪ proposed while synchronizing. Why: a set the controller
    may already have applied must be honoured before its response arrives (#5663)."""
    if b.synchronizing and not cfg.has("ack_uses_local_sss_only"):
        return b.sss | b.remote_sss
    return b.sss


def in_sync_replicas_nums(b: Broker, cfg: Config) -> int:
    """`inSyncReplicasNums`: max(|local|, |proposed|) while synchronizing."""
    if b.synchronizing and not cfg.has("ack_uses_local_sss_only"):
        return max(len(b.sss), len(b.remote_sss))
    return len(b.sss)


def fenced(b: Broker) -> bool:
    return not b.running


def alone(b: Broker, cfg: Config) -> bool:
    """The "only the master is in sync" shortcut of getConfirmOffset(Directly). The snapshot
    looks at the local set only; the intended form also counts a pending proposal, as acks do."""
    if cfg.has("confirm_ignores_proposed_sss"):
        return len(b.sss) == 1
    return len(sync_state_set(b, cfg)) == 1


# --- confirmOffset (§2.5) --------------------------------------------------------------------


def confirm_offset_directly(b: Broker, cfg: Config) -> int:
    """`CommitLog.getConfirmOffsetDirectly`."""
    if b.role != SLAVE and not fenced(b) and alone(b, cfg):
        return max_phy(b)
    return b.confirm


def compute_confirm_offset(b: Broker, cfg: Config) -> int:
    """`AutoSwitchHAService.computeConfirmOffset`: min over the acks (> 0) of connected
    SyncStateSet members and the master's own max. If a member has no connection the old value
    is kept: why, a partitioned stale master must not advance it without that member (#6662)."""
    members = sync_state_set(b, cfg)
    # Snapshot: `slaveAckOffset > 0` skips an empty member (ack 0) and a reconnected one that
    # has not acked yet (-1). Intended: an ack of 0 counts, and a member that has not acked on
    # its current connection holds confirmOffset like a missing connection does.
    skip_unacked = cfg.has("confirm_skips_unacked_members")
    if not cfg.has("confirm_min_over_connected_only"):
        connected = {c.slave for c in b.conns}  # a lingering connection too
        unacked = {c.slave for c in b.conns if c.ack < 0}
        for s in members:
            if s != b.id and (s not in connected or (not skip_unacked and s in unacked)):
                return confirm_offset_directly(b, cfg)
    result = max_phy(b)
    for c in b.conns:
        if c.slave in members and (c.ack > 0 if skip_unacked else c.ack >= 0):
            result = min(result, c.ack)
    return result


def update_confirm_offset_when_slave_ack(b: Broker, slave: int, cfg: Config) -> Broker:
    """`AutoSwitchHAService.updateConfirmOffsetWhenSlaveAck`: recompute confirmOffset when the
    acking slave is a member of the local set (AutoSwitchHAService.java:356). The intended form
    (confirm_ignores_proposed_sss off) also lets a proposed member's acks count, on an unfenced
    broker that is not a slave (as `alone` and mark_synchronizing test it; a patch can only say
    "not SLAVE and not fenced"): a restarted broker with no role yet proposes too
    (maybeExpandInSyncStateSet has no role check) but it is fenced and its local set is empty, so
    the code never lets it confirm (scenarios/quirks/restarted-broker-confirms-for-no-one.scn)."""
    proposed_counts = not cfg.has("confirm_ignores_proposed_sss") and b.role != SLAVE and not fenced(b)
    members = sync_state_set(b, cfg) if proposed_counts else b.sss
    if slave in members:
        b = b._replace(confirm=compute_confirm_offset(b, cfg))
    return b


def get_confirm_offset(b: Broker, cfg: Config) -> int:
    """`CommitLog.getConfirmOffset` in controller mode: an unfenced non-slave uses its max when
    alone in its local set or without allAck (PR #7657); a slave uses the stored value. A
    negative stored value is computed on the read (and stored: `settle_confirm_offset`)."""
    if b.role != SLAVE and not fenced(b):
        if alone(b, cfg) or not cfg.all_ack:
            return max_phy(b)
        if b.confirm < 0:
            return compute_confirm_offset(b, cfg)
    return b.confirm


def settle_confirm_offset(b: Broker, cfg: Config) -> Broker:
    """What a read of `getConfirmOffset` stores: a negative confirmOffset of an unfenced
    non-slave with allAck and company in its set is computed and kept ("First time it will
    compute", CommitLog.java:681-684), so later reads return the kept value until the next
    set. The dispatch thread reads it every millisecond, so `step` settles every broker a step
    changed (found by `rmqcheck conform`: the model once recomputed on every read)."""
    if b.up and b.confirm < 0 and b.role != SLAVE and not fenced(b) and cfg.all_ack and not alone(b, cfg):
        return b._replace(confirm=compute_confirm_offset(b, cfg))
    return b


def dispatch_behind(b: Broker, cfg: Config) -> int:
    """`dispatchBehindBytes()`: confirmOffset - reputFromOffset."""
    return get_confirm_offset(b, cfg) - b.reput


def set_sync_state_set(b: Broker, sss: frozenset[int], cfg: Config) -> Broker:
    """`AutoSwitchHAService.setSyncStateSet`: install a controller-confirmed set, end the
    synchronizing phase, recompute confirmOffset."""
    b = b._replace(sss=sss, synchronizing=False)
    return b._replace(confirm=compute_confirm_offset(b, cfg))


def change_sync_state_set(b: Broker, sss: frozenset[int], sss_epoch: int, cfg: Config) -> Broker:
    """`ReplicasManager.changeSyncStateSet`: adopt only a newer syncStateSetEpoch."""
    if sss_epoch > b.sss_epoch:
        return set_sync_state_set(b._replace(sss_epoch=sss_epoch), sss, cfg)
    return b


def mark_synchronizing(b: Broker, proposal: frozenset[int], cfg: Config) -> Broker:
    """`markSynchronizingSyncStateSet`: remember the proposal.

    Snapshot: it replaces a still-pending one, whose members the controller may already have
    applied (`proposal_overwrites_pending_sss`); intended: pending members stay until the
    controller answers. Intended form of `confirm_ignores_proposed_sss`: a lone master that
    starts synchronizing stores the confirmOffset its readers saw (its max), which from then
    on only moves with the acks."""
    if (
        not cfg.has("confirm_ignores_proposed_sss")
        and not b.synchronizing
        and len(b.sss) == 1
        and b.role != SLAVE
        and not fenced(b)
    ):
        b = b._replace(confirm=max_phy(b))
    if b.synchronizing and not cfg.has("proposal_overwrites_pending_sss"):
        proposal = proposal | b.remote_sss
    return b._replace(synchronizing=True, remote_sss=proposal)


def queue_alter(b: Broker, proposal: frozenset[int]) -> Broker:
    """`notifySyncStateSetChanged`: queue an AlterSyncStateSet on the executor, with the epochs
    this broker has now (used unless `alter_uses_epochs_at_send`). A proposal equal to the last
    queued one adds nothing."""
    item = (proposal, b.master_epoch, b.sss_epoch)
    if b.alters and b.alters[-1] == item:
        return b
    return b._replace(alters=b.alters + (item,))


def propose_sync_state_set(b: Broker, proposal: frozenset[int], cfg: Config) -> Broker:
    return queue_alter(mark_synchronizing(b, proposal, cfg), proposal)


def remove_connection(b: Broker, slave: int, lingering: bool, cfg: Config) -> Broker:
    """`AutoSwitchHAService.removeConnection`: drop the slave's live connection (or, with
    `lingering`, its lingering one); a member of the local set is proposed for removal at once
    (the local set changes only when confirmed), in the snapshot even while another connection
    of it lives."""
    b = b._replace(conns=tuple(c for c in b.conns if c.slave != slave or c.lingering != lingering))
    return propose_removal(b, slave, cfg)


def propose_removal(b: Broker, slave: int, cfg: Config) -> Broker:
    """What each `removeConnection` call proposes: a member of the local set, dropped from it.
    Intended (`acks_counted_per_connection`'s fix): not while another connection of the slave
    stays in the list, so the superseded connection's services, ending after the new handshake,
    leave the connected slave in the set (found by `rmqcheck conform` on the finding's patch)."""
    if slave not in b.sss:
        return b
    if not cfg.has("acks_counted_per_connection") and any(c.slave == slave for c in b.conns):
        return b
    return propose_sync_state_set(b, b.sss - {slave}, cfg)


def update_caught_up(b: Broker, slave: int, t: int) -> Broker:
    """`updateConnectionLastCaughtUpTime`: keeps the max of old and new."""
    old = dict(b.caught_up).get(slave, EPOCH_ZERO)
    return b._replace(caught_up=_set_pair(b.caught_up, slave, max(old, t)))


def maybe_expand_sync_state_set(b: Broker, slave: int, ack: int, cfg: Config) -> Broker | None:
    """`AutoSwitchHAService.maybeExpandInSyncStateSet`: propose adding a slave whose ack reached
    confirmOffset and the start of the current epoch. Why the second condition: a slave that
    only holds data of older epochs may diverge from this master's log (#5663).

    None: the epoch cache is empty, so `epochCache.lastEntry()` is null and the Java throws a
    NullPointerException, which ends the connection's read loop (found by `rmqcheck conform`; a
    broker with no role yet and a lost epoch file accepts HA connections)."""
    if slave in b.sss:
        return b
    b = settle_confirm_offset(b, cfg)
    if ack < get_confirm_offset(b, cfg):
        return b
    if not cfg.has("expand_without_epoch_start_check"):
        if not b.epochs.entries:
            return None
        if ack < b.epochs.entries[-1][1]:
            return b
    return propose_sync_state_set(b, b.sss | {slave}, cfg)


def maybe_shrink_sync_state_set(b: Broker, now: int, cfg: Config) -> tuple[Broker, frozenset[int]]:
    """`maybeShrinkSyncStateSet`: drop members not caught up for longer than
    haMaxTimeSlaveNotCatchup (strictly) and members that never connected (#6342 follow-up)."""
    caught = dict(b.caught_up)
    new = {s for s in b.sss if not (s in caught and now - caught[s] > cfg.not_catchup_time)}
    new = {s for s in new if s == b.id or s in caught}
    new_set = frozenset(new)
    if cfg.has("shrink_task_dies_on_removal") and any(x < max(b.sss) for x in b.sss - new_set):
        # #7219: the snapshot removed members inside a for-each over the set (a HashSet of
        # small Longs iterates in ascending order); removing any but the last throws
        # ConcurrentModificationException, which cancels the scheduled task for good.
        return b._replace(shrink_task_dead=True), b.sss
    if new_set != b.sss:
        b = mark_synchronizing(b, new_set, cfg)
    return b, new_set


def check_sync_state_set(b: Broker, now: int, cfg: Config) -> Broker:
    """`ReplicasManager.checkSyncStateSetAndDoReport`: shrink, add self, report if it differs
    from the broker's copy of the set."""
    b, new = maybe_shrink_sync_state_set(b, now, cfg)
    new = new | {b.id}
    return b if new == b.sss else queue_alter(b, new)


# --- store: truncation, dispatch, queue table (§2.3 truncateFiles, §2.10) --------------------


def recover_topic_queue_table(b: Broker, msgs: Messages, cfg: Config) -> Broker:
    """`recoverTopicQueueTable`: each queue's next offset is its consume-queue length, then
    `compensateForHA` scans the commit log from confirmOffset so messages written but not yet
    confirmed (hence not dispatched) keep their queue offsets (#7689)."""
    table = [len(q) for q in b.cq]
    if not cfg.has("cq_recover_only_to_confirm"):
        start = max(get_confirm_offset(b, cfg), b.log.base)
        # selectOneMessageByOffset from a non-boundary reads garbage; the model stops there.
        for m in cl.messages_in(b.log, start, max_phy(b), msgs):
            table[m.queue] = m.queue_offset + 1
    return b._replace(queue_table=tuple(table))


def truncate_dirty_files(b: Broker, offset: int, msgs: Messages, cfg: Config) -> Broker:
    """`DefaultMessageStore.truncateDirtyFiles`: cut the consume queues and the commit log,
    lower confirmOffset to the cut (#6665), rebuild the queue table, restart dispatch from
    min(old reput, cut). The default also clamps committed consumer offsets to the new queue
    ends (the fix proposed for #4771); the `consumer_offset_not_truncated` toggle keeps the
    snapshot, which leaves them pointing past the cut."""
    if offset >= max_phy(b):
        return b
    cq = tuple(tuple(mid for mid in q if msgs[mid - 1].offset < offset) for q in b.cq)
    confirm = b.confirm if cfg.has("no_confirm_clamp_on_truncate") else min(b.confirm, offset)
    b = b._replace(log=cl.truncate(b.log, offset), cq=cq, confirm=confirm, reput=min(b.reput, offset))
    if not cfg.has("consumer_offset_not_truncated"):
        b = b._replace(consumer_offsets=tuple(min(co, len(q)) for co, q in zip(b.consumer_offsets, b.cq)))
    return recover_topic_queue_table(b, msgs, cfg)


def is_offset_aligned(b: Broker, offset: int, msgs: Messages) -> bool:
    """`isOffsetAligned`: a valid message starts there (or there is no data)."""
    if offset >= max_phy(b):
        return True
    return cl.check_message(b.log, offset, msgs)[0]


def truncate_files(b: Broker, offset: int, msgs: Messages, cfg: Config) -> Broker | None:
    """`DefaultMessageStore.truncateFiles`: None (failure) if the cut is not message-aligned."""
    if offset >= max_phy(b):
        return b
    if not is_offset_aligned(b, offset, msgs):
        return None
    return truncate_dirty_files(b, offset, msgs, cfg)


def truncate_invalid_msg(b: Broker, msgs: Messages, cfg: Config) -> tuple[Broker, int]:
    """`AutoSwitchHAService.truncateInvalidMsg` ("truncate to the last message boundary"):
    only when dispatch is behind confirmOffset, scan valid messages from the dispatched
    position and cut at the first invalid or partial one. Complete but unconfirmed messages
    are kept. Returns (broker, cut) with cut -1 when nothing was scanned."""
    behind = dispatch_behind(b, cfg)
    if behind <= 0:
        return b, -1
    start = b.reput
    if cfg.has("truncate_start_from_max_minus_behind"):
        start = max_phy(b) - behind  # #6665: not a message boundary
    cut = cl.scan_valid(b.log, start, msgs)
    return truncate_dirty_files(b, cut, msgs, cfg), cut


def _put_position(cq: tuple[tuple[int, ...], ...], m: cl.Message) -> tuple[tuple[int, ...], ...]:
    """`ConsumeQueue.putMessagePositionInfo`: an offset the queue already holds is skipped
    ("build consume queue repeatedly"); otherwise the entry goes at the queue's end."""
    queue = cq[m.queue]
    if m.queue_offset < len(queue):
        return cq
    return cq[: m.queue] + (queue + (m.id,),) + cq[m.queue + 1 :]


def dispatch_step(b: Broker, msgs: Messages, cfg: Config) -> Broker | None:
    """`ReputMessageService.doReput`, one message: dispatch the message at reputFromOffset to
    its consume queue if it ends at or before confirmOffset. None when nothing can move."""
    end = get_confirm_offset(b, cfg)
    if b.reput >= end:
        return None
    ok, size = cl.check_message(b.log, b.reput, msgs)
    if size and b.reput + size > end:
        return None
    if ok:
        m = cl.message_at(b.log, b.reput, msgs)
        return b._replace(cq=_put_position(b.cq, m), reput=b.reput + size)
    if size:
        return b._replace(reput=b.reput + size)  # "[BUG]read total count not equals msg total size"
    if b.role == MASTER and b.reput < max_phy(b):
        return b._replace(reput=max_phy(b))  # a master skips the rest of the mapped data
    return None


# --- store side of role changes (§2.7.1) ------------------------------------------------------


def append_epoch(b: Broker, epoch: int, cfg: Config) -> Broker:
    """Steps shared by changeToMaster and changeToMasterWhenLastRoleIsMaster: drop entries of
    this or a later epoch, then append (epoch, maxPhyOffset); the append result is ignored.

    Snapshot defects: re-applying the last epoch moves its start (§2.7.1 note 2,
    `epoch_reapply_moves_start`; intended: the current epoch keeps its entry), and an epoch that
    starts where the previous one started is silently not recorded (note 1,
    `equal_start_epoch_not_recorded`; intended: it supersedes the empty one)."""
    epochs = b.epochs
    if ef.last_epoch(epochs) == epoch and not cfg.has("epoch_reapply_moves_start"):
        return b
    if ef.last_epoch(epochs) >= epoch:
        epochs = ef.truncate_suffix_by_epoch(epochs, epoch, cfg.faithful_q1, cfg.faithful_q2)
    epochs, _ = ef.append_entry(
        epochs, epoch, max_phy(b), cfg.faithful_q2, replace_empty=not cfg.has("equal_start_epoch_not_recorded")
    )
    return b._replace(epochs=epochs)


def store_change_to_master(b: Broker, epoch: int, msgs: Messages, cfg: Config) -> Broker:
    """`AutoSwitchHAService.changeToMaster` steps 3-6 (the caller destroyed the connections):
    cut a torn tail, recompute confirmOffset, record the new epoch. Step 7 (wait for dispatch)
    is the `promoting` phase."""
    b, cut = truncate_invalid_msg(b, msgs, cfg)
    b = b._replace(confirm=compute_confirm_offset(b, cfg))
    if cut >= 0:
        b = b._replace(epochs=ef.truncate_suffix_by_offset(b.epochs, cut, cfg.faithful_q1, cfg.faithful_q2))
    return append_epoch(b, epoch, cfg)


def recover(b: Broker, msgs: Messages, cfg: Config) -> Broker:
    """Restart after a crash: `initCacheFromFile`; `CommitLog.recoverAbnormally` in controller
    mode: cut at the first invalid message, re-dispatch the valid messages that end at or before
    the checkpointed confirmOffset, and clamp confirmOffset to at least minPhyOffset and at most
    the end of the last of those messages (so it is message-aligned); consume queues cut to the
    commit log; dispatch restarts from confirmOffset (`DefaultMessageStore.start`); queue table
    recovered. Memory-only state starts empty (masterEpoch 0, fenced)."""
    first = b.log.base  # minPhyOffset: the first file's start
    end = cl.scan_valid(b.log, first, msgs)
    log = cl.truncate(b.log, end)
    cq = tuple(tuple(mid for mid in q if msgs[mid - 1].end <= end) for q in b.cq)
    last_confirmed_end = first  # lastConfirmValidMsgPhyOffset starts at the file's start offset
    for m in cl.messages_in(log, first, end, msgs):
        if m.end <= b.confirm:
            cq = _put_position(cq, m)
            last_confirmed_end = m.end
    confirm = b.confirm
    if log.files:
        confirm = first if confirm < first else min(confirm, last_confirmed_end)
    fresh = new_broker(b.id, len(b.cq))
    b = fresh._replace(
        up=True,
        running=False,
        role=NONE,
        log=cl.flush(log),
        epochs=ef.reload(b.epochs),
        confirm=confirm,
        reput=max(confirm, first),
        cq=cq,
        consumer_offsets=b.consumer_offsets,
        was_master=b.was_master,
        metadata_file=b.metadata_file,
        checkpoint_confirm=b.checkpoint_confirm,  # the file as loaded, until the next flush
    )
    if cfg.has("restart_accepts_writes_before_role_confirmed") and b.was_master:
        # #6508: the restarted ex-master is writable as master before the controller speaks.
        b = b._replace(running=True, role=MASTER, master_id=b.id, sss=frozenset((b.id,)))
    return recover_topic_queue_table(b, msgs, cfg)
