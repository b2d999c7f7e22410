"""`rmqcheck validate --logs DIR` (issue 45, logs from an operator's cluster): each check shown
catching the log of what it judges, the public excerpt of apache/rocketmq#9689, and damaged
logs refused with the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqcheck.cli import main
from rmqcheck.traces import history, log_records, logs
from rmqcheck.traces.schema import TraceError
from rmqcheck.traces.validate import REPORTED

ISSUE_9689 = Path(__file__).parent / "data" / "logs" / "issue-9689"

# A failover as the snapshot's code logs it (message texts from ReplicasManager and
# AutoSwitchHAService/Client, file:line in traces/logs.py): broker-a (id 1) is master at epoch 1
# with SyncStateSet {1, 2}; broker-b (id 2) follows, then is elected at epoch 2 from 300.
GOOD = {
    "broker-a/broker.log": """\
2026-11-27 10:00:00 INFO main - Begin to change to master, brokerName:broker-a, replicas:127.0.0.1:10911, new Epoch:1
2026-11-27 10:00:00 INFO main - SyncStateSet changed from [] to [1]
2026-11-27 10:00:01 INFO BrokerControllerScheduledThread1 - Change broker [id:1][address:127.0.0.1:10911] to SYNC_MASTER, newMasterBrokerId:1, newMasterAddress:127.0.0.1:10911, newMasterEpoch:1, syncStateSetEpoch:1
2026-11-27 10:00:05 INFO ReplicasManager_ExecutorService_1 - SyncStateSet changed from [1] to [1, 2]
""",
    "broker-a/store.log": """\
2026-11-27 10:00:00 INFO main - TruncateOffset is 0, confirmOffset is 0, maxPhyOffset is 0
2026-11-27 10:00:00 INFO main - Change ha to master success, newMasterEpoch:1, startOffset:0
2026-11-27 10:00:39 WARN main - CODE: 1  DESC: the broker is fenced
For more information, please visit the url, https://rocketmq.apache.org/docs/bestPractice/06FAQ
2026-11-27 10:00:40 ERROR AutoSwitchHAConnection_ReadSocketService - processReadEvent error
java.io.IOException: Connection reset by peer
\tat sun.nio.ch.FileDispatcherImpl.read0(Native Method)
\t... 4 more
""",
    "broker-b/broker.log": """\
2026-11-27 10:00:00 INFO main - Begin to change to slave, brokerName=broker-a, brokerId=2, newMasterBrokerId=1, newMasterAddress=127.0.0.1:10911, newMasterEpoch=1
2026-11-27 10:01:00 INFO ReplicasManager_ScheduledService_1 - Begin to change to master, brokerName:broker-a, replicas:127.0.0.1:10921, new Epoch:2
2026-11-27 10:01:00 INFO ReplicasManager_ScheduledService_1 - SyncStateSet changed from [1, 2] to [2]
""",
    "controller/controller.log": """\
2026-11-27 10:00:00 INFO org.apache.rocketmq.controller.impl.DLedgerController$EventScheduler - Event queue run event electMaster, get the result ControllerResult{events=[ElectMasterEvent{newMasterElected=true, brokerName='broker-a', newMasterBrokerId=1}], response=ElectMasterResponseHeader{masterBrokerId=1, masterAddress='127.0.0.1:10911', masterEpoch=1, syncStateSetEpoch=1}}
2026-11-27 10:00:05 INFO org.apache.rocketmq.controller.impl.DLedgerController$EventScheduler - Event queue run event alterSyncStateSet, get the result ControllerResult{events=[AlterSyncStateSetEvent{brokerName='broker-a', newSyncStateSet=[1, 2]}], response=AlterSyncStateSetResponseHeader{newSyncStateSetEpoch=2}}
2026-11-27 10:01:00 INFO org.apache.rocketmq.controller.impl.DLedgerController$EventScheduler - Event queue run event electMaster, get the result ControllerResult{events=[ElectMasterEvent{newMasterElected=true, brokerName='broker-a', newMasterBrokerId=2}], response=ElectMasterResponseHeader{masterBrokerId=2, masterAddress='127.0.0.1:10921', masterEpoch=2, syncStateSetEpoch=3}}
""",
    "broker-b/store.log": """\
2026-11-27 10:00:00 INFO main - Change ha to slave success, newMasterAddress:127.0.0.1:10912, newMasterEpoch:1
2026-11-27 10:00:02 INFO AutoSwitchHAClient - master epoch entries is [EpochEntry{epoch=1, startOffset=0, endOffset=9223372036854775807}]
2026-11-27 10:00:02 INFO AutoSwitchHAClient - local epoch entries is []
2026-11-27 10:01:00 INFO ReplicasManager_ScheduledService_1 - TruncateOffset is 300, confirmOffset is 300, maxPhyOffset is 300
2026-11-27 10:01:00 INFO ReplicasManager_ScheduledService_1 - Change ha to master success, newMasterEpoch:2, startOffset:300
""",
}

HANDSHAKE = ("2026-11-27 10:01:05 INFO AutoSwitchHAClient - truncateOffset is {point}\n"
             "2026-11-27 10:01:05 INFO AutoSwitchHAClient - no need to truncate files, truncate offset is {point}, "
             "max physical offset is {end}")


def handshake(at: str, local: str, point: int, master: str = "1,0,300 2,300,400 3,400,500") -> list[str]:
    """A slave's handshake as AutoSwitchHAClient.doTruncate logs it, each side's entries given as
    "epoch,start,end ..."."""
    def entries(text: str) -> str:
        return ", ".join("EpochEntry{{epoch={}, startOffset={}, endOffset={}}}".format(*e.split(",")) for e in text.split())
    head = f"2026-11-27 10:02:{at} INFO AutoSwitchHAClient - "
    return [f"{head}master epoch entries is [{entries(master)}]", f"{head}local epoch entries is [{entries(local)}]",
            f"{head}truncateOffset is {point}"]


SLAVE_AGAIN = "2026-11-27 10:02:00 INFO main - Change ha to slave success, newMasterAddress:127.0.0.1:10911, newMasterEpoch:3"
RECEIVED_EPOCH_CUT = [SLAVE_AGAIN, *handshake("01", "1,0,300 2,300,400", 400, "1,0,300 2,300,400 3,400,400"),
                      *handshake("05", "1,0,300 2,300,400 3,400,400", 400, "1,0,300 2,300,400 3,400,400"),
                      *handshake("09", "1,0,300 2,300,500", 400)]


def alter_failed(at: str, local: str, proposed: str, epoch: int = 2) -> list[str]:
    """An AlterSyncStateSet of broker-a whose answer did not come back, as
    ReplicasManager.doReportSyncStateSetChanged logs it, with the exception after it."""
    return [f"2026-11-27 10:00:{at} ERROR ReplicasManager_ExecutorService_1 - Error happen when change SyncStateSet, "
            f"broker:broker-a, masterAddress:127.0.0.1:10911, masterEpoch:1, oldSyncStateSet:[{local}], "
            f"newSyncStateSet:[{proposed}], syncStateSetEpoch:{epoch}",
            "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: wait response on the channel "
            "<127.0.0.1:9878> timeout, 3000(ms)", "\tat org.apache.rocketmq.remoting.netty.NettyRemotingAbstract."
            "invokeSyncImpl(NettyRemotingAbstract.java:555)"]


# Master broker-a holds {1, 2} at syncStateSetEpoch 2. Its expansion {1, 2, 3} gets no answer, but
# the controller applies it; its shrink {1} (broker 2 fell behind), computed from {1, 2}, replaces
# the pending proposal and is rejected; the master then installs {1, 2, 3}.
OVERWRITTEN = [*alter_failed("20", "1, 2", "1, 2, 3"), *alter_failed("24", "1, 2", "1"),
               "2026-11-27 10:00:30 INFO ReplicasManager_ScheduledService_1 - SyncStateSet changed from [1, 2] to "
               "[1, 2, 3]"]

# Each check's bad log: (file, the line replaced or None to append, the new lines).
BAD = {
    "one_master_per_epoch": ("broker-a/store.log", None,
                             "2026-11-27 10:02:00 INFO main - Change ha to master success, newMasterEpoch:2, startOffset:300"),
    "epoch_agreement_in_logs": ("broker-b/store.log", 1, "2026-11-27 10:00:02 INFO AutoSwitchHAClient - master epoch "
                                "entries is [EpochEntry{epoch=1, startOffset=5, endOffset=9223372036854775807}]"),
    "truncation_below_confirm": ("broker-b/store.log", 3, "2026-11-27 10:01:00 INFO main - TruncateOffset is 280, "
                                 "confirmOffset is 300, maxPhyOffset is 280"),
    "election_outside_logged_sss": ("broker-a/broker.log", 3,
                             "2026-11-27 10:00:05 INFO main - SyncStateSet changed from [1] to [1]"),
    "election_outside_sss": ("controller/controller.log", 1, "2026-11-27 10:00:05 INFO x - Event queue run "
                                          "event alterSyncStateSet, get the result ControllerResult{events=["
                                          "AlterSyncStateSetEvent{brokerName='broker-a', newSyncStateSet=[1]}]}"),
    # AutoSwitchHAClient.doTruncate's point, then DefaultMessageStore.truncateFiles finding nothing to cut
    "consistent_point_beyond_log_end": ("broker-b/store.log", None, HANDSHAKE.format(point=5, end=0)),
    # the master grows {2} to {2, 3}, then a stale expansion computed from {2} is applied as {1, 2}
    "sss_alter_adds_and_removes": ("controller/controller.log", None, "\n".join(
        "2026-11-27 10:01:{:02d} INFO x - Event queue run event alterSyncStateSet, get the result ControllerResult{{"
        "events=[AlterSyncStateSetEvent{{brokerName='broker-a', newSyncStateSet=[{}]}}], "
        "response=AlterSyncStateSetResponseHeader{{newSyncStateSetEpoch={}}}}}".format(10 + e, ids, e)
        for ids, e in (("2, 3", 4), ("1, 2", 5)))),
    # BrokerStartup's settings (MixAll.printObjectProperties) say broker-b is a learner; it then
    # begins to change to master (its broker.log's line 2)
    "learner_became_master": ("broker-b/broker.log", 0, "2026-11-27 09:59:59 INFO main - asyncLearner=true\n"
                              + GOOD["broker-b/broker.log"].splitlines()[0]),
    # broker-b follows epoch 3 from 400: the second handshake of its session cuts (3, 400), which it
    # had received, and the third shows its log at 500 with no entry of epoch 3
    "received_epoch_not_recorded": ("broker-b/store.log", None, "\n".join(RECEIVED_EPOCH_CUT)),
    "applied_proposal_overwritten": ("broker-a/broker.log", None, "\n".join(OVERWRITTEN)),
    "consume_queue_order": ("broker-b/storeerror.log", None, "2026-11-27 10:01:30 WARN ReputMessageService - [BUG]logic "
                            "queue order maybe wrong, expectLogicOffset: 28360 currentLogicOffset: 28340 Topic: "
                            "rmqcheck QID: 0 Diff: 20"),
}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def changed(name: str, at: int | None, line: str) -> dict[str, str]:
    lines = GOOD.get(name, "").splitlines()
    if at is None:
        lines.append(line)
    else:
        lines[at] = line
    return {**GOOD, name: "\n".join(lines) + "\n"}


def test_a_failover_logged_as_the_code_logs_it_passes_every_check(tmp_path):
    assert logs.check_set(str(write(tmp_path / "set", GOOD))) == []
    assert main(["validate", "--logs", str(tmp_path / "set"), "--violations", str(tmp_path / "v.ndjson")]) == 0


@pytest.mark.parametrize("check", sorted(BAD))
def test_each_check_catches_the_log_of_what_it_judges(check, tmp_path):
    found = logs.check_set(str(write(tmp_path / "set", changed(*BAD[check]))))
    assert [v.check for v in found] == [check]


def test_a_consume_queue_off_its_offsets_is_one_violation_a_queue_naming_the_reput_join_that_ran_out(tmp_path):
    """The soaks' first 10 minutes (apache/rocketmq#9811): a truncation joined a spinning
    ReputMessageService for its whole 90 s, went on beside it, and from then on storeerror.log
    says the consume queue is off for every message dispatched."""
    wrong = "2026-11-29 15:16:{:02d} WARN ReputMessageService - [BUG]logic queue order maybe wrong, expectLogicOffset: " \
            "{} currentLogicOffset: {} Topic: rmqcheck QID: 0 Diff: 20"
    files = {**GOOD, "broker-b/storeerror.log": "".join(wrong.format(30 + n, 28360 + 20 * n, 28340 + 20 * n) + "\n"
                                                        for n in range(3)),
             "broker-b/broker.log": GOOD["broker-b/broker.log"]
             + "2026-11-29 15:16:25 INFO AutoSwitchHAClient - join thread[ReputMessageService], elapsed time: 90007ms, "
               "join time:90000ms\n"}
    [v] = logs.check_set(str(write(tmp_path / "set", files)))
    assert (v.check, v.subject, v.count) == ("consume_queue_order", "broker-b rmqcheck queue 0", 3)
    assert v.detail.startswith("broker-b/storeerror.log:1: the message of queue offset 1418 went to consume-queue entry "
                               "1417, and 2 more") and "90 s join (broker-b/broker.log:4)" in v.detail
    assert "#9811" in v.detail
    late = {**files, "broker-b/broker.log": GOOD["broker-b/broker.log"] + "2026-11-29 15:17:25 INFO AutoSwitchHAClient"
            " - join thread[ReputMessageService], elapsed time: 90000ms, join time:90000ms\n"}
    [v] = logs.check_set(str(write(tmp_path / "late", late)))
    assert "join" not in v.detail  # a join after the queue went off is not its cause


def test_one_broker_becoming_master_twice_at_one_epoch_has_the_shape_epoch_reapply_moves_start(tmp_path):
    """The 30-minute soak's one violation (2026-11-29): broker 1 became master at epoch 74, was
    restarted before the controller noticed, and re-applied 74 at its log's new end."""
    twice = "2026-11-27 10:01:09 INFO main - Change ha to master success, newMasterEpoch:2, startOffset:400\n"
    [v] = logs.check_set(str(write(tmp_path / "set", {**GOOD, "broker-b/store.log": GOOD["broker-b/store.log"] + twice})))
    assert v.check == "epoch_agreement_in_logs" and "the shape epoch_reapply_moves_start leaves: broker-b became " \
        "master at epoch 2 at 2 offsets" in v.detail
    other = {**GOOD, "broker-a/store.log": GOOD["broker-a/store.log"] + twice}  # two brokers: another shape
    [v] = [v for v in logs.check_set(str(write(tmp_path / "other", other))) if v.check == "epoch_agreement_in_logs"]
    assert "the shape" not in v.detail


def test_a_consistent_point_at_the_log_end_or_a_cut_elsewhere_is_no_violation(tmp_path):
    """truncation_point_beyond_log_end's signature needs the handshake's point right before the
    store's "nothing to cut", and beyond the log's end: at the end is every new slave's handshake,
    and truncateDirtyFiles (a master's truncateInvalidMsg) writes the same words without a point."""
    at_end = changed("broker-b/store.log", None, HANDSHAKE.format(point=300, end=300))
    assert logs.check_set(str(write(tmp_path / "end", at_end))) == []
    no_point = HANDSHAKE.format(point=5, end=0).replace("truncateOffset is 5", "truncate dirty files to 5")
    assert logs.check_set(str(write(tmp_path / "dirty", changed("broker-b/store.log", None, no_point)))) == []
    found, = logs.check_set(str(write(tmp_path / "bad", changed(*BAD["consistent_point_beyond_log_end"]))))
    assert found.subject == "broker-b" and "truncation_point_beyond_log_end" in found.detail
    assert history.SHAPE.search(found.detail)[1] == "truncation_point_beyond_log_end"


def test_a_master_s_own_log_shows_a_stale_alter_where_no_controller_log_is_given(tmp_path):
    """Without controller.log, each master's broker.log in its own order: the durable3 start of
    docs/findings/alter_uses_epochs_at_send.md. An election's set (its master alone) is not judged."""
    changes = "".join(f"2026-11-27 10:02:0{n} INFO AutoSwitchHAService_Executor_1 - SyncStateSet changed from "
                      f"[{old}] to [{new}]\n" for n, (old, new) in enumerate((("2", "2, 3"), ("2, 3", "1, 2"),
                                                                              ("1, 2", "1, 2, 3"), ("1, 3", "2"))))
    files = {k: v for k, v in GOOD.items() if not k.startswith("controller/")}
    files["broker-b/broker.log"] += changes
    [v] = logs.check_set(str(write(tmp_path / "set", files)))
    assert (v.check, v.subject, v.count) == ("sss_alter_adds_and_removes", "broker-b", 1)
    assert v.detail.startswith("broker-b/broker.log:5: the master applied [1, 2] over [2, 3]")
    assert history.SHAPE.search(v.detail)[1] == "alter_uses_epochs_at_send"


def test_an_alter_after_an_admin_s_clean_is_not_judged_against_the_set_before_it(tmp_path):
    """cleanBrokerData takes broker 3 out of {2, 3} without a new SyncStateSet epoch; the master's
    next change, {1, 2} at epoch 5, only adds to {2}, and is not judged against {2, 3}."""
    head = "2026-11-27 10:01:{:02d} INFO x - Event queue run event {}, get the result ControllerResult{{events=[{}]"
    results = [head.format(11, "alterSyncStateSet", "AlterSyncStateSetEvent{brokerName='broker-a', newSyncStateSet=[2, 3]}")
               + ", response=AlterSyncStateSetResponseHeader{newSyncStateSetEpoch=4}}",
               head.format(12, "cleanBrokerData", "CleanBrokerDataEvent{brokerName='broker-a', brokerIdSetToClean=[3]}")
               + ", response=null}",
               head.format(13, "alterSyncStateSet", "AlterSyncStateSetEvent{brokerName='broker-a', newSyncStateSet=[1, 2]}")
               + ", response=AlterSyncStateSetResponseHeader{newSyncStateSetEpoch=5}}"]
    assert logs.check_set(str(write(tmp_path / "clean", changed("controller/controller.log", None, "\n".join(results))))) == []
    del results[1]
    [v] = logs.check_set(str(write(tmp_path / "none", changed("controller/controller.log", None, "\n".join(results)))))
    assert v.check == "sss_alter_adds_and_removes"


def test_a_learner_is_judged_by_its_last_start_s_settings(tmp_path):
    """A broker restarted without asyncLearner may be elected; one started as a learner again
    may not. The violation names the start's settings line and the change."""
    head, *rest = GOOD["broker-b/broker.log"].splitlines()
    settings = "2026-11-27 09:59:59 INFO main - asyncLearner={}"
    unlearned = "\n".join([settings.format("true"), head, settings.format("false"), *rest]) + "\n"
    assert logs.check_set(str(write(tmp_path / "ok", {**GOOD, "broker-b/broker.log": unlearned}))) == []
    relearned = "\n".join([settings.format("false"), head, settings.format("true"), *rest]) + "\n"
    [v] = logs.check_set(str(write(tmp_path / "bad", {**GOOD, "broker-b/broker.log": relearned})))
    assert (v.check, v.subject, v.count) == ("learner_became_master", "broker-b", 1)
    assert v.detail.startswith("broker-b/broker.log:4: a broker started as an async learner (broker-b/broker.log:3) "
                               "began to change to master at masterEpoch 2")
    assert history.SHAPE.search(v.detail)[1] == "learner_requests_election"


@pytest.mark.parametrize("variant", ["recorded again", "a new session", "not received", "no bytes past it"])
def test_a_received_epoch_is_judged_lost_only_when_cut_in_its_session_and_then_missing(variant, tmp_path):
    """received_epoch_survives_truncation's signature needs all of it: the fix records the cut
    entry again at the next header; a change to slave reOpens the client (its received epoch
    reset); an entry cut at a session's first handshake was there before the session, maybe never
    received; and a slave with no bytes past the entry's start has attributed nothing wrongly."""
    lines = list(RECEIVED_EPOCH_CUT)
    if variant == "recorded again":
        lines[-2] = lines[-2].replace("endOffset=500}", "endOffset=400}, EpochEntry{epoch=3, startOffset=400, endOffset=500}")
    elif variant == "a new session":
        lines.insert(7, SLAVE_AGAIN)
    elif variant == "not received":
        del lines[1:4]  # the session's first handshake cuts (3, 400), which the slave had before it
    else:
        lines[-2] = lines[-2].replace("endOffset=500}", "endOffset=400}")
    assert logs.check_set(str(write(tmp_path / "set", changed("broker-b/store.log", None, "\n".join(lines))))) == []


def test_a_lost_received_epoch_names_the_cut_and_the_handshake_that_shows_it(tmp_path):
    [v] = logs.check_set(str(write(tmp_path / "bad", changed(*BAD["received_epoch_not_recorded"]))))
    assert (v.subject, v.count) == ("broker-b", 1)
    assert v.detail.startswith("broker-b/store.log:12: a handshake cut epoch 3's entry at 400, received in this slave "
                               "session; at broker-b/store.log:15 the slave's log reaches 500 with no entry of epoch 3")
    assert history.SHAPE.search(v.detail)[1] == "received_epoch_survives_truncation"


@pytest.mark.parametrize("fixed", [False, True])
def test_a_lost_received_epoch_shows_in_the_entries_the_slave_then_serves_as_master(fixed, tmp_path):
    """The thirty-minute soak's form (docs/traces.md): the slave's session ends with it becoming
    master of epoch 4 from 500 after its handshake cut (3, 400); its entries as master, in broker-a's
    handshake with it, attribute 400 to epoch 2. With the fix they hold (3, 400)."""
    kept = "1,0,300 2,300,400 3,400,500 4,500,500" if fixed else "1,0,300 2,300,500 4,500,500"
    files = changed("broker-b/store.log", None, "\n".join(RECEIVED_EPOCH_CUT[:7] + [
        "2026-11-27 10:02:20 INFO main - Change ha to master success, newMasterEpoch:4, startOffset:500"]))
    files["broker-a/store.log"] += "\n".join([SLAVE_AGAIN.replace("10:02:00", "10:02:30").replace(":3", ":4"),
                                              *handshake("31", "1,0,300", 300, kept)]) + "\n"
    found = logs.check_set(str(write(tmp_path / "set", files)))
    if fixed:
        assert found == []
    else:
        [v] = found
        assert (v.check, v.subject) == ("received_epoch_not_recorded", "broker-b")
        assert "the slave became master of epoch 4 from 500 (broker-b/store.log:13), and its entries as master " \
               "(broker-a/store.log:12) attribute 400 to epoch 2, with no entry of epoch 3" in v.detail


def test_an_overwritten_applied_proposal_names_the_member_the_master_acked_without(tmp_path):
    [v] = logs.check_set(str(write(tmp_path / "bad", changed(*BAD["applied_proposal_overwritten"]))))
    assert (v.check, v.subject, v.count) == ("applied_proposal_overwritten", "broker-a", 1)
    assert v.detail.startswith("broker-a/broker.log:5: the master proposed [1, 2, 3] at syncStateSetEpoch 2, its "
                               "answer lost, and the controller applied it; its next proposal [1] "
                               "(broker-a/broker.log:8) replaced it, and the snapshot's code acks with [1, 2], "
                               "without [3]")
    assert history.SHAPE.search(v.detail)[1] == "proposal_overwrites_pending_sss"
    assert v.check in REPORTED  # the fix logs the same lines


CONTROLLER_APPLIED = ("2026-11-27 10:00:21 INFO x - Event queue run event alterSyncStateSet, get the result "
                      "ControllerResult{events=[AlterSyncStateSetEvent{brokerName='broker-a', newSyncStateSet=[1, 2, 3]}], "
                      "response=AlterSyncStateSetResponseHeader{newSyncStateSetEpoch=3}}")
BECAME_SLAVE = ("2026-11-27 10:00:40 INFO main - Begin to change to slave, brokerName=broker-a, brokerId=1, "
                "newMasterBrokerId=2, newMasterAddress=127.0.0.1:10921, newMasterEpoch=2")


@pytest.mark.parametrize("variant, lines, controller, caught", [
    ("installed by the master", OVERWRITTEN, False, True),
    ("applied in controller.log, the term ended first", [*OVERWRITTEN[:-1], BECAME_SLAVE], True, True),
    ("the term ended, nothing says what was applied", [*OVERWRITTEN[:-1], BECAME_SLAVE], False, False),
    ("the later proposal keeps the member", [*alter_failed("20", "1, 2", "1, 2, 3"),
                                             *alter_failed("24", "1, 2", "1, 3"), OVERWRITTEN[-1]], False, False),
    ("the later proposal's set was the one applied", [*alter_failed("20", "1, 2", "1, 2, 3"),
                                                      *alter_failed("24", "1, 2", "1"),
                                                      OVERWRITTEN[-1].replace("[1, 2, 3]", "[1]")], False, False),
    ("the later proposal follows the install", [*alter_failed("20", "1, 2", "1, 2, 3"), OVERWRITTEN[-1],
                                                *alter_failed("34", "1, 2, 3", "1", epoch=3)], True, False),
])
def test_an_applied_proposal_is_judged_overwritten_only_when_a_later_one_of_its_epoch_drops_a_member(
        variant, lines, controller, caught, tmp_path):
    """applied_proposal_overwritten by its two sources of the applied set: the controller's result
    at the next SyncStateSet epoch, else the master's next install in its term."""
    files = changed("broker-a/broker.log", None, "\n".join(lines))
    if controller:
        files = {**files, "controller/controller.log": GOOD["controller/controller.log"] + CONTROLLER_APPLIED + "\n"}
    else:
        files = {k: v for k, v in files.items() if not k.startswith("controller/")}
    found = [v.check for v in logs.check_set(str(write(tmp_path / "set", files)))]
    assert ("applied_proposal_overwritten" in found) == caught, (variant, found)


def _alters_both_ways(cfg, walks: int) -> tuple[int, int]:
    """Seeded random walks of the model: (SyncStateSet changes by alter_sss, those that both add
    and remove members), as the controller commits them."""
    import random

    from rmqcheck.model.controller import committed
    from rmqcheck.model.step import initial_state, successors

    rnd, alters, both = random.Random(0), 0, 0
    for _ in range(walks):
        s = initial_state(cfg)
        for _ in range(40):
            if not (nxt := successors(s, cfg)):
                break
            action, t = rnd.choice(nxt)
            old, new = committed(s.ctrl).sss, committed(t.ctrl).sss
            if action[0] == "alter_sss" and old != new:
                alters, both = alters + 1, both + (not (old <= new or new <= old))
            s = t
    return alters, both


@pytest.mark.heavy
def test_only_the_snapshot_s_stale_alter_both_adds_and_removes_members():
    """sss_alter_adds_and_removes' premise, on the model: in the intended model no applied alter
    both adds and removes members (none in 3,000 walks either, of this configuration and of its
    2-broker form); with alter_uses_epochs_at_send's snapshot form, the first such change comes
    at walk 516 (at walk 81 while the model sent what a broker proposed before it ran)."""
    from rmqcheck.model import configs

    cfg = configs.exposing(frozenset({"alter_uses_epochs_at_send"}))._replace(brokers=3)
    alters, both = _alters_both_ways(cfg._replace(bugs=frozenset()), 300)
    assert alters > 20 and both == 0
    assert _alters_both_ways(cfg, 600)[1] > 0


def test_the_public_excerpt_of_issue_9689_is_a_same_master_epoch_bump_with_open_connections(tmp_path):
    out = tmp_path / "v.ndjson"
    assert main(["validate", "--logs", str(ISSUE_9689), "--violations", str(out)]) == 1
    (v,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert v["check"] == "same_master_epoch_bump" and "broker-a/store.log:2" in v["detail"]
    assert "epoch bump to 17 (broker-a/store.log:1)" in v["detail"] and "#9689" in v["detail"]


@pytest.mark.parametrize("damage, where, what", [
    ("2026-11-27 10:00:0 INFO main - Change ha to master success", "line 2", "not a log record"),
    ("2026-11-27T10:00:00 INFO main - x", "line 2", "not a log record"),
    ("2026-13-27 10:00:00 INFO main - x", "line 2", "no such date or time"),
    ("2026-11-27 10:00:00 NOTICE main - x", "line 2", "not a log level"),
    ("Change ha to master success, newMasterEpoch:2, startOffset:0", "line 2", "without its date, level and thread"),
])
def test_a_damaged_line_is_named_by_file_and_line_and_nothing_is_skipped(damage, where, what, tmp_path, capsys):
    root = write(tmp_path / "set", changed("broker-a/store.log", 1, damage))
    with pytest.raises(TraceError, match=what) as caught:
        logs.check_set(str(root))
    assert caught.value.where == where and caught.value.path.endswith("broker-a/store.log")
    assert main(["validate", "--logs", str(root), "--violations", str(tmp_path / "v.ndjson")]) == 2
    err = capsys.readouterr().err
    assert "broker-a/store.log: line 2" in err and len(err.strip().splitlines()) == 1


def test_other_bad_inputs(tmp_path, capsys):
    root = write(tmp_path / "set", GOOD)
    (root / "broker-a" / "store.log").write_bytes(b"2026-11-27 10:00:00 INFO main - \xff\n")
    assert main(["validate", "--logs", str(root), "--violations", str(tmp_path / "v.ndjson")]) == 2
    assert "store.log: line 1: not UTF-8 text" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["validate", "--logs", str(tmp_path / "empty")]) == 2
    assert "not a folder of nodes' log folders" in capsys.readouterr().err
    assert main(["validate"]) == 2
    node = tmp_path / "quiet" / "b"  # log files that hold no record: nothing to validate, not a pass
    node.mkdir(parents=True)
    (node / "broker.log").write_text("")
    assert main(["validate", "--logs", str(tmp_path / "quiet")]) == 2
    assert "nothing to validate" in capsys.readouterr().err


def test_rolled_files_are_read_oldest_first(tmp_path):
    node = tmp_path / "set" / "b"
    node.mkdir(parents=True)
    for name in ("store.log", "store.1.log", "store.2.log", "broker.log", "notes.txt"):
        (node / name).write_text("")
    assert [p.name for p in log_records.log_files(node)] == ["broker.log", "store.2.log", "store.1.log", "store.log"]
