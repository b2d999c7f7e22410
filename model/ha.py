"""HA replication between a master and one slave (reference §2.2-2.4, §2.6 connection side).

Each function takes the master and the slave (or one of them) and returns new copies, or
None when the code path fails and the connection is closed. Packets are delivered as they
are produced: TCP keeps them in order and a reset loses both ends at once (`close` in
`model/step.py`), so a separate in-flight queue would add states but no behaviours. Acks are
the exception: the slave's last written ack waits in `Client.ack` until the master reads it.
"""

from __future__ import annotations

from typing import NamedTuple

from . import commitlog as cl
from . import epochfile as ef
from .broker import (
    TRANSFER,
    Broker,
    Client,
    Conn,
    conn_of,
    get_confirm_offset,
    max_phy,
    maybe_expand_sync_state_set,
    replace_conn,
    sync_state_set,
    truncate_files,
    update_caught_up,
    update_confirm_offset_when_slave_ack,
    _set_pair,
)
from .commitlog import Messages
from .config import Config
from .epochfile import INF


def report_slave_max_offset(s: Broker) -> Broker:
    """`reportSlaveMaxOffset`: ack only if the log grew past what was last reported."""
    top = max_phy(s)
    if top > s.client.reported:
        return s._replace(client=s.client._replace(reported=top, ack=top))
    return s


# The wrong consistent-point searches (model/bugs.py pitfalls) as `epochfile.Search` fields.
SEARCH_TOGGLES = {
    "truncation_ascending_epochs": {"highest_first": False},
    "truncation_max_end": {"end": "max"},
    "truncation_keeps_local_end": {"end": "local"},
    "truncation_keeps_master_end": {"end": "master"},
    "truncation_matches_epoch_only": {"match": "epoch"},
    "truncation_matches_start_only": {"match": "start"},
}


def truncation_search(cfg: Config) -> ef.Search:
    fields: dict = {}
    for name, override in SEARCH_TOGGLES.items():
        if cfg.has(name):
            fields.update(override)
    return ef.Search(**fields)


def do_truncate(
    s: Broker, master_entries: tuple[ef.Entry, ...], master_max: int, msgs: Messages, cfg: Config
) -> Broker | None:
    """`AutoSwitchHAClient.doTruncate`: find the consistent point with the master's epoch list
    and cut the log and the epoch file there, so the slave resumes from a prefix of the
    master's log, then report its max offset. None: no consistent point, or a point that is not
    message-aligned; the client closes and retries forever (no automatic full resync).

    An empty local epoch file skips truncation entirely ("new replica"), even if the log is
    not empty: the slave is trusted as it is (reference §2.3, §7.7).
    """
    # Intended form of `received_epoch_survives_truncation`: a truncation may remove the
    # entry of the epoch last received, so forget it and record the next header's epoch.
    received = s.client.received_epoch if cfg.has("received_epoch_survives_truncation") else -1
    if not s.epochs.entries:
        return report_slave_max_offset(s._replace(client=s.client._replace(state=TRANSFER, reported=0,
                                                                           received_epoch=received)))
    point = ef.truncation_point(
        s.epochs.entries, s.epochs.last_end, max_phy(s), master_entries, master_max, ef.INT_OPS, truncation_search(cfg)
    )
    if point < 0:
        return None
    if not cfg.has("truncation_point_beyond_log_end"):
        # Intended: never keep or report past the own log end. The snapshot uses a point beyond
        # it as is (the last local start beyond maxPhyOffset leaves its end unset): truncateFiles
        # returns true without cutting (DefaultMessageStore.java:776), and currentReportedOffset
        # becomes the point (AutoSwitchHAClient.java:469), so the slave acks bytes it lacks.
        point = min(point, max_phy(s))
    cut = truncate_files(s, point, msgs, cfg)
    if cut is None:
        return None
    epochs = ef.truncate_suffix_by_offset(cut.epochs, point, cfg.faithful_q1, cfg.faithful_q2)
    client = cut.client._replace(state=TRANSFER, reported=point, received_epoch=received)
    return report_slave_max_offset(cut._replace(epochs=epochs, client=client))


def handshake(m: Broker, s: Broker, msgs: Messages, cfg: Config) -> tuple[Broker, Broker] | None:
    """Slave READY -> HANDSHAKE -> TRANSFER: the master records the connection, answers with
    its epoch entries and max offset, the slave truncates (`doTruncate`) and acks if it has
    more than it reported. None: the handshake failed."""
    client = s.client._replace(state="HANDSHAKE", master=m.id, reported=max_phy(s), ack=None)
    conn = Conn(slave=s.id, learner=s.id in cfg.async_learners)
    # Snapshot (`acks_counted_per_connection`): `addConnection` appends, so a lingering connection
    # of this slave stays beside the new one, and whatever iterates the list counts both.
    # Intended: the slave's new handshake supersedes its older connection, dropped at once.
    stale_kept = cfg.has("acks_counted_per_connection")
    m = m._replace(conns=tuple(c for c in m.conns if c.slave != s.id or (c.lingering and stale_kept)) + (conn,))
    s = do_truncate(s._replace(client=client), m.epochs.entries, max_phy(m), msgs, cfg)
    return None if s is None else (m, s)


class Packet(NamedTuple):
    """A master TRANSFER packet: header (offset, epoch, epochStartOffset, confirmOffset) + body."""

    offset: int
    body: tuple[int, ...]
    epoch: int
    epoch_start: int
    confirm: int


def _change_transfer_epoch(m: Broker, conn: Conn, entry: tuple[int, int, int]) -> Conn:
    """`changeTransferEpochToNext`: end -1 (unbounded) when the entry is the last epoch."""
    end = -1 if entry[0] == ef.last_epoch(m.epochs) else entry[2]
    return conn._replace(transfer_epoch=entry[0], transfer_end=end)


def _header(m: Broker, conn: Conn, offset: int, body: tuple[int, ...], cfg: Config) -> Packet | None:
    """`buildTransferHeaderBuffer`. A data batch whose epoch entry is gone cannot be framed:
    the real writer sends the body without a header and the slave drops the connection
    ("Failed to find epochEntry ... when build msg header", #9689); a heartbeat falls back
    to the first entry (and dies on an empty file)."""
    entry = ef.get_entry(m.epochs, conn.transfer_epoch)
    if entry is None:
        if body or not m.epochs.entries:
            return None
        entry = ef.with_ends(m.epochs)[0]
    return Packet(offset, body, entry[0], entry[1], get_confirm_offset(m, cfg))


def master_send(m: Broker, slave: int, now: int, cfg: Config) -> tuple[Broker, Packet | None] | None:
    """One iteration of `WriteSocketService.run` in TRANSFER state.

    Returns (master, packet); packet None means the connection broke. None overall: the
    writer is waiting (no ack yet, or a batch that would cross into an epoch with no next
    entry) and nothing changes.
    """
    conn = conn_of(m, slave)
    if conn is None or conn.request == -1:
        return None
    if conn.next == -1:
        # First transfer: a request of 0 means "new replica": start at the minimum offset, the
        # log's first (-1, as with no commit-log file, while it is empty; at a base above 0 the
        # Java would give the first file's start, but no slave there requests 0: an empty one
        # reports the base). nextTransferFromWhere is assigned before the epoch lookup, so a
        # failed lookup still moves it.
        start = conn.request if conn.request != 0 else (m.log.base if max_phy(m) > m.log.base else -1)
        conn = conn._replace(next=start)
        entry = ef.find_by_offset(m.epochs, start) if start != -1 else None
        if entry is None:
            # Empty store, or "Failed to find an epochEntry": heartbeat only. The next batch
            # runs with currentTransferEpoch -1 and end 0, so it switches to the first entry.
            m = replace_conn(m, conn)
            return m, _header(m, conn, start, (), cfg)
        conn = _change_transfer_epoch(m, conn, entry)
    if conn.transfer_end == -1 and not cfg.has("same_master_epoch_bump_keeps_connections"):
        # PR #9690: after a same-master epoch bump the current epoch has ended; notice it.
        entry = ef.get_entry(m.epochs, conn.transfer_epoch)
        if entry is not None and entry[2] != INF:
            conn = conn._replace(transfer_end=entry[2])
    # The writer ships up to the log end: slaves must hold data before it is confirmed, since
    # confirmOffset waits for their acks (`transfer_only_confirmed` deadlocks on that).
    end = get_confirm_offset(m, cfg) if cfg.has("transfer_only_confirmed") else max_phy(m)
    size = min(end - conn.next, cfg.batch_bytes)
    if size <= 0:
        # Nothing to send: the slave is caught up (async learners too); send a heartbeat.
        m = update_caught_up(replace_conn(m, conn), slave, now)
        return m, _header(m, conn, conn.next, (), cfg)
    switch_after = None
    if conn.transfer_end != -1 and conn.next + size > conn.transfer_end:
        nxt = ef.next_entry(m.epochs, conn.transfer_epoch)
        if nxt is None:
            return None  # "Can't find a bigger epochEntry": wait
        # A batch must not carry two epochs: cut it at the epoch end (the pitfall
        # `transfer_batch_spans_epochs` does not). Snapshot (HA1,
        # `boundary_batch_labelled_next_epoch`): switch epochs *before* the header is built, so
        # the boundary batch is labelled with the next epoch; intended: label it with its own
        # epoch and switch afterwards.
        spans = cfg.has("transfer_batch_spans_epochs")
        if not spans:
            size = conn.transfer_end - conn.next
        if cfg.has("boundary_batch_labelled_next_epoch") and not spans:
            conn = _change_transfer_epoch(m, conn, nxt)
        else:
            switch_after = nxt
    offset = conn.next
    body = cl.read(m.log, offset, size)
    conn = conn._replace(next=offset + size, last_master_max=max_phy(m), last_transfer_time=now)
    packet = _header(m, conn, offset, body, cfg)
    if switch_after is not None:
        conn = _change_transfer_epoch(m, conn, switch_after)
    return replace_conn(m, conn), packet


def slave_receive(s: Broker, p: Packet, cfg: Config) -> Broker | None:
    """`HAClientReader.processReadResult` for a TRANSFER packet; None: offsets disagree and the
    slave closes the connection. The epoch entry is recorded before the data, and a rejected
    append is ignored (reference §6.10)."""
    top = max_phy(s)
    if top != 0 and top != p.offset:
        return None
    # An empty slave accepts any offset. appendToCommitLog then creates the first file and
    # writes at its position 0, so data sent for offset X > 0 lands at 0 (the model's cells
    # keep their message ids, and those messages are then not at their offsets).
    client = s.client
    epochs = s.epochs
    if p.epoch != client.received_epoch:
        client = client._replace(received_epoch=p.epoch)
        epochs, _ = ef.append_entry(
            epochs, p.epoch, p.epoch_start, cfg.faithful_q2, replace_empty=not cfg.has("equal_start_epoch_not_recorded")
        )
    log = cl.append(s.log, p.body, cfg.sync_flush) if p.body else s.log
    s = s._replace(client=client, epochs=epochs, log=log)
    s = s._replace(confirm=min(p.confirm, max_phy(s)))
    return report_slave_max_offset(s)


def master_read_ack(m: Broker, slave: int, ack: int, now: int, cfg: Config) -> Broker | None:
    """`HAServerReader` for a TRANSFER ack, then `maybeExpandInSyncStateSet` (connection and
    service) and `updateConfirmOffsetWhenSlaveAck` (reference §2.4, §2.6). None: the expand
    check threw, which ends the connection (the caller closes it)."""
    conn = conn_of(m, slave)
    if conn is None:
        return m
    conn = conn._replace(ack=ack, request=ack if conn.request < 0 else conn.request)
    m = replace_conn(m, conn)
    m = m._replace(last_acks=_set_pair(m.last_acks, slave, ack))
    if not conn.learner and ack >= conn.last_master_max:
        t = now if max_phy(m) == ack else conn.last_transfer_time
        expanded = maybe_expand_sync_state_set(update_caught_up(m, slave, t), slave, ack, cfg)
        if expanded is None:
            return None
        m = expanded
    return update_confirm_offset_when_slave_ack(m, slave, cfg)


def transfer_ok(m: Broker, put_next_offset: int, need_ack: int, cfg: Config) -> bool:
    """`GroupTransferService.doWaitTransfer` for one request (reference §2.8): the master plus
    the acks at or past the request's end. It counts connections, not replicas ("TODO: We must
    ensure every HAConnection represents a different slave", GroupTransferService.java:123): a
    slave's lingering connection and its new one both count (`acks_counted_per_connection`)."""
    members = sync_state_set(m, cfg) if need_ack == -1 else None
    if members is not None and len(members) <= 1:
        return True
    # Without allAck every connection counts, learners and non-members too (reference §7.17).
    strict = cfg.has("transfer_ack_strictly_past")  # a harness mutant (model/bugs.py)
    acks = 1 + sum(1 for c in m.conns if (members is None or c.slave in members)
                   and (c.ack > put_next_offset if strict else c.ack >= put_next_offset))
    return acks >= (len(members) if members is not None else need_ack)


def fresh_client(client: Client) -> Client:
    """`closeMaster`: back to READY; currentReceivedEpoch survives (only reOpen resets it)."""
    return client._replace(state="READY", master=None, ack=None)
