"""The model follows a recorded cluster run (traces/real_runs.py) and explains what the running
code broke (rmqcheck/commands/cluster_runs.py). The runs durable-seed-2 and durable-seed-7 in
tests/data/cluster-runs/ were recorded by `rmqcheck cluster --config durable` on the snapshot
tree, before the records held each broker's view: each operation's record, the invariants the
running code broke on the way, and for seed 7 the client history and the brokers' epoch files.
No JVM runs here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rmqcheck.checkers.search.hunting import SNAPSHOT_DEFECT, UNEXPLAINED
from rmqcheck.commands.cluster_runs import explain
from rmqcheck.model import configs
from rmqcheck.traces import real_runs
from rmqcheck.traces.run_records import read_steps

RUNS = Path(__file__).parent / "data" / "cluster-runs"
DURABLE = configs.load("durable")


def records(seed: int) -> list[dict]:
    return read_steps(RUNS / f"durable-seed-{seed}")


def test_a_recorded_run_is_followed_to_its_end_with_a_model_send_for_each_put_the_code_took():
    recs = records(2)
    followed = real_runs.follow(DURABLE, recs)
    assert followed.stopped is None
    took = [r["step"] for r in recs if r["op"] == "put" and r["result"].startswith("to broker")]
    assert [at for at, a in zip(followed.steps, followed.actions) if a[0] == "send"] == took


def test_the_model_names_the_snapshot_defect_behind_what_the_running_code_broke():
    """Seed 2: a master cut off with its route still used, then its successor cut off in turn;
    the code broke I5 at step 17 and I2 at step 24 (code-violations.jsonl). The model's path of
    the same schedule breaks both at the same steps, and neither with the intended form of
    equal_start_epoch_not_recorded."""
    code = [json.loads(line) for line in (RUNS / "durable-seed-2" / "code-violations.jsonl").read_text().splitlines()]
    first = {}
    for v in code:
        first.setdefault(v["invariant"], v["step"])
    got = explain(DURABLE, records(2), {"I5", "I2"})
    for inv in ("I5", "I2"):
        assert got[inv].kind == SNAPSHOT_DEFECT, got[inv]
        assert "equal_start_epoch_not_recorded" in got[inv].note
        assert f"at step {first[inv]})" in got[inv].note


def test_the_same_run_recorded_with_every_broker_s_view_is_explained_by_the_same_defect():
    """durable-seed-2-views: seed 2 again, recorded with each broker's view (2026-11-27, on the
    tree with known-bugs A12 put back, which this run does not reach: the unchanged tree showed
    the same). Broker 2's view shows the epoch entry the defect leaves out, so the defect's
    intended form parts from the record at step 5 where it is judged against every broker's
    view; it is judged against the controller's only, and holds both where the code broke them."""
    from rmqcheck.traces.run_records import read_run

    cfg, recs = read_run(RUNS / "durable-seed-2-views")
    got = explain(cfg, recs, {"I5", "I2"})
    assert {inv: (e.kind, "equal_start_epoch_not_recorded" in e.note) for inv, e in got.items()} == \
        {"I5": (SNAPSHOT_DEFECT, True), "I2": (SNAPSHOT_DEFECT, True)}, got
    stopped = real_runs.follow(cfg._replace(bugs=cfg.bugs - {"equal_start_epoch_not_recorded"}), recs, views=True).stopped
    assert stopped.step == 5 and "broker 2 epochs: model [[2, 0]], code [[1, 0]]" in stopped.why


def test_without_the_defect_the_model_does_not_explain_it():
    """The explanation can fail: the model with that defect in its intended form does not break
    I5 on this run's schedule (it parts from the record at step 24, where the code's broker 1
    rejoins the SyncStateSet and the model's does not)."""
    fixed = DURABLE._replace(bugs=DURABLE.bugs - {"equal_start_epoch_not_recorded"})
    got = explain(fixed, records(2), {"I5"})["I5"]
    assert got.kind == UNEXPLAINED and "cannot follow the run: step 24 (round)" in got.note, got


def test_a_record_the_model_contradicts_is_not_followed():
    recs = records(2)
    elected = next(r for r in recs if r["controller"]["master"] == 2)
    elected["controller"] = {**elected["controller"], "master": 1}
    stopped = real_runs.follow(DURABLE, recs).stopped
    assert stopped is not None and stopped.step == elected["step"] and "controller master: model 2, code 1" in stopped.why

    recs = records(2)
    put = next(r for r in recs if r["op"] == "put" and r["result"] == "to broker 1")
    put["result"] = "to broker 2"  # broker 2 is the model's slave there
    stopped = real_runs.follow(DURABLE, recs).stopped
    assert stopped is not None and stopped.step == put["step"] and "broker 2 took a put on the code" in stopped.why


def test_the_cluster_command_classes_a_recorded_runs_epoch_disagreement_as_epoch_reapply_moves_start(tmp_path):
    """Seed 7: the master loses power and restarts before the controller notices; it re-applies
    epoch 1 at its log end (epoch files 1-218 and 1-0). `rmqcheck cluster`'s check of the run
    names the snapshot defect."""
    from rmqcheck.commands.cluster import check_run

    run = shutil.copytree(RUNS / "durable-seed-7", tmp_path / "run-7")
    found = {check: (kind, detail) for check, kind, _, detail in check_run(run, DURABLE)}
    kind, detail = found["epoch_agreement"]
    assert kind == SNAPSHOT_DEFECT and "epoch_reapply_moves_start" in detail, detail
    assert found["consistent_point"][0] == "reported"


def test_a_power_loss_that_lost_or_reverted_the_epoch_files_is_followed_as_the_model_s_fault():
    recs = records(7)
    loss = next(r for r in recs if r["op"] == "power_loss")

    def faults_at_the_loss(label: str) -> list:
        loss["epoch_files"] = label
        followed = real_runs.follow(DURABLE, recs)
        assert followed.stopped is None
        return [a for at, a in zip(followed.steps, followed.actions) if at == loss["step"] and a[0] != "crash"]

    assert faults_at_the_loss("lost") == [("lose_epoch_file", 1)]
    # the model's file system had written back broker 1's last version (a version that differs
    # only in its .bak reads the same): nothing to take back (tests/test_real_runs.py has one)
    assert faults_at_the_loss("reverted") == faults_at_the_loss("kept") == []
