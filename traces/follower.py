"""What each operation of a recorded cluster run stands for in the model, and what the code does
by itself between operations (traces/real_runs.py: the model's path of a whole run). `Follower`
holds the model's state along the record with the faults in force the model's state does not
hold; `Stop` says why it cannot go on.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from rmqcheck.model import commitlog as cl
from rmqcheck.model.config import Config
from rmqcheck.model.observed import controller_view, differences, minority_side, model_view
from rmqcheck.model.step import Action, NotEnabled, initial_state, step
from rmqcheck.model.world import State, reaches_controller

from . import gaps
from .gaps import DROP, LOSE_ANSWER, Gaps, Stop

READ_AT_ONCE = 32  # messages one read of the harness's asks for


def as_json(view: dict[str, Any]) -> dict[str, Any]:
    """A view as a record holds it (string keys, lists)."""
    return json.loads(json.dumps(view))


def _target(record: dict[str, Any]) -> int | None:
    """The broker a fault hit, as the nemesis resolved it ("broker 2"), or None (it did nothing)."""
    result = str(record.get("result", ""))
    return int(result.split()[1]) if result.startswith("broker ") else None


class Follower(Gaps):
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

    def fork(self) -> Follower:
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

    def up(self) -> list[int]:
        return [b.id for b in self.s.brokers if b.up]

    def quiet(self) -> None:
        """What the code does by itself until nothing new happens (harness.Cluster.settle), in
        the fixed order."""
        path, self.s, self.checked = self._rest(self.s, self.checked)
        self.actions += path
        self.steps += [self.at] * len(path)
        self.own += [True] * len(path)

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
            raise Stop(f"broker {b} took a put on the code; in the model it is {m.role.lower()}"
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
        so what a round finds is what survives a power loss after its tick. Each store's
        checkpoint is flushed then too: the code flushes it once a second, and the record does
        not say when, so a round stands for the last flush before a death; the search may still
        find that a flush came after the last move (it then takes no `revert_checkpoint`)."""
        for b in range(1, self.cfg.brokers + 1):
            self.do(("write_back_epoch_file", b))
            self.do(("flush_checkpoint", b))

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
                raise Stop(f"lose_answers on broker {b}, which the model's partition cuts off; the model "
                            "restores a partition only whole (heal)")
            self.rpc[b] = LOSE_ANSWER
        elif op == "minority":
            if self.s.cut:
                raise Stop("a second partition while one is in force; the model holds one at a time")
            if "peer" not in record and self.cfg.brokers > 2:
                raise Stop("the record does not name the minority's peer (written before steps.jsonl did)")
            side = minority_side(b, record.get("peer"), self.cfg.brokers)
            if not self.do(("partition", sum(1 << (i - 1) for i in side))):
                raise Stop(f"the model cannot cut off {sorted(side)}")
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
                raise Stop(f"the consumer read {said} messages on the code, {got} in the model")
        elif op == "route":
            said = str(record.get("result", "")).split()[-1]
            if str(self.refresh_route()) != said:
                raise Stop(f"the client's route: code master {said}, model master {self.route}")
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
        when the search explained the step; Stop when neither does."""
        try:
            self.quiet()
            diffs = self.mismatch(self.s, record)
        except Stop as exc:
            diffs = [str(exc)]
        if not diffs:
            return False
        start, checked, taken = before
        script, rests, rested = [], [], False  # the operation's actions; whether own steps came before each
        for i in range(taken, len(self.actions)):
            if self.own[i]:
                rested = True
            else:
                script.append((self.actions[i], i in self.kill9))
                rests.append(rested)
                rested = False
        shows = lambda s: not self.mismatch(s, record)  # noqa: E731
        found = self.search(start, checked, script, shows)
        if found.path is None:
            why = "; ".join(diffs) + f" (nor in another order of the code's own steps: {found.visited:,} states, "
            if found.exhausted:  # every schedule of the second search is a path the first took
                raise Stop(why + "all of them)")
            held = self.search_holding_back(start, checked, script, rests, shows)
            if held.path is None:
                raise Stop(why + f"the first {found.visited:,}; the search stops there; nor with up to "
                                 f"{gaps.HELD_AT_MOST} of them held back: {held.visited:,} states)")
            found = held
        rest, self.s = self.prompt_rest(found.state, found.checked, shows)
        self.checked = found.checked
        del self.actions[taken:], self.steps[taken:], self.own[taken:]
        self.kill9 = {i for i in self.kill9 if i < taken}
        for a, own in found.path + [(prompt, True) for prompt in rest]:
            if a[0] == "crash" and not own and a[2]:
                self.kill9.add(len(self.actions))
            self.actions.append(a)
            self.own.append(own)
            self.steps.append(self.at)
        return True
