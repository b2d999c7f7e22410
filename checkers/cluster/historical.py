"""Historical replication bugs put back into RocketMQ's tree: each undoes the fix at the snapshot
(reference/known-bugs.md names the issue, the PR and the fix commit), so `rmqcheck cluster
--rocketmq-src TREE` can show it catches what RocketMQ once shipped. A tree is made once under
build/patched/<name>/ (checkers/java/build.py, `patched`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from rmqcheck.checkers.java import build

_S = "store/src/main/java/org/apache/rocketmq/store/"
_HA = _S + "ha/autoswitch/AutoSwitchHAService.java"
_RM = "broker/src/main/java/org/apache/rocketmq/broker/controller/ReplicasManager.java"
_CQS = _S + "queue/ConsumeQueueStore.java"


class HistoricalBug(NamedTuple):
    ref: str  # known-bugs.md's entry and the upstream issue
    fixed_by: str
    toggle: str  # the model's bug toggle for the same defect (model/bugs.py)
    config: str  # the smallest named configuration that promises what it breaks
    what: str
    changes: tuple[build.Change, ...]


BUGS: dict[str, HistoricalBug] = {
    # The master counted acks by its local set while its AlterSyncStateSet was in flight: once the
    # controller applied an expanded set whose answer was lost, the master acked alone.
    "sss_expand_answer_lost": HistoricalBug(
        "A1, #5663", "2cc899fc35 (PR #5798), 5.1.1", "ack_uses_local_sss_only", "durable",
        "AutoSwitchHAService ignores the proposed SyncStateSet (getSyncStateSet, inSyncReplicasNums)",
        (build.Change(_HA, "if (this.isSynchronizingSyncStateSet) {", "if (false) {", count=2),)),
    # A master re-confirmed by the controller (after a restart) set its local set to itself at the
    # controller's sssEpoch: local {A} and remote {A,B} at one epoch, so it acked alone.
    "master_sss_self_only": HistoricalBug(
        "A2, #6342", "63a014b810 (PR #6352), 5.1.1", "on_become_master_sss_self_only", "durable",
        "ReplicasManager.changeToMaster installs {self} instead of the controller's SyncStateSet",
        (build.Change(_RM, "final HashSet<Long> newSyncStateSet = new HashSet<>(syncStateSet);",
                      "final HashSet<Long> newSyncStateSet = new HashSet<>(java.util.Collections.singleton("
                      "this.brokerControllerId));", count=2),)),
    # confirmOffset took the minimum over connected members only: a member that lost its
    # connection no longer held confirmOffset back.
    "confirm_over_connected_only": HistoricalBug(
        "A3, #6662", "7903c70412 (PR #6663), 5.1.1", "confirm_min_over_connected_only", "durable3",
        "AutoSwitchHAService.computeConfirmOffset skips SyncStateSet members with no connection",
        (build.Change(_HA, "if (!idList.contains(syncId) && this.localBrokerId != null", "if (false && this.localBrokerId != null"),)),
    # A restarted master's topicQueueTable was rebuilt from the consume queues, which recovery
    # dispatches only up to confirmOffset: a new message took the queue offset of an unconfirmed
    # one still in the commit log, and once that one was confirmed the two shared it.
    "cq_recover_only_to_confirm": HistoricalBug(
        "A12, #7689", "2c898c9b31 (PR #7690), 5.2.0", "cq_recover_only_to_confirm", "durable",
        "ConsumeQueueStore.recoverOffsetTable skips compensateForHA (queue offsets from the dispatched prefix)",
        (build.Change(_CQS, "            compensateForHA(cqOffsetTable);", "            // compensateForHA(cqOffsetTable);"),)),
}


def tree(name: str, src: str | None = None) -> Path:
    """The tree with bug `name` put back (made once), for --rocketmq-src."""
    return build.patched(f"historical-{name}", BUGS[name].changes, src)
