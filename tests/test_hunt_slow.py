"""Long hunts (`make hunt`, marker `slow`): the acceptance checks of the bug-toggle batch, of the
L3 liveness toggle and of the intended baseline. Budgets are wall-clock; run them on an otherwise idle machine."""

from __future__ import annotations

import pytest

from rmqcheck.checkers import configs, liveness
from rmqcheck.checkers.explore import Bounds
from rmqcheck.checkers.hunting import find
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


@pytest.mark.parametrize("config_name", ["durable", "durable3"])
def test_the_intended_baseline_survives_a_ten_minute_hunt(config_name):
    cfg = configs.with_bugs(configs.load(config_name), frozenset(), snapshot=False)
    finding, result = find(cfg, expected_ids(cfg), budget=600, seed=1000)
    assert finding is None, (
        f"{finding.counterexample.invariant}: {finding.counterexample.message} (seed {finding.counterexample.seed})"
    )


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
