"""RocketMQ's own logs, read as evidence: what an operator has after an incident. The checks a
log set can be judged by (CHECKS), over the records log_records.py reads, each ordering records
across nodes by epochs and offsets only (timestamps order nothing across nodes)."""

from __future__ import annotations

from pathlib import Path

from .history import Violation, shape
from .log_records import (BECAME_MASTER, BEGIN_MASTER, BEGIN_SLAVE, CONSISTENT_POINT,
                          CONTROLLER_CLEAN, CONTROLLER_ELECTED, CONTROLLER_SSS, CQ_ORDER_WRONG, CQ_UNIT,
                          ELECTED_SSS_EPOCH, EMPTY_LOCAL, EPOCH_ENTRIES, JOIN_RAN_OUT, LEARNER,
                          NEW_MASTER_TRUNCATED, NOTHING_TO_CUT, OWN_ID, SSS_ALTER_FAILED, SSS_CHANGED,
                          TRANSFER_EPOCH_LOST, Node, Record, alter_result, at, epoch_entries, id_set, read_set)

CHECKS: tuple[str, ...] = ("one_master_per_epoch", "epoch_agreement_in_logs", "truncation_below_confirm",
                           "consistent_point_beyond_log_end",
                           "election_outside_sss", "election_outside_logged_sss", "same_master_epoch_bump",
                           "consume_queue_order", "sss_alter_adds_and_removes", "learner_became_master",
                           "received_epoch_not_recorded", "applied_proposal_overwritten")
# What the model judges each by: an invariant of its catalogue (invariants/catalogue.py), or for
# the epochs the logs give, the store check of epoch files. The broker-side election check is
# reported only: a master synchronizing an expansion acks with the proposed set before it logs
# "SyncStateSet changed", so its log can lack a member the controller rightly elects.
INVARIANT = {"one_master_per_epoch": "I6", "epoch_agreement_in_logs": "epoch_agreement", "truncation_below_confirm": "I9",
             "consistent_point_beyond_log_end": "I2",
             "election_outside_sss": "I7", "learner_became_master": "I7", "same_master_epoch_bump": "I5",
             "consume_queue_order": "I1", "received_epoch_not_recorded": "I5"}
REPORTED = {"election_outside_logged_sss": "a broker's log can lack the expansion its master acked with "
                                           "(controller.log's check is the one that fails)",
            "sss_alter_adds_and_removes": "the stale alter it shows loses a message only if a failover follows "
                                          "while a member it added lags",
            "applied_proposal_overwritten": "the logs show the proposals, not what the master acked with: the "
                                            "finding's fix logs the same lines and waits for the member"}


def check_set(set_dir: str) -> list[Violation]:
    return judge_set(set_dir)[0]


def judge_set(set_dir: str) -> tuple[list[Violation], int]:
    """The checks a log set can be judged by (CHECKS), each ordering records across nodes by
    epochs and offsets only; and how many records the set holds."""
    root = Path(set_dir)
    run = root.name
    nodes = read_set(root)
    out: list[Violation] = []
    starts: dict[int, dict[int, list[str]]] = {}  # epoch -> start offset -> where each was said
    masters: dict[int, dict[str, str]] = {}  # epoch -> node -> where it said it became master
    became: dict[int, dict[str, set[int]]] = {}  # epoch -> node -> the offsets it became master at
    for node in nodes:
        bump: tuple[int, str] | None = None  # a same-master epoch bump this node still serves
        point: int | None = None  # the consistent point of this node's handshake in progress
        for r in node.of("store"):
            if m := CONSISTENT_POINT.fullmatch(r.message):
                point = int(m.group(1))
                continue
            if point is not None and (m := NOTHING_TO_CUT.fullmatch(r.message)) and point == int(m[1]) > int(m[2]):
                out.append(Violation("consistent_point_beyond_log_end", run, node.name, 1, f"{at(node.name, r)}: "
                                     f"a handshake's consistent point {point} is beyond the slave's log end {m[2]}; "
                                     f"the slave reports {point} as its offset and acks bytes it does not hold; "
                                     + shape("truncation_point_beyond_log_end", "nothing was cut")))
            point = None  # only the record right after the point says what became of it
            if m := BECAME_MASTER.search(r.message):
                epoch, start = int(m.group(2)), int(m.group(3))
                masters.setdefault(epoch, {}).setdefault(node.name, at(node.name, r))
                became.setdefault(epoch, {}).setdefault(node.name, set()).add(start)
                starts.setdefault(epoch, {}).setdefault(start, []).append(f"{at(node.name, r)} (becoming master)")
                bump = (epoch, at(node.name, r)) if m.group(1) else None
            elif "Change ha to slave success" in r.message:
                bump = None
            elif m := NEW_MASTER_TRUNCATED.search(r.message):
                cut, confirm, end = (int(x) for x in m.groups())
                if 0 <= cut < confirm:  # -1: truncateInvalidMsg found nothing to cut
                    out.append(Violation("truncation_below_confirm", run, node.name, 1,
                                         f"{at(node.name, r)}: becoming master it truncated its commit log to {cut}, "
                                         f"below its confirmOffset {confirm} (maxPhyOffset {end}): confirmed messages "
                                         f"cut, or confirmOffset left past the data (#6665)"))
            elif m := EPOCH_ENTRIES.search(r.message):
                for epoch, start, _ in epoch_entries(m.group(2)):
                    starts.setdefault(epoch, {}).setdefault(start, []).append(
                        f"{at(node.name, r)} ({m.group(1)} entries at a handshake)")
            elif (m := TRANSFER_EPOCH_LOST.search(r.message)) and bump is not None:
                epoch = int(m.group(2) or m.group(3))
                out.append(Violation("same_master_epoch_bump", run, node.name, 1,
                                     f"{at(node.name, r)}: after a same-master epoch bump to {bump[0]} ({bump[1]}), "
                                     f"an open HA connection still transfers under epoch {epoch} (apache/rocketmq#9689)"))
                bump = None  # once a bump
    for epoch, by_node in sorted(masters.items()):
        if len(by_node) > 1:
            out.append(Violation("one_master_per_epoch", run, f"epoch {epoch}", len(by_node),
                                 f"{len(by_node)} brokers became master at masterEpoch {epoch}: "
                                 + ", ".join(f"{n} ({w})" for n, w in sorted(by_node.items()))))
    for epoch, said in sorted(starts.items()):
        if len(said) > 1:
            out.append(Violation("epoch_agreement_in_logs", run, f"epoch {epoch}", len(said),
                                 f"epoch {epoch} starts at {len(said)} offsets: "
                                 + "; ".join(f"{s} at {', '.join(w[:2])}" for s, w in sorted(said.items()))
                                 + _reapplied(epoch, became.get(epoch, {}))))
    return (out + _consume_queues(nodes, run) + _elections(nodes, run) + _stale_alters(nodes, run)
            + _learners(nodes, run) + _received_epochs(nodes, run) + _overwritten_proposals(nodes, run),
            sum(len(n.records) for n in nodes))


def _reapplied(epoch: int, became: dict[str, set[int]]) -> str:
    """The shape epoch_reapply_moves_start leaves, if one broker became master at `epoch` at two
    offsets: ReplicasManager.changeToMaster acts only on an epoch above the one in its memory, so
    the second time its memory was new (a restart the controller had not noticed), and
    AutoSwitchHAService.changeToMaster re-applied the epoch at its log's end."""
    twice = sorted(n for n, starts in became.items() if len(starts) > 1)
    return "; " + shape("epoch_reapply_moves_start", f"{twice[0]} became master at epoch {epoch} at "
                        f"{len(became[twice[0]])} offsets, each its log's end then") if twice else ""


def _consume_queues(nodes: list[Node], run: str) -> list[Violation]:
    """consume_queue_order: a broker whose storeerror.log says a consume queue's entries are off
    their queue offsets; one violation a queue, at its first record, with how many followed, and
    the last 90 s join of a ReputMessageService broker.log shows at or before it."""
    out: list[Violation] = []
    for node in nodes:
        joins = [(r, int(m[1])) for r in node.of("broker")
                 if (m := JOIN_RAN_OUT.search(r.message)) and int(m[1]) >= int(m[2])]
        first: dict[tuple[str, str], tuple[Record, int, int]] = {}
        count: dict[tuple[str, str], int] = {}
        for r in node.of("storeerror"):
            if m := CQ_ORDER_WRONG.search(r.message):
                queue = (m[3], m[4])
                first.setdefault(queue, (r, int(m[1]) // CQ_UNIT, int(m[2]) // CQ_UNIT))
                count[queue] = count.get(queue, 0) + 1
        for (topic, qid), (r, expected, put_at) in sorted(first.items()):
            more = f", and {count[topic, qid] - 1} more records like it" if count[topic, qid] > 1 else ""
            before = [j for j in joins if j[0].time <= r.time]  # one node's clock: its times order its files
            cause = (f"; its ReputMessageService outlived a {before[-1][1] // 1000} s join "
                     f"({at(node.name, before[-1][0])}), as apache/rocketmq#9811 leaves it" if before else "")
            out.append(Violation("consume_queue_order", run, f"{node.name} {topic} queue {qid}", count[topic, qid],
                                 f"{at(node.name, r)}: the message of queue offset {expected} went to consume-queue "
                                 f"entry {put_at}{more}: consumers reading by queue offset skip acked messages"
                                 f"{cause}"))
    return out


def _elections(nodes: list[Node], run: str) -> list[Violation]:
    """election_outside_logged_sss: each new master the controller's log does not judge, against
    the SyncStateSet the previous epoch's master last logged (ReplicasManager). Reported only
    (REPORTED)."""
    acked: dict[int, tuple[str, frozenset[int], str]] = {}  # epoch -> (master node, its last set, where)
    elected: dict[int, tuple[int | str, str]] = {}  # epoch -> (master id, or its node; where said)
    ids: dict[str, int] = {}
    for node in nodes:
        serving = None  # the epoch this node is master of
        for r in node.of("broker"):
            if m := BEGIN_MASTER.search(r.message):
                serving = int(m.group(1))
                elected.setdefault(serving, (node.name, at(node.name, r)))
                acked[serving] = (node.name, frozenset(), at(node.name, r))
            elif m := BEGIN_SLAVE.search(r.message):
                ids[node.name], serving = int(m.group(1)), None
                elected.setdefault(int(m.group(3)), (int(m.group(2)), at(node.name, r)))
            elif m := OWN_ID.search(r.message):
                ids[node.name] = int(m.group(1))
            elif (m := SSS_CHANGED.search(r.message)) and serving is not None:
                acked[serving] = (node.name, id_set(m.group(2)), at(node.name, r))
    out = _controller_elections(nodes, run)
    judged = {v.subject for v in out}
    for epoch, (master, where) in sorted(elected.items()):
        if f"epoch {epoch}" in judged:
            continue
        master = ids.get(master, master) if isinstance(master, str) else master
        before = [e for e in acked if e < epoch]
        if not before or not isinstance(master, int):
            continue
        old, sss, said = acked[max(before)]
        if master != ids.get(old) and sss and master not in sss:
            out.append(Violation("election_outside_logged_sss", run, f"epoch {epoch}", 1,
                                 f"broker {master} became master at masterEpoch {epoch} ({where}), outside the "
                                 f"SyncStateSet {sorted(sss)} the master of epoch {max(before)} ({old}) last acked "
                                 f"with ({said}): it may lack acknowledged messages (allowed only with "
                                 f"enableElectUncleanMaster)"))
    return out


def _controller_elections(nodes: list[Node], run: str) -> list[Violation]:
    """election_outside_sss from a controller's own log: each master it elects, against the
    SyncStateSet it last applied for that broker set."""
    out = []
    for node in nodes:
        sss: dict[str, frozenset[int]] = {}
        for r in node.of("controller"):
            for m in CONTROLLER_SSS.finditer(r.message):
                sss[m.group(1)] = id_set(m.group(2))
            if m := CONTROLLER_ELECTED.search(r.message):
                group, master, epoch = m.group(1), int(m.group(2)), int(m.group(3))
                if sss.get(group) and master not in sss[group]:
                    out.append(Violation("election_outside_sss", run, f"epoch {epoch}", 1,
                                         f"{at(node.name, r)}: the controller elected broker {master} of {group} at "
                                         f"masterEpoch {epoch}, outside the SyncStateSet {sorted(sss[group])} it had "
                                         f"applied (allowed only with enableElectUncleanMaster)"))
                sss[group] = frozenset({master})
    return out


def _stale_alters(nodes: list[Node], run: str) -> list[Violation]:
    """sss_alter_adds_and_removes: a SyncStateSet applied by AlterSyncStateSet that both adds and
    removes members of the set before it. A master computes each change from its local set, the
    controller's at that epoch, so a change computed there only grows or only shrinks it; one
    that does both was computed under an older set and passed the epoch fence because the master
    sends the epochs current at send time, the signature of alter_uses_epochs_at_send
    (ReplicasManager.doReportSyncStateSetChanged :761). The intended model makes no such change
    (tests/test_logs.py). Judged by controller.log, each result against the set one
    SyncStateSet epoch before (across controller nodes); without it, by each master's broker.log
    (ReplicasManager.changeSyncStateSet :340, in its own order). An election's set is its master
    alone, so a change to one member is never judged; nor is one after an admin's cleanBrokerData,
    which changes the set without a new epoch. One violation a broker set or broker."""
    sets: dict[tuple[str, int], dict[frozenset[int], str]] = {}  # (group, epoch) -> set -> where said
    alters: list[tuple[str, int, frozenset[int], str]] = []
    cleaned: set[tuple[str, int]] = set()  # (group, epoch) whose set a clean changed
    for node in nodes:
        last: dict[str, int] = {}  # group -> the SyncStateSet epoch of this node's last result
        for r in node.of("controller"):
            if m := CONTROLLER_CLEAN.search(r.message):
                if m[1] in last:
                    cleaned.add((m[1], last[m[1]]))
                continue
            if result := alter_result(r.message):
                group, epoch, ids = result
                alters.append((group, epoch, ids, at(node.name, r)))
            elif (m := CONTROLLER_ELECTED.search(r.message)) and (e := ELECTED_SSS_EPOCH.search(r.message)):
                group, epoch, ids = m[1], int(e[1]), frozenset({int(m[2])})
            else:
                continue
            last[group] = epoch
            sets.setdefault((group, epoch), {}).setdefault(ids, at(node.name, r))
    seen: dict[str, list[str]] = {}  # subject -> each change's description
    for group, epoch, ids, where in alters:
        before = sets.get((group, epoch - 1), {})
        if len(before) == 1 and (group, epoch - 1) not in cleaned:  # two results at one epoch: one was not appended (:493); judge neither
            (old, said), = before.items()
            if not (old <= ids or ids <= old):
                seen.setdefault(group, []).append(f"{where}: the controller applied {sorted(ids)} at "
                                                  f"syncStateSetEpoch {epoch} over {sorted(old)} ({said})")
    if not alters:
        for node in nodes:
            for r in node.of("broker"):
                if (m := SSS_CHANGED.search(r.message)) and len(ids := id_set(m[2])) > 1:
                    old = id_set(m[1])
                    if not (old <= ids or ids <= old):
                        seen.setdefault(node.name, []).append(f"{at(node.name, r)}: the master applied "
                                                              f"{sorted(ids)} over {sorted(old)}")
    return _each_subject("sss_alter_adds_and_removes", run, seen, "changes", "a SyncStateSet change computed under an "
                         "older set passed the epoch fence; " + shape("alter_uses_epochs_at_send", "a stale alter accepted"))


def _learners(nodes: list[Node], run: str) -> list[Violation]:
    """learner_became_master: a broker started with asyncLearner=true (its last start's settings
    before it, in its broker.log) that begins to change to master. The deployment guide says a
    learner is never elected; ReplicasManager.startBasicService (:200) asks for an election
    whatever asyncLearner says, and the controller elects the first requester of a broker set
    unchecked: the signature of learner_requests_election (apache/rocketmq#10013). One violation
    a broker, at its first change, with the count."""
    out = []
    for node in nodes:
        learner: Record | None = None  # the settings line of a start as a learner
        became: list[tuple[Record, Record]] = []  # (the settings line, the change to master)
        for r in node.of("broker"):
            if m := LEARNER.fullmatch(r.message):
                learner = r if m[1] == "true" else None
            elif learner is not None and BEGIN_MASTER.search(r.message):
                became.append((learner, r))
        if became:
            settings, first = became[0]
            more = f", and {len(became) - 1} more times" if len(became) > 1 else ""
            out.append(Violation("learner_became_master", run, node.name, len(became),
                                 f"{at(node.name, first)}: a broker started as an async learner "
                                 f"({at(node.name, settings)}) began to change to master at masterEpoch "
                                 f"{BEGIN_MASTER.search(first.message)[1]}{more}: a learner is never to be elected; "
                                 + shape("learner_requests_election", "a learner elected")))
    return out


def _received_epochs(nodes: list[Node], run: str) -> list[Violation]:
    """received_epoch_not_recorded: within one slave session (from "Change ha to slave success",
    whose reOpen resets the HA client's currentReceivedEpoch, to the next role change), a
    handshake cut the entry (E, S) of its master's last epoch at S, an entry the slave had
    appended since the session's previous handshake, so received; and then the slave's entries
    attribute bytes from S on to an older epoch: at a later handshake of the session (its log
    past S, no entry of E, its master's still starting E at S), or, when the session ended with
    the slave becoming master of E2 from X > S, as the master entries of epoch E2 another
    handshake shows (an older epoch's entry covering S, none of E). The client took epoch E as
    still received (AutoSwitchHAClient.doTruncate :466 leaves currentReceivedEpoch) and recorded
    none of E's headers again (:557). With the finding's fix the first header after the cut
    records (E, S) again. The signature of received_epoch_survives_truncation; one violation a
    slave, at its first, with the count."""
    found: dict[str, list[str]] = {}
    promoted: list[tuple[str, int, int, str, int, int, str]] = []  # (node, E, S, cut at, E2, X, became at)
    as_master: list[tuple[list[tuple[int, int, int]], str]] = []  # each handshake's master entries, where logged
    for node in nodes:
        kept: set[tuple[int, int]] | None = None  # entries after the session's last handshake
        cut: dict[int, tuple[int, str]] = {}  # epoch -> (start, where) of a received entry cut
        sides: dict[str, list[tuple[int, int, int]]] = {}  # "master"/"local" -> (epoch, start, end)
        for r in node.of("store"):
            if (m := BECAME_MASTER.search(r.message)) or "Change ha to slave success" in r.message:
                if m:
                    promoted += [(node.name, e, s, w, int(m[2]), int(m[3]), at(node.name, r))
                                 for e, (s, w) in cut.items() if int(m[3]) > s]
                kept, cut, sides = None, {}, {}
            elif r.message == EMPTY_LOCAL:
                kept = set()
            elif m := EPOCH_ENTRIES.search(r.message):
                sides[m[1]] = epoch_entries(m[2])
            elif (m := CONSISTENT_POINT.fullmatch(r.message)) and {"master", "local"} <= sides.keys():
                point, local, master = int(m[1]), sides.pop("local"), sides.pop("master")
                as_master.append((master, at(node.name, r)))
                epochs, end = {e for e, _, _ in local}, local[-1][2] if local else 0
                for epoch, (start, where) in sorted(cut.items()):
                    if epoch not in epochs and end > start and (epoch, start) in {e[:2] for e in master}:
                        found.setdefault(node.name, []).append(
                            f"{where}: a handshake cut epoch {epoch}'s entry at {start}, received in this slave "
                            f"session; at {at(node.name, r)} the slave's log reaches {end} with no entry of epoch "
                            f"{epoch}, which its master starts at {start}")
                    if epoch in epochs or end > start:
                        del cut[epoch]
                if kept is not None and master:
                    for epoch, start, _ in local:
                        if (epoch, start) not in kept and start == point and epoch == master[-1][0]:
                            cut[epoch] = (start, at(node.name, r))
                kept = {(e, s) for e, s, _ in local if s < point}
    for name, epoch, start, where, new, begin, became in promoted:
        shown = next(((older, said) for entries, said in as_master if entries and entries[-1][:2] == (new, begin)
                      and all(e != epoch for e, _, _ in entries)
                      for older, s, end in entries if older < epoch and s <= start < end), None)
        if shown:
            found.setdefault(name, []).append(
                f"{where}: a handshake cut epoch {epoch}'s entry at {start}, received in this slave session; the "
                f"slave became master of epoch {new} from {begin} ({became}), and its entries as master "
                f"({shown[1]}) attribute {start} to epoch {shown[0]}, with no entry of epoch {epoch}")
    return _each_subject("received_epoch_not_recorded", run, found, "cuts", "the HA client took the epoch as still "
                         "received and did not record it again; "
                         + shape("received_epoch_survives_truncation", "an epoch entry lost"))


def _overwritten_proposals(nodes: list[Node], run: str) -> list[Violation]:
    """applied_proposal_overwritten: a master's AlterSyncStateSet whose answer did not come back
    (broker.log's "Error happen when change SyncStateSet", ReplicasManager :766) was applied by the
    controller, and a later proposal of the same master at the same SyncStateSet epoch lacks a
    member of it outside the master's local set. markSynchronizingSyncStateSet (AutoSwitchHAService
    :328) replaces the pending proposal, so from the later one on the snapshot acked allAck puts
    with the local set and that proposal (getSyncStateSet :455), without a member of the
    controller's set: the exposure of proposal_overwrites_pending_sss. The applied set is the
    controller's at the next SyncStateSet epoch (controller.log), else the set the master installs
    next in its term ("SyncStateSet changed", :340), each ordered by epochs or within one file.
    Reported only (REPORTED). One violation a broker, with the count."""
    applied: dict[tuple[str, int], frozenset[int]] = {}  # (group, SyncStateSet epoch) -> the set an alter applied
    for node in nodes:
        for r in node.of("controller"):
            if result := alter_result(r.message):
                applied[result[:2]] = result[2]
    found: dict[str, list[str]] = {}
    for node in nodes:
        # (group, SyncStateSet epoch, local set, proposed set, where) since the master last installed a set
        failed: list[tuple[str, int, frozenset[int], frozenset[int], str]] = []

        def judge(installed: frozenset[int] | None) -> None:
            for i, (group, epoch, _, proposed, where) in enumerate(failed):
                if applied.get((group, epoch + 1), installed) != proposed:
                    continue
                for _, later_epoch, local, later, later_at in failed[i + 1:]:
                    if later_epoch == epoch and (missing := proposed - local - later):
                        found.setdefault(node.name, []).append(
                            f"{where}: the master proposed {sorted(proposed)} at syncStateSetEpoch {epoch}, its "
                            f"answer lost, and the controller applied it; its next proposal {sorted(later)} "
                            f"({later_at}) replaced it, and the snapshot's code acks with {sorted(local | later)}, "
                            f"without {sorted(missing)} of the controller's set")
                        return

        for r in node.of("broker"):
            if m := SSS_ALTER_FAILED.search(r.message):
                failed.append((m[1], int(m[5]), id_set(m[3]), id_set(m[4]), at(node.name, r)))
            elif (m := SSS_CHANGED.search(r.message)) or BEGIN_MASTER.search(r.message) \
                    or BEGIN_SLAVE.search(r.message):  # an install, or the term's end
                judge(id_set(m[2]) if m else None)
                failed = []
        judge(None)
    return _each_subject("applied_proposal_overwritten", run, found, "proposals", "a new SyncStateSet proposal "
                         "replaced a pending one the controller had applied; "
                         + shape("proposal_overwrites_pending_sss", "acked without a member the controller can elect"))


def _each_subject(check: str, run: str, found: dict[str, list[str]], what: str, why: str) -> list[Violation]:
    """One violation a subject (a broker set or broker): its first finding, with how many `what`
    like it followed, then `why`."""
    return [Violation(check, run, subject, len(said),
                      f"{said[0]}{f', and {len(said) - 1} more {what} like it' if len(said) > 1 else ''}: {why}")
            for subject, said in sorted(found.items())]
