"""A soak: one long run of the cluster (`rmqcheck cluster --soak SECONDS`), shaped as run.py's runs
are (a generator, a client, a nemesis and a checker that never reach into each other) but
continuous: no step waits for the cluster to be quiet, since steady load never lets it be.

- generator (`fault_plan`): from the seed, an endless plan of faults: a quiet gap, one fault drawn
  from run.py's nemesis (FAULTS, half of them at the master of the moment), held a while, then
  healed (a crash or power loss by its broker's restart). The plan is the seed's; when each step
  lands depends on the machine, so a soak does not repeat exactly as a seeded run does.
- client (`SoakClient`): keeps up to IN_FLIGHT puts waiting for their outcome (OpenChaos
  producers, each send its own client id) at the broker its route names master, looked at once
  a burst of PUT_BURST puts (a broker that is not master refuses them, as RocketMQ's send
  processor does); a failed put sends the route to the controller again. A consumer reads every
  queue from the route's broker every READ_EVERY seconds.
- time (`time_passes(wait=False)`): every ROUND_EVERY seconds a round of heartbeats, a controller
  tick (and an election when the master is gone) and ReplicasManager's tasks.
- recording: the OpenChaos history is written as it goes, in parts of PART_LINES lines named
  `soak-SEED-history.00000`, `.00001`, ... (`RotatingHistory`; traces/openchaos.py reads the
  parts as one run), so the driver's memory stays flat however long the soak; RocketMQ's own
  logs and the stores are the run's as usual.
- a broker's command that fails (no answer within COMMAND_TIMEOUT, a start that fails), or a
  broker whose ReputMessageService stays stopping REPUT_STUCK seconds, is not the end of the
  soak: the broker is killed and started again, once, and the failure recorded.
- checker: after the ending (everything healed and restarted, a master serving, every queue read
  to its end), `rmqcheck validate` over the folder: the client history, the epoch files and
  RocketMQ's logs (rmqcheck/commands/cluster.py judges it).

`soak.json` in the folder says what ran and what it measured (`SoakResult`).
"""

from __future__ import annotations

import json
import random
import resource
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from rmqcheck.model.config import Config
from rmqcheck.model.configs import to_dict

from .harness import Cluster, ClusterConfig, ClusterError
from .run import DEFINITE_FAILURES, FAULTS, MASTER, Client, History, Nemesis, Op, time_passes

SOAK_FILE = "soak.json"
SOAK_KIND = "rmqcheck cluster soak"
PART_LINES = 200_000  # history lines a part
IN_FLIGHT = 1024  # puts waiting for their outcome at most: the producers' window (a stalled link holds them 5 s)
PUT_BURST = 32  # puts sent before the driver looks at anything else
RETRY_AFTER = 0.05  # seconds a producer waits after a put found no master
READ_EVERY = 0.05  # seconds
READS_A_TURN = 8  # reads of each queue at most every READ_EVERY (a read returns 32 messages at most)
ROUND_EVERY = 0.5  # seconds: the controller's heartbeat timeout is 2 rounds
GAP = (2.0, 6.0)  # seconds of quiet before a fault, drawn uniformly
HOLD = (1.0, 4.0)  # seconds a fault lasts before its healing
# RocketMQ's own consume-queue file size (300,000 entries), not the seeded runs' small one: the
# store flushes one consume-queue file a second (FlushConsumeQueueService, MappedFileQueue.flush),
# so under a soak's load small files fall behind, a power loss zeroed dozens of them, more than
# recovery's look at the last three files assumes, and the store then failed to load.
CQ_FILE_ENTRIES = 300_000
# Seconds a broker's command may take before the soak kills and restarts it. ReplicasManager's
# changeToSlave can wait 90 s for a ReputMessageService that spins (apache/rocketmq#9811): a
# soak that waited every time would spend its time waiting.
COMMAND_TIMEOUT = 15.0
# Seconds a broker's ReputMessageService may stay told to stop and still running before the soak
# kills and restarts that broker. A truncation (DefaultMessageStore.truncateDirtyFiles) joins it
# for up to 90 s, then truncates the consume queue while the old thread, still spinning
# (apache/rocketmq#9811), dispatches from its own stale position beside the new one: the consume
# queue loses entries ("[BUG]logic queue order maybe wrong" in storeerror.log for every later
# message), and consumers reading it skip hundreds of thousands of acked messages. The first
# 10-minute soaks met it on two brokers in their first two minutes: 823,020 violations.
REPUT_STUCK = 15.0
ENDING_ROUNDS = 20  # rounds of the ending, at most, for a master to serve again
OUTCOMES_WAIT = 10.0  # seconds the ending waits for the puts' outcomes (a put waits 5 s for replicas at most)
# Where the load's time goes: sending puts, handling what came in (outcomes, RPCs), waiting for an
# outcome with the window full, reading, rounds of time, the nemesis's faults and their healing.
ACTIVITIES = ("puts", "outcomes", "window full", "reads", "rounds", "faults", "healing")
PROGRESS_EVERY = 1.0  # seconds between progress reports


class RotatingHistory(History):
    """OpenChaos history lines written as they come, in parts `NAME.00000`, `NAME.00001`, ...
    of `part_lines` lines each (traces/openchaos.py reads them in order as one run)."""

    def __init__(self, path: Path, part_lines: int | None = None) -> None:
        super().__init__(path)
        self.part_lines = part_lines or PART_LINES
        self.records = 0
        self.parts = 1  # files written
        self.file = open(self._part(0), "w")

    def add(self, line: str) -> None:
        if self.records and self.records % self.part_lines == 0:
            self.file.close()
            self.file = open(self._part(self.parts), "w")
            self.parts += 1
        self.file.write(line + "\n")
        self.records += 1

    def _part(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index:05d}")

    def write(self) -> None:
        self.file.close()


class SoakClient(Client):
    """run.py's client with puts in bursts (`put_burst`) and without keeping each put's outcome
    (`statuses` counts them): what a soak needs to keep its load up and its memory flat."""

    def __init__(self, cluster: Cluster, history: History, queues: int) -> None:
        super().__init__(cluster, history, queues)
        self.statuses: Counter[str] = Counter()
        self.reads = 0  # messages read
        self.retry_at = 0.0  # no put before (monotonic seconds): the route named no master

    def read(self, queue: int) -> int:
        n = super().read(queue)
        self.reads += n
        return n

    def catch_up(self, queue: int) -> None:
        """Up to READS_A_TURN reads of `queue`, until one finds nothing new."""
        for _ in range(READS_A_TURN):
            if not self.read(queue):
                return

    def outcome(self, client: int, status: str) -> None:
        self.statuses[status] += 1
        if status in DEFINITE_FAILURES or status == "NO_RESPONSE":
            self.route = None  # asked again at the next put, as a producer does after a failure

    def put_burst(self, queues: list[int]) -> None:
        """A put to each of `queues` at the route's broker, in one command, the broker looked at
        once for the burst (its role changes only in the harness's own steps); when it is not
        master, one refused put and no try for RETRY_AFTER seconds, as a producer backs off."""
        if time.monotonic() < self.retry_at:
            return
        b = self.master_routed()
        if b is None:
            self.refused(*self.request(queues[0]), queues[0])
            self.statuses["NO_MASTER"] += 1
            self.retry_at = time.monotonic() + RETRY_AFTER
            return
        burst = []
        for q in queues:
            client, msg = self.request(q)
            self.pending[msg] = (client, q)
            burst.append((msg, q))
        self.cluster.put_many(b, burst)


class Fault(NamedTuple):
    gap: float  # seconds of quiet before it
    op: Op
    hold: float  # seconds before its healing
    healing: Op


def fault_plan(seed: int, brokers: int) -> Iterator[Fault]:
    """The soak's faults, from the seed alone (module docstring)."""
    rng = random.Random(seed)
    while True:
        f = rng.choice(FAULTS)
        target = MASTER if rng.random() < 0.5 else rng.randint(1, brokers)
        peer = rng.randint(1, brokers - 1) if f == "minority" and brokers > 2 else None
        healing = Op("restart", target) if f in ("crash", "power_loss") else Op("heal")
        yield Fault(rng.uniform(*GAP), Op(f, target, peer), rng.uniform(*HOLD), healing)


class ReputWatch:
    """Which broker's ReputMessageService has been told to stop and still runs REPUT_STUCK seconds
    on (REPUT_STUCK's comment): a broker to restart before its truncation goes on beside it."""

    def __init__(self) -> None:
        self.since: dict[int, float] = {}  # broker -> when its reput was first seen stopping

    def stuck(self, states: dict[int, dict[str, Any] | None], now: float) -> int | None:
        for b, state in states.items():
            if not (state or {}).get("reput_stopping"):
                self.since.pop(b, None)
            elif now - self.since.setdefault(b, now) >= REPUT_STUCK:
                del self.since[b]
                return b
        return None


class SoakResult(NamedTuple):
    seed: int
    folder: Path
    seconds: float  # the load's, without start and ending
    events: int  # history records written
    parts: int  # history files
    sends: int
    statuses: dict[str, int]  # PutMessageStatus (or NO_MASTER, NO_RESPONSE) -> puts
    reads: int  # messages read
    undecodable: list[tuple[int, int, int | None]]  # reads served bytes that are not a message: (broker, queue, offset)
    faults: dict[str, int]  # fault -> times applied
    troubles: list[str]  # a broker's command failed (no answer in time, a start that failed): the broker restarted
    time_spent: dict[str, float]  # ACTIVITIES -> seconds of the load
    rss_mb: dict[str, float | None]  # the driver's resident memory: after the first minute, at the end, peak

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in self._asdict().items()}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def soak(cfg: Config, seed: int, seconds: float, folder: Path, src: str | None = None,
         on_progress: Callable[[float, int], None] | None = None) -> SoakResult:
    """One soak of `seconds` seconds of load on a fresh cluster in `folder` (module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    _record(folder, cfg, {"seed": seed, "seconds": seconds})  # what ran, until the figures replace it
    history = RotatingHistory(folder / f"soak-{seed}-history")
    load: _Load | None = None
    try:
        settings = ClusterConfig.from_model(cfg)._replace(cq_file_entries=CQ_FILE_ENTRIES)
        with Cluster(settings, folder, src, lambda kind, body: load and load.on_event(kind, body)) as cluster:
            cluster.command_timeout = COMMAND_TIMEOUT
            load = _Load(cluster, history, cfg, seed)
            _until_master(cluster)
            load_seconds = load.run(seconds, on_progress)
            _ending(cluster, load.client, load.nemesis, cfg, load.troubles)
    finally:
        history.write()
    assert load is not None
    c = load.client
    result = SoakResult(seed, folder, load_seconds, history.records, history.parts, c.sent, dict(c.statuses),
                        c.reads, c.undecodable, dict(load.faults), load.troubles, load.spent,
                        {"first_minute": load.rss_first, "end": _rss_mb(),
                         "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    _record(folder, cfg, result.to_json())
    return result


def _record(folder: Path, cfg: Config, fields: dict[str, Any]) -> None:
    (folder / SOAK_FILE).write_text(json.dumps({"kind": SOAK_KIND, "config": to_dict(cfg), **fields}) + "\n")


class _Load:
    """The soak's turns: the nemesis's plan, rounds of time, reads and bursts of puts, each timed."""

    def __init__(self, cluster: Cluster, history: RotatingHistory, cfg: Config, seed: int) -> None:
        self.cluster, self.history, self.queues = cluster, history, cfg.queues
        self.client = SoakClient(cluster, history, cfg.queues)
        self.nemesis = Nemesis(cluster, history)
        self.plan = fault_plan(seed, cfg.brokers)
        self.rng = random.Random(f"{seed}:queues")
        self.spent = dict.fromkeys(ACTIVITIES, 0.0)
        self.faults: Counter[str] = Counter()
        self.troubles: list[str] = []  # what a broker's command failed with
        self.reput_watch = ReputWatch()
        self.rss_first: float | None = None

    def on_event(self, kind: str, body: dict[str, Any]) -> None:
        if kind == "put_done":
            self.client.on_put_done(body)

    def timed(self, activity: str, work: Callable[[], Any]) -> Any:
        """`work()`, its time counted to `activity`; a broker whose command fails is restarted."""
        t = time.perf_counter()
        try:
            return work()
        except ClusterError as exc:
            if exc.broker is None:
                raise
            _troubled(self.cluster, self.history, exc, self.troubles)
            return None
        finally:
            self.spent[activity] += time.perf_counter() - t

    def stuck_reput(self) -> ClusterError | None:
        """A broker whose ReputMessageService is stuck stopping (ReputWatch), as a broker in trouble."""
        b = self.reput_watch.stuck({b: self.cluster.observe(b) for b in self.cluster.brokers}, time.monotonic())
        return None if b is None else ClusterError(
            f"broker {b}: its ReputMessageService was stopping for {REPUT_STUCK:g} s and still ran "
            "(apache/rocketmq#9811)", broker=b)

    def run(self, seconds: float, on_progress: Callable[[float, int], None] | None) -> float:
        """Load for `seconds`; how long it took."""
        fault = next(self.plan)
        started = reported = time.monotonic()
        next_fault, healing_at = started + fault.gap, None
        next_read = next_round = started
        while (now := time.monotonic()) < started + seconds:
            if healing_at is not None and now >= healing_at:
                self.timed("healing", lambda: self.nemesis.apply(fault.healing))
                fault, healing_at = next(self.plan), None
                next_fault = time.monotonic() + fault.gap
            elif healing_at is None and now >= next_fault:
                if (self.timed("faults", lambda: self.nemesis.apply(fault.op)) or "").startswith("broker"):
                    self.faults[fault.op.f] += 1  # not counted: a fault at the master while there is none
                healing_at = time.monotonic() + fault.hold
            if now >= next_round:
                self.timed("rounds", lambda: time_passes(self.cluster, wait=False))
                if (stuck := self.timed("rounds", self.stuck_reput)) is not None:  # its restart counts to healing
                    self.timed("healing", lambda: _troubled(self.cluster, self.history, stuck, self.troubles))
                next_round = time.monotonic() + ROUND_EVERY
            if now >= next_read:
                self.timed("reads", lambda: [self.client.catch_up(q) for q in range(self.queues)])
                next_read = time.monotonic() + READ_EVERY
            room = min(PUT_BURST, IN_FLIGHT - len(self.client.pending))
            if room > 0:
                burst = [self.rng.randrange(self.queues) for _ in range(room)]
                self.timed("puts", lambda: self.client.put_burst(burst))
                self.timed("outcomes", self.cluster.handle_waiting)
            else:
                self.timed("window full", lambda: self.cluster.handle_waiting(0.01))
            if self.rss_first is None and now - started >= 60:
                self.rss_first = _rss_mb()
            if on_progress is not None and now - reported >= PROGRESS_EVERY:
                on_progress(now - started, self.history.records)
                reported = now
        return time.monotonic() - started


def _until_master(cluster: Cluster) -> None:
    """Rounds of time until a master serves, ENDING_ROUNDS at most. Not `settle`, which reads every
    message each store holds: after a long soak that is more than a broker's heap."""
    for _ in range(ENDING_ROUNDS):
        time_passes(cluster, wait=False)
        m = cluster.master()
        if m is not None and (cluster.observe(m) or {}).get("role") == "SYNC_MASTER":
            return
        time.sleep(ROUND_EVERY)


def _troubled(cluster: Cluster, history: History, exc: ClusterError, troubles: list[str]) -> None:
    """A broker's command failed: as an operator would, kill it and start it again, once; a start
    that fails too leaves it down (the nemesis's next restart tries again). Recorded in the result
    and as a fault in the history."""
    troubles.append(str(exc))
    b = exc.broker
    history.fault("restart_troubled", "start")
    cluster.crash(b)
    try:
        cluster.restart(b)
    except ClusterError as again:
        troubles.append(str(again))
        cluster.crash(b)
    history.fault("restart_troubled", "end")


def _ending(cluster: Cluster, client: SoakClient, nemesis: Nemesis, cfg: Config, troubles: list[str]) -> None:
    """Heal everything, restart every broker that is down, let time pass until a master serves,
    wait for the puts' outcomes, read every queue to its end; a put still without an outcome has
    none (unknown)."""
    nemesis.apply(Op("heal"))
    for b in cluster.brokers:
        try:
            nemesis.apply(Op("restart", b))
        except ClusterError as exc:
            troubles.append(str(exc))
            cluster.crash(b)
    _until_master(cluster)
    waited_until = time.monotonic() + OUTCOMES_WAIT
    while client.pending and time.monotonic() < waited_until:
        cluster.handle_waiting(0.1)
    client.refresh_route()
    for queue in range(cfg.queues):
        while client.read(queue):
            pass
    for msg in list(client.pending):
        client.on_put_done({"msg": msg, "status": "NO_RESPONSE"})
