"""Long hunts (`make hunt`, marker `slow`): the acceptance checks of the bug-toggle batch (stateful
and explore), of the L3 liveness toggle and of the intended baseline. Budgets are wall-clock; run
them on an otherwise idle machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqcheck.model import configs
from rmqcheck.checkers.search import explore
from rmqcheck.checkers.search import liveness
from rmqcheck.checkers.search.explore import Bounds
from rmqcheck.checkers.search.hunting import find
from rmqcheck.checkers.search.portfolio import portfolio
from rmqcheck.model.config import scaled
from rmqcheck.checkers.counterexamples.replay import reproduces
from rmqcheck.invariants.catalogue import expected_ids

pytestmark = pytest.mark.slow

# The first batch of issue 2 (reference/known-bugs.md §2 and §7, plus the design pitfalls that
# the model can show). expand_without_epoch_start_check is not here: it is harmless in the
# snapshot (tests/test_invariants.py).
FIRST_BATCH = (
    "ack_uses_local_sss_only",
    "on_become_master_sss_self_only",
    "confirm_min_over_connected_only",
    "truncate_start_from_max_minus_behind",
    "no_confirm_clamp_on_truncate",
    "same_master_epoch_bump_keeps_connections",
    "restart_accepts_writes_before_role_confirmed",
    "consumer_offset_not_truncated",
    "truncation_ascending_epochs",
    "transfer_batch_spans_epochs",
)


@pytest.mark.parametrize("toggle", FIRST_BATCH)
def test_each_first_batch_toggle_is_found_within_120s(toggle):
    cfg = configs.exposing(frozenset({toggle}))
    finding, result = find(cfg, expected_ids(cfg), budget=120, seed=0)
    assert finding is not None, f"{toggle}: nothing in {result.seconds:.0f}s (seeds 0..{result.batches - 1})"
    assert toggle in finding.counterexample.depends_on


# truncation_ascending_epochs is left out: its shortest known counterexample has 23 steps, past
# the depth breadth-first search reaches in 300 s (README, "Exhaustive exploration").
EXPLORE_BATCH = tuple(t for t in FIRST_BATCH if t != "truncation_ascending_epochs")


@pytest.mark.parametrize("toggle", EXPLORE_BATCH)
def test_each_first_batch_toggle_is_explored_into_a_counterexample_no_longer_than_the_stateful_one(toggle):
    """Issue 4's acceptance: `hunt --method explore --budget 300` finds it, no longer than the
    shortest stateful counterexample of the measured bug table (results/bugs.json)."""
    rows = json.loads((Path(__file__).parents[1] / "results" / "bugs.json").read_text())
    stateful = next(r["steps"] for r in rows if r["toggle"] == toggle and r["method"] == "stateful")
    cfg = configs.exposing(frozenset({toggle}))
    found, tried = explore.hunt(cfg, expected_ids(cfg), 300)
    assert found is not None, f"{toggle}: nothing in {sum(r.seconds for *_, r in tried):.0f}s"
    assert len(found.hit.actions) <= stateful
    assert reproduces(found.cfg, found.hit.actions, found.hit.invariant) is not None


@pytest.mark.parametrize("scale", ["small", "large"])
@pytest.mark.parametrize("config_name", ["durable", "durable3"])
def test_the_intended_baseline_survives_a_ten_minute_portfolio_over_eight_seeds(config_name, scale):
    cfg = scaled(configs.with_bugs(configs.load(config_name), frozenset(), snapshot=False), scale)
    result = portfolio(cfg, expected_ids(cfg), 600, seed=1000, rounds=8)
    assert not result.found, [(f.finding.counterexample.invariant, f.method, f.seed, f.finding.counterexample.message)
                              for f in result.found]


def test_the_shrink_task_toggle_breaks_l3_with_a_lasso():
    """About 1.3 million states each way (4 minutes): the L3 lasso needs a failover, a rejoin
    and a crash, so syncStateSetEpoch reaches 4."""
    cfg = configs.exposing(frozenset({"shrink_task_dies_on_removal"}))
    bounds = Bounds(max_sss_epoch=4)
    lasso = liveness.check(cfg, bounds).lassos["L3"]
    actions = lasso.prefix + lasso.cycle
    assert liveness.recheck(cfg, actions, len(lasso.prefix), "L3")
    faithful = cfg._replace(bugs=frozenset())
    assert liveness.recheck(faithful, actions, len(lasso.prefix), "L3") is None
    assert liveness.check(faithful, bounds).lassos == {}
