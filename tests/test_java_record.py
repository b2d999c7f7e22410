"""`rmqcheck conform --record`: walks of the model whose controller and epoch-cache calls
RocketMQ's classes answer, recorded with the Java's values and checked by `rmqcheck validate`
on both engines (that test is in test_traces.py, beside the Spark session it shares); a mutated
tree's runs fail validation where the code decided differently."""

from __future__ import annotations

import json

from rmqcheck.cli import main
from rmqcheck.traces.validate import discover, validate_local

from conftest import needs_rocketmq
from test_java_mutants import patched_tree

pytestmark = needs_rocketmq


def test_the_recorded_controller_and_epoch_fields_are_the_java_s(tmp_path, capsys):
    """A tree whose appendEntry accepts an equal start offset records the epochs it kept, so the
    corpus no longer conforms to the model: validate says where."""
    corpus = tmp_path / "mutant"
    src = str(patched_tree("append_accepts_equal_start"))
    assert main(["conform", "--record", str(corpus), "--runs", "4", "--steps", "60", "--rocketmq-src", src]) == 1
    assert "EpochFileCache.appendEntry" in capsys.readouterr().out
    report = validate_local(discover([str(corpus)]))
    found = [v for v in report.violations if v.check == "conformance"]
    assert found and "last_epoch recorded" in found[0].detail
    recorded = [json.loads(line) for line in (corpus / "part-00000.ndjson").read_text().splitlines()]
    assert {r["kind"] for r in recorded} >= {"run_start", "register", "run_end"}


def test_configurations_with_async_learners_and_unclean_elections_record_in_agreement(tmp_path, capsys):
    """Learners are the HA connection's business (model-only), but they shape what the controller
    and the HA service are asked: a run with one still agrees call by call."""
    cfg = tmp_path / "learner.json"
    cfg.write_text(json.dumps({"brokers": 3, "all_ack": True, "flush": "SYNC_FLUSH", "async_learners": [3],
                               "unclean": True}))
    assert main(["conform", "--record", str(tmp_path / "runs"), "--runs", "12", "--steps", "80",
                 "--config", str(cfg)]) == 0
    assert "recorded 12 runs" in capsys.readouterr().out
    report = validate_local(discover([str(tmp_path / "runs")]))
    assert [v for v in report.violations if v.check == "conformance"] == []  # unclean elections may lose acks
