"""Conformance can fail: copies of the shared tree (under build/patched/), each with one change
to a class the driver loads, compiled and compared with the unchanged model. Every change must
come back as a short divergence.

Each change is one that guards a documented property (the line it reverts is cited at the
snapshot 8fc57f1468); a regression there would silently break what the model, and so every
proof and matrix cell, assumes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rmqcheck.checkers.java import build, conform
from rmqcheck.checkers.java.driver import JavaDriver

from conftest import needs_rocketmq

PATCHED = build.REPO / "build" / "patched"
_C = "controller/src/main/java/org/apache/rocketmq/controller/"
_E = "store/src/main/java/org/apache/rocketmq/store/ha/autoswitch/EpochFileCache.java"

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
}

pytestmark = needs_rocketmq


def patched_tree(name: str) -> Path:
    """The shared tree's source roots with one mutant applied, under build/patched/<name>/."""
    rel, old, new = MUTANTS[name]
    tree = PATCHED / name
    if not (tree / ".patched").exists():
        shutil.rmtree(tree, ignore_errors=True)
        root = build._extract(build.locate(None), tree / "x")
        text = (root / rel).read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{name}: the line to change is not in the tree once"
        (root / rel).write_text(text.replace(old, new), encoding="utf-8")
        (tree / ".patched").write_text(str(root.relative_to(tree)))
    return tree / (tree / ".patched").read_text()


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_conform_reports_each_change_as_a_short_divergence(name):
    classpath = build.build(patched_tree(name))
    with JavaDriver(classpath) as driver:
        tally = conform.conform(driver, seed=0, budget=120)
    assert tally.divergence is not None, f"{name}: no divergence in {tally.operations:,} requests"
    assert len(tally.divergence.steps) <= conform.PREAMBLE + 8, [conform.format_request(s.request)
                                                                 for s in tally.divergence.steps]
