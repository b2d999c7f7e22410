"""The Hypothesis stateful checker: it holds where it should, it can fail, it is deterministic.

Each run is seeded; a failing test names its seed and writes the counterexample it got under
counterexamples/ so `rmqcheck replay` can show it."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest

from rmqcheck.model import configs
from rmqcheck.checkers.counterexamples.files import Counterexample, write
from rmqcheck.checkers.search.hunting import BUG_TOGGLE, SNAPSHOT_DEFECT, find
from rmqcheck.checkers.search import stateful
from rmqcheck.checkers.search.stateful import BUDGETED_RULES, InvariantViolated, ReplicationMachine, machine_for, run_once
from rmqcheck.invariants.catalogue import CATALOGUE, expected_ids
from rmqcheck.model.bugs import BY_NAME
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS

OUT = Path(__file__).resolve().parents[1] / "counterexamples"


def _keep(name: str, cfg, violation, seed) -> Path:
    cx = Counterexample(cfg, tuple(violation.actions), violation.violation.invariant, violation.violation.message, seed)
    return write(cx, OUT / f"test-{name}-seed{seed}.json")


def test_every_action_kind_is_a_rule_and_every_invariant_is_checked():
    """The kinds of BUDGETED_RULES only where the configuration budgets them, so that the hunts'
    measured seeds draw as they did."""
    budgeted = Config(faults=Config().faults._replace(**{budget: 1 for budget in BUDGETED_RULES.values()}))
    for kind in ACTIONS:
        assert hasattr(machine_for(budgeted, ()), kind)
        assert hasattr(machine_for(Config(), ()), kind) == (kind not in BUDGETED_RULES)
    for inv in CATALOGUE:
        assert hasattr(ReplicationMachine, f"invariant_{inv.id}")


@pytest.mark.parametrize("config_name", ["durable", "durable3"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_intended_baseline_holds(config_name, seed):
    cfg = configs.with_bugs(configs.load(config_name), frozenset(), snapshot=False)
    found = run_once(cfg, expected_ids(cfg), seed, "quick")
    if found is not None:
        path = _keep(f"intended-{config_name}", cfg, found, seed)
        pytest.fail(f"seed {seed}: {found.violation.invariant}: {found.violation.message}; counterexample {path}")


@pytest.mark.parametrize(
    "toggle",
    [
        "ack_uses_local_sss_only",
        "restart_accepts_writes_before_role_confirmed",
        "controller_serves_before_apply",
        "confirm_ignores_proposed_sss",
    ],
)
def test_the_checker_finds_a_toggle(toggle):
    cfg = configs.exposing(frozenset({toggle}))
    finding, result = find(cfg, expected_ids(cfg), budget=20, seed=0)
    assert finding is not None, f"{toggle} not found in {result.seconds:.0f}s (seeds 0..{result.batches - 1})"
    assert finding.kind in (BUG_TOGGLE, SNAPSHOT_DEFECT) and toggle in finding.counterexample.depends_on


@pytest.mark.heavy
def test_the_snapshot_fails_the_durable_configuration_with_a_known_defect():
    cfg = configs.load("durable")  # the snapshot: its defects are on
    finding, _ = find(cfg, expected_ids(cfg), budget=20, seed=0)
    assert finding is not None and finding.kind == SNAPSHOT_DEFECT
    assert all(BY_NAME[d].in_snapshot for d in finding.counterexample.depends_on)


@pytest.mark.heavy
def test_runs_are_deterministic_given_the_seed():
    cfg = configs.with_bugs(configs.load("durable"), frozenset({"ack_uses_local_sss_only"}), snapshot=False)
    a = run_once(cfg, expected_ids(cfg), 0, "quick")  # seed 0: one whose quick run finds it
    b = run_once(cfg, expected_ids(cfg), 0, "quick")
    assert a is not None and b is not None and a.actions == b.actions


@pytest.mark.heavy
def test_a_deadline_that_cuts_hypothesis_s_shrinking_keeps_the_violation_found(monkeypatch):
    """Found by `make test` with the slow tier beside it: a hunt's deadline passed while
    Hypothesis shrank a failure, the cut test case drew less than before, and Hypothesis raised
    FlakyStrategyDefinition out of `rmqcheck check`. A clock that ticks once a step puts the
    deadline at each of 15 points of the run and its shrinking, around the first that keeps the
    violation (with the fix undone, 5 of them raise it). That point moves when the model's action table
    changes Hypothesis's draws, so it is found first (the earliest deadline that keeps it)."""
    cfg = configs.exposing(frozenset({"ack_uses_local_sss_only"}))

    def cut_at(deadline: int):
        clock = itertools.count(1)
        monkeypatch.setattr(stateful, "time", SimpleNamespace(perf_counter=lambda: float(next(clock))))
        result = run_once(cfg, expected_ids(cfg), 0, "quick", deadline=float(deadline))
        assert result is None or isinstance(result, InvariantViolated)
        return result

    low, high = 1, 4096
    assert cut_at(high) is not None
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if cut_at(mid) is not None else (mid + 1, high)
    found = [cut_at(cut) is not None for cut in range(low - 60, low + 30, 6)]
    assert any(found) and not all(found)
