"""The one pure transition function: `step(state, action, cfg) -> state`.

An action is a tuple `(kind, *args)`; `ACTIONS` names each kind's arguments and the rule that
runs it. A rule returns the next state or None when the action is not enabled there;
`step` turns None into `NotEnabled`. `candidates` lists actions whose cheap preconditions
hold (a superset of the enabled ones), `enabled` filters them exactly.

Rules are grouped as the RocketMQ code is: client, broker services, HA, ReplicasManager,
controller, time, faults. Faults consume the configuration's budget; healing (restart, heal,
connection timeouts, ticks) never does.

One module on purpose (over 500 lines): this is one rule set, the controller-mode transition
relation; every rule reads and writes the same `State`, shares the fencing and budget helpers
above, and the action table at the end must name them all.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from . import commitlog as cl
from . import controller as ctl
from . import epochfile as ef
from . import ha
from .broker import (
    MASTER,
    NONE,
    READY,
    SLAVE,
    TRANSFER,
    Broker,
    Client,
    PendingPut,
    change_sync_state_set,
    check_sync_state_set,
    conn_of,
    dispatch_behind,
    dispatch_step,
    get_confirm_offset,
    in_sync_replicas_nums,
    max_phy,
    new_broker,
    recover,
    recover_topic_queue_table,
    propose_removal,
    remove_connection,
    replace_conn,
    settle_confirm_offset,
    store_change_to_master,
    append_epoch,
    truncate_invalid_msg,
)
from .config import NO_FAULTS, Config, validate
from .world import (
    FLUSH_SLAVE_TIMEOUT,
    IN_SYNC_REPLICAS_NOT_ENOUGH,
    NO_RESPONSE,
    PENDING,
    PUT_OK,
    ReadRecord,
    UNLOADED,
    SendRecord,
    State,
    heartbeats,
    reachable,
    reaches_controller,
)

Action = tuple


class NotEnabled(Exception):
    """The action cannot happen in this state."""


def _use(s: State, fault: str) -> State:
    return s._replace(used=s.used._replace(**{fault: getattr(s.used, fault) + 1}))


def _budget_left(s: State, cfg: Config, fault: str) -> bool:
    return getattr(s.used, fault) < getattr(cfg.faults, fault)


def _periodic(s: State, task: str) -> State | None:
    """Mark a periodic task (period about one tick) as run in this tick; None if it already ran."""
    return None if task in s.ran else s._replace(ran=s.ran | {task})


# --- shared helpers --------------------------------------------------------------------------


def alive_set(s: State, cfg: Config) -> frozenset[int]:
    """The controller's view of live brokers (`BrokerValidPredicate`)."""
    return frozenset(b.id for b in s.brokers if ctl.is_alive(s.ctrl, b.id, s.now, cfg.heartbeat_timeout))


def elect_order(cfg: Config) -> str:
    """How the election policy orders candidates under `cfg` (controller.compare_candidates)."""
    if cfg.has("elect_ignores_epoch_and_offset"):
        return ctl.ANY
    return ctl.CAST if cfg.has("elect_compares_by_subtraction") else ctl.EXACT


def controller_serving(s: State, cfg: Config) -> bool:
    """A leader serves requests only after applying what is committed (6645d0a42b)."""
    return not s.ctrl.pending or cfg.has("controller_serves_before_apply")


def close_connection(s: State, slave: int, cfg: Config) -> State:
    """Both ends of a slave's HA connection close: the client goes READY (`closeMaster`), the
    master runs `removeConnection`, which proposes dropping a SyncStateSet member."""
    sb = s.broker(slave)
    master = sb.client.master
    s = s.with_broker(sb._replace(client=ha.fresh_client(sb.client)))
    if master is not None and s.broker(master).up:
        s = _first_removal(s, master, slave, cfg)
    return s


def _first_removal(s: State, m_id: int, slave: int, cfg: Config, lingering: bool = False) -> State:
    """`removeConnection` by the first of the connection's two services to end. The other's
    call comes as `ha_second_removal` while the `second_removals` budget lasts; else at once,
    where it proposes the same set again, which `queue_alter` merges with the first."""
    m = remove_connection(s.broker(m_id), slave, lingering, cfg)
    if _budget_left(s, cfg, "second_removals"):
        m = m._replace(closing=m.closing | {slave})
    return s.with_broker(m)


def destroy_connections(s: State, b_id: int, cfg: Config) -> State:
    """`destroyConnections`: every slave connected to this broker is disconnected; lingering
    connections, whose slaves already left, just go."""
    for c in s.broker(b_id).conns:
        if c.lingering:
            s = _first_removal(s, b_id, c.slave, cfg, lingering=True)
        else:
            s = close_connection(s, c.slave, cfg)
    return s


def _heartbeat(s: State, b: Broker, cfg: Config, registering: bool = False) -> State:
    """`sendHeartbeatToController`: (epoch-file lastEpoch, maxPhyOffset, confirmOffset). An entry
    that timed out was removed by the controller's scan, so it is created afresh. Before #5712
    (toggle heartbeat_ignored_without_entry) only `registerBroker`, at start-up, created an
    entry: the heartbeat of a broker the leader had none for was dropped."""
    epoch, max_offset, confirm = ef.last_epoch(b.epochs), max_phy(b), get_confirm_offset(b, cfg)
    report = ctl.LiveInfo(s.now, epoch, max_offset, confirm, cfg.priority(b.id))
    s = s._replace(reports=s.reports[: b.id - 1] + (report,) + s.reports[b.id :])
    ctrl = s.ctrl
    if not ctl.is_alive(ctrl, b.id, s.now, cfg.heartbeat_timeout):
        ctrl = ctl.expire(ctrl, b.id)
    if cfg.has("heartbeat_ignored_without_entry") and not registering and ctrl.live[b.id - 1] is None:
        return s._replace(ctrl=ctrl)
    ctrl = ctl.on_broker_heartbeat(ctrl, b.id, s.now, epoch, max_offset, confirm, report.priority)
    return s._replace(ctrl=ctrl)


def _commit(s: State, events: tuple, cfg: Config, grant: ctl.RoleInfo | None = None) -> State:
    ctrl = ctl.commit(s.ctrl, events, keep_history=cfg.has("controller_serves_before_apply"))
    if grant is not None:
        ctrl = ctrl._replace(grants=ctrl.grants + ((grant.master_epoch, grant.master),))
    return s._replace(ctrl=ctrl)


# --- ReplicasManager role changes (§2.7) -----------------------------------------------------


def change_to_master(s: State, b_id: int, epoch: int, sss_epoch: int, sss: frozenset[int], cfg: Config) -> State:
    """`ReplicasManager.changeToMaster`: adopt the controller's SyncStateSet, then the store's
    `changeToMaster`: destroy connections, stop the HA client, cut a torn tail, record the
    epoch, and wait for dispatch (the `promoting` phase, finished by `finish_promotion`). Both
    ways it submits a SyncStateSet check at once (ReplicasManager.java:249, :275), whether or not
    the periodic one ran in this tick (a restarted master's first check)."""
    b = s.broker(b_id)
    if epoch <= b.master_epoch:
        return s
    s = s._replace(ran=s.ran - {f"check_sss:{b_id}"})
    b = b._replace(master_epoch=epoch)
    if b.master_id == b.id and b.role == MASTER:
        # Already master: changeToMasterWhenLastRoleIsMaster keeps the connections (HA2).
        b = change_sync_state_set(b, sss, sss_epoch, cfg)
        if epoch >= ef.last_epoch(b.epochs):
            b = append_epoch(b, epoch, cfg)
        return s.with_broker(b)
    if cfg.has("on_become_master_sss_self_only"):
        sss = frozenset((b.id,))  # #6342: the controller's set is ignored
    b = change_sync_state_set(b, sss, sss_epoch, cfg)
    if epoch < ef.last_epoch(b.epochs):
        # The store refuses; ReplicasManager ignores that and flips the role anyway (§7.9).
        return s.with_broker(b._replace(role=MASTER, master_id=b.id))
    s = destroy_connections(s.with_broker(b), b_id, cfg)
    if s.broker(b_id).client.master is not None:
        s = close_connection(s, b_id, cfg)  # haClient.shutdown()
    b = s.broker(b_id)
    b = store_change_to_master(b, epoch, s.msgs, cfg)
    return s.with_broker(b._replace(promoting=epoch))


def change_to_slave(s: State, b_id: int, master: int, epoch: int, cfg: Config) -> State:
    """`ReplicasManager.changeToSlave`: with a new master, the store destroys connections and
    reopens the HA client (currentReceivedEpoch back to -1); truncation happens later in the
    client's READY and HANDSHAKE states. The SyncStateSet is left as it was."""
    b = s.broker(b_id)
    if epoch <= b.master_epoch:
        return s
    b = b._replace(master_epoch=epoch)
    if master == b.master_id:
        return s.with_broker(b)  # changeToSlaveWhenMasterNotChange: only the version changes
    b = b._replace(role=SLAVE, master_id=master)
    if epoch < ef.last_epoch(b.epochs):
        return s.with_broker(b)  # store refused; the role flipped anyway (§7.9)
    s = destroy_connections(s.with_broker(b), b_id, cfg)
    if s.broker(b_id).client.master is not None:
        s = close_connection(s, b_id, cfg)
    b = s.broker(b_id)
    return s.with_broker(b._replace(client=Client()))  # reOpen


def adopt_role(s: State, b_id: int, role: ctl.RoleInfo, cfg: Config) -> State:
    """`changeBrokerRole`: act on a controller answer naming a master."""
    if role.master == b_id:
        return change_to_master(s, b_id, role.master_epoch, role.sss_epoch, role.sss, cfg)
    return change_to_slave(s, b_id, role.master, role.master_epoch, cfg)


def broker_elect(s: State, b_id: int, lost: bool, cfg: Config) -> tuple[State, bool]:
    """`ReplicasManager.brokerElect`: ask the controller to elect this broker (the policy may
    pick another); adopt the answer. Returns (state, a master is now known)."""
    code, role, events = ctl.elect_master(
        s.ctrl.applied,
        b_id,
        False,
        cfg.unclean,
        alive_set(s, cfg),
        s.ctrl.live,
        elect_order(cfg),
    )
    s = _commit(s, events, cfg, role if code == ctl.SUCCESS else None)
    if lost or role is None or role.master is None:
        return s, False
    return adopt_role(s, b_id, role, cfg), True


# --- client ----------------------------------------------------------------------------------


def rule_send(s: State, cfg: Config, b_id: int, queue: int, size: int) -> State | None:
    """`CommitLog.asyncPutMessage` in controller mode (§2.8): refuse when the SyncStateSet is
    smaller than minInSyncReplicas (nothing written), else append, then ack at once when one
    replica suffices or wait in GroupTransferService."""
    b = s.broker(b_id)
    if (
        not b.up
        or not b.running
        or b.role != MASTER
        or b.promoting
        or len(s.sends) >= cfg.max_messages
        or not 0 <= queue < cfg.queues
        or size not in cfg.message_sizes
    ):
        return None
    if in_sync_replicas_nums(b, cfg) < cfg.min_in_sync_replicas:
        return s._replace(sends=s.sends + (SendRecord(None, b_id, IN_SYNC_REPLICAS_NOT_ENOUGH),))
    msg = cl.Message(len(s.msgs) + 1, size * cfg.unit_bytes, queue, b.queue_table[queue], max_phy(b),
                     ef.last_epoch(b.epochs), b_id)
    table = _set_at(b.queue_table, queue, b.queue_table[queue] + 1)
    b = b._replace(log=cl.append(b.log, msg.cells(cfg.unit_bytes), cfg.sync_flush), queue_table=table)
    need_ack = -1 if cfg.all_ack else cfg.in_sync_replicas
    if need_ack in (0, 1):
        status = PUT_OK
    else:
        status = PENDING
        b = b._replace(puts=b.puts + (PendingPut(msg.id, msg.end, s.now + cfg.slave_timeout, need_ack),))
    return s.with_broker(b)._replace(msgs=s.msgs + (msg,), sends=s.sends + (SendRecord(msg.id, b_id, status),))


def _serves_pulls(s: State, b: Broker) -> bool:
    """Where the client's pulls go (`findBrokerAddressInSubscribe`): the master, or a slave
    while the route holds no master (it is down or has not yet become master)."""
    if not b.up or not b.running:
        return False
    if b.role == MASTER:
        return not b.promoting
    return b.role == SLAVE and not any(m.up and m.role == MASTER for m in s.brokers)


def rule_consume(s: State, cfg: Config, b_id: int, queue: int) -> State | None:
    """One pull of one queue (seed 003; DefaultMQPushConsumerImpl.pullMessage,
    PullMessageProcessor.processRequest, DefaultMessageStore.getMessage).

    The request carries the consumer's in-memory offset, and the broker stores it as the
    committed offset (`tryCommitOffset`; slaves too since RIP-32, cad0cfcece). A consumer with
    no offset in memory first asks the master (`fetchConsumeOffsetFromBroker`, master only).
    Then: a message at that offset is read and the consumer moves past it; an offset past the
    queue end is corrected to the end on a master (OFFSET_OVERFLOW_BADLY / NO_MESSAGE_IN_QUEUE,
    `nextOffsetCorrection`; PULL_OFFSET_MOVED, which the client adopts and persists) but not on
    a slave (offsetCheckInSlave=false); at the end nothing is read."""
    b = s.broker(b_id)
    if not 0 <= queue < cfg.queues or not _serves_pulls(s, b):
        return None
    pos = s.consumer[queue]
    if pos == UNLOADED:
        if b.role != MASTER:
            return None
        pos = b.consumer_offsets[queue]
    end = len(b.cq[queue])
    reads = s.reads
    if pos < end:
        reads += (ReadRecord(queue, pos, b.cq[queue][pos], b_id),)
        committed, nxt = pos, pos + 1
    elif pos > end and b.role != SLAVE:
        committed = nxt = end
    else:
        committed = nxt = pos
    b = b._replace(consumer_offsets=_set_at(b.consumer_offsets, queue, committed))
    ns = s.with_broker(b)._replace(reads=reads, consumer=_set_at(s.consumer, queue, nxt))
    return None if ns == s else ns


def _set_at(xs: tuple[int, ...], i: int, value: int) -> tuple[int, ...]:
    return xs[:i] + (value,) + xs[i + 1 :]


def _set_status(s: State, msg: int, status: str) -> State:
    sends = tuple(r._replace(status=status) if r.msg == msg else r for r in s.sends)
    return s._replace(sends=sends)


def _pending(b: Broker, msg: int) -> PendingPut | None:
    for p in b.puts:
        if p.msg == msg:
            return p
    return None


def rule_put_complete(s: State, cfg: Config, b_id: int, msg: int) -> State | None:
    """GroupTransferService: enough replicas acked the request's nextOffset before its deadline
    (doWaitTransfer stops evaluating at the deadline) -> PUT_OK."""
    b = s.broker(b_id)
    p = _pending(b, msg) if b.up else None
    if p is None or s.now >= p.deadline or not ha.transfer_ok(b, p.next_offset, p.need_ack, cfg):
        return None
    s = s.with_broker(b._replace(puts=tuple(x for x in b.puts if x.msg != msg)))
    return _set_status(s, msg, PUT_OK)


def rule_put_timeout(s: State, cfg: Config, b_id: int, msg: int) -> State | None:
    """The deadline (slaveTimeout) passed without enough acks -> FLUSH_SLAVE_TIMEOUT; the
    message stays in the master's log (no rollback)."""
    b = s.broker(b_id)
    p = _pending(b, msg) if b.up else None
    if p is None or s.now < p.deadline or ha.transfer_ok(b, p.next_offset, p.need_ack, cfg):
        return None
    s = s.with_broker(b._replace(puts=tuple(x for x in b.puts if x.msg != msg)))
    return _set_status(s, msg, FLUSH_SLAVE_TIMEOUT)


# --- broker services -------------------------------------------------------------------------


def rule_dispatch(s: State, cfg: Config, b_id: int) -> State | None:
    """ReputMessageService: expose one more message to consumers (up to confirmOffset)."""
    b = s.broker(b_id)
    if not b.up:
        return None
    nb = dispatch_step(b, s.msgs, cfg)
    return None if nb is None else s.with_broker(nb)


def rule_flush(s: State, cfg: Config, b_id: int) -> State | None:
    """FlushRealTimeService (ASYNC_FLUSH): the page cache reaches the disk."""
    b = s.broker(b_id)
    if not b.up or b.log.flushed >= max_phy(b):
        return None
    return s.with_broker(b._replace(log=cl.flush(b.log)))


# --- HA (§2.3-2.4) ---------------------------------------------------------------------------


def rule_ha_connect(s: State, cfg: Config, slave: int) -> State | None:
    """AutoSwitchHAClient READY then HANDSHAKE: cut a torn tail if dispatch is behind, connect
    to the known master, exchange handshakes and truncate (`doTruncate`).

    Snapshot (`slave_serves_ha_connections`): the HA server has no role check, so a broker that
    has since become a slave still serves a slave that takes it for its master, and keeps
    serving it across its own truncation. Intended: a broker whose handshake truncates its log
    drops the connections it serves, as changeToSlave does (what they were sent is gone)."""
    b = s.broker(slave)
    m_id = b.master_id
    if (
        not b.up
        or b.role != SLAVE
        or b.promoting
        or b.client.state != READY
        or m_id is None
        or m_id == slave
        or not s.broker(m_id).up
        or not reachable(s, slave, m_id)
    ):
        return None
    end_before = max_phy(b)
    b, cut = truncate_invalid_msg(b, s.msgs, cfg)
    if cut >= 0:
        b = b._replace(epochs=ef.truncate_suffix_by_offset(b.epochs, cut, cfg.faithful_q1, cfg.faithful_q2))
    m = s.broker(m_id)
    result = ha.handshake(m, b, s.msgs, cfg)
    if result is None:
        # "Failed to find a consistent point" / unaligned cut: both ends close, retry later.
        s = s.with_broker(b._replace(client=ha.fresh_client(b.client)))
        return _first_removal(s, m.id, slave, cfg)
    m, b = result
    s = s.with_broker(m).with_broker(b)
    if max_phy(b) < end_before and not cfg.has("slave_serves_ha_connections"):
        s = destroy_connections(s, slave, cfg)
    return s


def _connected_master(s: State, slave: int) -> Broker | None:
    b = s.broker(slave)
    m_id = b.client.master
    if not b.up or b.client.state != TRANSFER or m_id is None:
        return None
    m = s.broker(m_id)
    if not m.up or not reachable(s, slave, m_id):
        return None
    return m


def rule_ha_transfer(s: State, cfg: Config, slave: int) -> State | None:
    """One master write (a data batch, or a heartbeat when there is nothing to send) and the
    slave's processing of it."""
    m = _connected_master(s, slave)
    if m is None:
        return None
    sent = ha.master_send(m, slave, s.now, cfg)
    if sent is None:
        return None
    m, packet = sent
    s = s.with_broker(m)
    if packet is None:
        return close_connection(s, slave, cfg)
    b = ha.slave_receive(s.broker(slave), packet, cfg)
    if b is None:
        return close_connection(s, slave, cfg)
    return s.with_broker(b)


def rule_ha_slave_ack(s: State, cfg: Config, slave: int) -> State | None:
    """The slave's periodic ack in TRANSFER: re-send currentReportedOffset."""
    b = s.broker(slave)
    if not b.up or b.client.state != TRANSFER or b.client.ack is not None:
        return None
    return s.with_broker(b._replace(client=b.client._replace(ack=b.client.reported)))


def rule_ha_read_ack(s: State, cfg: Config, slave: int) -> State | None:
    """The master reads the slave's ack: slaveAckOffset, expand check, confirmOffset."""
    m = _connected_master(s, slave)
    b = s.broker(slave)
    if m is None or b.client.ack is None:
        return None
    read = ha.master_read_ack(m, slave, b.client.ack, s.now, cfg)
    s = s.with_broker(b._replace(client=b.client._replace(ack=None)))
    return close_connection(s, slave, cfg) if read is None else s.with_broker(read)


def rule_ha_timeout(s: State, cfg: Config, slave: int) -> State | None:
    """haHousekeepingInterval: a connection that crosses the partition is found dead."""
    b = s.broker(slave)
    m_id = b.client.master
    if not b.up or m_id is None or reachable(s, slave, m_id):
        return None
    return close_connection(s, slave, cfg)


# --- ReplicasManager / controller RPCs (§2.6, §3.6) -------------------------------------------


def rule_check_sss(s: State, cfg: Config, b_id: int) -> State | None:
    """checkSyncStateSetAndDoReport (every checkSyncStateSetPeriod on the master)."""
    b = s.broker(b_id)
    if not b.up or not b.running or b.role != MASTER or b.promoting or b.shrink_task_dead:
        return None
    nb = check_sync_state_set(b, s.now, cfg)
    s = _periodic(s, f"check_sss:{b_id}") if nb != b else None
    return None if s is None else s.with_broker(nb)


def rule_alter_sss(s: State, cfg: Config, b_id: int, lost: int) -> State | None:
    """doReportSyncStateSetChanged: send the oldest queued proposal with the masterEpoch and
    syncStateSetEpoch it was computed under (the snapshot reads the current ones:
    `alter_uses_epochs_at_send`); adopt the answer. `lost`: the controller applied it but the
    response never arrived (a fault).

    A broker that has not reached RUNNING since its start has no listener yet: ReplicasManager
    registers `doReportSyncStateSetChanged` at the end of startBasicService (ReplicasManager.java
    :213), and `notifySyncStateSetChanged`'s task reads the listeners when it runs, so what a
    restarted broker proposes meanwhile (the removals its changeToMaster's closed connections
    propose, the expansions of slaves that connect to it with no role) is dropped unsent. The
    model once sent them once the broker ran, and its controller took a shrink the code's never
    saw (durable3 seed 500, step 99: SyncStateSet epoch 13 against 9)."""
    b = s.broker(b_id)
    if b.up and b.alters and not b.running:
        return None if lost else s.with_broker(b._replace(alters=b.alters[1:]))
    if (
        not b.up
        or not b.alters
        or b.promoting
        or not reaches_controller(s, b_id)
        or not controller_serving(s, cfg)
        or (lost and not _budget_left(s, cfg, "lost_responses"))
    ):
        return None
    proposal, master_epoch, sss_epoch = b.alters[0]
    if cfg.has("alter_uses_epochs_at_send"):
        master_epoch, sss_epoch = b.master_epoch, b.sss_epoch
    code, body, events = ctl.alter_sync_state_set(
        s.ctrl.applied, b_id, master_epoch, proposal, sss_epoch, alive_set(s, cfg)
    )
    b = b._replace(alters=b.alters[1:])
    if code == ctl.SUCCESS and not lost:
        b = change_sync_state_set(b, body[0], body[1], cfg)
    s = _commit(s.with_broker(b), events, cfg)
    # A lost rejection is a rejection: the broker changes nothing either way.
    return _use(s, "lost_responses") if lost and code == ctl.SUCCESS else s


def rule_alter_sss_fail(s: State, cfg: Config, b_id: int) -> State | None:
    """The AlterSyncStateSet RPC fails: the controller is unreachable. The synchronizing flag
    stays set until a later confirmed set (§7.16)."""
    b = s.broker(b_id)
    if not b.up or not b.alters or not b.running or b.promoting or reaches_controller(s, b_id):
        return None  # not running: `rule_alter_sss` drops it, no RPC sent
    return s.with_broker(b._replace(alters=b.alters[1:]))


def rule_sync_replica_info(s: State, cfg: Config, b_id: int, lost: int) -> State | None:
    """schedulingSyncBrokerMetadata (every syncBrokerMetadataPeriod): getReplicaInfo. A newer
    masterEpoch changes the role, or, when the set is masterless, triggers brokerElect; at the
    same epoch a master adopts a newer SyncStateSet. `lost` applies to the brokerElect."""
    b = s.broker(b_id)
    if not b.up or not b.running or b.promoting or not reaches_controller(s, b_id) or not controller_serving(s, cfg):
        return None
    s = _periodic(s, f"sync:{b_id}")
    if s is None:
        return None
    _, role = ctl.get_replica_info(s.ctrl.applied)
    if role.master_epoch > b.master_epoch:
        if role.master is not None:
            if lost:
                return None
            ns = adopt_role(s, b_id, role, cfg)
        else:
            if lost and not _budget_left(s, cfg, "lost_responses"):
                return None
            ns, _ = broker_elect(s, b_id, bool(lost), cfg)
            ns = _use(ns, "lost_responses") if lost else ns
    elif role.master_epoch == b.master_epoch and b.role == MASTER and not lost:
        ns = s.with_broker(change_sync_state_set(b, role.sss, role.sss_epoch, cfg))
    else:
        return None
    return None if ns == s else ns


def rule_register(s: State, cfg: Config, b_id: int, lost: int) -> State | None:
    """ReplicasManager.startBasicService after a (re)start: registerBrokerToController (adopt a
    live master, if any), heartbeat, else brokerElect; RUNNING once a master is known."""
    b = s.broker(b_id)
    if (
        not b.up
        or b.running
        or b.promoting
        or not reaches_controller(s, b_id)
        or not controller_serving(s, cfg)
        or (lost and not _budget_left(s, cfg, "lost_responses"))
    ):
        return None
    code, role, _, _ = ctl.register_broker(s.ctrl.applied, b_id, alive_set(s, cfg))
    if code != ctl.SUCCESS:
        return None
    s = s.with_broker(b._replace(metadata_file=True))  # written before registerBrokerToController
    if role is not None:
        if lost:
            return None
        s = adopt_role(s, b_id, role, cfg)
        if s.broker(b_id).promoting:
            return s  # heartbeat and RUNNING follow once the promotion finishes
    s = _heartbeat(s, s.broker(b_id), cfg, registering=True)
    if s.broker(b_id).master_id is None:
        if b_id in cfg.async_learners and not cfg.has("learner_requests_election"):
            return None if lost else s  # a learner waits for a master instead of asking to be one
        s, known = broker_elect(s, b_id, bool(lost), cfg)
        if lost:
            s = _use(s, "lost_responses")
        if not known or s.broker(b_id).promoting:
            return s
    return s.with_broker(s.broker(b_id)._replace(running=True))


def rule_finish_promotion(s: State, cfg: Config, b_id: int) -> State | None:
    """The end of changeToMaster once dispatch caught up (§2.7.1 steps 7-9 and ReplicasManager
    steps 4-7): recover the queue table, become SYNC_MASTER; at start-up, heartbeat and RUNNING."""
    b = s.broker(b_id)
    if not b.up or not b.promoting or dispatch_behind(b, cfg) > 0:
        return None
    b = recover_topic_queue_table(b, s.msgs, cfg)._replace(role=MASTER, master_id=b_id, promoting=0)
    s = s.with_broker(b)
    if not b.running:
        s = _heartbeat(s, b, cfg, registering=True).with_broker(b._replace(running=True))
    return s


def rule_heartbeat(s: State, cfg: Config, b_id: int) -> State | None:
    """sendHeartbeatToController (every brokerHeartbeatInterval): BrokerController schedules it
    whatever ReplicasManager's state, so a restarted broker heartbeats with the id from its
    metadata file while its ReplicasManager still retries startBasicService. Without the file
    (a first start not yet registered) the id is null and the entry names no broker."""
    b = s.broker(b_id)
    if not heartbeats(s, b_id):
        return None
    ns = _heartbeat(s, b, cfg)
    if ns.ctrl.live[b_id - 1] is None:  # dropped (heartbeat_ignored_without_entry), though sent
        return _periodic(ns, f"heartbeat:{b_id}")
    return None if ns.ctrl == s.ctrl else ns


def rule_sync_consumer_offsets(s: State, cfg: Config, b_id: int) -> State | None:
    """SlaveSynchronize.syncConsumerOffset: a slave overwrites its table with the master's."""
    b = s.broker(b_id)
    m_id = b.master_id
    if not b.up or b.role != SLAVE or m_id is None or m_id == b_id or not reachable(s, b_id, m_id):
        return None
    m = s.broker(m_id)
    if not m.up or m.consumer_offsets == b.consumer_offsets:
        return None
    return s.with_broker(b._replace(consumer_offsets=m.consumer_offsets))


# --- controller (§3.4-3.6) -------------------------------------------------------------------


def rule_controller_elect(s: State, cfg: Config) -> State | None:
    """scanInactiveMasterAndTriggerReelect / onBrokerInactive: the master is not alive and some
    broker is, so triggerElectMaster runs up to electMasterMaxRetryCount attempts; each failed
    one applies ElectMasterEvent(false) and bumps masterEpoch (§7.10)."""
    alive = alive_set(s, cfg)
    if not controller_serving(s, cfg) or not ctl.needs_reelection(s.ctrl.applied, alive):
        return None
    if cfg.has("no_inactive_master_scan"):
        return None  # #9717: the scan never fires
    s = _periodic(s, "controller_scan")
    if s is None:
        return None
    for _ in range(ctl.ELECT_MASTER_MAX_RETRY):
        code, role, events = ctl.elect_master(
            s.ctrl.applied,
            ctl.NO_BROKER,
            False,
            cfg.unclean,
            alive,
            s.ctrl.live,
            elect_order(cfg),
        )
        s = _commit(s, events, cfg, role if code == ctl.SUCCESS else None)
        if code == ctl.SUCCESS:
            break
    return s


def rule_controller_apply(s: State, cfg: Config) -> State | None:
    """A lagging controller leader applies one committed event (A7 toggle only)."""
    if not s.ctrl.pending:
        return None
    return s._replace(ctrl=ctl.apply_pending(s.ctrl))


# --- time ------------------------------------------------------------------------------------


def rule_tick(s: State, cfg: Config) -> State | None:
    """The logical clock advances one tick (about five seconds)."""
    return s._replace(now=s.now + 1, ran=frozenset())


# --- faults (bounded) and healing (unbounded) -------------------------------------------------


def rule_crash(s: State, cfg: Config, b_id: int, keep: int) -> State | None:
    """Kill -9 plus page-cache loss: the unflushed tail is lost except `keep` bytes the OS had
    written back (which may tear a message). Peers see the connections reset."""
    b = s.broker(b_id)
    if not b.up or not _budget_left(s, cfg, "crashes") or not 0 <= keep <= cl.unflushed(b.log):
        return None
    for c in b.conns:
        if not c.lingering:  # a lingering connection's slave already left; it dies with the process
            s = close_connection(s, c.slave, cfg)
    if b.client.master is not None:
        s = close_connection(s, b_id, cfg)
    b = s.broker(b_id)
    for p in b.puts:
        s = _set_status(s, p.msg, NO_RESPONSE)
    down = new_broker(b_id, cfg.queues)._replace(
        up=False,
        running=False,
        role=NONE,
        log=cl.crash(b.log, keep),
        epochs=b.epochs,
        confirm=b.confirm,
        reput=b.reput,
        cq=b.cq,
        consumer_offsets=b.consumer_offsets,
        was_master=b.role == MASTER,
        metadata_file=b.metadata_file,
        checkpoint_confirm=b.checkpoint_confirm,
    )
    return _use(s.with_broker(down), "crashes")


def rule_restart(s: State, cfg: Config, b_id: int) -> State | None:
    """Process start: store recovery (§2.5 clamp, §2.10), fenced until the controller answers."""
    b = s.broker(b_id)
    if b.up:
        return None
    return s.with_broker(recover(b, s.msgs, cfg))


def rule_conn_reset(s: State, cfg: Config, slave: int) -> State | None:
    """An HA TCP connection is reset (the next connection starts with ack -1)."""
    if _connected_master(s, slave) is None or not _budget_left(s, cfg, "connection_resets"):
        return None
    return _use(close_connection(s, slave, cfg), "connection_resets")


def _lingering_master(s: State, slave: int) -> Broker | None:
    """The live broker that holds a lingering connection of `slave` (at most one does)."""
    for m in s.brokers:
        if m.up and any(c.slave == slave and c.lingering for c in m.conns):
            return m
    return None


def rule_ha_linger(s: State, cfg: Config, slave: int) -> State | None:
    """The slave's HA client closes its connection (its housekeeping found the master silent,
    or a read failed) and reconnects before the master's end notices: that end stays in the
    master's connection list with its last ack (a timing perturbation; `ha_close_lingering`
    ends it). At most one lingering connection per slave."""
    m = _connected_master(s, slave)
    if m is None or not _budget_left(s, cfg, "lingering_connections") or _lingering_master(s, slave) is not None:
        return None
    b = s.broker(slave)
    m = replace_conn(m, conn_of(m, slave)._replace(lingering=True))
    s = s.with_broker(m).with_broker(b._replace(client=ha.fresh_client(b.client)))
    return _use(s, "lingering_connections")


def rule_ha_close_lingering(s: State, cfg: Config, slave: int) -> State | None:
    """The master's read loop of a lingering connection sees the end of stream (or
    haHousekeepingInterval passes): `removeConnection`, which proposes dropping the slave from
    the SyncStateSet even though its new connection is live."""
    m = _lingering_master(s, slave)
    return None if m is None else _first_removal(s, m.id, slave, cfg, lingering=True)


def rule_ha_second_removal(s: State, cfg: Config, b_id: int, slave: int) -> State | None:
    """The second service of a closed HA connection ends: ReadSocketService and
    WriteSocketService each call `removeConnection` when they stop (AutoSwitchHAConnection.java
    :275, :717), and each proposes the slave's removal from the local SyncStateSet as it is
    then. After an AlterSyncStateSet answer in between that is another set; with one removal
    per connection a master whose links were cut kept a member with no connection
    (scenarios/quirks/closed-connection-removed-twice.scn, from recorded run durable3 seed 12).
    Uses the `second_removals` budget, though not a fault: the code always makes both calls."""
    b = s.broker(b_id)
    if not b.up or slave not in b.closing:
        return None
    b = propose_removal(b._replace(closing=b.closing - {slave}), slave, cfg)
    s = _use(s.with_broker(b), "second_removals")
    if not _budget_left(s, cfg, "second_removals"):  # no later call can come as a step of its own
        s = s._replace(brokers=tuple(x._replace(closing=frozenset()) if x.closing else x for x in s.brokers))
    return s


def rule_partition(s: State, cfg: Config, mask: int) -> State | None:
    """The brokers in `mask` are cut off from the controller and from the other brokers."""
    group = frozenset(i + 1 for i in range(cfg.brokers) if mask >> i & 1)
    if s.cut or not group or mask >> cfg.brokers or not _budget_left(s, cfg, "partitions"):
        return None
    return _use(s._replace(cut=group), "partitions")


def rule_controller_cut(s: State, cfg: Config, b_id: int) -> State | None:
    """One broker's controller path goes down while its HA links work (a lost route or a
    firewall rule between the broker and the controller's host); a partition cuts HA links
    too. Its RPCs fail: heartbeats stop, so the controller expires it, and its
    AlterSyncStateSet fails (`alter_sss_fail`) while its slaves go on acking. Recorded cluster
    runs do this (the nemesis's isolate_controller; docs/traces.md)."""
    if b_id in s.off_controller or b_id in s.cut or not _budget_left(s, cfg, "controller_cuts"):
        return None
    return _use(s._replace(off_controller=s.off_controller | {b_id}), "controller_cuts")


def rule_controller_reconnect(s: State, cfg: Config, b_id: int) -> State | None:
    """One broker's cut controller path restored, the others' left as they are (healing, never
    bounded): the nemesis changes one broker's RPC policy at a time."""
    if b_id not in s.off_controller:
        return None
    return s._replace(off_controller=s.off_controller - {b_id})


def rule_heal(s: State, cfg: Config) -> State | None:
    """Every partition and controller path restored."""
    if not (s.cut or s.off_controller):
        return None
    return s._replace(cut=frozenset(), off_controller=frozenset())


def rule_hb_timeout(s: State, cfg: Config, b_id: int) -> State | None:
    """The controller expires a broker that is in fact alive (lost heartbeats, a long GC).
    Its heartbeats were in truth lost for a timeout, so its report (ghost) is that old too."""
    if not ctl.is_alive(s.ctrl, b_id, s.now, cfg.heartbeat_timeout) or not _budget_left(s, cfg, "heartbeat_timeouts"):
        return None
    r = s.reports[b_id - 1]
    lost = r._replace(last_update=min(r.last_update, s.now - cfg.heartbeat_timeout - 1))
    s = s._replace(reports=s.reports[: b_id - 1] + (lost,) + s.reports[b_id:])
    return _use(s._replace(ctrl=ctl.expire(s.ctrl, b_id)), "heartbeat_timeouts")


def rule_admin_elect(s: State, cfg: Config, b_id: int) -> State | None:
    """mqadmin electMaster designating a broker (ofAdminTrigger). Designating the live current
    master answers MASTER_STILL_EXIST and changes nothing, so only switchovers are enabled."""
    if not controller_serving(s, cfg) or not _budget_left(s, cfg, "admin_elections"):
        return None
    code, role, events = ctl.elect_master(
        s.ctrl.applied,
        b_id,
        True,
        cfg.unclean,
        alive_set(s, cfg),
        s.ctrl.live,
        elect_order(cfg),
    )
    if code != ctl.SUCCESS:
        return None
    return _use(_commit(s, events, cfg, role), "admin_elections")


def rule_lose_epoch_file(s: State, cfg: Config, b_id: int) -> State | None:
    """epochFileCheckpoint and its .bak are deleted while the broker is down."""
    b = s.broker(b_id)
    if b.up or not b.epochs.disk or not _budget_left(s, cfg, "epoch_file_losses"):
        return None
    return _use(s.with_broker(b._replace(epochs=ef.lose_file(b.epochs))), "epoch_file_losses")


def rule_write_back_epoch_file(s: State, cfg: Config, b_id: int) -> State | None:
    """The file system writes the broker's epoch file to the device, at a time of its own
    (ext4 commits every 5 s). Only while a revert may still come: elsewhere it changes nothing
    that matters and would only multiply states."""
    b = s.broker(b_id)
    if b.epochs.synced == b.epochs.disk or not _budget_left(s, cfg, "epoch_file_reverts"):
        return None
    return s.with_broker(b._replace(epochs=ef.write_back(b.epochs)))


def rule_revert_epoch_file(s: State, cfg: Config, b_id: int) -> State | None:
    """A power loss (at the broker's crash or while it is down) takes its epoch file back to the
    version last written back: CheckpointFile.write rewrites it with MixAll.string2File and no
    fsync, while SYNC_FLUSH forces the commit log. The restart then reads an older list of
    epochs than the commit log it recovers (recorded cluster runs do this: docs/traces.md)."""
    b = s.broker(b_id)
    if b.up or b.epochs.disk == b.epochs.synced or not _budget_left(s, cfg, "epoch_file_reverts"):
        return None
    return _use(s.with_broker(b._replace(epochs=ef.revert(b.epochs))), "epoch_file_reverts")


def rule_flush_checkpoint(s: State, cfg: Config, b_id: int) -> State | None:
    """StoreCheckpoint.flush(), scheduled once a second (DefaultMessageStore.java:1809): the file
    takes the confirmOffset `setConfirmPhyOffset` last set. Only while a revert may still come:
    elsewhere it changes nothing that matters and would only multiply states."""
    b = s.broker(b_id)
    if not b.up or b.checkpoint_confirm == b.confirm or not _budget_left(s, cfg, "checkpoint_reverts"):
        return None
    return s.with_broker(b._replace(checkpoint_confirm=b.confirm))


def rule_revert_checkpoint(s: State, cfg: Config, b_id: int) -> State | None:
    """The broker died (a kill -9 or a power loss) before the checkpoint's next flush: the
    restart loads the confirmOffset the file holds (DefaultMessageStore.load, :352), not the
    one the process last set. A restarted slave then shows a confirmOffset below its master's
    (recorded cluster runs do this: docs/traces.md)."""
    b = s.broker(b_id)
    if b.up or b.checkpoint_confirm == b.confirm or not _budget_left(s, cfg, "checkpoint_reverts"):
        return None
    return _use(s.with_broker(b._replace(confirm=b.checkpoint_confirm)), "checkpoint_reverts")


def rule_consumer_restart(s: State, cfg: Config) -> State | None:
    """The consumer restarts, or rebalancing moves its queues to another instance: offsets read
    since the last commit are forgotten, and the next pull starts at the master's committed
    offset (the messages after it are read again: duplicates, which seed 003 allows)."""
    if all(p == UNLOADED for p in s.consumer) or not _budget_left(s, cfg, "consumer_restarts"):
        return None
    return _use(s._replace(consumer=(UNLOADED,) * cfg.queues), "consumer_restarts")


def rule_controller_failover(s: State, cfg: Config) -> State | None:
    """A controller leader change. With the read barrier (6645d0a42b) and heartbeats that
    create their entry (#5712) it is invisible, so it is enabled only under a toggle that
    brings one of them back: under controller_serves_before_apply the new leader lags one
    committed event; under heartbeat_ignored_without_entry its heartbeat table, soft state,
    starts empty and only a broker that registers again refills it."""
    lagging = cfg.has("controller_serves_before_apply") and s.ctrl.before_last is not None and not s.ctrl.pending
    forgets = cfg.has("heartbeat_ignored_without_entry")
    if not (lagging or forgets) or not _budget_left(s, cfg, "controller_failovers"):
        return None
    ctrl = ctl.failover_lagging(s.ctrl) if lagging else s.ctrl
    if forgets:
        ctrl = ctrl._replace(live=(None,) * cfg.brokers)
    return _use(s._replace(ctrl=ctrl), "controller_failovers")


# --- the action table --------------------------------------------------------------------------


class ActionKind(NamedTuple):
    args: tuple[str, ...]
    rule: Callable[..., State | None]
    fault: str | None = None  # budget consumed; None for protocol steps and healing


def _settled(rule: Callable[..., State | None]) -> Callable[..., State | None]:
    """The rule, then what the dispatch thread's next read of getConfirmOffset stores on each
    broker the rule changed (`settle_confirm_offset`)."""

    def settled(s: State, cfg: Config, *args: int) -> State | None:
        nxt = rule(s, cfg, *args)
        if nxt is None:
            return None
        for before, after in zip(s.brokers, nxt.brokers):
            if after is not before:
                settled_b = settle_confirm_offset(after, cfg)
                if settled_b is not after:
                    nxt = nxt.with_broker(settled_b)
        return nxt

    settled.__name__ = rule.__name__
    settled.__doc__ = rule.__doc__
    return settled


ACTIONS: dict[str, ActionKind] = {
    "send": ActionKind(("broker", "queue", "size"), _settled(rule_send)),
    "consume": ActionKind(("broker", "queue"), _settled(rule_consume)),
    "put_complete": ActionKind(("broker", "msg"), _settled(rule_put_complete)),
    "put_timeout": ActionKind(("broker", "msg"), _settled(rule_put_timeout)),
    "dispatch": ActionKind(("broker",), _settled(rule_dispatch)),
    "flush": ActionKind(("broker",), _settled(rule_flush)),
    "ha_connect": ActionKind(("slave",), _settled(rule_ha_connect)),
    "ha_transfer": ActionKind(("slave",), _settled(rule_ha_transfer)),
    "ha_slave_ack": ActionKind(("slave",), _settled(rule_ha_slave_ack)),
    "ha_read_ack": ActionKind(("slave",), _settled(rule_ha_read_ack)),
    "ha_timeout": ActionKind(("slave",), _settled(rule_ha_timeout)),
    "check_sss": ActionKind(("broker",), _settled(rule_check_sss)),
    "alter_sss": ActionKind(("broker", "lost"), _settled(rule_alter_sss)),
    "alter_sss_fail": ActionKind(("broker",), _settled(rule_alter_sss_fail)),
    "sync_replica_info": ActionKind(("broker", "lost"), _settled(rule_sync_replica_info)),
    "register": ActionKind(("broker", "lost"), _settled(rule_register)),
    "finish_promotion": ActionKind(("broker",), _settled(rule_finish_promotion)),
    "heartbeat": ActionKind(("broker",), _settled(rule_heartbeat)),
    "sync_consumer_offsets": ActionKind(("broker",), _settled(rule_sync_consumer_offsets)),
    "controller_elect": ActionKind((), _settled(rule_controller_elect)),
    "controller_apply": ActionKind((), _settled(rule_controller_apply)),
    "tick": ActionKind((), _settled(rule_tick)),
    "restart": ActionKind(("broker",), _settled(rule_restart)),
    "heal": ActionKind((), _settled(rule_heal)),
    "crash": ActionKind(("broker", "keep"), _settled(rule_crash), "crashes"),
    "conn_reset": ActionKind(("slave",), _settled(rule_conn_reset), "connection_resets"),
    "ha_linger": ActionKind(("slave",), _settled(rule_ha_linger), "lingering_connections"),
    "ha_close_lingering": ActionKind(("slave",), _settled(rule_ha_close_lingering)),
    "partition": ActionKind(("mask",), _settled(rule_partition), "partitions"),
    "controller_cut": ActionKind(("broker",), _settled(rule_controller_cut), "controller_cuts"),
    "controller_reconnect": ActionKind(("broker",), _settled(rule_controller_reconnect)),
    "hb_timeout": ActionKind(("broker",), _settled(rule_hb_timeout), "heartbeat_timeouts"),
    "admin_elect": ActionKind(("broker",), _settled(rule_admin_elect), "admin_elections"),
    "lose_epoch_file": ActionKind(("broker",), _settled(rule_lose_epoch_file), "epoch_file_losses"),
    "write_back_epoch_file": ActionKind(("broker",), _settled(rule_write_back_epoch_file)),
    "revert_epoch_file": ActionKind(("broker",), _settled(rule_revert_epoch_file), "epoch_file_reverts"),
    "flush_checkpoint": ActionKind(("broker",), _settled(rule_flush_checkpoint)),
    "revert_checkpoint": ActionKind(("broker",), _settled(rule_revert_checkpoint), "checkpoint_reverts"),
    "controller_failover": ActionKind((), _settled(rule_controller_failover), "controller_failovers"),
    "consumer_restart": ActionKind((), _settled(rule_consumer_restart), "consumer_restarts"),
    "ha_second_removal": ActionKind(("broker", "slave"), _settled(rule_ha_second_removal)),
}


def _bounds(name: str, cfg: Config) -> tuple[int, int | None]:
    if name in ("broker", "slave"):
        return 1, cfg.brokers
    return {"queue": (0, cfg.queues - 1), "lost": (0, 1), "mask": (1, (1 << cfg.brokers) - 1),
            "msg": (1, cfg.max_messages), "keep": (0, None),
            "size": (min(cfg.message_sizes), max(cfg.message_sizes))}[name]


def argument_problem(action: Action, cfg: Config) -> str | None:
    """What puts an argument outside the values `candidates` can give it under `cfg` (a broker
    id of 0, -1 or beyond the configured count would index the broker list from the end)."""
    for name, v in zip(ACTIONS[action[0]].args, action[1:]):
        if not isinstance(v, int):
            return f"{name} {v!r} is not an integer"
        low, high = _bounds(name, cfg)
        if v < low or (high is not None and v > high) or (name == "size" and v not in cfg.message_sizes):
            where = f"one of {list(cfg.message_sizes)}" if name == "size" else \
                f"at least {low}" if high is None else f"between {low} and {high}"
            return f"{name} {v} is outside this configuration: it must be {where}"
    return None


def step(s: State, action: Action, cfg: Config) -> State:
    """Apply one action; raises NotEnabled if it cannot happen in `s`."""
    kind = ACTIONS.get(action[0]) if action else None
    if kind is None or len(action) != len(kind.args) + 1:
        raise NotEnabled(f"unknown action {action!r}")
    problem = argument_problem(action, cfg)
    if problem:
        raise NotEnabled(f"{format_action(action)}: {problem}")
    nxt = kind.rule(s, cfg, *action[1:])
    if nxt is None:
        raise NotEnabled(format_action(action))
    return nxt


def candidates(s: State, cfg: Config) -> list[Action]:
    """Actions whose cheap preconditions hold: a superset of `enabled(s)`."""
    out: list[Action] = [("tick",)]
    ids = range(1, cfg.brokers + 1)
    for b in s.brokers:
        i = b.id
        if _budget_left(s, cfg, "epoch_file_reverts") and b.epochs.disk != b.epochs.synced:
            out.append(("write_back_epoch_file", i))
        if _budget_left(s, cfg, "checkpoint_reverts") and b.checkpoint_confirm != b.confirm:
            out.append(("revert_checkpoint" if not b.up else "flush_checkpoint", i))
        if not b.up:
            out.append(("restart", i))
            if _budget_left(s, cfg, "epoch_file_losses") and b.epochs.disk:
                out.append(("lose_epoch_file", i))
            if _budget_left(s, cfg, "epoch_file_reverts") and b.epochs.disk != b.epochs.synced:
                out.append(("revert_epoch_file", i))
            continue
        if b.role == MASTER and b.running and not b.promoting:
            if len(s.sends) < cfg.max_messages:
                out += [("send", i, q, z) for q in range(cfg.queues) for z in cfg.message_sizes]
            out.append(("check_sss", i))
        for p in b.puts:
            out += [("put_complete", i, p.msg), ("put_timeout", i, p.msg)]
        out.append(("dispatch", i))
        if _serves_pulls(s, b):
            out += [("consume", i, q) for q in range(cfg.queues)]
        if b.log.flushed < max_phy(b):
            out.append(("flush", i))
        if b.client.state == READY:
            if b.role == SLAVE and b.master_id is not None:
                out.append(("ha_connect", i))
        else:
            out += [("ha_transfer", i), ("ha_timeout", i)]
            out.append(("ha_read_ack", i) if b.client.ack is not None else ("ha_slave_ack", i))
            if _budget_left(s, cfg, "connection_resets"):
                out.append(("conn_reset", i))
            if _budget_left(s, cfg, "lingering_connections"):
                out.append(("ha_linger", i))
        out += [("ha_close_lingering", c.slave) for c in b.conns if c.lingering]
        out += [("ha_second_removal", i, x) for x in sorted(b.closing)]
        if b.alters:
            out += [("alter_sss", i, 0), ("alter_sss_fail", i)]
            if _budget_left(s, cfg, "lost_responses"):
                out.append(("alter_sss", i, 1))
        if b.promoting:
            out.append(("finish_promotion", i))
        if b.running:
            out += [("sync_replica_info", i, 0), ("heartbeat", i)]
            if _budget_left(s, cfg, "lost_responses"):
                out.append(("sync_replica_info", i, 1))
            if b.role == SLAVE:
                out.append(("sync_consumer_offsets", i))
        else:
            out.append(("register", i, 0))
            if _budget_left(s, cfg, "lost_responses"):
                out.append(("register", i, 1))
        if _budget_left(s, cfg, "crashes"):
            out += [("crash", i, k) for k in range(cl.unflushed(b.log) + 1)]
    out.append(("controller_elect",))
    if s.ctrl.pending:
        out.append(("controller_apply",))
    if (cfg.has("controller_serves_before_apply") or cfg.has("heartbeat_ignored_without_entry")) and _budget_left(
        s, cfg, "controller_failovers"
    ):
        out.append(("controller_failover",))
    if _budget_left(s, cfg, "consumer_restarts"):
        out.append(("consumer_restart",))
    if s.cut or s.off_controller:
        out.append(("heal",))
    out += [("controller_reconnect", i) for i in sorted(s.off_controller)]
    if not s.cut and _budget_left(s, cfg, "partitions"):
        out += [("partition", mask) for mask in range(1, 1 << cfg.brokers)]
    if _budget_left(s, cfg, "heartbeat_timeouts"):
        out += [("hb_timeout", i) for i in ids]
    if _budget_left(s, cfg, "admin_elections"):
        out += [("admin_elect", i) for i in ids]
    if _budget_left(s, cfg, "controller_cuts"):
        out += [("controller_cut", i) for i in ids if i not in s.off_controller and i not in s.cut]
    return out


def successors(s: State, cfg: Config, skip: frozenset[Action] = frozenset()) -> list[tuple[Action, State]]:
    """Every enabled action with its next state, but those in `skip` (the explorer's sleep set)."""
    out = []
    for a in candidates(s, cfg):
        if a in skip:
            continue
        nxt = ACTIONS[a[0]].rule(s, cfg, *a[1:])
        if nxt is not None:
            out.append((a, nxt))
    return out


def enabled(s: State, cfg: Config) -> list[Action]:
    """Exactly the actions `step` accepts in `s`."""
    return [a for a, _ in successors(s, cfg)]


def format_action(action: Action) -> str:
    kind = ACTIONS.get(action[0])
    if kind is None:
        return repr(action)
    args = ", ".join(f"{n}={v}" for n, v in zip(kind.args, action[1:]))
    return f"{action[0]}({args})"


# --- the initial state -------------------------------------------------------------------------

BOOTSTRAP_NOTE = (
    "warm start: ids 1..N applied (ApplyBrokerId), broker 1 registers first and wins the first "
    "election (masterEpoch 1), unless it is an async learner that does not ask to be elected "
    "(then the first other broker wins), and the others register as slaves"
)


def bootstrap_actions(cfg: Config) -> list[Action]:
    """Broker 1 registers first. A learner that does not ask to be elected waits, and the
    first broker that may be master registers and wins; the others then register as slaves."""
    waits = 1 in cfg.async_learners and not cfg.has("learner_requests_election")
    first = min(i for i in range(1, cfg.brokers + 1) if i not in cfg.async_learners) if waits else 1
    acts: list[Action] = [("register", 1, 0)] + ([("register", first, 0)] if waits else [])
    acts.append(("finish_promotion", first))
    acts += [("register", i, 0) for i in range(2, cfg.brokers + 1) if i != first]
    return acts + ([("register", 1, 0)] if waits else [])


def empty_cluster(cfg: Config) -> State:
    """Where the bootstrap starts: ids 1..N applied for (ApplyBrokerId), every broker down to
    its empty store and not yet registered."""
    validate(cfg)
    s_ctrl = ctl.SetState()
    for i in range(1, cfg.brokers + 1):
        code, events = ctl.apply_broker_id(s_ctrl, i)
        assert code == ctl.SUCCESS, f"apply_broker_id({i}) -> {code}"
        for ev in events:
            s_ctrl = ctl.apply_event(s_ctrl, ev)
    log = cl.empty(cfg.base_offset, cfg.unit_bytes)
    brokers = tuple(new_broker(i, cfg.queues, log)._replace(running=False, role=NONE, metadata_file=False) for i in range(1, cfg.brokers + 1))
    return State(
        now=0,
        brokers=brokers,
        ctrl=ctl.Controller(applied=s_ctrl, live=(None,) * cfg.brokers),
        cut=frozenset(),
        off_controller=frozenset(),
        msgs=(),
        sends=(),
        reads=(),
        used=NO_FAULTS,
        consumer=(0,) * cfg.queues,
        reports=(None,) * cfg.brokers,
    )


def initial_state(cfg: Config) -> State:
    """Built with the model's own rules from an empty controller and empty stores, so the
    start is reachable by construction."""
    s = empty_cluster(cfg)
    for a in bootstrap_actions(cfg):
        s = step(s, a, cfg)
    return s
