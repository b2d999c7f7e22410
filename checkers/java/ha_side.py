"""The model's side of the HA service's conformance: one broker's state as a request of the HA
driver (java/driver/RmqcheckHaDriver.java), and the model's answer to it in the driver's shape.

Each modelled method of AutoSwitchHAService, AutoSwitchHAClient and CommitLog is answered by the
model function that mirrors it (model/broker.py, model/ha.py), called on the same Broker; nothing
here decides an outcome. A request carries the whole state the Java method reads, so HA requests
are independent of each other (the driver installs the state before each call).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rmqcheck.model import broker as br
from rmqcheck.model import commitlog as cl
from rmqcheck.model import epochfile as ef
from rmqcheck.model import ha
from rmqcheck.model.broker import Broker, max_phy
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.config import Config


class Method(NamedTuple):
    op: str  # the driver request
    java: str  # the Java method


# The model functions that mirror a method of the HA classes, by name.
METHODS = {
    "compute_confirm_offset": Method("ha_confirm", "AutoSwitchHAService.computeConfirmOffset"),
    "confirm_offset_directly": Method("ha_confirm", "CommitLog.getConfirmOffsetDirectly"),
    "get_confirm_offset": Method("ha_confirm", "CommitLog.getConfirmOffset"),
    "in_sync_replicas_nums": Method("ha_confirm", "AutoSwitchHAService.inSyncReplicasNums"),
    "update_confirm_offset_when_slave_ack": Method("ha_ack", "AutoSwitchHAService.updateConfirmOffsetWhenSlaveAck"),
    "maybe_expand_sync_state_set": Method("ha_expand", "AutoSwitchHAService.maybeExpandInSyncStateSet"),
    "maybe_shrink_sync_state_set": Method("ha_shrink", "AutoSwitchHAService.maybeShrinkSyncStateSet"),
    "set_sync_state_set": Method("ha_set_sss", "AutoSwitchHAService.setSyncStateSet"),
    "remove_connection": Method("ha_remove", "AutoSwitchHAService.removeConnection"),
    # the second of a closed connection's two calls, its connection already out of the list
    "propose_removal": Method("ha_remove", "AutoSwitchHAService.removeConnection"),
    "do_truncate": Method("ha_truncate", "AutoSwitchHAClient.doTruncate"),
    "transfer_ok": Method("ha_wait", "GroupTransferService.doWaitTransfer"),
}
FUNCTIONS = {name: getattr(ha if name in ("do_truncate", "transfer_ok") else br, name) for name in METHODS}


def snapshot_form(cfg: Config) -> Config:
    """The configuration whose rules are the snapshot's code: every in-snapshot defect on, no
    historical toggle, the epoch file's quirks as they are."""
    return cfg._replace(bugs=SNAPSHOT, faithful_q1=True, faithful_q2=True)


def state(b: Broker, cfg: Config, now: int = 0, msgs: Any = None) -> dict[str, Any]:
    """The fields of a request that install broker `b` in the driver."""
    starts = [] if msgs is None else [o for o in cl.offsets(b.log) if br.is_offset_aligned(b, o, msgs)]
    return {
        **({"scale": [b.log.base, b.log.unit]} if b.log.unit > 1 or b.log.base else {}),  # for the model's side
        "id": b.id, "role": b.role, "fenced": br.fenced(b), "all_ack": cfg.all_ack, "not_catchup": cfg.not_catchup_time,
        "max": max_phy(b), "message_starts": starts, "confirm": b.confirm, "sss": sorted(b.sss),
        "remote": sorted(b.remote_sss), "synchronizing": b.synchronizing, "conns": [[c.slave, c.ack] for c in b.conns],
        "now": now, "caught_up": [list(p) for p in b.caught_up], "epochs": [list(e) for e in b.epochs.entries],
        "last_end": b.epochs.last_end,
    }


def request(name: str, args: tuple) -> dict[str, Any]:
    """The driver request for a recorded call `name(*args)` of the model."""
    b, cfg = args[0], args[-1]
    op = METHODS[name].op
    if name == "update_confirm_offset_when_slave_ack":
        return {"op": op, **state(b, cfg), "slave": args[1]}
    if name == "maybe_expand_sync_state_set":
        return {"op": op, **state(b, cfg), "slave": args[1], "offset": args[2]}
    if name == "maybe_shrink_sync_state_set":
        return {"op": op, **state(b, cfg, now=args[1])}
    if name == "set_sync_state_set":
        return {"op": op, **state(b, cfg), "new_sss": sorted(args[1])}
    if name == "transfer_ok":
        return {"op": op, **state(b, cfg), "next_offset": args[1], "need_ack": args[2]}
    if name == "remove_connection":  # the connection the model drops: the slave's live one, or its lingering one
        conn = next((i for i, c in enumerate(b.conns) if c.slave == args[1] and c.lingering == args[2]), -1)
        return {"op": op, **state(b, cfg), "slave": args[1], "conn": conn}
    if name == "propose_removal":
        return {"op": op, **state(b, cfg), "slave": args[1], "conn": -1}
    if name == "do_truncate":
        _, master, master_max, msgs, _ = args
        return {"op": op, **state(b, cfg, msgs=msgs), "reported": b.client.reported,
                "master": [list(e) for e in master], "master_max": master_max}
    return {"op": op, **state(b, cfg)}


def _sets(b: Broker) -> dict[str, Any]:
    return {"sss": sorted(b.sss), "remote": sorted(b.remote_sss), "synchronizing": b.synchronizing, "confirm": b.confirm}


def _conns(b: Broker) -> list[list[int]]:
    return [[c.slave, c.ack] for c in b.conns]


def answer(name: str, args: tuple) -> dict[str, Any]:
    """The model's answer to `request(name, args)`: the functions behind the request's op called on
    the same arguments (with their configuration, so `snapshot_form` gives the code's)."""
    b, cfg = args[0], args[-1]
    op = METHODS[name].op
    if op == "ha_confirm":
        return {"ok": True, "compute": br.compute_confirm_offset(b, cfg), "directly": br.confirm_offset_directly(b, cfg),
                "in_sync": br.in_sync_replicas_nums(b, cfg), "get": br.get_confirm_offset(b, cfg)}
    if op == "ha_wait":
        return {"ok": True, "result": FUNCTIONS[name](*args)}
    if op == "ha_shrink":
        after, new = FUNCTIONS[name](*args)
        return {"ok": True, "result": sorted(new), **_sets(after)}
    if op == "ha_truncate":
        after = FUNCTIONS[name](*args)
        cut = after is not None and max_phy(after) < max_phy(b)
        end = b if after is None else after
        return {"ok": True, "result": after is not None, "truncated_at": [max_phy(after)] if cut else [],
                "max": max_phy(end), "reported": end.client.reported,
                "sent": [end.client.ack] if after is not None and end.client.ack is not None else [],
                "epochs": [list(e) for e in end.epochs.entries]}
    after = FUNCTIONS[name](*args)
    if op == "ha_remove":
        return {"ok": True, **_sets(after), "conns": _conns(after)}
    if after is None:  # where the Java throws (maybe_expand_sync_state_set says why)
        return {"ok": False, "exception": "java.lang.NullPointerException"}
    return {"ok": True, **_sets(after)}


def with_config(args: tuple, cfg: Config) -> tuple:
    """The same call's arguments with another configuration (always the last argument)."""
    return args[:-1] + (cfg,)


# --- requests as the conformance generator makes them ---------------------------------------------

_BY_OP = {"ha_confirm": "compute_confirm_offset", "ha_ack": "update_confirm_offset_when_slave_ack",
          "ha_expand": "maybe_expand_sync_state_set", "ha_shrink": "maybe_shrink_sync_state_set",
          "ha_set_sss": "set_sync_state_set", "ha_truncate": "do_truncate", "ha_wait": "transfer_ok",
          "ha_remove": "remove_connection"}


def _log(end: int, starts: list[int], base: int = 0, unit: int = 1) -> tuple[cl.CommitLog, tuple[cl.Message, ...]]:
    """A commit log from `base` to `end` (cells of `unit` bytes) in which a whole message starts
    exactly at `starts`: the cells before the first start are the tail of a message that began
    earlier."""
    size = (end - base) // unit
    bounds = sorted({(s - base) // unit for s in starts if base <= s < end})
    pieces = ([(0, bounds[0], False)] if bounds and bounds[0] > 0 else [(0, size, False)] if size and not bounds else [])
    pieces += [(s, e, True) for s, e in zip(bounds, bounds[1:] + [size])]
    msgs: list[cl.Message] = []
    cells: list[int] = []
    for start, stop, whole in pieces:
        first_part = 0 if whole else 1  # a torn head: its first cell is not there
        msg = cl.Message(len(msgs) + 1, (stop - start + first_part) * unit, 0, len(msgs),
                         base + (start - first_part) * unit, 1, 1)
        msgs.append(msg)
        cells += [cl.cell(msg.id, first_part + k) for k in range(stop - start)]
    log = cl.CommitLog(tuple(cells), base + unit * len(cells), bool(cells) or base > 0, base, unit)
    return log, tuple(msgs)


def from_request(req: dict[str, Any], bugs: frozenset[str] = SNAPSHOT) -> tuple[str, tuple]:
    """The model call a generated request stands for: (function name, arguments), the broker
    rebuilt from the request's state and the snapshot's configuration (`bugs`: the toggles on,
    the snapshot's defects unless an intended form is asked for)."""
    name = _BY_OP[req["op"]]
    base, unit = req.get("scale", (0, 1))
    cfg = Config(brokers=5, all_ack=req["all_ack"], not_catchup_time=req["not_catchup"], bugs=bugs,
                 base_offset=base, unit_bytes=unit)
    log, msgs = _log(req["max"], req["message_starts"], base, unit)
    entries = tuple((e, s) for e, s in req["epochs"])
    b = br.new_broker(req["id"], 1, log)._replace(
        running=not req["fenced"], role=req["role"], sss=frozenset(req["sss"]),
        remote_sss=frozenset(req["remote"]), synchronizing=req["synchronizing"], log=log,
        epochs=ef.EpochFile(entries, req["last_end"] if entries else ef.INF, entries), confirm=req["confirm"],
        conns=tuple(br.Conn(slave, False, ack=ack) for slave, ack in req["conns"]),
        caught_up=tuple(sorted((s, t) for s, t in req["caught_up"])),
        client=br.Client(reported=req.get("reported", 0)),
    )
    if name == "update_confirm_offset_when_slave_ack":
        return name, (b, req["slave"], cfg)
    if name == "maybe_expand_sync_state_set":
        return name, (b, req["slave"], req["offset"], cfg)
    if name == "maybe_shrink_sync_state_set":
        return name, (b, req["now"], cfg)
    if name == "set_sync_state_set":
        return name, (b, frozenset(req["new_sss"]), cfg)
    if name == "do_truncate":
        return name, (b, tuple((e, s) for e, s in req["master"]), req["master_max"], msgs, cfg)
    if name == "transfer_ok":
        return name, (b, req["next_offset"], req["need_ack"], cfg)
    if name == "remove_connection":
        if req["conn"] < 0:  # a connection no longer in the list
            return "propose_removal", (b, req["slave"], cfg)
        # the connection removed marked as the one lingering connection: the model drops exactly it
        marked = tuple(c._replace(lingering=i == req["conn"]) for i, c in enumerate(b.conns))
        return name, (b._replace(conns=marked), req["slave"], True, cfg)
    return name, (b, cfg)


def answer_request(req: dict[str, Any], bugs: frozenset[str] = SNAPSHOT) -> dict[str, Any]:
    return answer(*from_request(req, bugs))
