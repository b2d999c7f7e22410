"""A model counterexample or scenario run step by step on the cluster (`replay FILE --cluster`).

After every step both sides are observed the same way (views.py) and compared. The model's
actions are finer than what a running broker lets anyone drive, so each action is one of three
kinds (`STEPS`, one function per action, each saying how):

- **driven**: the harness makes the code do it: a put, a read, a crash or power loss, a restart,
  a heartbeat, a ReplicasManager task, a tick or an election of the controller, a partition, and
  the HA steps, which the stepping links (proxy.py, step mode) turn into the release of held
  frames (`ha_connect` the handshake, `ha_transfer` master-to-slave frames up to one with
  messages, `ha_slave_ack`/`ha_read_ack` one of the slave's acks) or a lingering connection;
- **the code's own**: what the running code does by itself between steps (dispatch, the end of a
  promotion, a connection found dead on a cut link): the harness waits until the cluster is quiet;
- **not drivable**: nothing makes the code do exactly that (a second controller); said, and the
  replay goes on.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from rmqcheck.model import commitlog as cl
from rmqcheck.model.config import Config
from rmqcheck.model.observed import differences, model_view
from rmqcheck.model.step import Action, format_action
from rmqcheck.model.world import PENDING, State

from . import epochfiles
from .harness import DELIVER, DROP, LOSE_ANSWER, Cluster, ClusterConfig
from .proxy import CUT
from .stepping import (CELL_BYTES, DRIVEN, FRAME_WAIT, NOT_DRIVABLE, OWN, conn_reset, ha_close_lingering,
                       ha_connect, ha_linger, ha_read_ack, ha_slave_ack, ha_transfer)
from .run import DEFINITE_FAILURES, History, openchaos_result
from .views import code_violations, cluster_view, result_differences



class Row(NamedTuple):
    """One replayed step: what the harness did and how the two sides compare after it."""

    index: int
    action: str
    kind: str  # DRIVEN, OWN or NOT_DRIVABLE
    did: str
    differences: tuple[str, ...]  # "field: model X, code Y"; empty when the same
    settled: bool
    code: dict[str, Any]  # what the cluster showed after the step (cluster_view)


class Context:
    """What the steps share: the cluster, the recorded history, what the client was told."""

    def __init__(self, cluster: Cluster, history: History, cfg: Config) -> None:
        self.c = cluster
        self.history = history
        self.cfg = cfg
        self.sends = 0
        self.outcomes: dict[int, str] = {}  # send number -> the PutMessageStatus the client received
        self.pending: dict[str, tuple[int, int]] = {}  # body -> (send number, queue)
        # Outcomes the store gave that are still on their way to the client: a put's response is
        # delivered at the model's put_complete (or put_timeout), and lost if the broker dies first.
        self.in_flight: dict[str, tuple[int, str]] = {}  # body -> (broker, status)
        self.answered_at_once: set[str] = set()  # puts the model answers in the send step itself
        self.ack_marks: dict[int, int] = {}  # slave -> frames of its acks to release at ha_read_ack
        self.read_offsets = [0] * cfg.queues
        self.written_back: dict[int, epochfiles.Contents] = {}  # broker -> its epoch files at the last write-back
        self.flushed_confirm: dict[int, int] = {}  # broker -> its confirmOffset at the model's last checkpoint flush

    def on_event(self, kind: str, body: dict[str, Any]) -> None:
        if kind == "put_done" and body.get("msg") in self.pending:
            status = body.get("status", "NO_RESPONSE")
            if status == "NO_RESPONSE" or status in DEFINITE_FAILURES or body["msg"] in self.answered_at_once:
                self.deliver(body["msg"], status)
            else:
                self.in_flight[body["msg"]] = (body["broker"], status)
        elif kind == "exit":  # responses on their way from a broker that died are lost
            for msg, (b, _) in list(self.in_flight.items()):
                if b == body["broker"]:
                    del self.in_flight[msg]
                    self.deliver(msg, "NO_RESPONSE")

    def deliver(self, msg: str, status: str) -> None:
        """The client receives the put's response (or learns there will be none)."""
        if msg in self.pending:
            send, queue = self.pending.pop(msg)
            self.outcomes[send] = status
            self.history.response(send, msg, queue, openchaos_result(status))


Step = Callable[[Context, Action, State, State], tuple[str, str]]


# --- the client's steps --------------------------------------------------------------------------

def _send(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`send`: a put to that broker. The message is named by the model's id for it (m3), or x3
    after the third send when the model appended nothing, so both sides' logs name it alike."""
    _, b, queue, size = a
    x.sends += 1
    written = len(after.msgs) > len(before.msgs)
    body = f"m{after.msgs[-1].id}" if written else f"x{x.sends}"
    x.history.request(x.sends, body, queue)
    if not x.c.nodes[b].alive:
        x.history.response(x.sends, body, queue, "FAILURE")
        return DRIVEN, f"broker {b} is down: nothing sent"
    x.pending[body] = (x.sends, queue)
    if after.sends[-1].status != PENDING:  # no put_complete step will come: the answer goes through at once
        x.answered_at_once.add(body)
    x.c.put(b, body, queue, size * CELL_BYTES)
    return DRIVEN, f"put {body} to broker {b}"


def _consume(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`consume`: one pull of the queue from that broker, at the consumer's offset."""
    _, b, queue = a
    if not x.c.nodes[b].alive:
        return DRIVEN, f"broker {b} is down: nothing read"
    got = x.c.read(b, queue, x.read_offsets[queue], max_messages=1)  # one message a pull, as the model
    for m in got.get("messages", []):
        x.history.read(0, m["msg"], queue)
    if got.get("messages"):
        x.read_offsets[queue] = got["next"]
    return DRIVEN, f"read {[m['msg'] for m in got.get('messages', [])]} from broker {b}"


def _put_done(statuses: tuple[str, ...]) -> Step:
    def step(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
        _, b, msg = a
        body = f"m{msg}"
        end = time.monotonic() + FRAME_WAIT
        while body not in x.in_flight and body in x.pending and time.monotonic() < end:
            x.c.settle(0.2)  # the store completes the put once the acks the model released arrive
        if body not in x.in_flight:
            return NOT_DRIVABLE, f"the store has not answered {body}" + \
                (" (the code times a put out by the wall clock, set far beyond a step here)"
                 if "FLUSH_SLAVE_TIMEOUT" in statuses else "")
        status = x.in_flight.pop(body)[1]
        x.deliver(body, status)
        return DRIVEN, f"the client received {body}: {status}"
    step.__doc__ = f"The put's response ({', '.join(statuses)} in the model) reaches the client."
    return step


def _fixed(kind: str, why: str) -> Step:
    """A step the harness does not drive: the code's own, or not drivable, and why."""
    def step(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
        return kind, why
    step.kind = kind  # type: ignore[attr-defined]
    return step


# --- ReplicasManager and the controller -----------------------------------------------------------

def _with_policy(x: Context, b: int, policy: str, do: Callable[[], Any]) -> Any:
    old = x.c.rpc_policy.get(b, DELIVER)
    if old == DROP:  # cut off from the controller: the RPC is lost whatever the step says
        return do()
    x.c.rpc_policy[b] = policy
    try:
        return do()
    finally:
        x.c.rpc_policy[b] = old


def _task(name: str) -> Step:
    def step(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
        b, lost = a[1], (a[2] if len(a) > 2 else 0)
        if not x.c.nodes[b].alive:
            return NOT_DRIVABLE, f"broker {b} is down"
        ran = _with_policy(x, b, LOSE_ANSWER if lost else DELIVER, lambda: x.c.task(b, name))
        return DRIVEN, f"{name} on broker {b}" + (" (answer lost)" if lost else "") + ("" if ran else ": not scheduled")
    step.__doc__ = f"ReplicasManager's {name} task, run once on that broker."
    return step


def _register(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`register`: ReplicasManager's start (its registration was held back at the restart) tries
    again, now reaching the controller."""
    _, b, lost = a
    if not x.c.nodes[b].alive:
        return NOT_DRIVABLE, f"broker {b} is down"
    ran = _with_policy(x, b, LOSE_ANSWER if lost else DELIVER, lambda: x.c.task(b, "retry_start"))
    return DRIVEN, f"broker {b} registered" if ran else f"broker {b}: ReplicasManager was already running"


def _alter_sss(policy: str) -> Step:
    def step(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
        b = a[1]
        lost = policy == DELIVER and len(a) > 2 and a[2]
        rpc = x.c.release_rpc(b, LOSE_ANSWER if lost else policy)
        if rpc is None:
            return DRIVEN, f"broker {b} proposed no change (no AlterSyncStateSet held)"
        return DRIVEN, f"AlterSyncStateSet {rpc.get('args', {}).get('sss')} from broker {b}" + \
            {DROP: " not delivered", DELIVER: " (answer lost)" if lost else ""}.get(policy, "")
    step.__doc__ = "The oldest AlterSyncStateSet the broker sent, held until now, released."
    return step


def _heartbeat(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    b = a[1]
    if not x.c.nodes[b].alive:
        return NOT_DRIVABLE, f"broker {b} is down"
    x.c.heartbeat(b)
    return DRIVEN, f"broker {b} heartbeat"


def _tick(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    x.c.controller.tick()
    return DRIVEN, f"the controller's clock at {x.c.controller.now}"


def _controller_elect(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    answer = x.c.controller.elect()
    return DRIVEN, f"election: code {answer.get('code')}, master {x.c.controller.last.get('master')}"


def _admin_elect(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    answer = x.c.controller.admin_elect(a[1])
    return DRIVEN, f"admin election of broker {a[1]}: code {answer.get('code')}"


def _hb_timeout(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    x.c.controller.expire(a[1])
    return DRIVEN, f"the controller forgot broker {a[1]}'s heartbeats"


# --- faults ----------------------------------------------------------------------------------------

def _crash(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`crash keep=K`: kill -9 when the page cache keeps every unflushed byte the model keeps,
    power loss (every unflushed byte gone) when it keeps none; between the two, a power loss
    whose commit log keeps the same messages past the flushed ones, and of a message the model
    tears, the same share of its bytes (recovery must cut it)."""
    _, b, keep = a
    unflushed = cl.unflushed(before.broker(b).log)
    if keep >= unflushed:
        x.c.crash(b)
        return DRIVEN, f"kill -9 of broker {b}"
    if keep == 0:
        x.c.power_loss(b)
        return DRIVEN, f"power loss of broker {b}"
    kept_to, why = _commit_log_kept_to(x, before, b, keep)
    x.c.power_loss(b, kept_to)
    if why:
        return NOT_DRIVABLE, f"keeping {keep} of {unflushed} unflushed bytes: {why}; done as a power loss (none kept)"
    return DRIVEN, f"power loss of broker {b}, its commit log kept to offset {kept_to} ({keep} of {unflushed} unflushed bytes)"


def _commit_log_kept_to(x: Context, before: State, b: int, keep: int) -> tuple[int, str]:
    """Where broker `b`'s commit log must end for it to keep what the model's crash keeps: the
    end of the last message it keeps whole, or inside the message it tears, at the same share of
    its bytes (at least one, never all). (0, why) when the broker does not hold those messages."""
    log = before.broker(b).log
    end = cl.max_phy(cl.crash(log, keep))
    held = sorted((m for m in before.msgs if cl.has_message(log, m) and m.offset < end), key=lambda m: m.offset)
    state = x.c.observe(b, messages=True) or {}
    spans = {msg: (int(offset), int(size)) for offset, size, msg in state.get("messages") or []}
    missing = [f"m{m.id}" for m in held if f"m{m.id}" not in spans]
    if missing:
        return 0, f"broker {b} does not hold {', '.join(missing)}"
    if not held:
        return 0, ""
    last = held[-1]
    offset, size = spans[f"m{last.id}"]
    if last.end <= end:
        return offset + size, ""
    share = size * (end - last.offset) // (last.end - last.offset)
    return offset + min(max(share, 1), size - 1), ""


def _restart(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`restart`: the JVM starts on its store (RocketMQ's recovery); its registration is held
    back (the model registers in a step of its own, `register`)."""
    b = a[1]
    old = x.c.rpc_policy.get(b, DELIVER)
    x.c.rpc_policy[b] = DROP
    try:
        x.c.restart(b)
    finally:
        x.c.rpc_policy[b] = old
    return DRIVEN, f"broker {b} restarted (recovery ran)"


def _partition(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`partition`: the group loses the controller and every HA link that crosses it."""
    group = after.cut
    for b in group:
        x.c.rpc_policy[b] = DROP
    for (s, m), link in x.c.links.items():
        if (s in group) != (m in group):
            link.set_mode(CUT)
    return DRIVEN, f"brokers {sorted(group)} cut off"


def _controller_cut(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`controller_cut`: the broker's RPCs are dropped; its HA links stay as they are."""
    x.c.rpc_policy[a[1]] = DROP
    return DRIVEN, f"broker {a[1]}'s controller path cut"


def _controller_reconnect(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    x.c.rpc_policy[a[1]] = DELIVER
    return DRIVEN, f"broker {a[1]}'s controller path restored"


def _heal(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    x.c.heal()
    return DRIVEN, "links and controller paths healed"


def _lose_epoch_file(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    epochfiles.remove(x.c.nodes[a[1]].store)
    return DRIVEN, f"broker {a[1]}'s epoch file deleted"


def _write_back_epoch_file(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """The replay's file system keeps every version (epoch_file_writeback None); the version the
    model's write-back stands for is noted, for a revert to take the files back to."""
    x.written_back[a[1]] = epochfiles.read(x.c.nodes[a[1]].store)
    return DRIVEN, f"broker {a[1]}'s epoch files as written back noted"


def _revert_epoch_file(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    epochfiles.restore(x.c.nodes[a[1]].store, x.written_back.get(a[1], epochfiles.NONE))
    return DRIVEN, f"broker {a[1]}'s epoch files taken back to the version last written back"


def _flush_checkpoint(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """The broker flushes its checkpoint by itself once a second; the confirmOffset it holds now
    is noted, for a revert to take the file back to."""
    x.flushed_confirm[a[1]] = int((x.c.observe(a[1]) or {}).get("confirm_offset", -1))
    return DRIVEN, f"broker {a[1]}'s confirmOffset as flushed to its checkpoint noted"


def _revert_checkpoint(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    epochfiles.set_checkpoint_confirm(x.c.nodes[a[1]].store, x.flushed_confirm.get(a[1], -1))
    return DRIVEN, f"broker {a[1]}'s checkpoint taken back to the confirmOffset last flushed"


STEPS: dict[str, Step] = {
    "send": _send,
    "consume": _consume,
    "put_complete": _put_done(("PUT_OK",)),
    "put_timeout": _put_done(("FLUSH_SLAVE_TIMEOUT",)),
    "dispatch": _fixed(OWN, "ReputMessageService dispatches by itself"),
    "flush": _fixed(OWN, "the flush service flushes by itself"),
    "ha_connect": ha_connect,
    "ha_transfer": ha_transfer,
    "ha_slave_ack": ha_slave_ack,
    "ha_read_ack": ha_read_ack,
    "ha_timeout": _fixed(OWN, "a cut link closes the connection at once"),
    "ha_second_removal": _fixed(OWN, "a closed connection's second service ends by itself"),
    "check_sss": _task("check_sss"),
    "alter_sss": _alter_sss(DELIVER),
    "alter_sss_fail": _alter_sss(DROP),
    "sync_replica_info": _task("sync_replica_info"),
    "register": _register,
    "finish_promotion": _fixed(OWN, "changeToMaster ends by itself once dispatch caught up"),
    "heartbeat": _heartbeat,
    "sync_consumer_offsets": _fixed(NOT_DRIVABLE, "SlaveSynchronize is a stand-in: consumer offsets are not synced"),
    "controller_elect": _controller_elect,
    "controller_apply": _fixed(NOT_DRIVABLE, "the cluster's controller applies every event at once (one controller)"),
    "tick": _tick,
    "restart": _restart,
    "heal": _heal,
    "crash": _crash,
    "conn_reset": conn_reset,
    "ha_linger": ha_linger,
    "ha_close_lingering": ha_close_lingering,
    "partition": _partition,
    "controller_cut": _controller_cut,
    "controller_reconnect": _controller_reconnect,
    "hb_timeout": _hb_timeout,
    "admin_elect": _admin_elect,
    "lose_epoch_file": _lose_epoch_file,
    "write_back_epoch_file": _write_back_epoch_file,
    "revert_epoch_file": _revert_epoch_file,
    "flush_checkpoint": _flush_checkpoint,
    "revert_checkpoint": _revert_checkpoint,
    "controller_failover": _fixed(NOT_DRIVABLE, "the cluster has one controller"),
    "consumer_restart": _fixed(NOT_DRIVABLE, "the harness's consumer commits no offsets"),
}


class Outcome(NamedTuple):
    rows: list[Row]
    seen: list[tuple[int, str, str]]  # (step, invariant, what) broken on the code (views.code_violations)


def run(cfg: Config, actions: list[Action], states: list[State], folder: Path, src: str | None,
        settle_timeout: float = 8.0) -> Outcome:
    """Replay `actions` (whose model states are `states`, states[0] the start) on a stepping
    cluster in `folder`; every row (also written to `steps.jsonl` there) and every loss of an
    acknowledged message seen on the code."""
    folder.mkdir(parents=True, exist_ok=True)
    history = History(folder / "replay-history")
    log = open(folder / "steps.jsonl", "w")
    rows: list[Row] = []
    seen: list[tuple[int, str, str]] = []
    x: Context | None = None

    def on_event(kind: str, body: dict[str, Any]) -> None:
        if x is not None:
            x.on_event(kind, body)

    # Puts time out by model steps; a power loss keeps the epoch files, as the model's does.
    ccfg = ClusterConfig.from_model(cfg)._replace(slave_timeout_ms=600_000, epoch_file_writeback=None,
                                                  ha_batch_bytes=cfg.batch_size * CELL_BYTES)
    try:
        with Cluster(ccfg, folder, src, on_event, stepping=True) as c:
            x = Context(c, history, cfg)
            observed = c.settle(settle_timeout)
            rows.append(_row(0, "(the start: every broker registered, the first election)", DRIVEN, "started",
                             _ahead(0, actions, states), x, observed, c.settled))
            seen += [(0, inv, what) for inv, what in code_violations(x, observed)]
            for i, a in enumerate(actions, start=1):
                kind, did = STEPS[a[0]](x, a, states[i - 1], states[i])
                observed = c.settle(settle_timeout)
                notes = [_unreleased(b, body) for b, body in c.unreleased]
                did = "; ".join(([did] if did else []) + notes)
                c.unreleased.clear()
                rows.append(_row(i, format_action(a), kind, did, _ahead(i, actions, states), x, observed, c.settled))
                seen += [(i, inv, what) for inv, what in code_violations(x, observed)
                         if what not in {w for _, _, w in seen}]
            _read_to_the_end(x)
    finally:
        history.write()
        log.write("".join(json.dumps(row._asdict()) + "\n" for row in rows))
        log.close()
    return Outcome(rows, seen)


def _unreleased(b: int, body: dict[str, Any]) -> str:
    return (f"broker {b}'s AlterSyncStateSet {body.get('args', {}).get('sss')}, which the model does not send, "
            "failed (dropped) so that broker could take this step's command")


# The model's actions that the code takes by itself, unasked, as soon as it can (_fixed(OWN, ...)).
CODES_OWN = frozenset(name for name, step in STEPS.items() if getattr(step, "kind", None) == OWN)


def _ahead(i: int, actions: list[Action], states: list[State]) -> list[tuple[list[Action], State]]:
    """What the code may show after step i: the model's state i, then the states after each of
    the following actions while they are the code's own (a promotion's dispatch and end), which
    the code may already have taken while the harness waited for it to settle."""
    out: list[tuple[list[Action], State]] = [([], states[i])]
    j = i
    while j < len(actions) and actions[j][0] in CODES_OWN:
        j += 1
        out.append((actions[i:j], states[j]))
    return out


def _row(i: int, action: str, kind: str, did: str, ahead: list[tuple[list[Action], State]], x: Context, observed,
         settled: bool) -> Row:
    """Step i's verdict: the same when the code shows the model's state i, or one the code's own
    next steps lead to (said in `did`); otherwise the differences from state i."""
    code = cluster_view(observed, x.c.controller.state())
    first: list[str] = []
    for taken, s in ahead:
        diffs = differences(model_view(s, x.cfg), code) + result_differences(s, x)
        if not diffs:
            if taken:
                did = f"{did}; " if did else ""
                did += "the code has also taken the model's next " + ", ".join(format_action(a) for a in taken)
            return Row(i, action, kind, did, (), settled, code)
        first = first or diffs
    return Row(i, action, kind, did, tuple(first), settled, code)


def _read_to_the_end(x: Context) -> None:
    """What a consumer reads at the end (the history's reads for the checker): from the master,
    or, with no live master, from every live broker (so a message is not called lost only
    because nobody serves reads)."""
    master = x.c.master()
    serving = [master] if master is not None and x.c.nodes[master].alive else \
        [b for b in x.c.brokers if x.c.nodes[b].alive]
    for b in serving:
        for queue in range(x.cfg.queues):
            offset = 0
            while True:
                got = x.c.read(b, queue, offset)
                if not got.get("messages"):
                    break
                for m in got["messages"]:
                    x.history.read(0, m["msg"], queue)
                offset = got["next"]
    for body, (_, status) in list(x.in_flight.items()):  # responses on their way arrive
        x.deliver(body, status)
    for body in list(x.pending):
        x.deliver(body, "NO_RESPONSE")
