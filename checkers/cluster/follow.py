"""A recorded cluster run followed on the model, to explain what it broke (issue 41, section 4).

`rmqcheck cluster` records each operation of a run and what it did (`steps.jsonl`: the op, its
target as resolved, the client's result, the controller's state after it). `follow` turns that
record into a path of the model: each operation becomes the model actions it stands for, and
what the code does by itself between operations (the HA frames and acks, an AlterSyncStateSet
the HA service asks for, dispatch, flush, the end of a promotion, a put completing or timing
out) runs to quiet in a fixed order, as the harness waits until the cluster is quiet.

The path follows the run only while both agree on what the record shows: the broker that took
each put was a master in the model too, and after each operation the controller names the same
master, epoch and SyncStateSet. Where they part, or a fault has no model counterpart (an
AlterSyncStateSet dropped on its way while the model's broker can reach the controller), the
model cannot follow the run, and says at which step and why.

`explain` then judges a violation the running code showed the way `check` judges its own
(checkers/search/hunting.py): not promised by the configuration (expected); broken by the
model's path of the same run too, and gone when one snapshot defect takes its intended form (that
defect, named); otherwise unexplained: the running code did what the model's path of its own
schedule does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.checkers.search.hunting import UNEXPLAINED, classify
from rmqcheck.model import commitlog as cl
from rmqcheck.model.broker import MASTER, SLAVE
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.config import NO_FAULTS, Config
from rmqcheck.model.epochfile import disagreement
from rmqcheck.model.step import Action, NotEnabled, initial_state, step
from rmqcheck.model.world import State, reaches_controller

from .run import minority_side

STEPS = "steps.jsonl"
READ_AT_ONCE = 32  # messages one read of the harness's asks for
QUIET_AFTER = 2000  # model steps in one quiet-down at most (a run's whole transfer takes far fewer)
# A run's faults, in the harness's terms (harness.py): a broker's RPCs dropped or their answers lost.
DROP, LOSE_ANSWER = "drop", "lose_answer"


class NotFollowed(NamedTuple):
    step: int  # the recorded step (steps.jsonl's numbering)
    op: str
    why: str


class Followed(NamedTuple):
    cfg: Config  # the run's configuration with room for every put and fault of the record
    actions: list[Action]
    steps: list[int]  # the recorded step each action stands for
    stopped: NotFollowed | None  # where the model could not follow (None: the whole run)


def read_steps(folder: Path) -> list[dict[str, Any]]:
    path = Path(folder) / STEPS
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _target(record: dict[str, Any]) -> int | None:
    """The broker a fault hit, as the nemesis resolved it ("broker 2"), or None (it did nothing)."""
    result = str(record.get("result", ""))
    return int(result.split()[1]) if result.startswith("broker ") else None


class _Follower:
    """The model's state along the record, with the faults in force that the model's state does
    not hold itself: HA links cut or blackholed, and RPC policies (the model's partition holds a
    minority's)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.s: State = initial_state(cfg)
        self.actions: list[Action] = []
        self.steps: list[int] = []
        self.at = 0  # the recorded step being followed
        self.silent: set[frozenset[int]] = set()  # broker pairs whose HA traffic is cut or blackholed
        self.rpc: dict[int, str] = {}  # broker -> DROP or LOSE_ANSWER
        self.route: int | None = None  # the master the client knows of (run.Client.route)
        self.checked: dict[int, int] = {}  # broker -> the masterEpoch whose first SyncStateSet check ran

    def do(self, action: Action, seen: set[State] | None = None) -> bool:
        """Apply `action` if it is enabled and leads somewhere new (not back to the state, nor to
        one of `seen`)."""
        try:
            nxt = step(self.s, action, self.cfg)
        except NotEnabled:
            return False
        if nxt == self.s or (seen is not None and nxt in seen):
            return False
        self.s = nxt
        self.actions.append(action)
        self.steps.append(self.at)
        return True

    def lost(self, b: int) -> int:
        return 1 if self.rpc.get(b) == LOSE_ANSWER else 0

    def sends_rpcs(self, b: int) -> bool:
        return self.rpc.get(b) != DROP

    def up(self) -> list[int]:
        return [b.id for b in self.s.brokers if b.up]

    def _ha_open(self, slave: int) -> bool:
        b = self.s.broker(slave)
        master = b.client.master if b.client.master is not None else b.master_id
        return master is None or frozenset({slave, master}) not in self.silent

    def quiet(self) -> None:
        """What the code does by itself until nothing new happens (harness.Cluster.settle): a
        step back to a state already passed (a slave's periodic ack the master has read
        already) is not taken."""
        seen = {self.s}
        for _ in range(QUIET_AFTER):
            if not any(self.do(a, seen) for a in self._own_steps()):
                return
            seen.add(self.s)
        raise _Stop("the model does not come to rest")

    def _own_steps(self) -> Iterable[Action]:
        for b in self.s.brokers:
            if not b.up:
                continue
            i = b.id
            yield ("finish_promotion", i)
            if b.role == MASTER and not b.promoting and self.checked.get(i) != b.master_epoch:
                # changeToMaster submits checkSyncStateSetAndDoReport once (ReplicasManager.java:274)
                self.checked[i] = b.master_epoch
                yield ("check_sss", i)
            if b.role == SLAVE and self._ha_open(i):
                yield from (("ha_connect", i), ("ha_transfer", i), ("ha_slave_ack", i), ("ha_read_ack", i))
            yield ("ha_timeout", i)  # a connection across the model's partition found dead
            if b.alters:
                if self.sends_rpcs(i):
                    yield ("alter_sss", i, self.lost(i))
                elif reaches_controller(self.s, i):
                    raise _Stop(f"broker {i}'s AlterSyncStateSet was dropped on its way; the model fails one only "
                                "across its partition (alter_sss_fail)")
                else:
                    yield ("alter_sss_fail", i)
            for p in b.puts:
                yield from (("put_complete", i, p.msg), ("put_timeout", i, p.msg))
            yield from (("dispatch", i), ("flush", i))

    def master(self) -> int | None:
        return self.s.ctrl.applied.master

    # --- the run's operations (run.py) ------------------------------------------------------

    def refresh_route(self) -> int | None:
        self.route = self.master()
        return self.route

    def put(self, record: dict[str, Any]) -> None:
        result = str(record.get("result", ""))
        if not result.startswith("to broker "):
            self.refresh_route()  # no route, or the route's broker was no master: nothing was sent
            return
        b = self.route = int(result.split()[-1])
        if not self.do(("send", b, record["arg"] or 0, self.cfg.message_sizes[0])):
            m = self.s.broker(b)
            raise _Stop(f"broker {b} took a put on the code; in the model it is {m.role.lower()}"
                        f"{'' if m.up else ' and down'}{', promoting' if m.promoting else ''}"
                        f"{'' if m.running else ', not running'}")

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

    def fault(self, op: str, b: int, record: dict[str, Any]) -> None:
        if op in ("crash", "power_loss", "restart"):
            self.checked.pop(b, None)  # a new process: its first changeToMaster checks again
        if op in ("crash", "power_loss"):
            keep = cl.unflushed(self.s.broker(b).log) if op == "crash" else 0
            self.do(("crash", b, keep))  # kill -9 keeps the page cache; power loss keeps what was flushed
            epoch_files = record.get("epoch_files", "kept")
            if epoch_files == "lost":
                self.do(("lose_epoch_file", b))
            elif epoch_files != "kept":
                raise _Stop("the power loss took the epoch files back to an older version; the model keeps them "
                            "or loses them whole")
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
        elif op in ("isolate_controller", "lose_answers"):
            self.rpc[b] = DROP if op == "isolate_controller" else LOSE_ANSWER
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

    def compare(self, record: dict[str, Any]) -> None:
        """The controller's master, epoch and SyncStateSet after the step, on both sides."""
        code = record.get("controller") or {}
        if not code.get("exists", True):
            return
        c = self.s.ctrl.applied
        model = {"master": c.master, "master_epoch": c.master_epoch, "sss": sorted(c.sss)}
        theirs = {"master": code.get("master"), "master_epoch": code.get("master_epoch"),
                  "sss": sorted(code.get("sss") or [])}
        differ = [f"{k}: code {theirs[k]}, model {model[k]}" for k in model if theirs[k] != model[k]]
        if differ:
            raise _Stop("the controller differs: " + "; ".join(differ))


class _Stop(Exception):
    pass


def room_for(cfg: Config, records: list[dict[str, Any]]) -> Config:
    """`cfg` with room for every put of the record and a budget for every fault (the model's
    bounds are the explorer's; a recorded run is not bounded by them)."""
    puts = sum(1 for r in records if r.get("op") == "put")
    return cfg._replace(max_messages=max(cfg.max_messages, puts + 1),
                        faults=NO_FAULTS._replace(**{f: len(records) + 1 for f in NO_FAULTS._fields}))


def follow(cfg: Config, records: list[dict[str, Any]]) -> Followed:
    """The model's path of a recorded run (module docstring)."""
    cfg = room_for(cfg, records)
    f = _Follower(cfg)
    stopped = None
    op = "start"
    try:
        f.quiet()
        for record in records:
            f.at = record["step"]
            op = record["op"]
            if op == "put":
                f.put(record)
            elif op in ("read", "final_read"):
                if op == "final_read":
                    f.refresh_route()
                got = sum(f.read(q) for q in (range(cfg.queues) if op == "final_read" else (record["arg"] or 0,)))
                said = str(record.get("result", "")).split()[0]
                if said.isdigit() and int(said) != got:
                    raise _Stop(f"the consumer read {said} messages on the code, {got} in the model")
            elif op == "route":
                said = str(record.get("result", "")).split()[-1]
                if str(f.refresh_route()) != said:
                    raise _Stop(f"the client's route: code master {said}, model master {f.route}")
            elif op == "round":
                f.round()
            else:
                b = _target(record)
                if b is not None or op == "heal":
                    f.fault(op, b, record)
            f.quiet()
            f.compare(record)
    except _Stop as exc:
        stopped = NotFollowed(f.at, op, str(exc))
    return Followed(cfg, f.actions, f.steps, stopped)


class Explanation(NamedTuple):
    kind: str  # hunting's: expected, snapshot defect, bug toggle, unexplained
    note: str


def _epoch_files_disagree(s: State) -> bool:
    """`validate`'s epoch_agreement (traces/stores.py) over the model's epoch files."""
    files = [list(b.epochs.disk) for b in s.brokers]
    return any(disagreement(a, b) for i, a in enumerate(files) for b in files[i + 1:])


# `validate`'s checks of the stores that the model's state can be judged by directly, with the
# invariant whose promise they stand for (the rest are judged by that invariant).
STORE_CHECKS = {"epoch_agreement": ("I5", _epoch_files_disagree)}


def invariant_of(judged_by: str) -> str:
    """The catalogue invariant whose promise a store check or an invariant stands for."""
    return STORE_CHECKS[judged_by][0] if judged_by in STORE_CHECKS else judged_by


def _breaks(cfg: Config, records: list[dict[str, Any]], wanted: frozenset[str]) -> tuple[Followed, dict[str, int]]:
    """The model's path of the run under `cfg`, and the recorded step at which it first breaks
    each of `wanted` (only those it breaks): an invariant of the catalogue, or a store check."""
    followed = follow(cfg, records)
    r = replay(followed.cfg, followed.actions, wanted - STORE_CHECKS.keys())  # every action was enabled where it stands
    first: dict[str, int] = {}
    for i, (s, vs) in enumerate(zip(r.states, r.violations)):
        at = followed.steps[i - 1] if i else 0
        for v in vs:
            first.setdefault(v.invariant, at)
        for check in wanted & STORE_CHECKS.keys():
            if check not in first and STORE_CHECKS[check][1](s):
                first[check] = at
    return followed, first


def explain(cfg: Config, records: list[dict[str, Any]], invariants: Iterable[str]) -> dict[str, Explanation]:
    """Each invariant (or store check: STORE_CHECKS) the running code broke in the recorded run,
    explained (module docstring)."""
    wanted = frozenset(invariants)
    followed, broken = _breaks(cfg, records, wanted)
    out: dict[str, Explanation] = {}
    todo = set()
    for inv in wanted:
        expected_kind, why = classify(cfg, invariant_of(inv), ())
        if expected_kind != UNEXPLAINED:
            out[inv] = Explanation(expected_kind, why)
        elif inv in broken:
            todo.add(inv)
        elif followed.stopped is not None:
            s = followed.stopped
            out[inv] = Explanation(UNEXPLAINED, f"the model cannot follow the run: step {s.step} ({s.op}): {s.why}")
        else:
            out[inv] = Explanation(UNEXPLAINED, f"the model's path of the same schedule ({len(followed.actions)} "
                                                f"steps) keeps {inv}")
    if todo:
        removed: dict[str, list[str]] = {inv: [] for inv in todo}
        for name in sorted(cfg.bugs):
            for inv in _kept(cfg._replace(bugs=cfg.bugs - {name}), records, broken, todo):
                removed[inv].append(name)
        several = _kept(cfg._replace(bugs=cfg.bugs - SNAPSHOT), records, broken, todo) if cfg.bugs & SNAPSHOT else set()
        for inv in todo:
            kind, why = classify(cfg, invariant_of(inv), removed[inv],
                                 needs_several=not removed[inv] and inv in several)
            where = f"the model's path of the same schedule breaks it too (at step {broken[inv]})"
            out[inv] = Explanation(kind, f"{where}; {why}")
    # Epoch files a power loss took (the model keeps them): said with every unexplained one.
    lost = "".join(f"; the power loss of step {r['step']} {r['epoch_files']} the epoch files (RocketMQ writes them "
                   "without fsync)" for r in records if r.get("epoch_files") in ("lost", "reverted"))
    return {inv: e._replace(note=e.note + lost) if e.kind == UNEXPLAINED else e for inv, e in out.items()}


def _kept(cfg: Config, records: list[dict[str, Any]], broken: dict[str, int], todo: set[str]) -> set[str]:
    """Those of `todo` that the model's path of the run under `cfg` (a defect in its intended
    form) keeps, up to where the snapshot's path broke each at least: a path that parts from
    the record only later still shows that the intended form does not break it there."""
    intended, still = _breaks(cfg, records, frozenset(todo))
    reached = intended.stopped.step if intended.stopped else float("inf")
    return {inv for inv in todo if inv not in still and reached >= broken[inv]}
