"""Conformance can fail: copies of the shared tree (under build/patched/), each with one change
to a class a driver loads, compiled and compared with the unchanged model. Every change must
come back as a short divergence.

Each change is one that guards a documented property (the line it changes is cited at the
snapshot 8fc57f1468, with the PR that wrote it where there is one); a regression there would
silently break what the model, and so every proof and matrix cell, assumes. The HA ones are the
intended forms of findings, so they also show that those findings are the code's behaviour.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqcheck.checkers.java import build, conform
from rmqcheck.checkers.java.driver import JavaDriver

from conftest import needs_rocketmq

_C = "controller/src/main/java/org/apache/rocketmq/controller/"
_S = "store/src/main/java/org/apache/rocketmq/store/"
_E = _S + "ha/autoswitch/EpochFileCache.java"

MUTANTS = {
    # ReplicasInfoManager.java:153, the SyncStateSet-epoch fence (RIP-44): without it a master's
    # stale AlterSyncStateSet overwrites a newer set (known-bugs A1, #5663, is the race it fences).
    "alter_sss_without_epoch_fence": (
        _C + "impl/manager/ReplicasInfoManager.java",
        "if (syncStateSet.getSyncStateSetEpoch() != syncStateInfo.getSyncStateSetEpoch()) {",
        "if (false) {"),
    # DefaultElectPolicy.java:44: candidates sorted by epoch descending; reversed, the most stale
    # replica wins an unclean or undesignated election.
    "elect_prefers_oldest_epoch": (
        _C + "elect/impl/DefaultElectPolicy.java",
        "return o2.getEpoch() - o1.getEpoch();",
        "return o1.getEpoch() - o2.getEpoch();"),
    # EpochFileCache.java:237: the consistent point is the smaller of the two ends; the larger
    # keeps a slave's divergent tail (the truncation proofs rest on min).
    "consistent_point_takes_max": (
        _E,
        "consistentOffset = Math.min(curLocalEntry.getValue().getEndOffset(), compareEntry.getEndOffset());",
        "consistentOffset = Math.max(curLocalEntry.getValue().getEndOffset(), compareEntry.getEndOffset());"),
    # DefaultBrokerHeartbeatManager.java:137: (epoch, maxOffset) only grow; taking every
    # heartbeat lets a truncated replica lower the view the election reads.
    "heartbeat_view_may_shrink": (
        _C + "impl/heartbeat/DefaultBrokerHeartbeatManager.java",
        "if (realEpoch > prev.getEpoch() || realEpoch == prev.getEpoch() && realMaxOffset > prev.getMaxOffset()) {",
        "if (true) {"),
    # EpochFileCache.java:106: an appended entry must grow in epoch and in start offset.
    "append_accepts_equal_start": (
        _E,
        "lastEntry.getStartOffset() >= entry.getStartOffset()",
        "lastEntry.getStartOffset() > entry.getStartOffset()"),
    # AutoSwitchHAService.java:433, PR #6729 (issue #6728): acks of 0 and -1 are skipped; counting
    # them is the intended form of the finding confirm_skips_unacked_members.
    "confirm_counts_unacked_members": (
        _S + "ha/autoswitch/AutoSwitchHAService.java",
        "if (currentSyncStateSet.contains(slaveId) && connection.getSlaveAckOffset() > 0) {",
        "if (currentSyncStateSet.contains(slaveId) && connection.getSlaveAckOffset() >= 0) {"),
    # AutoSwitchHAService.java:356: an ack recomputes confirmOffset only for a member of the local
    # set; the proposed set too is what once let a broker with no role confirm (the 18-step I3).
    "ack_confirms_for_proposed_members": (
        _S + "ha/autoswitch/AutoSwitchHAService.java",
        "if (this.syncStateSet.contains(slaveBrokerId)) {",
        "if (getSyncStateSet().contains(slaveBrokerId)) {"),
    # AutoSwitchHAClient.java:469: the slave reports the consistent point, even past its own log
    # end; the clamp is the intended form of the finding truncation_point_beyond_log_end.
    "truncation_point_clamped": (
        _S + "ha/autoswitch/AutoSwitchHAClient.java",
        "this.currentReportedOffset = truncateOffset;",
        "this.currentReportedOffset = Math.min(truncateOffset, this.messageStore.getMaxPhyOffset());"),
    # CommitLog.java:677: a lone master (by its local set) confirms up to its max offset; by the
    # proposed set it would not (the intended form of the finding confirm_ignores_proposed_sss).
    "lone_by_proposed_set": (
        _S + "CommitLog.java",
        "if (((AutoSwitchHAService) this.defaultMessageStore.getHaService()).getLocalSyncStateSet().size() == 1\n",
        "if (((AutoSwitchHAService) this.defaultMessageStore.getHaService()).getSyncStateSet().size() == 1\n"),
    # GroupTransferService.java:109: an allAck put counts acks per connection (its TODO at line
    # 121); counting each slave's newest connection once is what the intended form of the
    # finding acks_counted_per_connection (one connection per slave) gives.
    "wait_counts_each_slave_once": (
        _S + "ha/GroupTransferService.java",
        "for (HAConnection conn : haService.getConnectionList()) {\n"
        "                            final AutoSwitchHAConnection autoSwitchHAConnection",
        "for (HAConnection conn : new java.util.LinkedHashMap<Long, HAConnection>() {{ for (HAConnection c : "
        "haService.getConnectionList()) { put(((AutoSwitchHAConnection) c).getSlaveId(), c); } }}.values()) {\n"
        "                            final AutoSwitchHAConnection autoSwitchHAConnection"),
    # The four below are in branches the generator reaches since the broker-set bring-up
    # (requests._bring_up) and the moved / channel-less requests (issue 42).
    # ReplicasInfoManager.java:163: every member of a new SyncStateSet must be a registered
    # replica; without the check an id no broker applied for joins the set (a wrong broker's
    # request) and could later be elected (I7, election eligibility).
    "alter_sss_accepts_unknown_members": (
        _C + "impl/manager/ReplicasInfoManager.java",
        "if (!brokerReplicaInfo.isBrokerExist(replica)) {",
        "if (false) {"),
    # AutoSwitchHAService.java:105: a closed connection's slave is proposed out of the SyncStateSet;
    # kept, a master's allAck puts wait for a slave that no longer replicates, and its set keeps
    # a member an election may pick though it lags (reference §2.6, "Disconnect").
    "closed_connection_keeps_member": (
        _S + "ha/autoswitch/AutoSwitchHAService.java",
        "if (syncStateSet.contains(slave)) {",
        "if (false) {"),
    # ReplicasInfoManager.java:169: every member must be alive; a dead replica in the set makes
    # allAck puts wait for it and a later election pick it (I2, SyncStateSet safety).
    "alter_sss_accepts_dead_members": (
        _C + "impl/manager/ReplicasInfoManager.java",
        "if (!brokerAlivePredicate.check(brokerReplicaInfo.getClusterName(), "
        "brokerReplicaInfo.getBrokerName(), replica)) {",
        "if (false) {"),
    # ReplicasInfoManager.java:177: the master must stay in its own set (reference §3.3); a set
    # without it lets an election pass over the replica that holds every acked message.
    "alter_sss_may_drop_master": (
        _C + "impl/manager/ReplicasInfoManager.java",
        "if (!newSyncStateSet.contains(syncStateInfo.getMasterBrokerId())) {",
        "if (false) {"),
    # ReplicasInfoManager.java:352: registration reports the master only while it is alive;
    # reporting a dead one sends a restarting broker to a master that cannot serve it.
    "register_reports_dead_master": (
        _C + "impl/manager/ReplicasInfoManager.java",
        "if (syncStateInfo.isMasterExist() && alivePredicate.check(clusterName, brokerName, "
        "syncStateInfo.getMasterBrokerId())) {",
        "if (syncStateInfo.isMasterExist()) {"),
    # DefaultBrokerHeartbeatManager.java:158: closing a channel the manager does not know (a
    # broker before its first heartbeat) must forget nothing; removing unconditionally throws
    # (ConcurrentHashMap.remove(null)) on the controller's channel-close path.
    "channel_close_removes_unknown": (
        _C + "impl/heartbeat/DefaultBrokerHeartbeatManager.java",
        "if (addrInfo != null) {",
        "if (true) {"),
}
HA_MUTANTS = {name for name, (rel, _, _) in MUTANTS.items() if not rel.startswith(_C) and rel != _E}

pytestmark = needs_rocketmq


def patched_tree(name: str) -> Path:
    """The shared tree's source roots with one mutant applied, under build/patched/<name>/."""
    return build.patched(name, (build.Change(*MUTANTS[name]),))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_conform_reports_each_change_as_a_short_divergence(name, classpath):
    tree = patched_tree(name)
    if name in HA_MUTANTS:
        core, ha = classpath, build.build(tree, target=build.HA)
    else:
        core, ha = build.build(tree), None
    with JavaDriver(core) as driver:
        if ha is None:
            tally = conform.conform(driver, seed=0, budget=120)
        else:
            with JavaDriver(ha) as ha_driver:
                tally = conform.conform(driver, seed=0, budget=120, ha_driver=ha_driver)
    assert tally.divergence is not None, f"{name}: no divergence in {tally.operations:,} requests"
    assert len(tally.divergence.steps) <= conform.PREAMBLE + 8, [conform.format_request(s.request)
                                                                 for s in tally.divergence.steps]


def test_a_patched_tree_is_the_base_s_classes_with_its_changed_file_compiled_again(classpath):
    """build.patched trees compile incrementally (build._compile_changes): the changed class
    differs from the base's, every other class is the base's own file."""
    cp = build.build(patched_tree("elect_prefers_oldest_epoch"))
    changed = Path("org/apache/rocketmq/controller/elect/impl/DefaultElectPolicy.class")
    kept = Path("org/apache/rocketmq/controller/impl/manager/ReplicasInfoManager.class")
    assert (cp.classes / changed).read_bytes() != (classpath.classes / changed).read_bytes()
    assert (cp.classes / kept).read_bytes() == (classpath.classes / kept).read_bytes()
