"""Sleep sets (issue 28's reduction): the footprints of model/footprint.py are checked against
the rules themselves, and the explorer with sleep sets reaches exactly the states and the
shortest counterexamples it reaches without them."""

from __future__ import annotations

import math
import random

import pytest

from rmqcheck.checkers.counterexamples.replay import reproduces
from rmqcheck.checkers.search import explore, named, scoped
from rmqcheck.cli import main
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import configs, footprint as fp
from rmqcheck.model.bugs import TOGGLES
from rmqcheck.model.config import scaled
from rmqcheck.model.step import NotEnabled, initial_state, successors, step


def commutation_failures(cfg, walks: int, length: int, seed: int = 0) -> list[str]:
    """Along seeded random walks, every pair of steps the footprints call independent: each
    stays enabled after the other, the two orders end in the same state, and neither changes
    the other's rank."""
    rng = random.Random(seed)
    failures = []
    for _ in range(walks):
        s = initial_state(cfg)
        for _ in range(length):
            succ = successors(s, cfg)
            if not succ:
                break
            after = dict(succ)
            prints = {a: fp.footprint(s, a, cfg) for a in after}
            for a in after:
                for c in after:
                    if a < c and fp.independent(prints[a], prints[c]):
                        ac, ca = after[a], after[c]
                        try:
                            if step(ac, c, cfg) != step(ca, a, cfg):
                                failures.append(f"{a} and {c} do not commute")
                        except NotEnabled as exc:
                            failures.append(f"{a} and {c}: one disables the other ({exc})")
                        for x, y, other in ((a, c, ca), (c, a, ac)):
                            if fp.rank(other, x, True) != fp.rank(s, x, True):
                                failures.append(f"{y} changes the rank of {x}")
            s = rng.choice(succ)[1]
    return failures


# The intended baseline's configurations at both scales, and every controller-mode toggle's
# exposing configuration: the footprints must hold for the rules as each toggle changes them.
INTENDED = [(name, scale) for name in configs.NAMED for scale in ("small", "large")]


@pytest.mark.parametrize("name,scale", INTENDED)
def test_independent_steps_commute_in_the_intended_model(name, scale):
    cfg = scaled(configs.with_bugs(configs.load(name), frozenset(), False), scale)
    assert commutation_failures(cfg, walks=40, length=60) == []


@pytest.mark.parametrize("toggle", [t.name for t in TOGGLES])
def test_independent_steps_commute_under_every_toggle(toggle):
    assert commutation_failures(configs.exposing(frozenset({toggle})), walks=10, length=50) == []


def test_independent_steps_commute_with_the_faults_off_by_default():
    """The epoch-file and checkpoint faults, the controller cuts and the closed connections'
    second removals are in no named configuration."""
    off = {f: 1 for f in ("epoch_file_losses", "epoch_file_reverts", "controller_cuts", "second_removals",
                          "checkpoint_reverts")}
    cfg = configs.load("durable")._replace(faults=configs.load("durable").faults._replace(**off))
    assert commutation_failures(cfg, walks=40, length=60) == []


def test_a_footprint_that_leaves_out_a_write_is_caught(monkeypatch):
    """The check can fail: a master's read of an ack said to touch only the slave (it moves the
    master's confirmOffset too) does not commute with the master's own steps."""
    monkeypatch.setitem(fp.FOOTPRINTS, "ha_read_ack", fp._own())
    assert commutation_failures(configs.load("durable3"), walks=40, length=60)


def levels(name: str, depth: int, symmetry: bool, sleep: bool) -> explore.Result:
    std = named.STANDARD[name]
    return explore.Explorer(std.cfg, std.bounds._replace(max_depth=depth, symmetry=symmetry, sleep_sets=sleep)).run()


# Depths that keep `make test` short; the slow tier (-m slow) goes two deeper.
SLEEP_DEPTHS = [("std2", 10, False), ("std3", 8, True), ("std3", 7, False)]


@pytest.mark.heavy
@pytest.mark.parametrize("name,depth,symmetry", SLEEP_DEPTHS + [
    pytest.param(name, depth + 2, sym, marks=pytest.mark.slow, id=f"{name}-{depth + 2}-{sym}-deeper")
    for name, depth, sym in SLEEP_DEPTHS])
def test_sleep_sets_reach_every_state_at_its_depth(name, depth, symmetry):
    plain, reduced = levels(name, depth, symmetry, False), levels(name, depth, symmetry, True)
    assert reduced.levels == plain.levels and reduced.pruned == plain.pruned
    assert plain.slept == 0 and reduced.slept > 0.05 * plain.transitions
    # every step of an expanded state is either taken or asleep
    assert reduced.transitions + reduced.slept == plain.transitions


@pytest.mark.heavy
def test_wrong_footprints_lose_states(monkeypatch):
    """The level comparison can fail: with that same wrong footprint, sleep sets skip steps
    whose states no other order reaches."""
    monkeypatch.setitem(fp.FOOTPRINTS, "ha_read_ack", fp._own())
    assert levels("std2", 8, False, True).levels != levels("std2", 8, False, False).levels  # from depth 8 on


# Toggles the breadth-first hunt finds (the bug table's explore column; not truncation_max_end
# and truncation_keeps_master_end, which it finds only at the end of a 60 s budget on an idle
# machine): in the scope where the hunt found each, the shortest counterexample is as long with
# sleep sets as without. QUICK names that scope (its index in scoped.scopes): the hunt, which races
# every scope, took 23.5 s of a 30 s test to find proposal_overwrites_pending_sss in a scope explored
# in 1 s. The slow tier hunts every one, and checks QUICK's indices.
QUICK = {"ack_uses_local_sss_only": 4, "restart_accepts_writes_before_role_confirmed": 2,
         "confirm_ignores_proposed_sss": 0, "confirm_skips_unacked_members": 0, "proposal_overwrites_pending_sss": 2}
SLOWER = ("on_become_master_sss_self_only", "confirm_min_over_connected_only", "alter_uses_epochs_at_send",
          "controller_serves_before_apply", "cq_recover_only_to_confirm", "consumer_offset_not_truncated",
          "no_confirm_clamp_on_truncate", "equal_start_epoch_not_recorded")


def same_shortest(scope, bounds, targets, hits=None) -> None:
    """`hits`: the plain explorer's in that scope, if already known."""
    hits = hits or explore.Explorer(scope, bounds, targets).run(600, stop_on=targets).hits
    assert hits, "the toggle is not found in this scope"
    shortest = min(len(h.actions) for h in hits.values())
    reduced = explore.Explorer(scope, bounds._replace(sleep_sets=True), targets).run(600, stop_on=targets)
    inv, hit = min(reduced.hits.items(), key=lambda x: len(x[1].actions))
    assert len(hit.actions) == shortest
    assert reproduces(scope, list(hit.actions), inv) is not None


@pytest.mark.heavy
@pytest.mark.parametrize("toggle", QUICK)
def test_toggles_explore_finds_are_found_with_sleep_sets(toggle):
    cfg = configs.exposing(frozenset({toggle}))
    same_shortest(*scoped.scopes(cfg)[QUICK[toggle]], expected_ids(cfg))


@pytest.mark.slow
@pytest.mark.parametrize("toggle", [*QUICK, *SLOWER])
def test_the_hunts_scope_finds_it_as_short_with_sleep_sets(toggle):
    """For QUICK, also that the hunt still finds each in the scope named there."""
    cfg = configs.exposing(frozenset({toggle}))
    targets = expected_ids(cfg)
    found, _ = scoped.hunt(cfg, targets, math.inf, states=1_500_000)  # about 300 s of work
    assert found is not None
    assert toggle not in QUICK or (found.cfg, found.bounds) == scoped.scopes(cfg)[QUICK[toggle]]
    same_shortest(found.cfg, found.bounds, targets, found.result.hits)


def test_the_explore_command_takes_sleep_sets(tmp_path, capsys):
    assert main(["explore", "--config", "std2", "--max-depth", "6", "--sleep-sets", "--quiet",
                 "--out", str(tmp_path)]) == 0
    assert "more skipped by sleep sets" in capsys.readouterr().out
    for argv in (["--config", "dledger"], ["--liveness"]):
        assert main(["explore", *argv, "--sleep-sets"]) == 2
        err = capsys.readouterr().err
        assert "--sleep-sets goes with controller mode's safety invariants" in err and "Traceback" not in err
