"""Lockstep: a run of the whole model with every call it makes into a loaded class answered by
RocketMQ's own code as well.

The model's rules for the controller (model/controller.py: ReplicasInfoManager,
DefaultElectPolicy, DefaultBrokerHeartbeatManager) and the epoch cache (model/epochfile.py:
EpochFileCache) are the ones conformance compiles. While the model runs an action list,
`recording()` notes each call the model's step makes to those functions (the model itself is
untouched: the module attributes are wrapped for the duration of the run). Each call becomes a
driver request in conformance's vocabulary and is answered twice: by `ModelSide`, the model's
rule functions in their snapshot form, and by the Java driver. Two checks per call:

* code: the Java's answer against ModelSide's, field by field (`conform.differences`);
* form: ModelSide's result and state against what the full model's call returned, which differ
  only where a toggle or the intended baseline changes a loaded rule (the model then runs a form
  that is not the snapshot's code, and lockstep says so and stops comparing).

Epoch-file calls take a cache value, not a broker; each broker's cache is told apart by object
identity (a copy per broker at the start of each step, then each call's result inherits the
owner of its argument). What a step does outside these calls lives in classes conformance does
not load (`MODEL_ONLY`): the broker's HA service, ReplicasManager, the store.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from rmqcheck.model import controller as ctl
from rmqcheck.model import epochfile as ef
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, bootstrap_actions, empty_cluster, format_action, step
from rmqcheck.model.world import State

from .conform import differences
from .model_side import ModelSide, controller_state, epoch_state, live_view

# The model's functions that mirror a loaded Java method, and that method.
LOADED = {
    ctl: {
        "apply_broker_id": "ReplicasInfoManager.applyBrokerId",
        "register_broker": "ReplicasInfoManager.registerBroker",
        "get_replica_info": "ReplicasInfoManager.getReplicaInfo",
        "elect_master": "ReplicasInfoManager.electMaster, DefaultElectPolicy",
        "alter_sync_state_set": "ReplicasInfoManager.alterSyncStateSet",
        "needs_reelection": "ReplicasInfoManager.scanNeedReelectBrokerSets",
        "on_broker_heartbeat": "DefaultBrokerHeartbeatManager.onBrokerHeartbeat",
        "expire": "DefaultBrokerHeartbeatManager.onBrokerChannelClose",
    },
    ef: {
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
}

# Where the rest of each action lives: code conformance does not load, so model-only.
_HA = "AutoSwitchHAService / HAConnection / HAClient (store)"
_RM = "ReplicasManager (broker)"
MODEL_ONLY = {
    "send": "CommitLog.asyncPutMessage (store)",
    "consume": "PullMessageProcessor, DefaultMessageStore.getMessage",
    "put_complete": "GroupTransferService (store)", "put_timeout": "GroupTransferService (store)",
    "dispatch": "ReputMessageService (store)", "flush": "FlushRealTimeService (store)",
    "ha_connect": _HA, "ha_transfer": _HA, "ha_slave_ack": _HA, "ha_read_ack": _HA, "ha_timeout": _HA,
    "conn_reset": _HA,
    "check_sss": _RM, "alter_sss": _RM, "alter_sss_fail": _RM, "sync_replica_info": _RM, "register": _RM,
    "heartbeat": _RM, "finish_promotion": f"{_RM}, DefaultMessageStore recovery",
    "sync_consumer_offsets": "SlaveSynchronize (broker)",
    "controller_elect": "the controller's inactive-master scan (ControllerManager)",
    "controller_apply": "the controller's Raft state machine", "controller_failover": "the controller's Raft",
    "restart": "CommitLog recovery (store)", "crash": "a fault", "tick": "the clock", "partition": "a fault",
    "heal": "the network", "hb_timeout": "a fault", "admin_elect": "mqadmin, ControllerManager",
    "lose_epoch_file": "a fault", "consumer_restart": "the client",
}


# In-snapshot toggles whose intended form changes a loaded class's rule (appendEntry replacing
# an empty last epoch): a walk compared call by call keeps them on, so the model runs the code.
SNAPSHOT_FORM = frozenset({"equal_start_epoch_not_recorded"})


class Call(NamedTuple):
    fn: str  # the model function
    args: tuple
    kwargs: dict
    result: Any


@contextmanager
def recording(calls: list[Call]) -> Iterator[None]:
    """Note every outermost call into a LOADED function while the block runs."""
    depth = [0]
    saved = [(mod, name, getattr(mod, name)) for mod, names in LOADED.items() for name in names]

    def wrap(name: str, fn: Callable) -> Callable:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                result = fn(*args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                calls.append(Call(name, args, kwargs, result))
            return result
        return recorded

    for mod, name, fn in saved:
        setattr(mod, name, wrap(name, fn))
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


class Checked(NamedTuple):
    """One loaded-class call of a step, on both sides."""

    method: str  # the Java method
    request: dict
    java: dict
    model: dict
    diffs: list  # (field, java, model)


class StepReport(NamedTuple):
    index: int  # 0: the bootstrap (initial state)
    action: Action | None
    calls: list[Checked]
    form: str  # "" or how the full model's call differs from the snapshot's code

    @property
    def model_only(self) -> str:
        return "" if self.action is None else MODEL_ONLY.get(self.action[0], "")

    @property
    def verdict(self) -> str:
        differing = [c for c in self.calls if c.diffs]
        if differing:
            return "DIFFERS: " + "; ".join(f"{c.method}: " + ", ".join(k for k, _, _ in c.diffs) for c in differing)
        if self.form:
            return f"not the snapshot's code: {self.form}"
        if self.calls:
            return f"confirmed ({len(self.calls)} call{'s' * (len(self.calls) > 1)})"
        return "model-only"


class Lockstep(NamedTuple):
    steps: list[StepReport]
    compared: int  # calls answered by both sides
    states: list[State]

    @property
    def first_difference(self) -> StepReport | None:
        return next((s for s in self.steps if any(c.diffs for c in s.calls)), None)

    @property
    def first_form_change(self) -> StepReport | None:
        return next((s for s in self.steps if s.form), None)


def _cache(broker: int) -> str:
    return f"b{broker}"


def _address(broker: int) -> str:
    return f"10.0.0.{broker}:10911"


class _Owners:
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


def _distinct_epochs(s: State, owners: _Owners) -> State:
    """The same state with each broker's epoch file a distinct object, owned by that broker."""
    for b in s.brokers:
        copy = ef.EpochFile(tuple(list(b.epochs.entries)), b.epochs.last_end, b.epochs.disk)
        owners.own(copy, b.id)
        s = s.with_broker(b._replace(epochs=copy))
    return s


def _controller_request(call: Call, now: int) -> dict:
    a = call.args
    if call.fn == "apply_broker_id":
        return {"op": "apply_broker_id", "id": a[1], "address": _address(a[1]), "check_code": "c"}
    if call.fn == "register_broker":
        return {"op": "register_broker", "id": a[1], "address": _address(a[1]), "now": now}
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
        return {"op": "heartbeat", "id": broker, "address": _address(broker), "epoch": epoch, "max_offset": max_offset,
                "confirm_offset": confirm, "priority": priority, "now": beat_now}
    if call.fn == "expire":
        return {"op": "expire", "id": a[1], "now": now}
    raise KeyError(call.fn)


def _epoch_request(call: Call, owners: _Owners) -> tuple[dict, int]:
    a = call.args
    broker = owners.of(a[0])
    if broker is None:
        raise LockstepError(f"{call.fn}: an epoch file that belongs to no broker")
    name = _cache(broker)
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


class LockstepError(RuntimeError):
    """The run cannot be put in lockstep (the message says why)."""


def _form(call: Call, answer: dict, side: ModelSide, broker: int | None) -> str:
    """How the full model's call differs from ModelSide's snapshot form ("" if it does not)."""
    if call.fn in ("get_entry", "find_by_offset", "next_entry", "truncation_point", "needs_reelection"):
        value = call.result
        value = list(value) if isinstance(value, tuple) else value
        got = answer.get("result")
        return "" if got == value else f"{call.fn} returned {value!r}, the snapshot's code {got!r}"
    if broker is not None:
        value = call.result[0] if call.fn == "append_entry" else call.result
        if value != side.caches[_cache(broker)]:
            return f"{call.fn} on broker {broker}'s epoch file left {tuple(value)}, the snapshot's code " \
                   f"{tuple(side.caches[_cache(broker)])}"
        return ""
    if call.fn in ("on_broker_heartbeat", "expire"):
        live = call.result.live
        mine = side.controller.ctrl.live
        return "" if live == mine else f"{call.fn} left the heartbeat table {live}, the snapshot's code {mine}"
    code = call.result[0]
    return "" if code == answer.get("code") else f"{call.fn} answered code {code}, the snapshot's code {answer.get('code')}"


def _state_form(s: State, side: ModelSide, compare_controller: bool) -> str:
    """Model state a step changed outside the recorded calls, or through a non-snapshot form."""
    c = side.controller
    if compare_controller:
        if controller_state(s.ctrl.applied) != controller_state(c.applied):
            return "the controller's state differs from the snapshot's code (a toggle changes how it is applied)"
        if live_view(s.ctrl.live, s.now, c.timeout) != live_view(c.ctrl.live, s.now, c.timeout):
            return "the heartbeat table differs from the snapshot's code"
    for b in s.brokers:
        if b.epochs != side.caches[_cache(b.id)]:
            return f"broker {b.id}'s epoch file differs from the snapshot's code"
    return ""


class _Plan(NamedTuple):
    """The requests of a run, each with ModelSide's answer, grouped by step."""

    preamble: list[dict]
    steps: list[tuple[int, Action | None, list[tuple[str, dict, dict]], str]]  # index, action, answered calls, form
    states: list[State]  # after each action of the run (states[0]: its start)


class _Planner:
    """Answers a step's recorded calls with ModelSide, in order."""

    def __init__(self, cfg: Config, compare_controller: bool) -> None:
        self.side = ModelSide(brokers=cfg.brokers)
        self.owners = _Owners()
        self.compare_controller = compare_controller
        self.stopped = 0  # the step at which the model ran a form that is not the snapshot's code

    def answer(self, req: dict, method: str, checked: list) -> dict:
        answer = self.side.answer(req)
        checked.append((method, req, answer))
        return answer

    def step(self, index: int, calls: list[Call], before: State, after: State) -> tuple[list, str]:
        checked: list[tuple[str, dict, dict]] = []
        if self.stopped:
            return checked, f"not compared after step {self.stopped}" if calls else ""
        form = ""
        for call in calls:
            if call.fn in LOADED[ctl]:
                if not self.compare_controller:
                    continue
                req, broker = _controller_request(call, before.now), None
                answer = self.answer(req, LOADED[ctl][call.fn], checked)
            else:
                req, broker = _epoch_request(call, self.owners)
                answer = self.answer(req, LOADED[ef][call.fn], checked)
            form = form or _form(call, answer, self.side, broker)
        # heartbeat entries the model dropped without a call (a controller failover empties the
        # new leader's table): the driver forgets them too, as a fault
        for i, info in enumerate(after.ctrl.live, start=1):
            if self.compare_controller and info is None and self.side.controller.ctrl.live[i - 1] is not None:
                self.answer({"op": "expire", "id": i, "now": after.now}, "a fault: the controller forgets it", checked)
        form = form or _state_form(after, self.side, self.compare_controller)
        if form:
            self.stopped = max(index, 1)
        return checked, form


Choose = Callable[[State], Action]


def plan(cfg: Config, actions: Sequence[Action] = (), start: State | None = None, choose: Choose | None = None,
         steps: int = 0) -> _Plan:
    """Run the model from the empty cluster through its bootstrap (or from a constructed
    `start`, whose controller state no request built, so only epoch caches are compared) and
    then `actions` (or `steps` actions picked by `choose` from the current state, a walk),
    recording its loaded-class calls and answering each with ModelSide."""
    planner = _Planner(cfg, compare_controller=start is None)
    preamble = [{"op": "ctl_reset", "unclean": cfg.unclean, "heartbeat_timeout": cfg.heartbeat_timeout}]
    preamble += [{"op": "epoch_new", "name": _cache(i)} for i in range(1, cfg.brokers + 1)]
    for req in preamble:
        planner.side.answer(req)
    out: list = []
    if start is None:
        calls: list[Call] = []
        with recording(calls):
            s = empty_cluster(cfg)
        out.append((0, None, *planner.step(0, calls, s, s)))
        for a in bootstrap_actions(cfg):
            s = _traced_step(planner, s, a, cfg, 0, out)
    else:
        s, seeded = start, []
        for b in s.brokers:  # the constructed logs' entries, appended in order
            for e, st in b.epochs.entries:
                planner.answer({"op": "epoch_append", "name": _cache(b.id), "epoch": e, "start": st}, "seeding", seeded)
        out.append((0, None, seeded, ""))
    states = [s]
    given = iter(actions)
    for i in range(1, (steps if choose else len(actions)) + 1):
        s = _traced_step(planner, s, choose(s) if choose else next(given), cfg, i, out)
        states.append(s)
    return _Plan(preamble, out, states)


def _traced_step(planner: _Planner, s: State, action: Action, cfg: Config, index: int, steps: list) -> State:
    calls: list[Call] = []
    s = _distinct_epochs(s, planner.owners)
    with recording(calls):
        after = step(s, action, cfg)
    steps.append((index, action, *planner.step(index, calls, s, after)))
    return after


def lockstep(driver: Any, cfg: Config, actions: Sequence[Action] = (), start: State | None = None,
             choose: Choose | None = None, steps: int = 0) -> Lockstep:
    """Run `actions` (or a walk of `steps` chosen by `choose`) on the model with every
    loaded-class call answered by the driver too."""
    if cfg.has("controller_serves_before_apply"):
        raise LockstepError("controller_serves_before_apply: the model's controller serves before it applies, "
                            "which one ReplicasInfoManager cannot do; nothing to compare")
    p = plan(cfg, actions, start, choose, steps)
    requests = p.preamble + [req for _, _, checked, _ in p.steps for _, req, _ in checked]
    answers = driver.run(requests)
    bad = [a for a in answers[:len(p.preamble)] if not a.get("ok")]
    if bad:
        raise LockstepError(f"the driver refused the preamble: {bad[0]}")
    java = iter(answers[len(p.preamble):])
    reports, compared = [], 0
    for index, action, checked, form in p.steps:
        calls = []
        for method, req, model in checked:
            j = next(java)
            calls.append(Checked(method, req, j, model, differences(j, model)))
            compared += 1
        reports.append(StepReport(index, action, calls, form))
    return Lockstep(reports, compared, p.states)


def describe(report: StepReport) -> str:
    if report.action is None:
        return "ids applied (ApplyBrokerId)" if report.calls and report.calls[0].method != "seeding" else "start"
    return ("bootstrap: " if report.index == 0 else "") + format_action(report.action)


def _ranges(steps: list[int]) -> str:
    """1, 2, 3, 5 -> '1-3, 5'."""
    out: list[str] = []
    for i in steps:
        if out and int(out[-1].split("-")[-1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out) or "none"


def tally(ls: Lockstep) -> str:
    """Which steps' calls the code confirmed, which differ, which steps call no loaded class."""
    steps = [s for s in ls.steps if s.index]
    confirmed = [s.index for s in steps if s.verdict.startswith("confirmed")]
    differs = [s.index for s in steps if s.verdict.startswith("DIFFERS")]
    model_only = [s.index for s in steps if not s.calls and not s.form]
    parts = [f"calls confirmed in steps {_ranges(confirmed)}"]
    if differs:
        parts.append(f"DIFFERENT in steps {_ranges(differs)}")
    parts.append(f"steps {_ranges(model_only)} call no loaded class")
    changed = ls.first_form_change
    if changed is not None:
        parts.append(f"from step {changed.index} the model runs a form that is not the snapshot's code "
                     f"({changed.form}), so later calls are not compared")
    return "; ".join(parts)


class JavaView(NamedTuple):
    """What RocketMQ's classes hold after a step, read from their answers: the controller's
    state (its `state` field) and each broker's last epoch entry, (epoch, start) or None."""

    controller: dict | None
    last_entries: dict[int, tuple[int, int] | None]


def java_views(ls: Lockstep) -> list[JavaView]:
    """The Java's view after each step of the run (steps 1, 2, ...; the bootstrap folded in)."""
    controller: dict | None = None
    last: dict[int, tuple[int, int] | None] = {}
    out = []
    for s in ls.steps:
        for c in s.calls:
            state = c.java.get("state")
            if not isinstance(state, dict):
                continue
            if "name" in c.request:
                entries = state.get("entries") or []
                last[int(c.request["name"][1:])] = tuple(entries[-1][:2]) if entries else None
            else:
                controller = state
        if s.index:
            out.append(JavaView(controller, dict(last)))
    return out
