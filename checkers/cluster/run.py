"""Seeded random runs of the cluster, Jepsen-shaped: a generator of operations, a client that
applies the client's, a nemesis that applies the faults, and a checker over the recorded
history; the four never reach into each other.

- generator (`schedule`): a seeded list of operations: puts and reads, the client's route
  refreshes, rounds of time (heartbeats, a controller tick, elections, ReplicasManager's tasks),
  and at most `faults` perturbations: crash (kill -9), power loss, a broker's HA links cut or
  blackholed, a broker cut off from the controller or its controller answers lost, a minority
  partition (a broker and one peer cut off from the controller and the other brokers); half of
  them hit the master of the moment, and a crash's restart follows soon. Healing (restart,
  heal) is never bounded. Every run ends with everything healed, every broker restarted and
  rounds until a master serves, then a read of every queue to its end.
- client (`Client`): sends each put to the broker its route names master and records the
  outcome; reads from that broker at the consumer's offset; both as OpenChaos history lines. The
  route is the controller's master when it was last refreshed (a `route` operation, or a put or
  read that found no master there): RocketMQ's clients learn routes from the name server every
  30 s, and a deposed master that does not know it yet still registers there as master.
- nemesis (`Nemesis`): applies the faults to the cluster; a fault line in the history for each.
- checker: after every step, what the running code shows of the model's invariants
  (views.code_violations, as `replay --cluster` judges it: I1, I2, I3, I4's core, I5,
  I7's learner clause), written to the run's code-violations.jsonl; at the end `rmqcheck
  validate`'s local engine over the run's folder (its history and the brokers' epoch files); each
  violation then classed against what the configuration promises and explained by the model's
  path of the same run (traces/real_runs.py follows it; in the commands, rmqcheck/commands/cluster_runs.py: checkers and
  traces sit side by side).

A run's folder: `run-<seed>-history` (OpenChaos),
`steps.jsonl` (each operation as resolved, what it did, the controller's state and every broker's
view after it: traces/real_runs.py follows it on the model, with the run's `run.json` that the
command writes),
`code-violations.jsonl`, `stores/`
(each broker's store, epoch file included), `broker-N.log` (the JVMs' stderr).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from rmqcheck.model.config import Config
from rmqcheck.model.observed import minority_side

from .harness import DELIVER, DROP, LOSE_ANSWER, Cluster, ClusterConfig
from .proxy import BLACKHOLE, CUT
from .views import cluster_view, code_violations

# OpenChaos results of a put (traces/openchaos.py): what the client knows of its message.
DEFINITE_FAILURES = {"IN_SYNC_REPLICAS_NOT_ENOUGH", "SERVICE_NOT_AVAILABLE", "MESSAGE_ILLEGAL", "PROPERTIES_SIZE_EXCEEDED",
                     "NO_ROUTE"}  # nothing was appended

# isolate_controller drops a broker's RPCs before the controller sees them; lose_answers lets the
# controller apply them and loses the answers (known-bugs A1: an applied AlterSyncStateSet whose
# answer never came back); minority cuts a broker and one peer off from the controller and the
# rest, so a master and a slave can go on without the others (known-bugs A3's partition).
FAULTS = ("crash", "power_loss", "isolate_ha", "blackhole_ha", "isolate_controller", "lose_answers", "minority")


def openchaos_result(status: str) -> str:
    """What the client knows of its message from a PutMessageStatus."""
    return "SUCCESS" if status == "PUT_OK" else "FAILURE" if status in DEFINITE_FAILURES else "UNKNOWN"


MASTER = 0  # a fault's target: the broker the controller names master when the fault comes (leader-kill)


# A step after which only a lagging slave keeps the cluster busy, and nothing has moved for this
# long, ends unsettled (Cluster.settle): a stranded slave would otherwise cost the whole 8 s
# timeout at every later step. Longer than the HA client's 5 s wait before it connects again, so
# a slave that is only waiting to reconnect still settles the step.
STUCK_AFTER = 5.5


class Op(NamedTuple):
    f: str
    arg: int | None = None  # a queue (put, read), a broker, or MASTER
    peer: int | None = None  # minority: the peer is this many brokers after the target, round the ring


def schedule(seed: int, brokers: int, steps: int, faults: int, queues: int = 1) -> list[Op]:
    """The run's operations, from the seed alone. Half the faults hit the master of the moment,
    as chaos tools' leader faults do. A crash or power loss is followed by its broker's restart
    one to five operations later (the nemesis's stop after its start); restarts and heals are
    also drawn at random, unbounded."""
    rng = random.Random(seed)
    ops: list[Op] = [Op("round")]
    left = faults
    due: list[tuple[int, Op]] = []  # (at step, the restart a crash asked for)
    for i in range(steps):
        if due and due[0][0] <= i:
            ops.append(due.pop(0)[1])
            continue
        r = rng.random()
        if r < 0.35:
            ops.append(Op("put", rng.randrange(queues)))
        elif r < 0.50:
            ops.append(Op("read", rng.randrange(queues)))
        elif r < 0.58:
            ops.append(Op("route"))
        elif r < 0.75:
            ops.append(Op("round"))
        elif r < 0.85 or left == 0:
            ops.append(Op(rng.choice(("restart", "heal")), rng.randint(1, brokers)))
        else:
            f = rng.choice(FAULTS)
            target = MASTER if rng.random() < 0.5 else rng.randint(1, brokers)
            ops.append(Op(f, target, rng.randint(1, brokers - 1) if f == "minority" and brokers > 2 else None))
            left -= 1
            if f in ("crash", "power_loss"):
                due = sorted(due + [(i + rng.randint(1, 5), Op("restart", target))])
    return ops


def target(op: Op, master: Callable[[], int | None], hit: int | None) -> tuple[int | None, int | None]:
    """The broker a fault or restart hits, and the broker the last fault at MASTER hit: MASTER is
    the master of the moment, and a restart at MASTER restarts the broker its crash hit."""
    if op.arg == MASTER and op.f == "restart":
        return hit, hit
    if op.arg == MASTER:
        now = master()
        return now, now
    return op.arg, hit


class History:
    """OpenChaos history lines (traces/openchaos.py reads them), kept until `write`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    def _now(self) -> int:
        return int(time.time() * 1000)

    def add(self, line: str) -> None:
        self.lines.append(line)

    def request(self, client: int, msg: str, queue: int) -> None:
        self.add(f"{client}\tenqueue\tREQUEST\t{msg}\tq{queue}\t{self._now()}\tnull")

    def response(self, client: int, msg: str, queue: int, result: str) -> None:
        self.add(f"{client}\tenqueue\tRESPONSE\t{result}\t{msg}\tq{queue}\t{self._now()}\t0\tnull\t0")

    def read(self, client: int, msg: str, queue: int) -> None:
        self.add(f"{client}\tdequeue\tRESPONSE\tSUCCESS\t{msg}\tq{queue}\t{self._now()}\t0\tnull\t0")

    def fault(self, name: str, phase: str) -> None:
        self.add(f"fault\t{name}\t{phase}\t{self._now()}")

    def write(self) -> None:
        self.path.write_text("".join(line + "\n" for line in self.lines))


class Client:
    """The producer and the consumer. Each put is its own client id (OpenChaos: one request in
    flight a client), so outcomes may come in any order. Both go to the broker `route` names."""

    def __init__(self, cluster: Cluster, history: History, queues: int) -> None:
        self.cluster = cluster
        self.history = history
        self.sent = 0
        self.offsets = [0] * queues
        self.pending: dict[str, tuple[int, int]] = {}  # msg -> (client id, queue)
        self.outcomes: dict[int, str] = {}  # client id (the send number) -> the PutMessageStatus received
        self.route: int | None = None  # the master the client knows of
        # (broker, queue, queue offset) of each message read whose bytes did not decode as one
        self.undecodable: list[tuple[int, int, int | None]] = []

    def refresh_route(self) -> int | None:
        self.route = self.cluster.master()
        return self.route

    def _routed(self) -> int | None:
        return self.route if self.route is not None else self.refresh_route()

    def on_put_done(self, body: dict[str, Any]) -> None:
        client, queue = self.pending.pop(body["msg"], (None, body.get("queue", 0)))
        if client is None:
            return
        status = body.get("status", "NO_RESPONSE")
        self.outcome(client, status)
        self.history.response(client, body["msg"], queue, openchaos_result(status))

    def outcome(self, client: int, status: str) -> None:
        self.outcomes[client] = status  # views.code_violations compares them with the model's

    def put(self, queue: int) -> str:
        client, msg = self.request(queue)
        b = self.master_routed()
        if b is None:
            self.refused(client, msg, queue)
            return "no master"
        self.pending[msg] = (client, queue)
        self.cluster.put(b, msg, queue)
        return f"to broker {b}"

    def request(self, queue: int) -> tuple[int, str]:
        """A new send's client id and message, its request in the history."""
        self.sent += 1
        self.history.request(self.sent, f"m{self.sent}", queue)
        return self.sent, f"m{self.sent}"

    def master_routed(self) -> int | None:
        """The route's broker if it is master; else None and the route asked again. RocketMQ's
        send processor refuses a put on a slave (its store alone would take it)."""
        return self._routed_if(lambda state: state.get("role") == "SYNC_MASTER")

    def _routed_if(self, serves: Callable[[dict[str, Any]], bool]) -> int | None:
        """The route's broker if it is up and its state `serves`; else None and the route asked again."""
        b = self._routed()
        state = self.cluster.observe(b) if b is not None and self.cluster.nodes[b].alive else None
        if not state or not serves(state):
            self.refresh_route()
            return None
        return b

    def refused(self, client: int, msg: str, queue: int) -> None:
        self.history.response(client, msg, queue, "FAILURE")  # no route, or not a master: nothing appended

    def read(self, queue: int) -> int:
        """Read the next messages of `queue` from the route's broker; how many."""
        # a broker whose ReplicasManager has not started (no role yet) serves no pulls, as the
        # model's `_serves_pulls` holds (a 300-step durable3 run, seed 100, step 98)
        b = self._routed_if(lambda state: state.get("rm_state") == "RUNNING")
        if b is None:
            return 0
        got = self.cluster.read(b, queue, self.offsets[queue])
        for m in got.get("messages", []):
            if m["msg"] is None:  # served bytes that do not decode as a message: no message to name
                self.undecodable.append((b, queue, m["queue_offset"]))
            else:
                self.history.read(0, m["msg"], queue)
        # A consumer takes the pull's next offset whatever it found: past what it read, or where a
        # master's store corrects an offset beyond or before its queue (nextOffsetCorrection). Left
        # beyond a queue cut shorter, it would never read what the new master appends there.
        self.offsets[queue] = got.get("next", self.offsets[queue])
        return len(got.get("messages", []))


class Nemesis:
    """Faults and their healing, each a fault line in the history."""

    def __init__(self, cluster: Cluster, history: History) -> None:
        self.cluster = cluster
        self.history = history
        self.hit: int | None = None  # the broker the last fault at MASTER hit: its restart is that broker's
        self.epoch_files: str | None = None  # what the last power loss left of the epoch files

    def apply(self, op: Op) -> str:
        c, b = self.cluster, op.arg
        self.epoch_files = None
        if op.f == "heal":  # every link and path, whichever broker the schedule drew (the ending names none)
            c.heal()
            self.history.fault("heal", "end")
            return "healed"
        b, self.hit = target(op, c.master, self.hit)
        if b is None:
            return "no master"
        if op.f == "crash" and c.nodes[b].alive:
            c.crash(b)
        elif op.f == "power_loss" and c.nodes[b].alive:
            self.epoch_files = c.power_loss(b)
        elif op.f == "restart" and not c.nodes[b].alive:
            c.restart(b)
        elif op.f in ("isolate_ha", "blackhole_ha"):
            c.links_of(b, CUT if op.f == "isolate_ha" else BLACKHOLE)
        elif op.f in ("isolate_controller", "lose_answers") and b not in c.cut_off:
            # not on a broker a partition cuts off: that would reopen its path alone, which the
            # model does not do (it restores a partition only whole, at the heal)
            c.rpc_policy[b] = DROP if op.f == "isolate_controller" else LOSE_ANSWER
        elif op.f == "minority" and not c.cut_off:  # one partition at a time, as the model holds them
            c.partition(minority_side(b, op.peer, len(c.brokers)), CUT)
        else:
            return "nothing to do"
        self.history.fault(op.f, "end" if op.f == "restart" else "start")
        return f"broker {b}"


def time_passes(cluster: Cluster, wait: bool = True) -> None:
    """One round: every live broker heartbeats, the controller's clock ticks (and it elects when
    the master is gone), every broker asks for the replica info, the master checks its set.
    `wait`: until the cluster is quiet before the check (a step of a run); otherwise the
    one-shots queued meanwhile run at once (a soak's load never lets the cluster be quiet)."""
    c = cluster
    assert c.controller is not None
    live = [b for b in c.brokers if c.nodes[b].alive]
    for b in live:  # a ReplicasManager whose start failed (the controller was out of reach) tries again
        state = c.observe(b)
        if state and state.get("rm_state") != "RUNNING" and c.rpc_policy.get(b, DELIVER) == DELIVER:
            c.task(b, "retry_start")
    for b in live:
        c.heartbeat(b)
    c.controller.tick()
    if c.controller.needs_election():
        c.controller.elect()
    for b in live:
        c.task(b, "sync_replica_info")
    if wait:
        c.settle()
    else:
        c.run_one_shots({b: c.observe(b) for b in c.brokers})
        c.note_epoch_files()
    master = c.master()
    if master in live:
        c.task(master, "check_sss")


class RunResult(NamedTuple):
    seed: int
    folder: Path
    steps: int
    settled: bool  # every step ended quiet
    seconds: float


class _Judged(NamedTuple):
    """What views.code_violations reads of a run: the cluster, the configuration, the history and
    the outcome of each put by its send number."""
    c: Cluster
    cfg: Config
    history: History
    outcomes: dict[int, str]


CODE_VIOLATIONS = "code-violations.jsonl"  # per run: what the running code broke, step by step


def run_once(cfg: Config, seed: int, folder: Path, steps: int = 30, faults: int = 3, src: str | None = None,
             on_step: Callable[[int, int], None] | None = None) -> RunResult:
    """One seeded run on a fresh cluster in `folder`, recorded (rmqcheck/commands/cluster_runs.py checks it)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    history = History(folder / f"run-{seed}-history")  # the run's name in every report
    log = open(folder / "steps.jsonl", "w")
    found = open(folder / CODE_VIOLATIONS, "w")
    judged: set[str] = set()
    client: Client | None = None

    def on_event(kind: str, body: dict[str, Any]) -> None:
        if kind == "put_done" and client is not None:
            client.on_put_done(body)

    ops = schedule(seed, cfg.brokers, steps, faults, cfg.queues)
    settled = True
    try:
        with Cluster(ClusterConfig.from_model(cfg), folder, src, on_event) as cluster:
            client = Client(cluster, history, cfg.queues)
            nemesis = Nemesis(cluster, history)
            for i, op in enumerate(ops + _ending(cfg), start=1):
                if op.f == "put":
                    what = client.put(op.arg)
                elif op.f == "read":
                    what = f"{client.read(op.arg)} read"
                elif op.f == "round":
                    time_passes(cluster)
                    what = f"master {cluster.master()}"
                elif op.f == "route":
                    what = f"master {client.refresh_route()}"
                elif op.f == "final_read":
                    client.refresh_route()
                    what = f"{sum(client.read(q) for q in range(cfg.queues))} read"
                else:
                    what = nemesis.apply(op)
                states = cluster.settle(stuck_after=STUCK_AFTER)
                settled &= cluster.settled
                for inv, seen in code_violations(_Judged(cluster, cfg, history, client.outcomes), states):
                    if seen not in judged:  # each once, at the first step that shows it
                        judged.add(seen)
                        found.write(json.dumps({"step": i, "invariant": inv, "what": seen}) + "\n")
                record = {"step": i, "op": op.f, "arg": op.arg, "peer": op.peer, "result": what,
                          "settled": cluster.settled, "controller": cluster.controller.last,
                          "view": cluster_view(states, cluster.controller.last)}
                if op.f == "power_loss" and nemesis.epoch_files:  # traces/real_runs.py reads it
                    record["epoch_files"] = nemesis.epoch_files
                if client.undecodable:  # reads that served no message (broker, queue, queue offset)
                    record["undecodable"], client.undecodable = client.undecodable, []
                log.write(json.dumps(record) + "\n")
                if on_step is not None:
                    on_step(i, len(ops))
            for queue in range(cfg.queues):  # read to the end
                while client.read(queue):
                    pass
            for msg in list(client.pending):
                client.on_put_done({"msg": msg, "status": "NO_RESPONSE"})
    finally:
        history.write()
        log.close()
        found.close()
    return RunResult(seed, folder, len(ops), settled, time.perf_counter() - started)


def _ending(cfg: Config) -> list[Op]:
    """Heal everything, restart every broker that is down, let time pass until a master serves,
    read."""
    return [Op("heal"), *[Op("restart", b) for b in range(1, cfg.brokers + 1)], *[Op("round")] * 4, Op("final_read")]
