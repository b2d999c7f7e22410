"""The model's side of conformance: each driver request run through the model's own rule
functions (model/controller.py, model/epochfile.py; HA requests through ha_side), answered in the
driver's shape.

Nothing here decides an outcome: every code, epoch, set and offset comes from a model function;
this module only holds the state between requests, as the controller's state machine and a
broker's epoch cache do, and turns the model's tuples into the driver's fields. The model has no
broker addresses, remarks or `.bak` files; those fields are not compared (`conform.NOT_COMPARED`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rmqcheck.model import controller as ctl
from rmqcheck.model import epochfile as ef
from rmqcheck.model.bugs import SNAPSHOT

from . import ha_side

MAX_ID = 4  # broker ids 1..MAX_ID heartbeat; the model's heartbeat table is indexed by id


class ControllerSide(NamedTuple):
    applied: ctl.SetState = ctl.SetState()
    ctrl: ctl.Controller = ctl.Controller(live=(None,) * MAX_ID)
    unclean: bool = False
    timeout: int = 2  # heartbeat timeout in ticks


class ModelSide:
    """Holds the model's state between requests; `answer(request)` runs one."""

    def __init__(self, brokers: int = MAX_ID, bugs: frozenset[str] = SNAPSHOT) -> None:
        self.brokers = brokers  # ids 1..brokers can heartbeat
        self.bugs = bugs  # the HA rules' toggles: the snapshot's defects, or fewer for an intended form
        self.controller = self._fresh(False, 2)
        self.caches: dict[str, ef.EpochFile] = {}
        self.now = 0  # the logical clock of the request being answered

    def _fresh(self, unclean: bool, timeout: int) -> ControllerSide:
        return ControllerSide(ctrl=ctl.Controller(live=(None,) * self.brokers), unclean=unclean, timeout=timeout)

    # --- controller -----------------------------------------------------------------------

    def alive(self, now: int) -> frozenset[int]:
        c = self.controller
        return frozenset(i for i in range(1, self.brokers + 1) if ctl.is_alive(c.ctrl, i, now, c.timeout))

    def _commit(self, events: tuple) -> None:
        s = self.controller.applied
        for ev in events:
            s = ctl.apply_event(s, ev)
        self.controller = self.controller._replace(applied=s)

    def _answer(self, code: int, header: dict | None = None, body: dict | None = None,
                events: tuple = (), result: Any = None) -> dict:
        self._commit(events)
        c = self.controller
        return {"ok": True, "code": code, "header": header or {}, "body": body, "events": [_event(e) for e in events],
                "result": result, "state": controller_state(c.applied),
                "live": live_view(c.ctrl.live, self.now, c.timeout)}

    def controller_answer(self, req: dict) -> dict:
        op, s, now = req["op"], self.controller.applied, req.get("now", 0)
        self.now = now
        if op == "ctl_reset":
            self.controller = self._fresh(req["unclean"], req["heartbeat_timeout"])
            return self._answer(ctl.SUCCESS)
        if op == "get_next_broker_id":
            next_id = ctl.get_next_broker_id(s)
            return self._answer(ctl.SUCCESS, {"nextBrokerId": next_id}, result=next_id)
        if op == "apply_broker_id":
            code, events = ctl.apply_broker_id(s, req["id"], f'{req["address"]};{req["check_code"]}')
            return self._answer(code, events=events)
        if op == "register_broker":
            code, role, sss, sss_epoch = ctl.register_broker(s, req["id"], self.alive(now))
            body = {"sss": sorted(sss), "sss_epoch": sss_epoch} if code == ctl.SUCCESS else None
            return self._answer(code, _role_header(role, sss_epoch=True), body)
        if op == "heartbeat":
            c = self.controller
            live = ctl.on_broker_heartbeat(c.ctrl, req["id"], now, req["epoch"], req["max_offset"], req["confirm_offset"],
                                           req["priority"])
            self.controller = c._replace(ctrl=live)
            return self._answer(ctl.SUCCESS)
        if op == "expire":
            c = self.controller
            self.controller = c._replace(ctrl=ctl.expire(c.ctrl, req["id"]))
            return self._answer(ctl.SUCCESS)
        if op == "elect":
            broker = ctl.NO_BROKER if req["id"] is None else req["id"]
            c = self.controller
            code, role, events = ctl.elect_master(s, broker, req["designate"], c.unclean, self.alive(now), c.ctrl.live)
            body = {"sss": sorted(role.sss)} if role is not None else None
            return self._answer(code, _role_header(role, sss_epoch=True), body, events)
        if op == "alter_sss":
            code, body, events = ctl.alter_sync_state_set(s, req["master"], req["master_epoch"], frozenset(req["sss"]),
                                                          req["sss_epoch"], self.alive(now))
            header = {"newSyncStateSetEpoch": body[1] if body else 0}  # a primitive int in the Java header
            return self._answer(code, header, {"sss": sorted(body[0]), "sss_epoch": body[1]} if body else None,
                                events)
        if op == "get_sync_state_data":
            rows = ctl.get_sync_state_data(s, self.alive(now))
            return self._answer(ctl.SUCCESS, result=None if rows is None else [[list(r) for r in g] for g in rows])
        if op == "clean":
            ids = frozenset(int(i) for i in req["ids"].split(";")) if req["ids"].strip() else None
            code, events = ctl.clean_broker_data(s, ids, req["living"], self.alive(now))
            return self._answer(code, events=events)
        if op == "scan":
            try:
                needs = ctl.needs_reelection(s, self.alive(now))
            except ctl.NullPointer as exc:
                return {"ok": False, "exception": f"java.lang.NullPointerException: {exc}"}
            return self._answer(ctl.SUCCESS, result=needs)
        if op == "snapshot_restore":  # the model's state is its own snapshot
            return self._answer(ctl.SUCCESS)
        if op == "get_replica_info":
            code, role = ctl.get_replica_info(s)
            body = {"sss": sorted(role.sss), "sss_epoch": role.sss_epoch} if role else None
            return self._answer(code, _role_header(role, sss_epoch=False), body)
        raise KeyError(op)

    # --- epoch caches -----------------------------------------------------------------------

    def epoch_answer(self, req: dict) -> dict:
        op = req["op"]
        if op == "find_consistent_point":
            point = ef.find_consistent_point(_pairs(req["local"]), req["local_max"], _pairs(req["master"]), req["master_max"])
            return {"ok": True, "result": point, "state": None}
        name = req["name"]
        cache = ef.EMPTY if op == "epoch_new" else self.caches[name]
        result: Any = None
        if op == "epoch_append":
            cache, result = ef.append_entry(cache, req["epoch"], req["start"])
        elif op == "epoch_set_last_end":
            cache = ef.set_last_end(cache, req["end"])
        elif op == "epoch_truncate_suffix_by_epoch":
            cache = ef.truncate_suffix_by_epoch(cache, req["epoch"])
        elif op == "epoch_truncate_suffix_by_offset":
            cache = ef.truncate_suffix_by_offset(cache, req["offset"])
        elif op == "epoch_truncate_prefix_by_offset":
            cache = ef.truncate_prefix_by_offset(cache, req["offset"])
        elif op == "epoch_reload":
            cache = ef.reload(cache)
        elif op == "epoch_lose_file":
            cache = ef.lose_file(cache)
        elif op == "epoch_get_entry":
            result = _entry(ef.get_entry(cache, req["epoch"]))
        elif op == "epoch_find_by_offset":
            result = _entry(ef.find_by_offset(cache, req["offset"]))
        elif op == "epoch_next_entry":
            result = _entry(ef.next_entry(cache, req["epoch"]))
        elif op == "epoch_truncation_point":
            result = ef.truncation_point(cache.entries, cache.last_end, req["local_max"], _pairs(req["master"]),
                                         req["master_max"])
        elif op != "epoch_new":
            raise KeyError(op)
        self.caches[name] = cache
        return {"ok": True, "result": result, "state": epoch_state(cache)}

    def answer(self, req: dict) -> dict:
        if req["op"] == "ping":
            return {"ok": True}
        if req["op"].startswith("ha_"):  # HA requests carry their state
            return ha_side.answer_request(req, self.bugs)
        if req["op"].startswith("epoch_") or req["op"] == "find_consistent_point":
            return self.epoch_answer(req)
        return self.controller_answer(req)


def controller_state(s: ctl.SetState) -> dict:
    """The controller fields an answer carries (the driver's `controllerState`)."""
    return {"exists": s.exists, "master": s.master, "master_epoch": s.master_epoch, "sss": sorted(s.sss),
            "sss_epoch": s.sss_epoch, "brokers": sorted(s.broker_ids), "next_id": ctl.get_next_broker_id(s)}


def live_view(live: tuple[ctl.LiveInfo | None, ...], now: int, timeout: int) -> dict:
    """The heartbeat table an answer carries (the driver's `live`), liveness judged at `now`."""
    c = ctl.Controller(live=live)
    return {str(i): {"epoch": info.epoch, "max_offset": info.max_offset, "confirm_offset": info.confirm_offset,
                     "priority": info.priority, "alive": ctl.is_alive(c, i, now, timeout)}
            for i, info in enumerate(live, start=1) if info is not None}


def epoch_state(cache: ef.EpochFile) -> dict:
    """An epoch cache as an answer carries it: entries with their ends, and the file read back."""
    return {"entries": [list(e) for e in ef.with_ends(cache)], "last_epoch": ef.last_epoch(cache),
            "disk": [list(e) for e in cache.disk]}


def _pairs(entries: list) -> tuple[tuple[int, int], ...]:
    return tuple((e, s) for e, s in entries)


def _entry(e: tuple[int, int, int] | None) -> list | None:
    return None if e is None else list(e)


def _role_header(role: ctl.RoleInfo | None, sss_epoch: bool) -> dict:
    if role is None:
        return {}
    header = {"masterBrokerId": role.master, "masterEpoch": role.master_epoch}
    if sss_epoch:
        header["syncStateSetEpoch"] = role.sss_epoch
    return header


def _event(ev: ctl.Event) -> dict:
    if isinstance(ev, ctl.ElectMasterEvent):
        return {"type": "ElectMasterEvent", "elected": ev.new_master is not None, "new_master": ev.new_master}
    if isinstance(ev, ctl.AlterSyncStateSetEvent):
        return {"type": "AlterSyncStateSetEvent", "sss": sorted(ev.new_sss)}
    if isinstance(ev, ctl.ApplyBrokerIdEvent):
        return {"type": "ApplyBrokerIdEvent", "id": ev.broker_id}
    if isinstance(ev, ctl.CleanBrokerDataEvent):
        return {"type": "CleanBrokerDataEvent", "ids": sorted(ev.broker_ids) if ev.broker_ids is not None else None}
    raise TypeError(ev)
