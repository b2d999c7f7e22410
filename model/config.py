"""Configuration of one modelled broker set: the real RocketMQ switches plus the model's bounds.

Defaults are the snapshot's defaults (reference §0) wherever a RocketMQ switch exists.
Times are in logical ticks; one tick stands for about five seconds, so the ratios of the
real timeouts are kept: slaveTimeout 3 s < controllerHeartBeatTimeoutMills 10 s <
haMaxTimeSlaveNotCatchup 15 s.
"""

from __future__ import annotations

from typing import NamedTuple

from .bugs import SNAPSHOT, check_toggle_names

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"
FLUSH_MODES = (ASYNC_FLUSH, SYNC_FLUSH)


class FaultBudget(NamedTuple):
    """How many perturbations of each kind a run may contain. Healing is never bounded."""

    crashes: int = 2  # crash with page-cache loss; restart is healing
    partitions: int = 1  # heal is healing
    lost_responses: int = 1  # a controller RPC that took effect but whose response was lost
    heartbeat_timeouts: int = 1  # the controller expires a broker that is in fact alive
    admin_elections: int = 1  # mqadmin electMaster designating a broker
    connection_resets: int = 1  # an HA TCP connection reset
    epoch_file_losses: int = 0  # epochFileCheckpoint and .bak deleted (operator error)
    controller_failovers: int = 1  # observable only under controller_serves_before_apply or heartbeat_ignored_without_entry
    consumer_restarts: int = 1  # the consumer forgets its in-memory offsets (restart, rebalance)
    # A slave's HA client closes its connection while the master's end stays in its connection
    # list until it notices (the EOF or its housekeeping): the stale and the next connection coexist.
    lingering_connections: int = 1
    # One broker's controller path down while its HA links work: its RPCs (heartbeats,
    # AlterSyncStateSet, getReplicaInfo, register) fail; `heal` restores it. Off by default: the
    # explored spaces are those of the partitions; recorded cluster runs cut it (isolate_controller).
    controller_cuts: int = 0
    # A power loss takes a broker's epoch file back to the version the file system last wrote
    # back: RocketMQ rewrites epochFileCheckpoint with no fsync. Off by default (the explored
    # spaces are unchanged); recorded cluster runs need it (their power losses revert the files).
    epoch_file_reverts: int = 0
    # Both services of a closed HA connection call removeConnection (AutoSwitchHAConnection.java:275,
    # :717); the model takes the first at the close and, within this budget, the second as a step
    # of its own, proposing the removal from the local set as it is then. Not a fault: a bound on
    # that interleaving. Off by default (the explored spaces are unchanged; without it the second
    # call comes at once and proposes the same set again); recorded cluster runs need it.
    second_removals: int = 0
    # StoreCheckpoint.setConfirmPhyOffset only sets a field; the file is written by flush(), which
    # DefaultMessageStore schedules once a second (:1809). So a crash or power loss takes the
    # confirmOffset back to its value at the last flush (`flush_checkpoint`, `revert_checkpoint`).
    # Off by default (the explored spaces are unchanged: the crash keeps the latest, as if the
    # flush came just before it); recorded cluster runs need it (durable3 seed 500, step 115).
    checkpoint_reverts: int = 0

    def total(self) -> int:
        return sum(self)


NO_FAULTS = FaultBudget(*(0 for _ in FaultBudget._fields))


class Config(NamedTuple):
    brokers: int = 2
    # MessageStoreConfig switches (reference §0 and §2.8)
    all_ack: bool = False  # allAckInSyncStateSet
    in_sync_replicas: int = 1  # inSyncReplicas
    min_in_sync_replicas: int = 1  # minInSyncReplicas
    flush: str = ASYNC_FLUSH  # flushDiskType
    async_learners: frozenset[int] = frozenset()  # brokers with asyncLearner=true
    # BrokerConfig.brokerElectionPriority per broker (index = id - 1), sent with every heartbeat;
    # lower is preferred, on (epoch, maxOffset) ties. () is the default, Integer.MAX_VALUE for all.
    priorities: tuple[int, ...] = ()
    # ControllerConfig
    unclean: bool = False  # enableElectUncleanMaster
    # Model bounds and time scale
    queues: int = 1
    message_sizes: tuple[int, ...] = (1, 2)  # two sizes so boundary bugs are reachable
    max_messages: int = 4  # sends attempted per run
    batch_size: int = 2  # haTransferBatchSize, in model bytes: batches are not message-aligned
    slave_timeout: int = 1  # slaveTimeout (GroupTransferService deadline)
    heartbeat_timeout: int = 2  # controllerHeartBeatTimeoutMills
    not_catchup_time: int = 3  # haMaxTimeSlaveNotCatchup
    faults: FaultBudget = FaultBudget()
    # Scale: offsets are Java's, so the rules' long and int arithmetic is the code's. A model byte
    # (a cell) stands for `unit_bytes` bytes (message sizes, haTransferBatchSize and crash tails
    # are counted in cells), and every store's first commit-log file starts at `base_offset`
    # (the files before it deleted, as on a long-running broker). SCALES names the ones `check`
    # and the matrix run.
    base_offset: int = 0
    unit_bytes: int = 1
    # Bug toggles (model/bugs.py). The default mirrors the snapshot, its known defects included;
    # frozenset() is the intended baseline.
    bugs: frozenset[str] = SNAPSHOT
    # Epoch-file quirks Q1/Q2 (reference §1.3): True mirrors the snapshot, False the intent.
    faithful_q1: bool = True
    faithful_q2: bool = True

    def priority(self, broker: int) -> int:
        return self.priorities[broker - 1] if self.priorities else 2**31 - 1

    def has(self, bug: str) -> bool:
        return bug in self.bugs

    @property
    def sync_flush(self) -> bool:
        return self.flush == SYNC_FLUSH

    @property
    def batch_bytes(self) -> int:
        """haTransferBatchSize in bytes."""
        return self.batch_size * self.unit_bytes

    @property
    def scale(self) -> str:
        """The name of this configuration's scale in SCALES, or a description."""
        for name, (base, unit) in SCALES.items():
            if (self.base_offset, self.unit_bytes) == (base, unit):
                return name
        return f"base {self.base_offset}, {self.unit_bytes} bytes a cell"


LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
FILE_SIZE = 2**30  # mappedFileSizeCommitLog's default: commit-log files start at its multiples

# (base_offset, unit_bytes). small: the model's own bytes. large: a cell is 512 MiB and every log
# starts 16 GiB below Long.MAX_VALUE, so offsets are near 2^63 and two replicas of one run can
# differ by 2^31 bytes or more (int casts of offset differences wrap), while a batch of two cells
# is still an int (haTransferBatchSize). int: the same cells from 1 GiB, so offsets cross 2^31
# and 2^32.
SCALES: dict[str, tuple[int, int]] = {
    "small": (0, 1),
    "large": (LONG_MAX + 1 - 16 * FILE_SIZE, 2**29),
    "int": (FILE_SIZE, 2**29),
}


def scaled(cfg: "Config", scale: str) -> "Config":
    base, unit = SCALES[scale]
    return cfg._replace(base_offset=base, unit_bytes=unit)


def validate(cfg: Config) -> Config:
    """Reject configurations the model cannot run; raises ValueError naming the field."""
    if not 1 <= cfg.brokers <= 5:
        raise ValueError(f"brokers must be between 1 and 5, got {cfg.brokers}")
    if cfg.flush not in FLUSH_MODES:
        raise ValueError(f"flush must be one of {FLUSH_MODES}, got {cfg.flush!r}")
    if cfg.in_sync_replicas < 0 or cfg.min_in_sync_replicas < 0:
        raise ValueError("in_sync_replicas and min_in_sync_replicas must be >= 0")
    if not cfg.message_sizes or any(s < 1 or s > 7 for s in cfg.message_sizes):
        raise ValueError(f"message_sizes must be between 1 and 7, got {cfg.message_sizes}")
    # Bounded above too: the model builds a tuple per queue, and a run per message.
    if not 1 <= cfg.queues <= 64 or not 0 <= cfg.max_messages <= 10_000 or not 1 <= cfg.batch_size <= 1_000:
        raise ValueError("queues must be 1 to 64, batch_size 1 to 1,000 and max_messages 0 to 10,000")
    if min(cfg.slave_timeout, cfg.heartbeat_timeout, cfg.not_catchup_time) < 0:
        raise ValueError("timeouts must be >= 0")
    bad = [b for b in cfg.async_learners if not 1 <= b <= cfg.brokers]
    if bad:
        raise ValueError(f"async_learners names unknown brokers {sorted(bad)}")
    if cfg.priorities and (len(cfg.priorities) != cfg.brokers or any(not -2**31 <= p < 2**31 for p in cfg.priorities)):
        raise ValueError(f"priorities must give one Java int per broker ({cfg.brokers}), got {list(cfg.priorities)}")
    if len(cfg.async_learners) == cfg.brokers and not cfg.has("learner_requests_election"):
        raise ValueError("every broker is an async learner, and learners never ask to be elected: no master")
    if any(n < 0 for n in cfg.faults):
        raise ValueError("fault budgets must be >= 0")
    if cfg.unit_bytes < 1 or cfg.base_offset < 0:
        raise ValueError(f"unit_bytes must be >= 1 and base_offset >= 0, got {cfg.unit_bytes} and {cfg.base_offset}")
    if cfg.batch_bytes > INT_MAX:
        raise ValueError(f"batch_size x unit_bytes = {cfg.batch_bytes} is not a Java int (haTransferBatchSize)")
    if cfg.base_offset + cfg.unit_bytes * cfg.max_messages * max(cfg.message_sizes) > LONG_MAX:
        raise ValueError("base_offset + unit_bytes x max_messages x the largest message size passes Long.MAX_VALUE")
    check_toggle_names(cfg.bugs)
    return cfg
