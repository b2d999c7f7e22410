"""What lockstep records of a model run, and how each recorded call becomes a driver request.

The model's functions that mirror a method conformance loads are listed in `LOADED`, by the
part of RocketMQ they stand for: the controller (model/controller.py), the epoch cache
(model/epochfile.py) and the broker's HA service (model/broker.py, model/ha.py; answered by the
HA driver). `recording()` wraps them, in every model module that names them, for the duration of
a block, so the model itself stays untouched; only outermost calls are noted (a call made inside
another recorded one is part of it, as in the Java).

Epoch-file calls take a cache value, not a broker; each broker's cache is told apart by object
identity (`Owners`: a copy per broker at the start of each step, then each call's result
inherits the owner of its argument).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple

from rmqcheck.model import broker as br
from rmqcheck.model import controller as ctl
from rmqcheck.model import epochfile as ef
from rmqcheck.model import ha
from rmqcheck.model import step as step_module
from rmqcheck.model.world import State

from . import ha_side
from .requests import address

CONTROLLER, EPOCH, HA = "controller", "epoch cache", "HA service"

# The model's functions that mirror a loaded Java method, and that method.
LOADED = {
    CONTROLLER: {
        "apply_broker_id": "ReplicasInfoManager.applyBrokerId",
        "register_broker": "ReplicasInfoManager.registerBroker",
        "get_replica_info": "ReplicasInfoManager.getReplicaInfo",
        "elect_master": "ReplicasInfoManager.electMaster, DefaultElectPolicy",
        "alter_sync_state_set": "ReplicasInfoManager.alterSyncStateSet",
        "needs_reelection": "ReplicasInfoManager.scanNeedReelectBrokerSets",
        "on_broker_heartbeat": "DefaultBrokerHeartbeatManager.onBrokerHeartbeat",
        "expire": "DefaultBrokerHeartbeatManager.onBrokerChannelClose",
    },
    EPOCH: {
        "append_entry": "EpochFileCache.appendEntry",
        "truncate_suffix_by_epoch": "EpochFileCache.truncateSuffixByEpoch",
        "truncate_suffix_by_offset": "EpochFileCache.truncateSuffixByOffset",
        "truncate_prefix_by_offset": "EpochFileCache.truncatePrefixByOffset",
        "reload": "EpochFileCache.initCacheFromFile",
        "lose_file": "epochFileCheckpoint and .bak deleted",
        "get_entry": "EpochFileCache.getEntry",
        "find_by_offset": "EpochFileCache.findEpochEntryByOffset",
        "next_entry": "EpochFileCache.nextEntry",
        "truncation_point": "AutoSwitchHAClient.doTruncate: EpochFileCache.findConsistentPoint",
    },
    HA: {name: m.java for name, m in ha_side.METHODS.items()},
}
_HOMES = {CONTROLLER: (ctl,), EPOCH: (ef,), HA: (br, ha)}
_MODULES = (ctl, ef, br, ha, step_module)  # every model module that may name a recorded function
KIND = {name: kind for kind, names in LOADED.items() for name in names}

# Where the rest of each action lives: code conformance does not load, so model-only. Each
# entry: (the part, short, as summaries name it; the classes).
_CONN = ("HA connection", "AutoSwitchHAConnection / AutoSwitchHAClient read and write services (store)")
_RM = ("ReplicasManager", "ReplicasManager (broker)")
_STORE = "store"
_FAULT = ("fault", "an injected fault")
MODEL_ONLY = {
    "send": (_STORE, "CommitLog.asyncPutMessage (store)"),
    "consume": ("broker", "PullMessageProcessor, DefaultMessageStore.getMessage"),
    "put_complete": (_STORE, "GroupTransferService (store)"), "put_timeout": (_STORE, "GroupTransferService (store)"),
    "dispatch": (_STORE, "ReputMessageService (store)"), "flush": (_STORE, "FlushRealTimeService (store)"),
    "ha_connect": _CONN, "ha_transfer": _CONN, "ha_slave_ack": _CONN, "ha_read_ack": _CONN, "ha_timeout": _CONN,
    "conn_reset": _CONN, "ha_linger": _CONN, "ha_close_lingering": _CONN, "ha_second_removal": _CONN,
    "check_sss": _RM, "alter_sss": _RM, "alter_sss_fail": _RM, "sync_replica_info": _RM, "register": _RM,
    "heartbeat": _RM, "finish_promotion": ("ReplicasManager", "ReplicasManager (broker), DefaultMessageStore recovery"),
    "sync_consumer_offsets": ("broker", "SlaveSynchronize (broker)"),
    "controller_elect": ("controller", "the controller's inactive-master scan (ControllerManager)"),
    "controller_apply": ("controller", "the controller's Raft state machine"),
    "controller_failover": ("controller", "the controller's Raft"),
    "restart": (_STORE, "CommitLog recovery (store)"), "crash": _FAULT, "tick": ("clock", "the clock"),
    "partition": _FAULT, "controller_cut": _FAULT,
    "controller_reconnect": ("network", "the network"), "heal": ("network", "the network"), "hb_timeout": _FAULT,
    "admin_elect": ("controller", "mqadmin, ControllerManager"), "lose_epoch_file": _FAULT,
    "revert_epoch_file": _FAULT, "write_back_epoch_file": ("file system", "the file system"),
    "revert_checkpoint": _FAULT, "flush_checkpoint": (_STORE, "StoreCheckpoint.flush (store)"),
    "consumer_restart": ("client", "the client"),
}



class Call(NamedTuple):
    fn: str  # the model function
    args: tuple
    kwargs: dict
    result: Any

    @property
    def kind(self) -> str:
        return KIND[self.fn]

    @property
    def method(self) -> str:
        return LOADED[self.kind][self.fn]


def _originals(kinds: frozenset[str]) -> dict[str, Callable]:
    out = {}
    for kind in kinds:
        for name in LOADED[kind]:
            out[name] = next(getattr(m, name) for m in _HOMES[kind] if hasattr(m, name))
    return out


@contextmanager
def recording(calls: list[Call], kinds: frozenset[str] = frozenset(LOADED)) -> Iterator[None]:
    """Note every call into a LOADED function of `kinds` while the block runs, except those made
    inside a recorded call of the same kind (an epoch-cache call inside doTruncate is noted: the
    broker's cache changes)."""
    depth = dict.fromkeys(LOADED, 0)

    def wrap(name: str, fn: Callable) -> Callable:
        kind = KIND[name]

        def recorded(*args: Any, **kwargs: Any) -> Any:
            depth[kind] += 1
            try:
                result = fn(*args, **kwargs)
            finally:
                depth[kind] -= 1
            if depth[kind] == 0:
                calls.append(Call(name, args, kwargs, result))
            return result
        return recorded

    patched = []
    for name, fn in _originals(kinds).items():
        wrapper = wrap(name, fn)
        for module in _MODULES:
            if getattr(module, name, None) is fn:
                setattr(module, name, wrapper)
                patched.append((module, name, fn))
    try:
        yield
    finally:
        for module, name, fn in patched:
            setattr(module, name, fn)


def cache_name(broker: int) -> str:
    return f"b{broker}"


class Owners:
    """Which broker an epoch-file value (or its entry tuple) belongs to, by identity."""

    def __init__(self) -> None:
        self.by_id: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps the ids valid

    def own(self, value: ef.EpochFile, broker: int) -> None:
        for obj in (value, value.entries):
            self.by_id[id(obj)] = broker
            self.keep.append(obj)

    def of(self, obj: Any) -> int | None:
        return self.by_id.get(id(obj))


def distinct_epochs(s: State, owners: Owners) -> State:
    """The same state with each broker's epoch file a distinct object, owned by that broker."""
    for b in s.brokers:
        copy = b.epochs._replace(entries=tuple(list(b.epochs.entries)))
        owners.own(copy, b.id)
        s = s.with_broker(b._replace(epochs=copy))
    return s


def controller_request(call: Call, now: int) -> dict:
    a = call.args
    if call.fn == "apply_broker_id":
        return {"op": "apply_broker_id", "id": a[1], "address": address(a[1]), "check_code": "c"}
    if call.fn == "register_broker":
        return {"op": "register_broker", "id": a[1], "address": address(a[1]), "now": now}
    if call.fn == "get_replica_info":
        return {"op": "get_replica_info", "now": now}
    if call.fn == "elect_master":
        broker, designate = a[1], a[2]
        return {"op": "elect", "id": None if broker == ctl.NO_BROKER else broker, "designate": designate, "now": now}
    if call.fn == "alter_sync_state_set":
        return {"op": "alter_sss", "master": a[1], "master_epoch": a[2], "sss": sorted(a[3]), "sss_epoch": a[4],
                "now": now}
    if call.fn == "needs_reelection":
        return {"op": "scan", "now": now}
    if call.fn == "on_broker_heartbeat":
        broker, beat_now, epoch, max_offset, confirm = a[1:6]
        priority = a[6] if len(a) > 6 else call.kwargs.get("priority", ctl.INT_MAX)
        return {"op": "heartbeat", "id": broker, "address": address(broker), "epoch": epoch, "max_offset": max_offset,
                "confirm_offset": confirm, "priority": priority, "now": beat_now}
    if call.fn == "expire":
        return {"op": "expire", "id": a[1], "now": now}
    raise KeyError(call.fn)


def epoch_request(call: Call, owners: Owners) -> tuple[dict, int]:
    a = call.args
    broker = owners.of(a[0])
    if broker is None:
        raise ValueError(f"{call.fn}: an epoch file that belongs to no broker")
    name = cache_name(broker)
    if call.fn == "append_entry":
        req = {"op": "epoch_append", "name": name, "epoch": a[1], "start": a[2]}
    elif call.fn in ("truncate_suffix_by_epoch", "truncate_suffix_by_offset", "truncate_prefix_by_offset"):
        key = "epoch" if call.fn.endswith("epoch") else "offset"
        req = {"op": f"epoch_{call.fn}", "name": name, key: a[1]}
    elif call.fn in ("reload", "lose_file"):
        req = {"op": f"epoch_{call.fn}", "name": name}
    elif call.fn in ("get_entry", "next_entry"):
        req = {"op": f"epoch_{call.fn}", "name": name, "epoch": a[1]}
    elif call.fn == "find_by_offset":
        req = {"op": "epoch_find_by_offset", "name": name, "offset": a[1]}
    elif call.fn == "truncation_point":
        req = {"op": "epoch_truncation_point", "name": name, "local_max": a[2], "master": [list(e) for e in a[3]],
               "master_max": a[4]}
    else:
        raise KeyError(call.fn)
    result = call.result[0] if isinstance(call.result, tuple) and call.fn == "append_entry" else call.result
    if isinstance(result, ef.EpochFile):
        owners.own(result, broker)
    return req, broker


