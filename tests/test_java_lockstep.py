"""Lockstep (checkers/java/lockstep.py, `rmqcheck replay --java`): every controller and
epoch-cache call the model's steps make, answered by RocketMQ's classes too.

Every regression scenario's calls agree with the code; a toggle that changes a loaded rule is
named where the model leaves the snapshot's code; and a mutated tree makes replay --java fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqcheck.checkers.counterexamples.files import read
from rmqcheck.checkers.counterexamples.replay import reproduces
from rmqcheck.checkers.counterexamples.startstate import start_state
from rmqcheck.checkers.java import build, lockstep
from rmqcheck.checkers.java.driver import JavaDriver
from rmqcheck.cli import main
from rmqcheck.model import configs
from rmqcheck.model.bugs import SNAPSHOT, TOGGLES
from rmqcheck.model.step import initial_state

from conftest import needs_rocketmq
from test_java_mutants import patched_tree

pytestmark = needs_rocketmq

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
README = Path(__file__).resolve().parents[1] / "docs" / "findings.md"
CONTROLLER_MODE = sorted(p for d in ("toggles", "expected", "quirks", "coverage") for p in (SCENARIOS / d).glob("*.scn"))


def _lockstep(driver, path: Path) -> lockstep.Lockstep:
    cx = read(path)
    start = start_state(cx.config, cx.start) if cx.start else None
    return lockstep.lockstep(driver, cx.config, cx.actions, start)


@pytest.mark.parametrize("path", CONTROLLER_MODE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_scenario_s_calls_agree_with_the_code(driver, path):
    cx = read(path)
    if cx.config.has("controller_serves_before_apply"):
        with pytest.raises(lockstep.LockstepError, match="serves before it applies"):
            _lockstep(driver, path)
        return
    ls = _lockstep(driver, path)
    assert ls.first_difference is None, lockstep.tally(ls)
    assert ls.compared > 0


def test_the_bootstrap_is_replayed_call_by_call(driver):
    cfg = configs.load("durable3")
    ls = lockstep.lockstep(driver, cfg, [])
    methods = [c.method for s in ls.steps for c in s.calls]
    assert methods.count("ReplicasInfoManager.applyBrokerId") == 3
    assert "ReplicasInfoManager.electMaster, DefaultElectPolicy" in methods
    assert "EpochFileCache.appendEntry" in methods
    assert ls.states[0] == initial_state(cfg)


def test_a_toggle_in_a_loaded_rule_is_named_where_the_model_leaves_the_code(driver):
    ls = _lockstep(driver, SCENARIOS / "toggles" / "truncation_max_end.scn")
    changed = ls.first_form_change
    assert changed is not None and "truncation_point returned 2, the snapshot's code 1" in changed.form
    assert "not compared" in lockstep.tally(ls)


def test_a_toggle_outside_the_loaded_classes_leaves_every_call_comparable(driver):
    """ack_uses_local_sss_only lives in the HA service: the controller and epoch-cache calls of
    its counterexample are the snapshot's code and all agree."""
    ls = _lockstep(driver, SCENARIOS / "toggles" / "ack_uses_local_sss_only--I1.scn")
    assert ls.first_form_change is None and ls.first_difference is None
    assert any(s.index and s.model_only.startswith("AutoSwitchHAConnection") for s in ls.steps)


def test_replay_java_fails_on_a_mutated_tree(tmp_path, capsys):
    """The election order reversed (test_java_mutants): a counterexample whose controller
    elects among replicas with different data shows the difference at that step."""
    with JavaDriver(build.build(patched_tree("elect_prefers_oldest_epoch"))) as mutant:
        found = [(p, ls.first_difference) for p in CONTROLLER_MODE
                 if not read(p).config.has("controller_serves_before_apply")
                 for ls in [_lockstep(mutant, p)] if ls.first_difference is not None]
    assert found, "no scenario's calls told the mutated election apart"
    path, step = found[0]
    assert any("electMaster" in c.method for c in step.calls if c.diffs)
    assert main(["replay", str(path), "--java", "--quiet", "--rocketmq-src",
                 str(patched_tree("elect_prefers_oldest_epoch"))]) == 1
    assert f"RocketMQ's code differs at step {step.index}" in capsys.readouterr().out


def test_replay_java_prints_which_steps_the_code_confirmed(capsys):
    path = SCENARIOS / "toggles" / "confirm_skips_unacked_members.scn"
    assert main(["replay", str(path), "--java"]) == 1  # the counterexample reproduces
    text = capsys.readouterr().out
    assert "loaded: the controller and the epoch cache and the broker's HA service" in text
    # the send (step 2) calls no loaded class; the acks' computeConfirmOffset (3, 4) and the
    # AlterSyncStateSet (5) are the code's
    assert "calls confirmed in steps 1, 3-5; steps 2 call no loaded class" in text
    assert "AutoSwitchHAService.computeConfirmOffset" in text and "ReplicasInfoManager.alterSyncStateSet" in text


def test_replay_java_of_another_mode_says_there_is_nothing_to_compare(capsys):
    mode_file = next((SCENARIOS / "classic").glob("*.scn"))
    main(["replay", str(mode_file), "--java", "--quiet"])
    assert "controller mode only" in capsys.readouterr().out


FINDINGS = [t.name for t in TOGGLES if t.in_snapshot]


@pytest.mark.parametrize("name", FINDINGS)
def test_every_finding_run_as_the_snapshot_agrees_with_the_code_and_docs_findings_say_where(driver, ha_driver, name):
    """docs/findings.md: each finding's counterexample, with every snapshot defect on, still
    violates its invariant; every call its steps make into a loaded class gets the same answer
    from RocketMQ's code; the table's last column is what `replay --java --snapshot` reports."""
    cx = read(SCENARIOS / "toggles" / f"{name}.scn")
    snapshot = cx.config._replace(bugs=cx.config.bugs | SNAPSHOT)
    assert reproduces(snapshot, cx.actions, cx.invariant) is not None
    ls = lockstep.lockstep(driver, snapshot, cx.actions, ha_driver=ha_driver)
    assert ls.first_difference is None and ls.first_form_change is None
    assert not any(c.form for s in ls.steps for c in s.calls)
    row = next(line for line in README.read_text().splitlines() if line.startswith(f"| `{name}` |"))
    assert row.rstrip(" |").endswith(lockstep.summary(ls)), lockstep.summary(ls)
