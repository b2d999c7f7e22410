"""Classic master/slave HA (seed 001): static roles, no failover, the 5.x `DefaultHAService`.

Broker 0 is the master (brokerId 0, brokerRole SYNC_MASTER or ASYNC_MASTER), brokers 1..N are
slaves. A slave's `DefaultHAClient` connects, reports its max offset (8 bytes) and appends
what the master's `DefaultHAConnection.WriteSocketService` sends from the requested offset; the
master's `GroupTransferService` acks a SYNC put when enough slave acks reach its next offset.
Nothing ever truncates a log, and nobody elects a new master. Citations are to the snapshot
8fc57f1468 (store/.../ha/DefaultHAConnection.java, DefaultHAClient.java, GroupTransferService.java,
CommitLog.handleHA); seed 001 walks through the same code.

A pure state machine like model/step.py: `step(state, action, cfg)` returns the next state or
raises NotEnabled, `successors` lists what is enabled. Time is not modelled: the slave timeout
of a SYNC put (FLUSH_SLAVE_TIMEOUT) may fire whenever the put is still waiting.
"""

from __future__ import annotations

from typing import NamedTuple

from . import commitlog as cl
from .commitlog import CommitLog, Message
from . import table
from .step import NotEnabled
from .table import Rule, Toggle, check_toggles

SYNC_MASTER = "SYNC_MASTER"
ASYNC_MASTER = "ASYNC_MASTER"
PENDING, PUT_OK, FLUSH_SLAVE_TIMEOUT, NO_RESPONSE = "PENDING", "PUT_OK", "FLUSH_SLAVE_TIMEOUT", "NO_RESPONSE"
MASTER = 0
HOLE = 0  # a cell a slave never received (no message id is 0)


TOGGLES: tuple[Toggle, ...] = (
    Toggle(
        "ack_beyond_master_max",
        "apache/rocketmq#3015, PR #3016, fix 84cde5f5be (4.9.3 HAConnection); not in the 5.x DefaultHAConnection",
        "The master takes a slave's reported offset as its ack even beyond the master's own max offset (a "
        "slave that kept a tail the master lost in a crash), so SYNC puts up to that offset are acked "
        "unreplicated. The 4.9.3 fix did not carry over when 5.0 rewrote HAConnection as DefaultHAConnection.",
        True,
    ),
    Toggle(
        "ack_check_skips_first_report",
        "the form of fix 84cde5f5be: an `else if` after `slaveRequestOffset < 0`",
        "The check added by #3016 runs only on reports after the first, and the first report of every "
        "connection is the one that carries the kept tail: a reconnecting slave still inflates the ack.",
        False,
    ),
)
TOGGLE_NAMES = frozenset(t.name for t in TOGGLES)
SNAPSHOT = frozenset(t.name for t in TOGGLES if t.in_snapshot)


class ClassicConfig(NamedTuple):
    slaves: int = 1
    role: str = SYNC_MASTER  # the master's brokerRole
    in_sync_replicas: int = 2  # inSyncReplicas: needAckNums of a SYNC put (5.x; 1 acks at once)
    sync_flush: bool = False  # flushDiskType
    message_sizes: tuple[int, ...] = (1,)
    max_messages: int = 2
    batch_size: int = 2  # haTransferBatchSize, model bytes
    file_size: int = 4  # mappedFileSizeCommitLog, model bytes
    crashes: int = 1  # crash with page-cache loss; restart is healing
    resets: int = 0  # HA connection resets
    bugs: frozenset[str] = SNAPSHOT

    def has(self, bug: str) -> bool:
        return bug in self.bugs

    @property
    def brokers(self) -> int:
        return 1 + self.slaves


def validate(cfg: ClassicConfig) -> ClassicConfig:
    if not 1 <= cfg.slaves <= 3:
        raise ValueError(f"slaves must be between 1 and 3, got {cfg.slaves}")
    if cfg.role not in (SYNC_MASTER, ASYNC_MASTER):
        raise ValueError(f"role must be {SYNC_MASTER} or {ASYNC_MASTER}, got {cfg.role!r}")
    if not 1 <= cfg.file_size <= 1_000 or not 1 <= cfg.batch_size <= 1_000:
        raise ValueError(f"file_size and batch_size must be 1 to 1,000, got {cfg.file_size} and {cfg.batch_size}")
    if not cfg.message_sizes or any(not 1 <= z <= 7 for z in cfg.message_sizes) or not 0 <= cfg.max_messages <= 1_000:
        raise ValueError("message_sizes must be 1 to 7 and max_messages 0 to 1,000")
    if min(cfg.in_sync_replicas, cfg.crashes, cfg.resets) < 0:
        raise ValueError("in_sync_replicas, crashes and resets must be >= 0")
    check_toggles(cfg.bugs, TOGGLE_NAMES, "classic")
    return cfg


class Conn(NamedTuple):
    """`DefaultHAConnection` on the master, one per connected slave."""

    slave: int
    request: int = -1  # slaveRequestOffset: the first report
    ack: int = -1  # slaveAckOffset: the latest report
    next: int = -1  # WriteSocketService.nextTransferFromWhere


class Node(NamedTuple):
    id: int
    up: bool = True
    log: CommitLog = cl.EMPTY
    # master side: DefaultHAService
    conns: tuple[Conn, ...] = ()
    push2slave: int = 0  # push2SlaveMaxOffset (an AtomicLong(0) per process)
    # slave side: DefaultHAClient
    connected: bool = False
    report: int | None = None  # an offset report written to the socket, not read yet


class Put(NamedTuple):
    """A `GroupCommitRequest` waiting in GroupTransferService."""

    msg: int
    next_offset: int
    need: int  # needAckNums


class ClassicState(NamedTuple):
    nodes: tuple[Node, ...]
    msgs: tuple[Message, ...] = ()
    status: tuple[str, ...] = ()  # per message, as the producer sees it
    waiting: tuple[Put, ...] = ()
    crashes: int = 0  # used
    resets: int = 0  # used

    @property
    def master(self) -> Node:
        return self.nodes[MASTER]

    def node(self, i: int) -> Node:
        return self.nodes[i]

    def with_node(self, n: Node) -> "ClassicState":
        return self._replace(nodes=self.nodes[: n.id] + (n,) + self.nodes[n.id + 1 :])


Action = tuple  # (kind, *args)


def initial_state(cfg: ClassicConfig) -> ClassicState:
    return ClassicState(tuple(Node(i) for i in range(cfg.brokers)))


def max_phy(n: Node) -> int:
    return cl.max_phy(n.log)


def holds(n: Node, m: Message) -> bool:
    return cl.has_message(n.log, m)


def _conn(master: Node, slave: int) -> Conn | None:
    return next((c for c in master.conns if c.slave == slave), None)


def _with_conn(master: Node, conn: Conn) -> Node:
    return master._replace(conns=tuple(conn if c.slave == conn.slave else c for c in master.conns))


def close_connection(s: ClassicState, slave: int) -> ClassicState:
    """Either end closing: the master drops the DefaultHAConnection, the client goes back to
    READY (`closeMaster`) and its unread report is gone with the socket."""
    m = s.master
    s = s.with_node(m._replace(conns=tuple(c for c in m.conns if c.slave != slave)))
    return s.with_node(s.node(slave)._replace(connected=False, report=None))


# --- rules ---------------------------------------------------------------------------------


def rule_send(s: ClassicState, cfg: ClassicConfig, size: int) -> ClassicState:
    """`CommitLog.asyncPutMessage` on the master, then `handleHA`: a SYNC_MASTER put waits for
    needAckNums = inSyncReplicas acks, except that needAckNums <= 1 returns PUT_OK at once
    (snapshot CommitLog.handleHA: `if (needAckNums >= 0 && needAckNums <= 1)`)."""
    m = s.master
    if not m.up or len(s.msgs) >= cfg.max_messages or size not in cfg.message_sizes:
        raise NotEnabled
    msg = Message(len(s.msgs) + 1, size, 0, len(s.msgs), max_phy(m), 0, MASTER)
    m = m._replace(log=cl.append(m.log, msg.cells(), cfg.sync_flush))
    s = s.with_node(m)._replace(msgs=s.msgs + (msg,))
    need = cfg.in_sync_replicas
    if cfg.role == SYNC_MASTER and not 0 <= need <= 1:
        return s._replace(status=s.status + (PENDING,), waiting=s.waiting + (Put(msg.id, msg.end, need),))
    return s._replace(status=s.status + (PUT_OK,))


def transfer_ok(s: ClassicState, put: Put) -> bool:
    """`GroupTransferService.doWaitTransfer` (not allAck): with needAckNums <= 1 the
    service-wide push2SlaveMaxOffset decides; otherwise the master and every connection whose
    slaveAckOffset reaches the put's next offset count as acks."""
    m = s.master
    if put.need <= 1:
        return m.push2slave >= put.next_offset
    return 1 + sum(1 for c in m.conns if c.ack >= put.next_offset) >= put.need


def _finish(s: ClassicState, msg: int, status: str) -> ClassicState:
    put = next((p for p in s.waiting if p.msg == msg), None)
    if put is None or not s.master.up:
        raise NotEnabled
    st = list(s.status)
    st[msg - 1] = status
    return s._replace(status=tuple(st), waiting=tuple(p for p in s.waiting if p.msg != msg))


def rule_put_ok(s: ClassicState, cfg: ClassicConfig, msg: int) -> ClassicState:
    """GroupTransferService wakes the producer with PUT_OK."""
    put = next((p for p in s.waiting if p.msg == msg), None)
    if put is None or not transfer_ok(s, put):
        raise NotEnabled
    return _finish(s, msg, PUT_OK)


def rule_put_timeout(s: ClassicState, cfg: ClassicConfig, msg: int) -> ClassicState:
    """The request's deadline (slaveTimeout) passes first: FLUSH_SLAVE_TIMEOUT (the message
    stays in the master's log)."""
    return _finish(s, msg, FLUSH_SLAVE_TIMEOUT)


def rule_flush(s: ClassicState, cfg: ClassicConfig, node: int) -> ClassicState:
    """FlushRealTimeService (ASYNC_FLUSH)."""
    n = s.node(node)
    if not n.up or n.log.flushed == max_phy(n):
        raise NotEnabled
    return s.with_node(n._replace(log=cl.flush(n.log)))


def rule_connect(s: ClassicState, cfg: ClassicConfig, slave: int) -> ClassicState:
    """`DefaultHAClient.connectMaster`: connect (the master's AcceptSocketService creates a
    DefaultHAConnection), set currentReportedOffset = maxPhyOffset and report it at once
    (lastWriteTimestamp starts at 0, so `isTimeToReportOffset` holds)."""
    n, m = s.node(slave), s.master
    if not n.up or n.connected or not m.up:
        raise NotEnabled
    s = s.with_node(m._replace(conns=m.conns + (Conn(slave),)))
    return s.with_node(n._replace(connected=True, report=max_phy(n)))


def rule_read_report(s: ClassicState, cfg: ClassicConfig, slave: int) -> ClassicState:
    """`DefaultHAConnection.ReadSocketService.processReadEvent`: slaveAckOffset := the report,
    slaveRequestOffset := the first report, then `notifyTransferSome` raises
    push2SlaveMaxOffset. Intended (#3016, checked on every report): a report beyond the
    master's max offset closes the connection."""
    n, m = s.node(slave), s.master
    conn = _conn(m, slave)
    if n.report is None or conn is None or not m.up:
        raise NotEnabled
    offset = n.report
    first = conn.request < 0
    beyond = offset > max_phy(m)
    if beyond and not cfg.has("ack_beyond_master_max") and not (first and cfg.has("ack_check_skips_first_report")):
        return close_connection(s, slave)
    conn = conn._replace(ack=offset, request=offset if first else conn.request)
    m = _with_conn(m, conn)._replace(push2slave=max(m.push2slave, offset))
    return s.with_node(m).with_node(n._replace(report=None))


def rule_transfer(s: ClassicState, cfg: ClassicConfig, slave: int) -> ClassicState:
    """One `WriteSocketService` iteration and the slave's `processReadResult`.

    The first transfer starts at the requested offset, or for a request of 0 at the start of
    the master's last commit-log file ("0 means start of the last file"). A batch is at most
    haTransferBatchSize bytes and need not end on a message boundary; with nothing to send the
    writer sends a heartbeat (the same header, no body). The slave closes the connection when
    it has data and the packet's offset is not its max offset; an empty slave accepts any
    offset and creates the file holding it (the bytes before stay missing). It then reports
    its new max offset if it grew (`reportSlaveMaxOffsetPlus`)."""
    n, m = s.node(slave), s.master
    conn = _conn(m, slave)
    if conn is None or conn.request < 0 or not (m.up and n.up and n.connected):
        raise NotEnabled
    top = max_phy(m)
    if conn.next == -1:
        start = conn.request if conn.request != 0 else top - top % cfg.file_size
        conn = conn._replace(next=start)
    offset = conn.next
    body = m.log.cells[offset : offset + cfg.batch_size] if offset < top else ()
    s = s.with_node(_with_conn(m, conn._replace(next=offset + len(body))))
    have = max_phy(n)
    if have != 0 and have != offset:
        return close_connection(s, slave)
    if not body:
        return s
    pad = (HOLE,) * (offset - have) if have == 0 else ()
    log = cl.append(n.log, pad + body, cfg.sync_flush)
    grew = cl.max_phy(log) > have
    return s.with_node(n._replace(log=log, report=cl.max_phy(log) if grew else n.report))  # the master reads the latest


def rule_reset(s: ClassicState, cfg: ClassicConfig, slave: int) -> ClassicState:
    """Fault: the HA TCP connection resets."""
    if s.resets >= cfg.resets or not s.node(slave).connected:
        raise NotEnabled
    return close_connection(s, slave)._replace(resets=s.resets + 1)


def rule_crash(s: ClassicState, cfg: ClassicConfig, node: int) -> ClassicState:
    """Fault: the process dies with the page cache (the unflushed tail is lost). The master's
    waiting producers get no response; every HA connection of the node closes."""
    n = s.node(node)
    if s.crashes >= cfg.crashes or not n.up:
        raise NotEnabled
    s = s._replace(crashes=s.crashes + 1)
    if node == MASTER:
        for c in n.conns:
            s = close_connection(s, c.slave)
        st = list(s.status)
        for p in s.waiting:
            st[p.msg - 1] = NO_RESPONSE
        s = s._replace(status=tuple(st), waiting=())
    elif n.connected:
        s = close_connection(s, node)
    n = s.node(node)
    return s.with_node(n._replace(up=False, log=cl.crash(n.log, 0), conns=(), push2slave=0))


def rule_restart(s: ClassicState, cfg: ClassicConfig, node: int) -> ClassicState:
    """Healing: the broker starts again with the same role (classic roles never change)."""
    n = s.node(node)
    if n.up:
        raise NotEnabled
    return s.with_node(n._replace(up=True))


def _slaves(s: ClassicState, cfg: ClassicConfig) -> list[tuple]:
    return [(i,) for i in range(1, cfg.brokers)]


def _nodes(s: ClassicState, cfg: ClassicConfig) -> list[tuple]:
    return [(i,) for i in range(cfg.brokers)]


def _waiting(s: ClassicState, cfg: ClassicConfig) -> list[tuple]:
    return [(p.msg,) for p in s.waiting]


# The transition table: every action kind, the rule it runs and the arguments it can take.
RULES: dict[str, Rule] = {
    "send": Rule(rule_send, lambda s, cfg: [(z,) for z in cfg.message_sizes]),
    "put_ok": Rule(rule_put_ok, _waiting),
    "put_timeout": Rule(rule_put_timeout, _waiting),
    "flush": Rule(rule_flush, _nodes),
    "connect": Rule(rule_connect, _slaves),
    "read_report": Rule(rule_read_report, _slaves),
    "transfer": Rule(rule_transfer, _slaves),
    "reset": Rule(rule_reset, _slaves, fault=True),
    "crash": Rule(rule_crash, _nodes, fault=True),
    "restart": Rule(rule_restart, _nodes),
}


ARGS = {"send": ("size",), "put_ok": ("msg",), "put_timeout": ("msg",), "flush": ("node",), "crash": ("node",),
        "restart": ("node",)}


def arg_names(kind: str) -> tuple[str, ...]:
    return ARGS.get(kind, ("slave",))


def step(s: ClassicState, action: Action, cfg: ClassicConfig) -> ClassicState:
    return table.step(RULES, s, action, cfg)


def successors(s: ClassicState, cfg: ClassicConfig) -> list[tuple[Action, ClassicState]]:
    return table.successors(RULES, s, cfg)
