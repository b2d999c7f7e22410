"""Long hunts (`make hunt`, marker `slow`): the acceptance checks of the bug-toggle batch (stateful
and explore), of the L3 liveness toggle and of the intended baseline. The acceptance hunts count
work (Hypothesis batches, expanded states), not seconds, so their verdicts do not depend on the
machine's load; each count is what the issue's wall-clock budget did on an idle machine."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rmqcheck.model import configs
from rmqcheck.checkers.search import explore, scoped
from rmqcheck.checkers.search import liveness
from rmqcheck.checkers.search.explore import Bounds
from rmqcheck.checkers.search.hunting import UNEXPLAINED, find
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


# Issue 2's acceptance was "found within 120 s" (seed 0). Measured alone on an idle machine
# (2026-11-27): no_confirm_clamp_on_truncate needs the most, its 15th batch (109 s); the others
# 1 to 3 batches (0.1-25 s). 16 batches is that budget as work.
BATCHES_IN_120S = 16


@pytest.mark.parametrize("toggle", FIRST_BATCH)
def test_each_first_batch_toggle_is_found_within_120s_worth_of_batches(toggle):
    cfg = configs.exposing(frozenset({toggle}))
    finding, result = find(cfg, expected_ids(cfg), budget=math.inf, seed=0, max_batches=BATCHES_IN_120S)
    assert finding is not None, f"{toggle}: nothing in {result.batches} batches (seeds 0..{result.batches - 1})"
    assert toggle in finding.counterexample.depends_on


# truncation_ascending_epochs is left out: its shortest known counterexample has 23 steps, past
# the depth breadth-first search reaches in 300 s (docs/exploration.md, "Exhaustive exploration").
EXPLORE_BATCH = tuple(t for t in FIRST_BATCH if t != "truncation_ascending_epochs")


# Issue 4's acceptance was 300 s of `hunt --method explore`. The model has grown since: measured
# alone on an idle machine (2026-11-27), three toggles need more than 300 s, each found within
# 2,000,000 expanded states: truncate_start_from_max_minus_behind in 437 s,
# same_master_epoch_bump_keeps_connections 758 s, transfer_batch_spans_epochs 412 s (with the
# whole-configuration search for a shorter one). The others within 60 s (results/bugs.json).
EXPLORE_STATES = 2_000_000


@pytest.mark.parametrize("toggle", EXPLORE_BATCH)
def test_each_first_batch_toggle_is_explored_into_a_counterexample_no_longer_than_the_stateful_one(toggle):
    """`hunt --method explore` finds it within EXPLORE_STATES, no longer than the shortest
    stateful counterexample of the measured bug table (results/bugs.json)."""
    rows = json.loads((Path(__file__).parents[1] / "results" / "bugs.json").read_text())
    stateful = next(r["steps"] for r in rows if r["toggle"] == toggle and r["method"] == "stateful")
    cfg = configs.exposing(frozenset({toggle}))
    found, tried = scoped.hunt(cfg, expected_ids(cfg), math.inf, states=EXPLORE_STATES)
    assert found is not None, f"{toggle}: nothing in {EXPLORE_STATES:,} expanded states"
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
    """The L3 lasso needs a failover, a rejoin and a crash, so syncStateSetEpoch reaches 4, and
    27 steps (a prefix of 25, a cycle of 2). Bounded there, and without the consumer restart
    (there are no messages to read): about 680,000 states each way, 9 minutes in all and 0.9 GB.
    Unbounded, the space grew past 15 minutes and 4 GB as the model grew."""
    cfg = configs.exposing(frozenset({"shrink_task_dies_on_removal"}))
    cfg = cfg._replace(faults=cfg.faults._replace(consumer_restarts=0))
    bounds = Bounds(max_sss_epoch=4, max_depth=27)
    lasso = liveness.check(cfg, bounds).lassos["L3"]
    actions = lasso.prefix + lasso.cycle
    assert liveness.recheck(cfg, actions, len(lasso.prefix), "L3")
    faithful = cfg._replace(bugs=frozenset())
    assert liveness.recheck(faithful, actions, len(lasso.prefix), "L3") is None
    assert liveness.check(faithful, bounds).lassos == {}


# Issue 43's reach check: historical bugs put back into the model as rule changes the tool does
# not know, hunted as the README says (`rmqcheck hunt --intended --config CFG --method portfolio
# --budget 120`, seeds 0 and 1). Each switches one toggle's code path on behind the tool's back
# (Config.has answers yes, the configuration names no toggle): nothing exposes it (the named
# configuration, not the toggle's exposing one) and nothing attributes what it breaks.
# Measured (docs/bugs.md, Historical bugs hidden in the model): all five, with both seeds.
HIDDEN = {
    "A2 #6342": ("on_become_master_sss_self_only", "durable"),
    "A3 #6662": ("confirm_min_over_connected_only", "durable3"),
    "A8 #6665": ("truncate_start_from_max_minus_behind", "durable"),
    "A12 #7689": ("cq_recover_only_to_confirm", "durable"),
    "B1 #6508": ("restart_accepts_writes_before_role_confirmed", "durable"),
}


class _Found(Exception):
    pass


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("bug", sorted(HIDDEN))
def test_a_historical_bug_hidden_in_the_model_is_found_by_the_readme_s_hunt(bug, seed, monkeypatch):
    """The portfolio's 120 s are the README's, in seconds: a verdict that a loaded machine can
    change (the slowest measured, A12 by explore, 82-89 s in turns, each on a core of its own
    beside `make hunt`); the methods side by side, as `hunt` runs them on two cores; the test
    stops at the first violation (the other methods' processes stop with it)."""
    toggle, config = HIDDEN[bug]
    known = configs.Config.has
    monkeypatch.setattr(configs.Config, "has", lambda cfg, name: name == toggle or known(cfg, name))
    cfg = configs.with_bugs(configs.load(config), frozenset(), snapshot=False)

    def stop(found):
        raise _Found(found)

    with pytest.raises(_Found) as first:
        portfolio(cfg, expected_ids(cfg), 120, seed=seed, on_found=stop, jobs=2)  # hunt's default on 2 cores
    f = first.value.args[0]
    assert f.finding.kind == UNEXPLAINED, f.finding.note  # nothing in the tool knows the bug
    print(f"{bug} ({toggle}) on {config}, seed {seed}: {f.finding.counterexample.invariant} by {f.method} in {f.at:.1f} s")
