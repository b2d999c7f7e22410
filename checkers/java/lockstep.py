"""Lockstep: a run of the whole model with every call it makes into a loaded class answered by
RocketMQ's own code as well.

While the model runs an action list (or a walk), `calls.recording()` notes each call its steps
make to a function that mirrors a loaded Java method: the controller's (ReplicasInfoManager,
DefaultElectPolicy, DefaultBrokerHeartbeatManager), the epoch cache's (EpochFileCache) and, when
the HA driver runs, the broker's HA service's (AutoSwitchHAService, AutoSwitchHAClient.doTruncate,
CommitLog's confirmOffset). Each call becomes a driver request and is answered twice: by the
model's rule functions in their snapshot form (`ModelSide` for the stateful controller and epoch
caches, `ha_side` for the stateless HA requests) and by the Java. Two checks per call:

* code: the Java's answer against the model's snapshot form, field by field (`conform.differences`);
* form: the snapshot form against what the full model's call returned, which differ only where a
  toggle or the intended baseline changes a loaded rule. The model then runs a form that is not
  the snapshot's code, and lockstep says so; a controller or epoch-cache call of that kind leaves
  ModelSide's state behind, so comparing stops there (HA requests carry their state and go on).

What a step does outside these calls lives in classes conformance does not load
(`calls.MODEL_ONLY`): the broker's ReplicasManager, the HA connections' transfer, the store.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, bootstrap_actions, empty_cluster, format_action, step
from rmqcheck.model.world import State

from . import calls as rec
from . import ha_side
from .conform import differences
from .driver import run_both
from .model_side import ModelSide, controller_state, live_view

# In-snapshot toggles whose intended form changes a loaded class's rule (appendEntry replacing
# an empty last epoch): a walk compared call by call keeps them on, so the model runs the code.
SNAPSHOT_FORM = frozenset({"equal_start_epoch_not_recorded"})


class LockstepError(RuntimeError):
    """The run cannot be put in lockstep (the message says why)."""


class Checked(NamedTuple):
    """One loaded-class call of a step, on both sides."""

    method: str  # the Java method
    request: dict
    java: dict
    model: dict  # the snapshot form's answer
    diffs: list  # (field, java, model)
    form: str = ""  # how the full model's call differs from the snapshot form ("" if it does not)


class StepReport(NamedTuple):
    index: int  # 0: the bootstrap (initial state)
    action: Action | None
    calls: list[Checked]
    form: str  # "" or how the full model left the snapshot's code at this step

    @property
    def model_only(self) -> str:
        return "" if self.action is None else rec.MODEL_ONLY[self.action[0]][1]

    @property
    def verdict(self) -> str:
        differing = [c for c in self.calls if c.diffs]
        if differing:
            return "DIFFERS: " + "; ".join(f"{c.method}: " + ", ".join(k for k, _, _ in c.diffs) for c in differing)
        form = self.form or next((c.form for c in self.calls if c.form), "")
        if form:
            return f"not the snapshot's code: {form}"
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


# --- the model's side, call by call ------------------------------------------------------------


def _form(call: rec.Call, answer: dict, side: ModelSide, broker: int | None) -> str:
    """How the full model's controller or epoch-cache call differs from ModelSide's snapshot form."""
    if call.fn in ("get_entry", "find_by_offset", "next_entry", "truncation_point", "needs_reelection"):
        value = call.result
        value = list(value) if isinstance(value, tuple) else value
        got = answer.get("result")
        return "" if got == value else f"{call.fn} returned {value!r}, the snapshot's code {got!r}"
    if broker is not None:
        value = call.result[0] if call.fn == "append_entry" else call.result
        mine = side.caches[rec.cache_name(broker)]
        if value != mine:
            return f"{call.fn} on broker {broker}'s epoch file left {tuple(value)}, the snapshot's code {tuple(mine)}"
        return ""
    if call.fn in ("on_broker_heartbeat", "expire"):
        live, mine = call.result.live, side.controller.ctrl.live
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
        if b.epochs != side.caches[rec.cache_name(b.id)]:
            return f"broker {b.id}'s epoch file differs from the snapshot's code"
    return ""


class _Answered(NamedTuple):
    method: str
    request: dict
    model: dict
    ha: bool  # for the HA driver
    form: str = ""


class _Planner:
    """Answers a step's recorded calls with the model's snapshot form, in order."""

    def __init__(self, cfg: Config, compare_controller: bool, ha: bool) -> None:
        self.snapshot = ha_side.snapshot_form(cfg)
        self.side = ModelSide(brokers=cfg.brokers)
        self.owners = rec.Owners()
        self.compare_controller = compare_controller
        self.ha = ha
        self.stopped = 0  # the step at which a stateful call left the snapshot's code

    def kinds(self) -> frozenset[str]:
        return frozenset(k for k in rec.LOADED if k != rec.HA or self.ha)

    def answer(self, req: dict, method: str, out: list) -> dict:
        answer = self.side.answer(req)
        out.append(_Answered(method, req, answer, False))
        return answer

    def step(self, index: int, calls: list[rec.Call], after: State, now: int) -> tuple[list, str]:
        answered: list[_Answered] = []
        form = ""
        for call in calls:
            if call.kind == rec.HA:
                snapshot = ha_side.answer(call.fn, ha_side.with_config(call.args, self.snapshot))
                mine = ha_side.answer(call.fn, call.args)
                note = "" if mine == snapshot else f"{call.fn} gave {_brief(mine)}, the snapshot's code {_brief(snapshot)}"
                answered.append(_Answered(call.method, ha_side.request(call.fn, call.args), snapshot, True, note))
                continue
            if self.stopped or (call.kind == rec.CONTROLLER and not self.compare_controller):
                continue
            if call.kind == rec.CONTROLLER:
                req, broker = rec.controller_request(call, now), None
            else:
                req, broker = rec.epoch_request(call, self.owners)
            form = form or _form(call, self.answer(req, call.method, answered), self.side, broker)
        if not self.stopped:
            # heartbeat entries the model dropped without a call (a controller failover empties the
            # new leader's table): the driver forgets them too, as a fault
            for i, info in enumerate(after.ctrl.live, start=1):
                if self.compare_controller and info is None and self.side.controller.ctrl.live[i - 1] is not None:
                    self.answer({"op": "expire", "id": i, "now": after.now}, "a fault: the controller forgets it",
                                answered)
            form = form or _state_form(after, self.side, self.compare_controller)
            if form:
                self.stopped = max(index, 1)
        elif calls:
            form = f"controller and epoch-cache calls not compared after step {self.stopped}"
        return answered, form


def _brief(answer: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in answer.items() if k != "ok")


class _Plan(NamedTuple):
    """The requests of a run, each with the model's answer, grouped by step."""

    preamble: list[dict]
    steps: list[tuple[int, Action | None, list[_Answered], str]]  # index, action, answered calls, form
    states: list[State]  # after each action of the run (states[0]: its start)


Choose = Callable[[State], Action]


def plan(cfg: Config, actions: Sequence[Action] = (), start: State | None = None, choose: Choose | None = None,
         steps: int = 0, ha: bool = False) -> _Plan:
    """Run the model from the empty cluster through its bootstrap (or from a constructed
    `start`, whose controller state no request built, so only epoch caches are compared) and
    then `actions` (or `steps` actions picked by `choose` from the current state, a walk),
    recording its loaded-class calls (the HA service's too with `ha`) and answering each."""
    planner = _Planner(cfg, compare_controller=start is None, ha=ha)
    preamble = [{"op": "ctl_reset", "unclean": cfg.unclean, "heartbeat_timeout": cfg.heartbeat_timeout}]
    preamble += [{"op": "epoch_new", "name": rec.cache_name(i)} for i in range(1, cfg.brokers + 1)]
    for req in preamble:
        planner.side.answer(req)
    out: list = []
    if start is None:
        calls: list[rec.Call] = []
        with rec.recording(calls, planner.kinds()):
            s = empty_cluster(cfg)
        out.append((0, None, *planner.step(0, calls, s, 0)))
        for a in bootstrap_actions(cfg):
            s = _traced_step(planner, s, a, cfg, 0, out)
    else:
        s, seeded = start, []
        for b in s.brokers:  # the constructed logs' entries, appended in order
            for e, st in b.epochs.entries:
                planner.answer({"op": "epoch_append", "name": rec.cache_name(b.id), "epoch": e, "start": st},
                               "seeding", seeded)
        out.append((0, None, seeded, ""))
    states = [s]
    given = iter(actions)
    for i in range(1, (steps if choose else len(actions)) + 1):
        s = _traced_step(planner, s, choose(s) if choose else next(given), cfg, i, out)
        states.append(s)
    return _Plan(preamble, out, states)


def _traced_step(planner: _Planner, s: State, action: Action, cfg: Config, index: int, out: list) -> State:
    calls: list[rec.Call] = []
    s = rec.distinct_epochs(s, planner.owners)
    with rec.recording(calls, planner.kinds()):
        after = step(s, action, cfg)
    out.append((index, action, *planner.step(index, calls, after, s.now)))
    return after


# --- both drivers --------------------------------------------------------------------------------


def lockstep(driver: Any, cfg: Config, actions: Sequence[Action] = (), start: State | None = None,
             choose: Choose | None = None, steps: int = 0, ha_driver: Any = None) -> Lockstep:
    """Run `actions` (or a walk of `steps` chosen by `choose`) on the model with every
    loaded-class call answered by the drivers too (HA calls only when `ha_driver` is given)."""
    if cfg.has("controller_serves_before_apply"):
        raise LockstepError("controller_serves_before_apply: the model's controller serves before it applies, "
                            "which one ReplicasInfoManager cannot do; nothing to compare")
    try:
        p = plan(cfg, actions, start, choose, steps, ha=ha_driver is not None)
    except ValueError as exc:
        raise LockstepError(str(exc)) from None
    answered = [a for _, _, calls, _ in p.steps for a in calls]
    core_answers, ha_answers = run_both(driver, p.preamble + [a.request for a in answered if not a.ha],
                                         ha_driver, [a.request for a in answered if a.ha])
    bad = [a for a in core_answers[:len(p.preamble)] if not a.get("ok")]
    if bad:
        raise LockstepError(f"the driver refused the preamble: {bad[0]}")
    core_iter, ha_iter = iter(core_answers[len(p.preamble):]), iter(ha_answers)
    reports, compared = [], 0
    for index, action, calls, form in p.steps:
        checked = []
        for a in calls:
            j = next(ha_iter if a.ha else core_iter)
            checked.append(Checked(a.method, a.request, j, a.model, differences(j, a.model), a.form))
            compared += 1
        reports.append(StepReport(index, action, checked, form))
    return Lockstep(reports, compared, p.states)


# --- reading the result --------------------------------------------------------------------------


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
    other_form = [s.index for s in steps if s.verdict.startswith("not the snapshot's code")]
    model_only = [s.index for s in steps if not s.calls and not s.form]
    parts = [f"calls confirmed in steps {_ranges(confirmed)}"]
    if differs:
        parts.append(f"DIFFERENT in steps {_ranges(differs)}")
    if other_form:
        parts.append(f"steps {_ranges(other_form)} run a form that is not the snapshot's code")
    parts.append(f"steps {_ranges(model_only)} call no loaded class")
    changed = ls.first_form_change
    if changed is not None:
        parts.append(f"from step {changed.index} ({changed.form}) controller and epoch-cache calls are not compared")
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


def summary(ls: Lockstep) -> str:
    """One line for a findings table: the steps whose calls the code confirmed, and the steps that
    call no loaded class, by the part of RocketMQ they live in."""
    steps = [s for s in ls.steps if s.index]
    confirmed = [s.index for s in steps if s.verdict.startswith("confirmed")]
    parts: dict[str, list[int]] = {}
    for s in steps:
        if not s.calls and not s.form:
            parts.setdefault(rec.MODEL_ONLY[s.action[0]][0], []).append(s.index)
    others = [s.index for s in steps if s.index not in confirmed and (s.calls or s.form)]
    out = f"steps {_ranges(confirmed)} confirmed"
    if others:
        out += f"; {_ranges(others)} not ({'; '.join(s.verdict for s in steps if s.index in others)})"
    if parts:
        out += "; model-only: " + ", ".join(f"{_ranges(v)} ({k})" for k, v in sorted(parts.items(), key=lambda kv: kv[1][0]))
    return out
