"""A recorded run of RocketMQ's running code, explained by the model (issue 45, section 2): trace
validation as etcd's raft and CCF do it against their specifications.

`rmqcheck cluster` records each operation of a run as it resolved it and what could be seen from
outside the code after it (`steps.jsonl`): the client's result, the controller's master, epoch and
SyncStateSet, and each broker's view in `replay --cluster`'s terms (`view`: role, masterEpoch,
the messages its commit log holds, confirmOffset and epoch entries counted in messages, a master's
SyncStateSet). `run.json` beside it names the configuration.

`follow` turns that record into a path of the model. Each operation becomes the model actions it
stands for. What the code does by itself between operations (HA frames and acks, an
AlterSyncStateSet the HA service asks for, dispatch, flush, the end of a promotion, a put
completing or timing out) the record does not show; it is filled in one fixed order, to quiet,
as the harness waits until the cluster is quiet. When the state reached does not show what the
record shows, a breadth-first search from the end of the step before (at most GAP_STATES states:
the bounded search per gap) takes the operation's own actions in their order, interleaved with
any of the code's own steps, to a state that does.

The path follows the run while the two agree: the broker that took each put was a master in the
model too, the consumer read as many messages, and after each operation the controller (and, with
`views`, every broker) shows the same. A put, read or route the model contradicts stops it at
once; any other step that neither the fixed order nor the search explains stops it too, saying
why and which fields differ. traces/run_records.py's `judge_run` reports that as a conformance
violation with the share of the run's steps explained. The steps after it are not judged: the
model's state there is unknown. One path is kept, never more: a later step that only another
order of an earlier gap explains is not explained (a bound, said in docs/cluster.md).
"""

from __future__ import annotations

import copy
import json
from collections import deque
from typing import Any, Callable, Iterable, NamedTuple

from rmqcheck.model import commitlog as cl
from rmqcheck.model.broker import MASTER, SLAVE
from rmqcheck.model.config import NO_FAULTS, Config
from rmqcheck.model.observed import controller_view, differences, minority_side, model_view
from rmqcheck.model.step import Action, NotEnabled, initial_state, step
from rmqcheck.model.world import State, reaches_controller

READ_AT_ONCE = 32  # messages one read of the harness's asks for
QUIET_AFTER = 2000  # model steps in one quiet-down at most (a run's whole transfer takes far fewer)
GAP_STATES = 20_000  # states the search of one gap may visit
# A run's faults, in the harness's terms (harness.py): a broker's RPCs dropped or their answers lost.
DROP, LOSE_ANSWER = "drop", "lose_answer"


def as_json(view: dict[str, Any]) -> dict[str, Any]:
    """A view as a record holds it (string keys, lists)."""
    return json.loads(json.dumps(view))


# --- the model's path of a record ------------------------------------------------------------


class NotFollowed(NamedTuple):
    step: int  # the recorded step (steps.jsonl's numbering)
    op: str
    why: str


class Followed(NamedTuple):
    cfg: Config  # the run's configuration with room for every put and fault of the record
    actions: list[Action]
    steps: list[int]  # the recorded step each action stands for
    stopped: NotFollowed | None  # where the model could not follow (None: the whole run)
    explained: int  # recorded steps the path explains (all of them when not stopped)
    searched: int  # of those, the steps a search explained (the fixed order did not)


class Searched(NamedTuple):
    path: list[tuple[Action, bool]] | None  # each action with whether it is the code's own; None: none found
    state: State | None
    checked: dict[int, int] | None
    visited: int  # states the search visited
    exhausted: bool  # it visited every state it could reach (not stopped by GAP_STATES)


class _Stop(Exception):
    pass


def _target(record: dict[str, Any]) -> int | None:
    """The broker a fault hit, as the nemesis resolved it ("broker 2"), or None (it did nothing)."""
    result = str(record.get("result", ""))
    return int(result.split()[1]) if result.startswith("broker ") else None


class _Follower:
    """The model's state along the record, with the faults in force that the model's state does
    not hold itself: HA links cut or blackholed, and RPC policies (the model's state holds the
    dropped ones too, as a partition or a controller cut; lost answers only here)."""

    def __init__(self, cfg: Config, views: bool, eager_flush: bool) -> None:
        self.cfg = cfg
        self.views = views
        self.s: State = initial_state(cfg)
        self.actions: list[Action] = []
        self.steps: list[int] = []
        self.own: list[bool] = []  # per action: the code's own step (taken in a quiet), not the operation's
        self.at = 0  # the recorded step being followed
        self.silent: set[frozenset[int]] = set()  # broker pairs whose HA traffic is cut or blackholed
        self.rpc: dict[int, str] = {}  # broker -> DROP or LOSE_ANSWER
        self.route: int | None = None  # the master the client knows of (run.Client.route)
        self.checked: dict[int, int] = {}  # broker -> the masterEpoch whose first SyncStateSet check ran
        self.puts = 0  # put operations so far: the client names the Nth put's message mN
        self.names: dict[int, str] = {}  # the model's message id -> the client's name of it
        # The fixed order flushes at once, unless the record shows where the code's ASYNC_FLUSH
        # service (which waits for 4 dirty pages, or 10 s) flushed: then only a search flushes.
        self.eager_flush = eager_flush
        self.kill9: set[int] = set()  # indices into `actions` of crashes that keep the page cache

    def fork(self) -> _Follower:
        """A copy to try an operation on: nothing it changes is shared."""
        other = copy.copy(self)
        other.actions, other.steps, other.own = list(self.actions), list(self.steps), list(self.own)
        other.silent, other.rpc, other.checked = set(self.silent), dict(self.rpc), dict(self.checked)
        other.names, other.kill9 = dict(self.names), set(self.kill9)
        return other

    def do(self, action: Action) -> bool:
        """Apply one of the operation's actions if it is enabled and changes the state."""
        try:
            nxt = step(self.s, action, self.cfg)
        except NotEnabled:
            return False
        if nxt == self.s:
            return False
        self.s = nxt
        self.actions.append(action)
        self.steps.append(self.at)
        self.own.append(False)
        return True

    def lost(self, b: int) -> int:
        return 1 if self.rpc.get(b) == LOSE_ANSWER else 0

    def sends_rpcs(self, b: int) -> bool:
        return self.rpc.get(b) != DROP

    def up(self) -> list[int]:
        return [b.id for b in self.s.brokers if b.up]

    def _ha_open(self, s: State, slave: int) -> bool:
        b = s.broker(slave)
        master = b.client.master if b.client.master is not None else b.master_id
        return master is None or frozenset({slave, master}) not in self.silent

    def quiet(self) -> None:
        """What the code does by itself until nothing new happens (harness.Cluster.settle), in
        the fixed order."""
        path, self.s, self.checked = self._rest(self.s, self.checked)
        self.actions += path
        self.steps += [self.at] * len(path)
        self.own += [True] * len(path)

    def _rest(self, s: State, checked: dict[int, int]) -> tuple[list[Action], State, dict[int, int]]:
        """The fixed order of the code's own steps from `s` until nothing new happens: a step
        back to a state already passed (a slave's periodic ack the master has read already) is
        not taken. _Stop when it does not come to rest, or a dropped AlterSyncStateSet waits."""
        checked, path, seen = dict(checked), [], {s}
        for _ in range(QUIET_AFTER):
            for a in self._own_steps(s, checked, fixed=True):
                try:
                    nxt = step(s, a, self.cfg)
                except NotEnabled:
                    continue
                if nxt not in seen:
                    s = nxt
                    path.append(a)
                    seen.add(s)
                    break
            else:
                return path, s, checked
        raise _Stop("the model does not come to rest")

    def _own_steps(self, s: State, checked: dict[int, int], fixed: bool = False) -> Iterable[Action]:
        """The code's own steps in `s`, in the fixed order; a master's first SyncStateSet check
        of its epoch is offered once (marked in `checked`). `fixed`: for the quiet that fills a
        gap in that order, where an AlterSyncStateSet the model cannot drop stops the run, and
        a flush is left to the search when the record shows the code's flushes. A queued
        AlterSyncStateSet goes first: the code sends it from the thread that proposed it, in
        the listener call (ReplicasManager.doReportSyncStateSetChanged), before that thread
        reads another frame."""
        for b in s.brokers:
            if b.up and b.alters:
                i = b.id
                if self.sends_rpcs(i):
                    yield ("alter_sss", i, self.lost(i))
                elif not reaches_controller(s, i):
                    yield ("alter_sss_fail", i)
                elif fixed:
                    raise _Stop(f"broker {i}'s AlterSyncStateSet was dropped on its way, but the model's broker "
                                "reaches the controller")
        for b in s.brokers:
            if not b.up:
                continue
            i = b.id
            yield ("finish_promotion", i)
            if b.role == MASTER and not b.promoting and checked.get(i) != b.master_epoch:
                # changeToMaster submits checkSyncStateSetAndDoReport once (ReplicasManager.java:274)
                checked[i] = b.master_epoch
                yield ("check_sss", i)
            if b.role == SLAVE and self._ha_open(s, i):
                yield from (("ha_connect", i), ("ha_transfer", i), ("ha_slave_ack", i), ("ha_read_ack", i))
            yield ("ha_timeout", i)  # a connection across the model's partition found dead
            for p in b.puts:
                yield from (("put_complete", i, p.msg), ("put_timeout", i, p.msg))
            yield ("dispatch", i)
            if self.eager_flush or not fixed:
                yield ("flush", i)

    def search(self, start: State, checked: dict[int, int], script: list[tuple[Action, bool]],
               shows: Callable[[State], bool]) -> Searched:
        """The shortest path from `start` that takes the operation's own actions (`script`, each
        with whether it is a kill -9, whose kept bytes are the page cache where it is taken) in
        their order, interleaved with any of the code's own steps, to a state that shows what
        the record shows (`shows`) and no AlterSyncStateSet the model cannot drop, within
        GAP_STATES states. That state need not be one the fixed order rests in: the code too
        leaves work for later when the harness finds it quiet (a slave's periodic ack, sent
        every 5 s), and what is left the next gap's search may take before its operation. The
        faults in force are the operation's after it (a bound: an HA link the operation cuts is
        cut for the own steps before it too)."""
        queue = deque([(start, 0, checked, [])])
        seen = {(start, 0)}
        while queue and len(seen) < GAP_STATES:
            s, pos, done, path = queue.popleft()
            if pos == len(script) and shows(s) and not self._dropped_alter_waits(s):
                return Searched(path, s, done, len(seen), False)
            moves = [(a, True) for a in self._own_steps(s, dict(done))]
            if pos < len(script):
                a, kill9 = script[pos]
                moves.append((("crash", a[1], cl.unflushed(s.broker(a[1]).log)) if kill9 else a, False))
            for a, own in moves:
                try:
                    nxt = step(s, a, self.cfg)
                except NotEnabled:
                    continue
                key = (nxt, pos + (not own))
                if key in seen:
                    continue
                seen.add(key)
                if a[0] == "check_sss":
                    marked = {**done, a[1]: nxt.broker(a[1]).master_epoch}
                elif a[0] in ("crash", "restart"):  # a new process: its first changeToMaster checks again
                    marked = {b: e for b, e in done.items() if b != a[1]}
                else:
                    marked = done
                queue.append((nxt, key[1], marked, path + [(a, own)]))
        return Searched(None, None, None, len(seen), not queue)

    def _dropped_alter_waits(self, s: State) -> bool:
        """An AlterSyncStateSet waits that the code dropped on its way where the model's broker
        reaches the controller (the model fails one only across a partition or a controller
        cut, which the follower takes for every dropped path: so only if that was not enabled)."""
        return any(b.up and b.alters and not self.sends_rpcs(b.id) and reaches_controller(s, b.id) for b in s.brokers)

    def master(self) -> int | None:
        return self.s.ctrl.applied.master

    # --- the run's operations (checkers/cluster/run.py) -----------------------------------------

    def refresh_route(self) -> int | None:
        self.route = self.master()
        return self.route

    def put(self, record: dict[str, Any]) -> None:
        self.puts += 1
        result = str(record.get("result", ""))
        if not result.startswith("to broker "):
            self.refresh_route()  # no route, or the route's broker was no master: nothing was sent
            return
        b = self.route = int(result.split()[-1])
        held = len(self.s.msgs)
        if not self.do(("send", b, record["arg"] or 0, self.cfg.message_sizes[0])):
            m = self.s.broker(b)
            raise _Stop(f"broker {b} took a put on the code; in the model it is {m.role.lower()}"
                        f"{'' if m.up else ' and down'}{', promoting' if m.promoting else ''}"
                        f"{'' if m.running else ', not running'}")
        if len(self.s.msgs) > held:
            self.names[self.s.msgs[-1].id] = f"m{self.puts}"

    def read(self, queue: int) -> int:
        """run.Client.read: the consumer's pulls from the route's broker; how many it read."""
        b = self.route if self.route is not None else self.refresh_route()
        if b is None or not self.s.broker(b).up:
            self.refresh_route()
            return 0
        before = len(self.s.reads)
        for _ in range(READ_AT_ONCE):
            if not self.do(("consume", b, queue)):
                break
        return len(self.s.reads) - before

    def round(self) -> None:
        """run.time_passes: heartbeats, a tick, the controller's election, replica info, the
        master's SyncStateSet check."""
        for b in self.up():
            if not self.s.broker(b).running and b not in self.rpc:  # ReplicasManager's start again
                self.do(("register", b, 0))
        for b in self.up():
            if self.sends_rpcs(b):
                self.do(("heartbeat", b))
        self.do(("tick",))
        self.do(("controller_elect",))
        for b in self.up():
            if self.sends_rpcs(b):
                self.do(("sync_replica_info", b, self.lost(b)))
        self.quiet()
        m = self.master()
        if m is not None and self.s.broker(m).up:
            self.do(("check_sss", m))

    def write_back(self) -> None:
        """The file system writes back every epoch file as the steps so far left it: the harness
        keeps a version through a power loss once it is a tick old (checkers/cluster/epochfiles.py),
        so what a round finds is what survives a power loss after its tick."""
        for b in range(1, self.cfg.brokers + 1):
            self.do(("write_back_epoch_file", b))

    def fault(self, op: str, b: int, record: dict[str, Any]) -> None:
        if op in ("crash", "power_loss", "restart"):
            self.checked.pop(b, None)  # a new process: its first changeToMaster checks again
        if op in ("crash", "power_loss"):
            keep = cl.unflushed(self.s.broker(b).log) if op == "crash" else 0
            if self.do(("crash", b, keep)) and op == "crash":  # kill -9 keeps the page cache; power loss what was flushed
                self.kill9.add(len(self.actions) - 1)
            epoch_files = record.get("epoch_files", "kept")
            if epoch_files == "lost":  # no version written back yet (or only since the first round: see take)
                self.do(("lose_epoch_file", b))
            elif epoch_files == "reverted":
                # nothing to take back where the model's file system wrote back the last version:
                # older records call a version that differs only in its .bak reverted
                self.do(("revert_epoch_file", b))
        elif op == "restart":
            self.do(("restart", b))
            if self.sends_rpcs(b):
                self.do(("register", b, self.lost(b)))
        elif op in ("isolate_ha", "blackhole_ha"):
            for other in range(1, self.cfg.brokers + 1):
                if other != b:
                    self.silent.add(frozenset({b, other}))
            if op == "isolate_ha":  # a cut link closes its connections (a blackholed one stays open, silent)
                for slave in range(1, self.cfg.brokers + 1):
                    master = self.s.broker(slave).client.master
                    if master is not None and b in (slave, master):
                        self.do(("conn_reset", slave))
        elif op == "isolate_controller":
            self.rpc[b] = DROP
            self.do(("controller_cut", b))
        elif op == "lose_answers":  # the path open again, its answers lost
            self.do(("controller_reconnect", b))
            if not reaches_controller(self.s, b):
                raise _Stop(f"lose_answers on broker {b}, which the model's partition cuts off; the model "
                            "restores a partition only whole (heal)")
            self.rpc[b] = LOSE_ANSWER
        elif op == "minority":
            if self.s.cut:
                raise _Stop("a second partition while one is in force; the model holds one at a time")
            if "peer" not in record and self.cfg.brokers > 2:
                raise _Stop("the record does not name the minority's peer (written before steps.jsonl did)")
            side = minority_side(b, record.get("peer"), self.cfg.brokers)
            if not self.do(("partition", sum(1 << (i - 1) for i in side))):
                raise _Stop(f"the model cannot cut off {sorted(side)}")
            for i in side:
                self.rpc[i] = DROP
        elif op == "heal":
            self.do(("heal",))
            self.silent.clear()
            self.rpc.clear()

    def apply(self, record: dict[str, Any]) -> None:
        """The model actions a recorded operation stands for (before the quiet that ends it)."""
        op = record["op"]
        if op == "put":
            self.put(record)
        elif op in ("read", "final_read"):
            if op == "final_read":
                self.refresh_route()
            queues = range(self.cfg.queues) if op == "final_read" else (record["arg"] or 0,)
            got = sum(self.read(q) for q in queues)
            said = str(record.get("result", "")).split()[0]
            if said.isdigit() and int(said) != got:
                raise _Stop(f"the consumer read {said} messages on the code, {got} in the model")
        elif op == "route":
            said = str(record.get("result", "")).split()[-1]
            if str(self.refresh_route()) != said:
                raise _Stop(f"the client's route: code master {said}, model master {self.route}")
        elif op == "round":
            self.round()
        else:
            b = _target(record)
            if b is not None or op == "heal":
                self.fault(op, b, record)

    def mismatch(self, s: State, record: dict[str, Any]) -> list[str]:
        """What `s` shows otherwise than the record: every broker and the controller (`views`
        and a recorded view), or else the controller's master, epoch and SyncStateSet."""
        if self.views and "view" in record:
            model = as_json(model_view(s, self.cfg, self.names, flushed=True))
            for b, theirs in record["view"]["brokers"].items():  # recorded before views held it
                if isinstance(theirs, dict) and "flushed" not in theirs and isinstance(model["brokers"].get(b), dict):
                    del model["brokers"][b]["flushed"]
            return differences(model, record["view"])
        code = record.get("controller") or {}
        if not code.get("exists", True):
            return []
        fields = ("master", "masterEpoch", "syncStateSet")  # older records' epochs of the set are not comparable
        model = model_view(s, self.cfg)["controller"]
        theirs = controller_view(code)
        return differences({"brokers": {}, "controller": {f: model[f] for f in fields}},
                           {"brokers": {}, "controller": {f: theirs[f] for f in fields}})

    def end_step(self, record: dict[str, Any], before: tuple[State, dict[int, int], int]) -> bool:
        """The quiet that ends a step; when that does not show what the record shows, the search
        from the end of the step before (`before`: its state, checks and actions taken). True
        when the search explained the step; _Stop when neither does."""
        try:
            self.quiet()
            diffs = self.mismatch(self.s, record)
        except _Stop as exc:
            diffs = [str(exc)]
        if not diffs:
            return False
        start, checked, taken = before
        script = [(a, i in self.kill9) for i, (a, own) in enumerate(zip(self.actions, self.own)) if i >= taken and not own]
        found = self.search(start, checked, script, lambda s: not self.mismatch(s, record))
        if found.path is None:
            searched = "all of them" if found.exhausted else f"the first {found.visited:,}; the search stops there"
            raise _Stop("; ".join(diffs) + f" (nor in another order of the code's own steps: {found.visited:,} states, "
                                           f"{searched})")
        self.s, self.checked = found.state, found.checked
        del self.actions[taken:], self.steps[taken:], self.own[taken:]
        self.kill9 = {i for i in self.kill9 if i < taken}
        for a, own in found.path:
            if a[0] == "crash" and not own and a[2]:
                self.kill9.add(len(self.actions))
            self.actions.append(a)
            self.own.append(own)
            self.steps.append(self.at)
        return True


def room_for(cfg: Config, records: list[dict[str, Any]]) -> Config:
    """`cfg` with room for every put of the record and a budget for every fault (the model's
    bounds are the explorer's; a recorded run is not bounded by them)."""
    puts = sum(1 for r in records if r.get("op") == "put")
    return cfg._replace(max_messages=max(cfg.max_messages, puts + 1),
                        faults=NO_FAULTS._replace(**{f: len(records) + 1 for f in NO_FAULTS._fields}))


def _shows_flushed(records: list[dict[str, Any]]) -> bool:
    """Whether the record's views say how far each broker flushed (runs recorded since they do)."""
    view = records[0].get("view") if records else None
    return bool(view) and any(isinstance(b, dict) and "flushed" in b for b in view.get("brokers", {}).values())


def follow(cfg: Config, records: list[dict[str, Any]], views: bool = False) -> Followed:
    """The model's path of a recorded run (module docstring); with `views`, judged against every
    broker's recorded view too."""
    run = Following(room_for(cfg, records), views, eager_flush=cfg.sync_flush or not (views and _shows_flushed(records)))
    for record in records:
        if not run.take(record):
            break
    return run.followed()


class Following:
    """`follow`, one recorded step at a time (`take`); `after` says what an operation would
    leave from here, for a run whose operations are chosen as it goes, or played on the model
    alone (bench/schedule_reach.py). `cfg` has room for the run (`room_for`)."""

    def __init__(self, cfg: Config, views: bool = True, eager_flush: bool = True) -> None:
        self.f = f = _Follower(cfg, views, eager_flush)
        self.stopped: NotFollowed | None = None
        self.explained = self.searched = 0
        self.before = (f.s, dict(f.checked), 0)  # the first step's search may reorder the start's quiet too
        try:
            f.quiet()
        except _Stop as exc:
            self.stopped = NotFollowed(0, "start", str(exc))

    def take(self, record: dict[str, Any]) -> bool:
        """Follow the next recorded step; False once the model cannot (`stopped` says where)."""
        if self.stopped is not None:
            return False
        f, op = self.f, record["op"]
        f.at = record["step"]
        try:
            if op == "round" and self.explained:  # outside the gap's search: it marks where the step before ended
                f.write_back()
                self.before = (f.s, dict(f.checked), len(f.actions))
            f.apply(record)
            self.searched += f.end_step(record, self.before)
            self.explained += 1
            if self.explained == 1:  # the first step's search may reorder the start: write back after it
                f.write_back()
            self.before = (f.s, dict(f.checked), len(f.actions))
        except _Stop as exc:
            self.stopped = NotFollowed(f.at, op, str(exc))
        return self.stopped is None

    def after(self, record: dict[str, Any]) -> Following | None:
        """A copy that has taken `record` in the fixed order alone, judged against nothing (it
        has no view: it has not run); None when the model cannot take it."""
        if self.stopped is not None:
            return None
        other = copy.copy(self)
        other.f = f = self.f.fork()
        f.at = record["step"]
        try:
            if record["op"] == "round" and self.explained:  # as `take` writes back
                f.write_back()
            f.apply(record)
            f.quiet()
        except _Stop:
            return None
        if not self.explained:
            f.write_back()
        other.explained += 1
        other.before = (f.s, dict(f.checked), len(f.actions))
        return other

    @property
    def state(self) -> State:
        return self.f.s

    def master(self) -> int | None:
        return self.f.master()

    def route(self) -> int | None:
        """The broker the client's next put goes to (run.Client's route)."""
        return self.f.route if self.f.route is not None else self.f.master()

    def followed(self) -> Followed:
        f = self.f
        return Followed(f.cfg, f.actions, f.steps, self.stopped, self.explained, self.searched)
