"""Controller: replicated metadata of one broker set, its requests and its election policy.

Mirrors `controller/.../impl/manager/ReplicasInfoManager.java`, `DefaultElectPolicy.java`
and the heartbeat managers (reference §3). A request is computed against the state the
leader has applied and returns (code, response, events); events change the state only when
applied (`apply_event`, reference §3.2). The model serialises propose and apply (reference
§3.7 allows either) except under the `controller_serves_before_apply` toggle, where a
controller failover leaves the new leader one committed event behind.

Liveness is data: a heartbeat table of `LiveInfo` and the logical clock, as the JRaft flavour
evaluates it at the request's invokeTime.
"""

from __future__ import annotations

from typing import NamedTuple

from .elect import ANY, CAST, EXACT, compare_candidates, elect_policy, tree_set_first, try_elect  # noqa: F401

# ResponseCode (remoting/.../protocol/ResponseCode.java)
SUCCESS = 0
CONTROLLER_FENCED_MASTER_EPOCH = 2000
CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001
CONTROLLER_INVALID_MASTER = 2002
CONTROLLER_INVALID_REPLICAS = 2003
CONTROLLER_MASTER_NOT_AVAILABLE = 2004
CONTROLLER_BROKER_NOT_ALIVE = 2006
CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009
CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010
CONTROLLER_MASTER_STILL_EXIST = 2011
CONTROLLER_ELECT_MASTER_FAILED = 2012
CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013
CONTROLLER_BROKER_ID_INVALID = 2014

INT_MAX = 2**31 - 1  # default brokerElectionPriority: Integer.MAX_VALUE (lower is preferred)
ELECT_MASTER_MAX_RETRY = 3  # electMasterMaxRetryCount


class SetState(NamedTuple):
    """SyncStateInfo + BrokerReplicaInfo of the modelled broker set."""

    exists: bool = False  # isContainsBroker: present in both tables
    # After a partial clean-up one table can outlive the other ("replicas": brokerIdInfo alone,
    # "sync": SyncStateInfo alone); isContainsBroker is false, but some requests read the
    # survivor (cleanBrokerData below).
    orphan: str = ""
    master: int | None = None
    master_epoch: int = 0
    sss: frozenset[int] = frozenset()
    sss_epoch: int = 0
    broker_ids: frozenset[int] = frozenset()  # brokerIdInfo keys
    next_id: int = 1  # nextAssignBrokerId
    # (id, registerCheckCode) of ids applied for with a code; the model's own brokers apply
    # once each and pass none, so explored states keep this empty.
    check_codes: tuple[tuple[int, str], ...] = ()


class LiveInfo(NamedTuple):
    """BrokerLiveInfo as refreshed by heartbeats (reference §3.5)."""

    last_update: int
    epoch: int  # the broker's epoch-file lastEpoch, not the controller's epoch
    max_offset: int
    confirm_offset: int
    priority: int = INT_MAX


# --- events (impl/event) and their application (reference §3.2) -----------------------------


class ElectMasterEvent(NamedTuple):
    new_master: int | None  # None: ElectMasterEvent(false), no master elected


class AlterSyncStateSetEvent(NamedTuple):
    new_sss: frozenset[int]


class ApplyBrokerIdEvent(NamedTuple):
    broker_id: int
    check_code: str | None = None


class CleanBrokerDataEvent(NamedTuple):
    broker_ids: frozenset[int] | None  # None or empty: the whole broker set


Event = ElectMasterEvent | AlterSyncStateSetEvent | ApplyBrokerIdEvent | CleanBrokerDataEvent


def apply_event(s: SetState, ev: Event) -> SetState:
    """`ReplicasInfoManager.applyEvent`."""
    if isinstance(ev, ElectMasterEvent):
        if not s.exists:
            return s
        if ev.new_master is None:
            # handleElectMaster(false): masterless; the SyncStateSet and its epoch are kept.
            return s._replace(master=None, master_epoch=s.master_epoch + 1)
        return s._replace(
            master=ev.new_master,
            master_epoch=s.master_epoch + 1,
            sss=frozenset((ev.new_master,)),
            sss_epoch=s.sss_epoch + 1,
        )
    if isinstance(ev, AlterSyncStateSetEvent):
        if not s.exists:
            return s
        return s._replace(sss=ev.new_sss, sss_epoch=s.sss_epoch + 1)
    if isinstance(ev, ApplyBrokerIdEvent):
        code = ((ev.broker_id, ev.check_code),) if ev.check_code is not None else ()
        if not s.exists:
            return SetState(exists=True, broker_ids=frozenset((ev.broker_id,)), next_id=2, check_codes=code)
        if ev.broker_id in s.broker_ids:
            return s
        # addBroker increments nextAssignBrokerId by one whatever the id was.
        return s._replace(broker_ids=s.broker_ids | {ev.broker_id}, next_id=s.next_id + 1,
                          check_codes=tuple(sorted(s.check_codes + code)))
    if isinstance(ev, CleanBrokerDataEvent):
        return _clean(s, ev.broker_ids)
    raise TypeError(f"unknown controller event {ev!r}")


def _clean(s: SetState, ids: frozenset[int] | None) -> SetState:
    """handleCleanBrokerDataEvent: without ids both tables go; with ids each id leaves both
    tables, and a table left empty is removed, so one can outlive the other."""
    if not ids:
        return SetState()
    if not s.exists:
        return s
    left, sss = s.broker_ids - ids, s.sss - ids
    codes = tuple(c for c in s.check_codes if c[0] in left)
    if not left and not sss:
        return SetState()
    if not left:
        return s._replace(exists=False, orphan="sync", broker_ids=frozenset(), sss=sss, check_codes=())
    if not sss:
        return SetState(orphan="replicas", broker_ids=left, next_id=s.next_id, check_codes=codes)
    return s._replace(broker_ids=left, sss=sss, check_codes=codes)


def _has_replicas(s: SetState) -> bool:
    """replicaInfoTable holds the set (what applyBrokerId and getNextBrokerId look at)."""
    return s.exists or s.orphan == "replicas"


class Controller(NamedTuple):
    applied: SetState = SetState()  # what the leader serves requests from
    pending: tuple[Event, ...] = ()  # committed but not yet applied by the leader (A7 only)
    live: tuple[LiveInfo | None, ...] = ()  # heartbeat table, index = broker id - 1
    # Ghost history for the invariants: every (masterEpoch, master) a response handed out.
    grants: tuple[tuple[int, int], ...] = ()
    # The state before the last applied event and that event, kept only under A7 so a
    # failover can leave the new leader one event behind.
    before_last: SetState | None = None
    last_event: Event | None = None


def committed(c: Controller) -> SetState:
    """The state every controller will eventually apply."""
    s = c.applied
    for ev in c.pending:
        s = apply_event(s, ev)
    return s


def commit(c: Controller, events: tuple[Event, ...], keep_history: bool) -> Controller:
    """Append a request's events to the replicated log. A leader that is up to date applies
    them at once; one that lags (A7) applies them after the pending ones."""
    if not events:
        return c
    if c.pending:
        return c._replace(pending=c.pending + events)
    applied = c.applied
    before, last = c.before_last, c.last_event
    for ev in events:
        before, last = (applied, ev) if keep_history else (None, None)
        applied = apply_event(applied, ev)
    return c._replace(applied=applied, before_last=before, last_event=last)


def apply_pending(c: Controller) -> Controller:
    """The lagging leader's state machine applies one committed event."""
    ev, rest = c.pending[0], c.pending[1:]
    return c._replace(applied=apply_event(c.applied, ev), pending=rest, before_last=c.applied, last_event=ev)


def failover_lagging(c: Controller) -> Controller:
    """A new leader that has not applied the last committed event (A7 toggle only; with the
    fix a new leader commits and applies a no-op before it serves anything)."""
    if c.before_last is None or c.pending:
        return c
    return c._replace(applied=c.before_last, pending=(c.last_event,), before_last=None, last_event=None)


# --- heartbeats and liveness (reference §3.5) ------------------------------------------------


def on_broker_heartbeat(
    c: Controller, broker: int, now: int, epoch: int, max_offset: int, confirm_offset: int, priority: int = INT_MAX
) -> Controller:
    """`DefaultBrokerHeartbeatManager.onBrokerHeartbeat`: the timestamp and the election
    priority are always refreshed; (epoch, maxOffset, confirmOffset) only if (epoch, maxOffset)
    grew, so a truncation does not lower the controller's view while the entry lives.

    Quirk, found by `rmqcheck conform`: the first heartbeat builds BrokerLiveInfo with the
    nine-argument constructor, which has no confirmOffset, so it stays 0 until (epoch,
    maxOffset) next grows (DefaultBrokerHeartbeatManager.java:121-131)."""
    live = list(c.live)
    old = live[broker - 1]
    if old is None:
        new = LiveInfo(now, epoch, max_offset, 0, priority)
    elif epoch > old.epoch or (epoch == old.epoch and max_offset > old.max_offset):
        new = LiveInfo(now, epoch, max_offset, confirm_offset, priority)
    else:
        new = old._replace(last_update=now, priority=priority)
    live[broker - 1] = new
    return c._replace(live=tuple(live))


def is_alive(c: Controller, broker: int, now: int, timeout: int) -> bool:
    """`isBrokerActive`: lastUpdate + timeout >= now."""
    info = c.live[broker - 1] if 0 < broker <= len(c.live) else None
    return info is not None and info.last_update + timeout >= now


def expire(c: Controller, broker: int) -> Controller:
    """The scan removes an entry whose heartbeat timed out (DLedger flavour)."""
    live = list(c.live)
    live[broker - 1] = None
    return c._replace(live=tuple(live))


# --- broker id assignment (reference §3.7) ---------------------------------------------------


def get_next_broker_id(s: SetState) -> int:
    return s.next_id if _has_replicas(s) else 1


def apply_broker_id(s: SetState, broker_id: int, check_code: str | None = None) -> tuple[int, tuple[Event, ...]]:
    """`applyBrokerId`: an unknown set accepts only id 1; a known one any unassigned id, or an
    assigned one again from the broker that holds it (the same registerCheckCode: a broker
    restarting before it persisted its id; ReplicasInfoManager.java:325, found by
    `rmqcheck conform`). The model's own brokers apply once each, without a code."""
    event = ApplyBrokerIdEvent(broker_id, check_code)
    if not _has_replicas(s):
        return (SUCCESS, (event,)) if broker_id == 1 else (CONTROLLER_BROKER_ID_INVALID, ())
    if broker_id not in s.broker_ids or (check_code is not None and (broker_id, check_code) in s.check_codes):
        return SUCCESS, (event,)
    return CONTROLLER_BROKER_ID_INVALID, ()


class RoleInfo(NamedTuple):
    """The role part of a controller response (ElectMaster / RegisterBroker / GetReplicaInfo)."""

    master: int | None
    master_epoch: int
    sss_epoch: int
    sss: frozenset[int]


def register_broker(
    s: SetState, broker_id: int, alive: frozenset[int]
) -> tuple[int, RoleInfo | None, frozenset[int], int]:
    """`registerBroker`: reports the master (and epochs) only if it exists and is alive; the
    body always carries (SyncStateSet, syncStateSetEpoch)."""
    if not s.exists or broker_id not in s.broker_ids:
        return CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, None, frozenset(), 0
    role = None
    if s.master is not None and s.master in alive:
        role = RoleInfo(s.master, s.master_epoch, s.sss_epoch, s.sss)
    return SUCCESS, role, s.sss, s.sss_epoch


def get_replica_info(s: SetState) -> tuple[int, RoleInfo | None]:
    """`getReplicaInfo`: the master even if dead; no liveness filter."""
    if not s.exists:
        return CONTROLLER_BROKER_METADATA_NOT_EXIST, None
    return SUCCESS, RoleInfo(s.master, s.master_epoch, s.sss_epoch, s.sss)


class ReplicaRow(NamedTuple):
    broker: int
    alive: bool


def get_sync_state_data(s: SetState, alive: frozenset[int]) -> tuple[tuple[ReplicaRow, ...], tuple[ReplicaRow, ...]] | None:
    """`getSyncStateData`: every registered broker with its liveness, in the SyncStateSet or
    not; None for a set the controller does not hold."""
    if not s.exists:
        return None
    rows = [ReplicaRow(b, b in alive) for b in sorted(s.broker_ids)]
    return tuple(r for r in rows if r.broker in s.sss), tuple(r for r in rows if r.broker not in s.sss)


def clean_broker_data(
    s: SetState, ids: frozenset[int] | None, clean_living: bool, alive: frozenset[int]
) -> tuple[int, tuple[Event, ...]]:
    """`cleanBrokerData` (the admin's cleanBrokerMetadata): unless told to clean living brokers,
    refuses while the set has a master (no ids given) or while a named broker is alive.

    Quirk, found by `rmqcheck conform`: the ids are parsed only when living brokers are not to
    be cleaned (ReplicasInfoManager.java:432-449), so cleanLivingBroker with ids removes the
    whole broker set, not the named brokers."""
    if clean_living:
        ids = None
    else:
        if not ids and (s.exists or s.orphan == "sync") and s.master is not None:
            return CONTROLLER_INVALID_CLEAN_BROKER_METADATA, ()
        if ids and ids & alive:
            return CONTROLLER_INVALID_CLEAN_BROKER_METADATA, ()
    if s.exists:
        return SUCCESS, (CleanBrokerDataEvent(ids),)
    return CONTROLLER_INVALID_CLEAN_BROKER_METADATA, ()


class NullPointer(Exception):
    """Where the mirrored Java dereferences null: the model raises what the code throws."""


def needs_reelection(s: SetState, alive: frozenset[int]) -> bool:
    """`scanNeedReelectBrokerSets` for the modelled set: its master is not alive but another
    registered broker is. Reads the SyncStateInfo table, then the replica table; a SyncStateInfo
    that outlived its replicas (a partial clean-up) makes the Java throw."""
    if not (s.exists or s.orphan == "sync") or s.master is None or s.master in alive:
        return False
    if not s.exists:
        raise NullPointer("replicaInfoTable.get(brokerName) is null (the SyncStateInfo outlived it)")
    return bool(s.broker_ids & alive)


# --- AlterSyncStateSet (reference §3.3) -------------------------------------------------------


def alter_sync_state_set(
    s: SetState, master_id: int, master_epoch: int, new_sss: frozenset[int], sss_epoch: int, alive: frozenset[int]
) -> tuple[int, tuple[frozenset[int], int] | None, tuple[Event, ...]]:
    """Pre-checks in the reference order; the first failure wins. Why each exists:
    the epochs fence requests from a deposed master or built on an outdated set, the alive
    check keeps dead replicas out, and the master must stay in its own set."""
    if not s.exists:
        return CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, None, ()
    if new_sss == s.sss:  # a no-op rejection, before the master and epoch checks
        return CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, None, ()
    if s.master is None or s.master != master_id:
        return CONTROLLER_INVALID_MASTER, None, ()
    if master_epoch != s.master_epoch:
        return CONTROLLER_FENCED_MASTER_EPOCH, None, ()
    if sss_epoch != s.sss_epoch:
        return CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, None, ()
    for replica in sorted(new_sss):  # HashSet order: ascending for small ids
        if replica not in s.broker_ids:
            return CONTROLLER_INVALID_REPLICAS, None, ()
        if replica not in alive:
            return CONTROLLER_BROKER_NOT_ALIVE, None, ()
    if s.master not in new_sss:
        return CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, None, ()
    return SUCCESS, (new_sss, s.sss_epoch + 1), (AlterSyncStateSetEvent(new_sss),)


# --- ElectMaster and DefaultElectPolicy (reference §3.4, §3.5) --------------------------------


NO_BROKER = -1  # ofControllerTrigger: brokerId = -1


def elect_master(
    s: SetState,
    broker_id: int,
    designate: bool,
    unclean: bool,
    valid: frozenset[int],
    live: tuple[LiveInfo | None, ...],
    order: str = CAST,
) -> tuple[int, RoleInfo | None, tuple[Event, ...]]:
    """`ReplicasInfoManager.electMaster`.

    broker_id is the requesting broker (ofBrokerTrigger), the designated broker (ofAdminTrigger,
    designate=True) or NO_BROKER (ofControllerTrigger). A failed election triggered by the
    controller still bumps masterEpoch (masterless state); one triggered by a broker does not.
    """
    if not s.exists:
        return CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, None, ()
    old = s.master
    new: int | None = None
    if s.master_epoch == 0:
        # First election: the requester wins, with no liveness, SSS or registration check.
        new = broker_id
    if new is None or new == NO_BROKER:
        prefer = broker_id if designate else None
        new = elect_policy(s.sss, s.broker_ids if unclean else None, old, prefer, valid, live, order)
    if new is not None and new == old:
        return CONTROLLER_MASTER_STILL_EXIST, RoleInfo(old, s.master_epoch, s.sss_epoch, s.sss), ()
    if new is not None:
        return SUCCESS, RoleInfo(new, s.master_epoch + 1, s.sss_epoch + 1, frozenset((new,))), (ElectMasterEvent(new),)
    if broker_id == NO_BROKER:
        return CONTROLLER_MASTER_NOT_AVAILABLE, None, (ElectMasterEvent(None),)
    return CONTROLLER_ELECT_MASTER_FAILED, None, ()
