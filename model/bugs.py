"""Bug toggles: each switches one rule between its intended form and a defective one.

Two kinds:
* historical bugs and design pitfalls that the snapshot (8fc57f1468) does *not* have: the
  toggle re-introduces them;
* defects the snapshot *does* have (`in_snapshot`): some fixed upstream later, some found by
  this harness. Their intended form is the upstream fix, or the smallest change that makes
  the rule do what its code means; each is documented where it is implemented.

`SNAPSHOT` (every in-snapshot toggle on) is the default configuration: the model mirrors the
snapshot, defects included. `frozenset()` is the intended baseline; `rmqcheck hunt --bug NAME`
hunts the baseline plus one toggle, so what it finds is that toggle's doing.

`exposing` is the smallest configuration known to reach the defect (reference/known-bugs.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Toggle(NamedTuple):
    name: str
    ref: str  # entry in reference/known-bugs.md, or "pitfall"
    source: str  # issue / PR / commit
    summary: str
    catches: tuple[str, ...]  # invariants its regression scenarios violate (tests keep this true)
    exposing: dict[str, Any]  # Config overrides that make it reachable
    in_snapshot: bool = False
    # Other toggles its defect is reached only together with (each alone is found by no hunt):
    # its hunting configuration turns them on too.
    needs: tuple[str, ...] = ()


_DURABLE = {"all_ack": True, "flush": "SYNC_FLUSH"}
_LARGE = {"base_offset": 2**63 - 2**34, "unit_bytes": 2**29}  # SCALES["large"] (model/config.py)


def _faults(**budget: int) -> dict[str, int]:
    """A fault budget with only the named perturbations (reference/known-bugs.md, "Min config /
    faults"); fewer kinds of noise make the search far more effective."""
    names = (
        "crashes",
        "partitions",
        "lost_responses",
        "heartbeat_timeouts",
        "admin_elections",
        "connection_resets",
        "epoch_file_losses",
        "controller_failovers",
        "lingering_connections",
    )
    unknown = set(budget) - set(names)
    assert not unknown, unknown
    return {n: budget.get(n, 0) for n in names}


# Defects that need several kinds of perturbation are found sooner with a wider budget: more
# kinds of fault open more routes to the same state.
_WIDE = _faults(crashes=2, admin_elections=1, heartbeat_timeouts=1, lost_responses=1, partitions=1, connection_resets=1)

TOGGLES: tuple[Toggle, ...] = (
    Toggle(
        "ack_uses_local_sss_only",
        "A1",
        "apache/rocketmq#5663, PR #5798, fix 2cc899fc35 (5.1.1)",
        "Acks and confirmOffset use only the local SyncStateSet and ignore the in-flight "
        "AlterSyncStateSet proposal, so a lost controller response leaves the master acking alone.",
        ("I1", "I2", "I4"),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=1, lost_responses=1)},
    ),
    Toggle(
        "on_become_master_sss_self_only",
        "A2",
        "apache/rocketmq#6342, PR #6352, fix 63a014b810 (5.1.1)",
        "On becoming master the broker installs {self} at the controller's syncStateSetEpoch instead "
        "of the controller's set, so a restarted master acks alone.",
        ("I2",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=1)},
    ),
    Toggle(
        "confirm_min_over_connected_only",
        "A3",
        "apache/rocketmq#6662, PR #6663, fix 7903c70412 (5.1.1)",
        "computeConfirmOffset takes the minimum over connected SyncStateSet members only, so a "
        "partitioned stale master advances confirmOffset without the missing member.",
        ("I3", "I4", "I11"),
        {**_DURABLE, "brokers": 3, "faults": _faults(partitions=1)},
    ),
    Toggle(
        "truncate_start_from_max_minus_behind",
        "A8",
        "apache/rocketmq#6665, PR #6666, fix 709537595c (5.1.1)",
        "truncateInvalidMsg starts its scan at maxPhyOffset - dispatchBehindBytes, which is not a "
        "message boundary, and cuts valid (even confirmed) messages on a new master.",
        ("I9",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=1, heartbeat_timeouts=1, admin_elections=1)},
    ),
    Toggle(
        "no_confirm_clamp_on_truncate",
        "A8",
        "apache/rocketmq#6665, PR #6666, fix 709537595c (5.1.1)",
        "CommitLog.truncateDirtyFiles does not lower confirmOffset to the truncation point, so "
        "confirmOffset can exceed maxPhyOffset.",
        ("I4",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=2, admin_elections=1)},
    ),
    Toggle(
        "same_master_epoch_bump_keeps_connections",
        "A9",
        "apache/rocketmq#9689, PR #9690 (42de289dbd, after the snapshot)",
        "After a same-master epoch bump the open HA connection keeps currentTransferEpochEndOffset = "
        "-1 and ships new data under the old epoch (quirk HA2).",
        ("I5",),
        {**_DURABLE, "brokers": 2, "faults": _faults(heartbeat_timeouts=1)},
        in_snapshot=True,
    ),
    Toggle(
        "restart_accepts_writes_before_role_confirmed",
        "B1",
        "apache/rocketmq#6508, PR #6509, fix 526a107557 (5.1.1)",
        "A restarted ex-master accepts writes as master before the controller confirms its role.",
        ("I10",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=2)},
    ),
    Toggle(
        "consumer_offset_not_truncated",
        "B6",
        "apache/rocketmq#4771 (design issue, closed as stale)",
        "A commit-log truncation leaves committed consumer offsets beyond the new queue end, so "
        "consumers skip the messages later written there.",
        ("I3b",),
        {"brokers": 2, "unclean": True, "faults": _faults(crashes=2)},
        in_snapshot=True,
    ),
    Toggle(
        "epoch_reapply_moves_start",
        "snapshot",
        "reference §2.7.1 note 2 (AutoSwitchHAService.changeToMaster step 6)",
        "A master that re-applies its current epoch (after a restart the in-memory masterEpoch is 0) "
        "truncates that epoch's entry and re-appends it at maxPhyOffset, so its data is attributed to "
        "the previous epoch and slaves cut back below confirmed data on their next handshake.",
        ("I2",),
        {**_DURABLE, "brokers": 2, "faults": _WIDE},
        in_snapshot=True,
        needs=("truncation_point_beyond_log_end",),
    ),
    Toggle(
        "truncation_point_beyond_log_end",
        "snapshot",
        "AutoSwitchHAClient.doTruncate (line 469), DefaultMessageStore.truncateFiles (line 776)",
        "A slave whose last epoch entry starts beyond its own log end (its end is then never set, so it "
        "stays Long.MAX_VALUE) can get a consistent point beyond that end; truncateFiles returns true "
        "without cutting and currentReportedOffset becomes the point, so the slave acks bytes it does not "
        "have and the master counts them (intended: the point is clamped to the slave's maxPhyOffset).",
        ("I2", "I8"),
        {**_DURABLE, "brokers": 2, "faults": _WIDE},
        in_snapshot=True,
        needs=("epoch_reapply_moves_start",),
    ),
    Toggle(
        "equal_start_epoch_not_recorded",
        "snapshot",
        "reference §2.7.1 note 1 / §7.3; apache/rocketmq PR #9942 (after the snapshot)",
        "appendEntry rejects an epoch that starts where the last one started, so a master elected "
        "before any byte of the previous epoch was written writes under the previous epoch, and two "
        "masters' different data can carry the same (epoch, startOffset). The intended form (the new "
        "epoch supersedes the empty one) trades that divergence for a handshake that finds no "
        "consistent point when the old master kept the empty epoch: it retries until an operator "
        "acts.",
        ("I5",),
        {**_DURABLE, "brokers": 2, "faults": _faults(admin_elections=1)},
        in_snapshot=True,
    ),
    Toggle(
        "received_epoch_survives_truncation",
        "snapshot",
        "reference §7.4 (AutoSwitchHAClient: currentReceivedEpoch reset only by reOpen)",
        "A slave that recorded (E, X) and reconnects without reOpen loses the entry to the inclusive "
        "truncateSuffixByOffset(X), but still believes it received epoch E, so it never records it "
        "again.",
        ("I5",),
        {**_DURABLE, "brokers": 2, "faults": _faults(admin_elections=1, connection_resets=1)},
        in_snapshot=True,
    ),
    Toggle(
        "confirm_ignores_proposed_sss",
        "snapshot",
        "rmqcheck finding; CommitLog.getConfirmOffset uses the local SyncStateSet size",
        "While an expansion {A} -> {A,B} awaits the controller, getConfirmOffset sees |local| == 1 "
        "and returns maxPhyOffset, so messages B lacks become visible to consumers; if the controller "
        "applied the expansion and A fails, B is elected without them.",
        ("I4",),
        {**_DURABLE, "brokers": 2, "faults": _faults()},
        in_snapshot=True,
    ),
    Toggle(
        "confirm_skips_unacked_members",
        "snapshot",
        "rmqcheck finding; AutoSwitchHAService.computeConfirmOffset's `slaveAckOffset > 0` filter",
        "computeConfirmOffset skips a connected SyncStateSet member whose ack is 0 (an empty replica) "
        "or -1 (a reconnected one that has not acked yet), so confirmOffset passes data that member "
        "lacks.",
        ("I4",),
        {**_DURABLE, "brokers": 2, "faults": _faults()},
        in_snapshot=True,
    ),
    Toggle(
        "alter_uses_epochs_at_send",
        "snapshot",
        "rmqcheck finding; ReplicasManager.doReportSyncStateSetChanged",
        "A queued AlterSyncStateSet carries the masterEpoch and syncStateSetEpoch current when it is "
        "sent, not those it was computed under, so a stale expansion passes the controller's fencing "
        "after the set changed, adding a replica that is no longer caught up.",
        ("I4",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=1, heartbeat_timeouts=1)},
        in_snapshot=True,
    ),
    Toggle(
        "boundary_batch_labelled_next_epoch",
        "snapshot",
        "reference §2.4 quirk HA1 (changeTransferEpochToNext before buildTransferHeaderBuffer)",
        "The batch that ends an epoch is labelled with the next epoch, so a slave whose first batch "
        "of epoch E is that batch never records E and attributes E's bytes to an older epoch.",
        ("I5",),
        {**_DURABLE, "brokers": 2, "faults": _faults(heartbeat_timeouts=2, connection_resets=1)},
        in_snapshot=True,
    ),
    Toggle(
        "proposal_overwrites_pending_sss",
        "snapshot",
        "rmqcheck finding; AutoSwitchHAService.markSynchronizingSyncStateSet (completes #5663)",
        "A new SyncStateSet proposal replaces the pending one, so after a lost response applied {A,C} "
        "the proposal {A,B} makes the master ack without C, which the controller can elect.",
        ("I2",),
        {**_DURABLE, "brokers": 3, "faults": _faults(lost_responses=1)},
        in_snapshot=True,
    ),
    Toggle(
        "controller_serves_before_apply",
        "A7",
        "commit 6645d0a42b, PR #4442 (5.0.0)",
        "A new controller leader serves requests before applying the committed log, so an election "
        "computed on stale state hands out an epoch already given to another master.",
        ("I6",),
        {**_DURABLE, "brokers": 3, "faults": _faults(crashes=1, heartbeat_timeouts=1, controller_failovers=1)},
    ),
    Toggle(
        "cq_recover_only_to_confirm",
        "A12",
        "apache/rocketmq#7689, PR #7690, fix 2c898c9b31 (5.2.0)",
        "recoverTopicQueueTable skips compensateForHA, so queue offsets restart from the dispatched "
        "prefix and a new message reuses a queue offset.",
        ("I8",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=1)},
    ),
    Toggle(
        "truncation_ascending_epochs",
        "pitfall",
        "RIP-44 design text, reference §6.1",
        "findConsistentPoint walks epochs in ascending order (the design pseudo-code), so the lowest "
        "common epoch wins and the slave truncates far too much.",
        ("I2",),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=2, admin_elections=1)},
    ),
    Toggle(
        "truncation_max_end",
        "pitfall",
        "issue 3 variant of EpochFileCache.findConsistentPoint (Math.min read as max)",
        "The consistent point is the larger of the two ends of the matched epoch, so the slave keeps "
        "bytes past the point where one side's epoch ended.",
        ("I5",),
        {**_DURABLE, "brokers": 2},
    ),
    Toggle(
        "truncation_keeps_local_end",
        "pitfall",
        "issue 3 variant of EpochFileCache.findConsistentPoint (ignores the epochs only the master has)",
        "The consistent point is the slave's end of the matched epoch: a master epoch that began "
        "earlier is ignored and the slave keeps bytes the master overwrote.",
        ("I5",),
        {**_DURABLE, "brokers": 2},
    ),
    Toggle(
        "truncation_keeps_master_end",
        "pitfall",
        "issue 3 variant of EpochFileCache.findConsistentPoint (ignores the epochs only the slave has)",
        "The consistent point is the master's end of the matched epoch: the slave's own later epoch "
        "is ignored and the slave keeps bytes no master accepted.",
        ("I5",),
        {**_DURABLE, "brokers": 2},
    ),
    Toggle(
        "truncation_matches_epoch_only",
        "pitfall",
        "issue 3 variant of EpochFileCache.findConsistentPoint (start offsets not compared)",
        "An epoch matches whatever its start offset on each side, so a slave that recorded the epoch "
        "at another offset keeps bytes of an older epoch.",
        ("I5",),
        {**_DURABLE, "brokers": 2},
    ),
    Toggle(
        "truncation_matches_start_only",
        "pitfall",
        "issue 3 variant of EpochFileCache.findConsistentPoint (epochs not compared)",
        "Entries match on the start offset alone, so two masters elected at the same log end in "
        "different epochs look like one and the slave keeps the deposed master's bytes.",
        ("I5",),
        {**_DURABLE, "brokers": 2},
    ),
    Toggle(
        "transfer_batch_spans_epochs",
        "pitfall",
        "RIP-44 design text, reference §6.2",
        "A transfer batch is not cut at the epoch end and keeps the current epoch's header, so bytes "
        "of the next epoch reach the slave labelled with the previous one.",
        ("I5",),
        {**_DURABLE, "brokers": 2, "faults": _faults(heartbeat_timeouts=1, admin_elections=1)},
    ),
    Toggle(
        "expand_without_epoch_start_check",
        "pitfall",
        "apache/rocketmq#5663 (the second expand condition), reference §2.6",
        "SyncStateSet expansion drops the 'slave reached the current epoch's start' condition.",
        (),
        {**_DURABLE, "brokers": 2, "faults": _faults(crashes=1, admin_elections=1)},
    ),
    Toggle(
        "elect_ignores_epoch_and_offset",
        "pitfall",
        "RIP-44 design text 'select one from the SyncStateSet', reference §6.7",
        "DefaultElectPolicy picks any alive SyncStateSet member instead of ordering by (epoch, maxOffset, priority).",
        ("I7", "I7b"),
        {**_DURABLE, "brokers": 3, "faults": _faults(crashes=1)},
    ),
    Toggle(
        "learner_requests_election",
        "finding",
        "found by rmqcheck (issue 27, the bootstrap checked): ReplicasManager.startBasicService calls brokerElect "
        "whatever asyncLearner says, and ReplicasInfoManager.electMaster's first election takes the requester "
        "unchecked; docs/en/controller/deploy.md says a learner 'will not be elected as Master'; reported upstream "
        "as apache/rocketmq #10013, fix PR #10014 (both open)",
        "An asyncLearner broker asks to be elected like any other: if it registers first it becomes master "
        "at masterEpoch 1 (the controller has no notion of learners). Intended: a learner never asks, and "
        "waits for a master.",
        ("I7",),
        {**_DURABLE, "brokers": 2, "async_learners": [1], "faults": _faults()},
        in_snapshot=True,
    ),
    Toggle(
        "acks_counted_per_connection",
        "finding",
        "found by rmqcheck (issue 27, the master's connection list modelled): GroupTransferService.doWaitTransfer "
        "counts acks per HAConnection (its own TODO, GroupTransferService.java:123: 'We must ensure every "
        "HAConnection represents a different slave'), and AutoSwitchHAService.connectionList keeps a slave's "
        "closed connection until its read loop notices",
        "The master keeps a slave's old connection beside its new one until the old one's read loop notices, "
        "and everything counts connections, not replicas: the slave's acks count twice, so an allAck put is "
        "acked while a SyncStateSet member lacks it, and computeConfirmOffset takes the stale connection's ack, "
        "so confirmOffset lags the acked data or goes back. Intended: a slave's new handshake supersedes its "
        "older connection, dropped at once, so each replica has one.",
        ("I2", "I4"),
        {**_DURABLE, "brokers": 3, "faults": _faults(lingering_connections=1)},
        in_snapshot=True,
    ),
    Toggle(
        "elect_compares_by_subtraction",
        "finding",
        "found by rmqcheck (issue 27, offsets at scale): DefaultElectPolicy.java:39-46 compares candidates with "
        "`(int) (o2.getMaxOffset() - o1.getMaxOffset())` and int subtractions of epochs and priorities; reported "
        "upstream as apache/rocketmq #10578, fixed by PR #10579 (Long.compare, after the snapshot)",
        "The election comparator casts the long difference of two maxOffsets to int, keeping its low 32 bits: "
        "candidates of one epoch 2 to 4 GiB apart compare the wrong way round (or, exactly 2 GiB apart, each "
        "below the other), so the TreeSet can put the replica with less data first and elect it; 4 GiB apart "
        "they compare equal and one is dropped. Intended: Long.compare (and Integer.compare for epochs and "
        "priorities, whose subtraction wraps for a negative priority).",
        ("I7", "I7b"),
        {**_DURABLE, **_LARGE, "brokers": 3, "faults": _WIDE},
        in_snapshot=True,
    ),
    Toggle(
        "slave_serves_ha_connections",
        "finding",
        "found by rmqcheck (issue 27, a portfolio hunt of the intended durable3 at the large scale): "
        "AutoSwitchHAConnection's HANDSHAKE has no role check and AutoSwitchHAClient.doTruncate "
        "(DefaultMessageStore.truncateFiles) does not touch the store's own HA connections",
        "A deposed master that has become a slave still serves HA connections: a slave that still takes it for "
        "its master reconnects to it, and when the deposed master truncates its log to follow the new master "
        "the connection goes on, so the slave records the new master's epoch at its start over bytes it got "
        "before the truncation: two replicas then hold different bytes under one (epoch, start), which the "
        "next handshake does not repair. Intended: a broker whose handshake truncates its log drops the HA "
        "connections it serves, as changeToSlave does, so its slaves reconnect and truncate in turn.",
        ("I5",),
        # found, and its scenario written, at the large scale (512 MiB messages near 2^63)
        {**_DURABLE, **_LARGE, "brokers": 3, "faults": _WIDE},
        in_snapshot=True,
    ),
    Toggle(
        "no_inactive_master_scan",
        "C1",
        "apache/rocketmq#9717 (fix 8fc57f1468); before #6382 / PR #6383 there was no periodic scan at all",
        "The controller never turns a dead master into an election (jRaft's scanNotActiveBroker had an inverted "
        "guard; before #6382 a missed inactive event was never repeated): a set whose master died stays "
        "without one while its live slaves keep seeing the same masterEpoch. A liveness defect (L1).",
        ("L1",),
        {**_DURABLE, "brokers": 2, "max_messages": 0, "faults": _faults(crashes=1)},
    ),
    Toggle(
        "shrink_task_dies_on_removal",
        "C2",
        "apache/rocketmq#7219, PR #7220, fix 017ad11047 (5.1.4)",
        "maybeShrinkSyncStateSet removed members inside a for-each over the set; the "
        "ConcurrentModificationException cancelled the scheduled shrink task for good, so a dead "
        "member stays in the SyncStateSet and allAck writes time out until the master restarts. A "
        "liveness defect (L3).",
        ("L3",),
        {**_DURABLE, "brokers": 2, "max_messages": 0, "faults": _faults(crashes=1, admin_elections=1)},
    ),
    Toggle(
        "heartbeat_ignored_without_entry",
        "C1",
        "apache/rocketmq#5712, PR #5711, fix 646d04f425 (5.1.0)",
        "A new controller leader's heartbeat table (in-memory soft state) starts empty, and "
        "onBrokerHeartbeat ignores a broker it has no entry for (only registerBroker created one): "
        "after a controller failover no running broker is seen alive again, so a master's death is "
        "never turned into an election (L1) and the live master cannot shrink out a dead member (L3).",
        ("L1", "L3"),
        {**_DURABLE, "brokers": 2, "max_messages": 0, "faults": _faults(crashes=1, controller_failovers=1)},
    ),
    Toggle(
        "transfer_only_confirmed",
        "mutant",
        "harness mutant (no known bug): #9689's stall, the known bug that keeps a member lagging, needs "
        "commit-log file expiry, which is not modelled",
        "WriteSocketService ships only up to confirmOffset instead of the log end. Under allAck the "
        "confirmOffset waits for the member's ack, which waits for the data, and the writer's 'nothing to "
        "send' heartbeats keep refreshing the member's caught-up time, so it is never shrunk out: "
        "replication never resumes. A liveness defect (L2); stateful hunts find no safety violation.",
        ("L2",),
        {**_DURABLE, "brokers": 2, "max_messages": 1, "faults": _faults()},
    ),
    Toggle(
        "transfer_ack_strictly_past",
        "mutant",
        "harness mutant (no known bug): an off-by-one in GroupTransferService.doWaitTransfer's ack "
        "comparison (slaveAckOffset >= the request's nextOffset, GroupTransferService.java:111)",
        "An allAck put counts a slave's ack only past the put's end. A slave acks its max offset, which "
        "is the put's end when the put is the last message, so the put times out (FLUSH_SLAVE_TIMEOUT) "
        "though every SyncStateSet member holds it: writes are unavailable, and no safety invariant "
        "objects (I12 does).",
        ("I12",),
        {**_DURABLE, "brokers": 2, "max_messages": 1, "faults": _faults()},
    ),
)

BY_NAME: dict[str, Toggle] = {t.name: t for t in TOGGLES}
SNAPSHOT: frozenset[str] = frozenset(t.name for t in TOGGLES if t.in_snapshot)


def check_toggle_names(names) -> None:
    unknown = sorted(set(names) - BY_NAME.keys())
    if unknown:
        raise ValueError(f"unknown bug toggle(s) {unknown}; see `rmqcheck bugs --list`")
