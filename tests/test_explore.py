"""The exhaustive explorer, its abstractions, random walks, coverage and liveness."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from rmqcheck.checkers.search import explore, named, scoped
from rmqcheck.checkers.search import liveness
from rmqcheck.checkers.search.explore import Bounds, Explorer
from rmqcheck.checkers.search.hunting import find
from rmqcheck.checkers.counterexamples.files import read
from rmqcheck.checkers.counterexamples.replay import reproduces
from rmqcheck.checkers.search.coverage import election_with_truncation
from rmqcheck.checkers.search.walk import one_walk, walk
from rmqcheck.invariants.catalogue import check_state, check_transition, expected_ids
from rmqcheck.model import abstraction
from rmqcheck.model.abstraction import (
    canonical_key,
    free_hashes,
    key_view,
    rename,
    rename_action,
    symmetries,
    timeless,
)
from rmqcheck.model.config import NO_FAULTS, SYNC_FLUSH, Config
from rmqcheck.model.step import ACTIONS, NotEnabled, initial_state, step, successors

# 2 brokers, one one-byte message, no faults: about 43k states, a few seconds.
TINY = Config(all_ack=True, flush=SYNC_FLUSH, bugs=frozenset(), max_messages=1, message_sizes=(1,), faults=NO_FAULTS)
TINY_BOUNDS = Bounds(max_sss_epoch=1)
# 2 brokers, no messages, one crash: about 20k states; elections happen.
CRASH = TINY._replace(max_messages=0, faults=NO_FAULTS._replace(crashes=1))


@pytest.fixture(scope="module")
def tiny():
    ex = Explorer(TINY, TINY_BOUNDS)
    return ex, ex.run()


@pytest.fixture(scope="module")
def crash():
    """CRASH explored whole (about 8 s), once for the tests that read it."""
    return Explorer(CRASH).run()


@pytest.mark.heavy
def test_the_intended_baseline_holds_exhaustively_on_a_tiny_configuration(tiny):
    ex, r = tiny
    assert r.exhaustive and r.stopped == "exhausted"
    assert r.hits == {}
    assert r.states > 10_000 and r.transitions > r.states and r.pruned > 0
    assert r.coverage.actions["send"] > 0 and r.coverage.actions["ha_transfer"] > 0


@pytest.mark.heavy
def test_unreached_witnesses_are_reported(tiny):
    _, r = tiny
    statuses = {name: status for name, status, _ in r.coverage.report()}
    # no crash in TINY: a master change cannot happen, and the report says so
    assert statuses["election_with_truncation"] == "NOT REACHED"
    assert "election_with_truncation" in r.coverage.unreached()
    assert statuses["unclean_election"].startswith("n/a")


def test_failover_with_truncation_takes_std3_and_a_second_message():
    """std3 never reaches the witness (docs/performance.md, exploration on Spark: exhaustive to depth 17, and why no
    depth does);
    with a second message a 23-step run does, the handshake's last step."""
    path = Path(__file__).resolve().parents[1] / "scenarios" / "coverage" / "failover-with-truncation.scn"
    cx = read(path)
    assert cx.invariant is None and cx.config == named.STANDARD["std3"].cfg._replace(max_messages=2)
    s = initial_state(cx.config)
    for i, a in enumerate(cx.actions):
        n = step(s, a, cx.config)
        assert election_with_truncation(s, a, n) == (i == len(cx.actions) - 1)
        s = n


def test_the_witnesses_of_offsets_inside_messages_on_their_shortest_run():
    """Issue 43: the precondition no random walk reached, step by step: a partial batch leaves a
    torn tail (step 6), the master reads its ack (confirmOffset inside message 2, step 7), and
    restarts with it saved (step 9)."""
    from rmqcheck.checkers.search import coverage

    path = Path(__file__).resolve().parents[1] / "scenarios" / "coverage" / "restart-with-confirm-inside-message.scn"
    cx = read(path)
    s = initial_state(cx.config)
    seen = {"tail_torn": [], "confirm_inside_message": [], "restart_with_confirm_inside_message": []}
    for i, a in enumerate(cx.actions, start=1):
        n = step(s, a, cx.config)
        for name, flags in seen.items():
            if getattr(coverage, name)(s, a, n):
                flags.append(i)
        s = n
    assert seen == {"tail_torn": [6, 7, 8, 9], "confirm_inside_message": [7, 8], "restart_with_confirm_inside_message": [9]}


@pytest.mark.heavy
def test_a_crash_configuration_reaches_a_lone_master_crash(crash):
    assert crash.exhaustive and "lone_master_crash" not in crash.coverage.unreached()


def _shortest_by_enumeration(cfg: Config, invariant: str, limit: int) -> int | None:
    """Length of the shortest action sequence violating `invariant`, by plain enumeration."""
    ids = frozenset({invariant})
    level = [initial_state(cfg)]
    for depth in range(1, limit + 1):
        nxt = []
        for s in level:
            for a, n in successors(s, cfg):
                if check_transition(s, a, n, cfg, ids) or check_state(n, cfg, ids):
                    return depth
                nxt.append(n)
        level = nxt
    return None


def test_breadth_first_counterexamples_are_shortest_and_replay():
    cfg = TINY._replace(bugs=frozenset({"ack_uses_local_sss_only"}), faults=NO_FAULTS._replace(lost_responses=1))
    ex = Explorer(cfg, Bounds(timely_heartbeats=False), ["I2"])
    r = ex.run(stop_on=["I2"])
    hit = r.hits["I2"]
    assert r.stopped == "violation"
    assert len(hit.actions) == _shortest_by_enumeration(cfg, "I2", len(hit.actions))
    assert reproduces(cfg, hit.actions, "I2") == len(hit.actions)


def test_a_hunt_gives_one_answer_whatever_its_turns_and_the_order_the_model_lists_steps_in(monkeypatch):
    """Issue 43: which scope finds first depends on the turns (the clock, on a time budget; the
    engine): here the first scope finds a 5-step counterexample before a later one's I2 in 4. The answer
    is the least (length, scope, invariant), each scope's path the least in canonical order."""
    from rmqcheck.model import configs

    cfg = configs.exposing(frozenset({"ack_uses_local_sss_only"}))
    targets = expected_ids(cfg)

    def answer():
        found, tried = scoped.hunt(cfg, targets, math.inf, states=200_000)
        assert found is not None and found.shortest and not found.unsettled
        return found.cfg, found.hit, tried

    scope, hit, tried = answer()  # the first scope's first turn takes it whole
    assert tried[0][2].stopped == "violation" and min(len(h.actions) for h in tried[0][2].hits.values()) == 5
    assert (hit.invariant, len(hit.actions)) == ("I2", 4)
    assert (scope.max_messages, scope.faults) == (1, NO_FAULTS._replace(lost_responses=1))  # the first scope with it
    assert reproduces(scope, hit.actions, "I2") is not None
    second = scoped.scopes(cfg)[1]  # where the order the model lists steps in would change the path kept
    kept = Explorer(*second, targets).run(stop_on=targets).hits
    monkeypatch.setattr(scoped, "SLICE_STATES", 7)
    listed = explore.bounded_successors
    monkeypatch.setattr(explore, "bounded_successors", lambda *a: list(reversed(listed(*a))))
    assert answer()[:2] == (scope, hit)
    assert Explorer(*second, targets).run(stop_on=targets).hits == kept


@pytest.mark.heavy
# confirm_skips_unacked_members: explore's 5 steps against stateful's 6 (on_become_master_sss_self_only,
# here before, found in the last of its scopes: 22 s of exploration for the same check).
@pytest.mark.parametrize("toggle", ["ack_uses_local_sss_only", "confirm_skips_unacked_members"])
def test_explore_hunts_are_no_longer_than_the_stateful_checkers(toggle):
    from rmqcheck.model import configs

    cfg = configs.exposing(frozenset({toggle}))
    targets = expected_ids(cfg)
    # Work, not seconds, so a busy machine gives the same verdict: both are found in their first
    # turns (about 1 s of a 60 s budget).
    found, tried = scoped.hunt(cfg, targets, math.inf, states=300_000)
    stateful, _ = find(cfg, targets, math.inf, 0, max_batches=4)
    assert found is not None and stateful is not None
    assert len(found.hit.actions) <= len(stateful.counterexample.actions)
    assert reproduces(found.cfg, found.hit.actions, found.hit.invariant) is not None


def test_hunts_budgeted_in_work_stop_after_that_work(tenth_size_batches):
    """`scoped.hunt(states=)` and `stateful.hunt(max_batches=)`: a count, not the clock."""
    from rmqcheck.checkers.search.stateful import hunt as stateful_hunt

    cfg = TINY._replace(bugs=frozenset())
    def seen(states):
        found, tried = scoped.hunt(cfg, ["I1"], math.inf, states=states)
        assert found is None
        return [(r.states, r.transitions) for *_, r in tried]

    three = seen(3)
    assert three == seen(3) != seen(30)  # the same work each time, whatever the clock says
    assert sum(s for s, _ in three) < 30
    result = stateful_hunt(cfg, ["I1"], math.inf, seed=0, max_batches=1)
    assert result.violation is None and result.batches == 1


@pytest.mark.heavy
def test_a_search_run_in_slices_ends_as_one_run_and_stops_on_request(crash):
    search = Explorer(CRASH).search()
    slices = 0
    while (r := explore.advance(search, 0.05)) is None:
        slices += 1
    assert slices > 1
    assert (r.states, r.transitions, r.depth, r.stopped) == (crash.states, crash.transitions, crash.depth, "exhausted")
    search = Explorer(CRASH).search()
    assert explore.advance(search, 0.05) is None
    part = explore.stop(search)
    assert part.stopped == "budget" and not part.exhaustive and 0 < part.states < crash.states
    never_run = explore.stop(Explorer(CRASH).search())
    assert never_run.stopped == "budget" and never_run.states < crash.states


def test_scopes_grow_and_stay_within_the_configuration():
    from rmqcheck.model import configs

    cfg = configs.load("durable")
    scopes = scoped.scopes(cfg)
    assert scopes[0][0].max_messages == 1 and scopes[-1][0] == cfg
    assert all(s.max_messages <= cfg.max_messages for s, _ in scopes)
    # a faultless scope cannot elect, so masterEpoch stays at 2; a scope with one heartbeat
    # timeout may burn three failed elections and re-elect (A9's counterexample reaches 5)
    by_faults = {s.faults: b for s, b in scopes}
    assert by_faults[NO_FAULTS].max_epoch == 2
    assert by_faults[NO_FAULTS._replace(heartbeat_timeouts=1)].max_epoch == 5


# --- the abstractions -----------------------------------------------------------------------------


def _walk_states(cfg: Config, runs: int, depth: int, seed: int = 3):
    rng = random.Random(seed)
    for _ in range(runs):
        s = initial_state(cfg)
        for _ in range(depth):
            yield s
            succ = successors(s, cfg)
            s = succ[rng.randrange(len(succ))][1]


def _time_view_mismatches(cfg: Config, key) -> int:
    """States with one view must have the same successor views, action by action."""
    by_view: dict = {}
    bad = 0
    for s in _walk_states(cfg, 60, 40):
        k = key(s)
        succ = {a: key(n) for a, n in successors(s, cfg)}
        if by_view.setdefault(k, succ) != succ:
            bad += 1
    return bad


@pytest.mark.heavy
def test_the_time_view_identifies_only_states_with_the_same_futures():
    cfg = Config(all_ack=True, flush=SYNC_FLUSH, bugs=frozenset(), faults=NO_FAULTS._replace(crashes=1, heartbeat_timeouts=1))
    assert _time_view_mismatches(cfg, lambda s: timeless(s, cfg)) == 0
    # and the check can fail: clamping ages one tick too early identifies states whose
    # brokers differ in liveness
    tight = cfg._replace(heartbeat_timeout=cfg.heartbeat_timeout - 1, not_catchup_time=cfg.not_catchup_time - 1)
    assert _time_view_mismatches(cfg, lambda s: timeless(s, tight)) > 0


def _tie_election(pre, action, cfg) -> bool:
    """An election among brokers with equal (epoch, maxOffset, priority): the policy keeps the
    smallest id, the one rule that does not treat ids alike."""
    live = [i for i in pre.ctrl.live if i is not None]
    keys = [(i.epoch, i.max_offset, i.priority) for i in live]
    return len(set(keys)) < len(keys)


@pytest.mark.heavy
def test_rules_treat_broker_ids_alike_except_exact_tie_elections():
    cfg = Config(brokers=3, all_ack=True, flush=SYNC_FLUSH, bugs=frozenset(), faults=NO_FAULTS._replace(crashes=1))
    group = symmetries(cfg)
    assert len(group) == 6 and group[0] == (1, 2, 3)
    checked = 0
    for s in _walk_states(cfg, 25, 40):
        for perm in group[1:]:
            rs = rename(s, perm)
            for a, n in successors(s, cfg):
                ra = rename_action(a, ACTIONS[a[0]].args, perm)
                try:
                    rn = step(rs, ra, cfg)
                except NotEnabled:
                    assert _tie_election(s, a, cfg), (a, perm)
                    continue
                same = timeless(rn, cfg) == timeless(rename(n, perm), cfg)
                assert same or _tie_election(s, a, cfg), (a, perm)
                checked += 1
    assert checked > 10_000


def test_the_canonical_key_is_the_same_for_every_renaming():
    for cfg in (
        Config(brokers=3, all_ack=True, flush=SYNC_FLUSH, bugs=frozenset(), faults=NO_FAULTS._replace(crashes=1)),
        Config(brokers=3, async_learners=frozenset({3}), faults=NO_FAULTS._replace(crashes=1)),
    ):
        group = symmetries(cfg)
        for s in _walk_states(cfg, 10, 40):
            assert len({canonical_key(rename(s, perm), cfg, group) for perm in group}) == 1
            # the key renames the view, not the state: the two must agree
            view = timeless(s, cfg)
            for p in group:
                renamed = timeless(rename(s, p), cfg)
                assert key_view(view, free_hashes(view), p) == key_view(renamed, free_hashes(renamed))


def test_learners_break_the_symmetry_they_name():
    cfg = Config(brokers=3, async_learners=frozenset({3}))
    assert symmetries(cfg) == [(1, 2, 3), (2, 1, 3)]


def test_symmetry_reduction_keeps_verdicts_and_reports_its_reduction(capsys):
    base = Config(brokers=3, all_ack=True, flush=SYNC_FLUSH, max_messages=1, message_sizes=(1,), faults=NO_FAULTS)
    for bugs, invariant in ((frozenset(), None), (frozenset({"ack_uses_local_sss_only"}), "I2")):
        cfg = base._replace(bugs=bugs, faults=NO_FAULTS._replace(lost_responses=1) if bugs else NO_FAULTS)
        runs = {sym: Explorer(cfg, Bounds(max_depth=7, symmetry=sym)).run() for sym in (False, True)}
        plain, reduced = runs[False], runs[True]
        assert set(plain.hits) == set(reduced.hits)
        assert (invariant in plain.hits) if invariant else not plain.hits
        for inv, hit in plain.hits.items():
            assert len(hit.actions) == len(reduced.hits[inv].actions)
        assert reduced.states < plain.states
        with capsys.disabled():
            print(f"\n  symmetry, 3 brokers, depth <= 7, toggles {sorted(bugs) or 'none'}: "
                  f"{plain.states} -> {reduced.states} states ({plain.states / reduced.states:.2f}x)")


def test_renaming_is_a_permutation():
    cfg = Config(brokers=3, all_ack=True, flush=SYNC_FLUSH, faults=NO_FAULTS._replace(crashes=1))
    for s in _walk_states(cfg, 5, 30):
        for perm in symmetries(cfg):
            inverse = tuple(perm.index(i) + 1 for i in (1, 2, 3))
            assert rename(rename(s, perm), inverse) == s


# --- random walks ---------------------------------------------------------------------------------


def test_walks_are_seeded_and_their_violations_are_shrunk():
    cfg = TINY._replace(bugs=frozenset({"ack_uses_local_sss_only"}), faults=NO_FAULTS._replace(lost_responses=1))
    r = walk(cfg, seed=5, depth=40, budget=60, invariants=expected_ids(cfg))
    assert r.hit is not None
    h = r.hit
    assert one_walk(cfg, 5, h.walk, 40, expected_ids(cfg))[0] == list(h.actions)  # replayable by index
    assert len(h.shrunk) <= len(h.actions)
    assert reproduces(cfg, h.shrunk, h.invariant) is not None


def test_walks_of_the_intended_baseline_find_nothing():
    r = walk(TINY, seed=1, depth=40, budget=60, max_walks=100, invariants=expected_ids(TINY))
    assert r.hit is None and r.walks == 100


# --- liveness -------------------------------------------------------------------------------------


@pytest.mark.heavy
def test_liveness_holds_on_the_faithful_model():
    for cfg, bounds in ((CRASH, Bounds()), (TINY, TINY_BOUNDS)):
        r = liveness.check(cfg, bounds)
        assert r.explored.exhaustive and r.lassos == {} and r.checked >= 1


def test_a_toggle_that_breaks_progress_gives_a_replayable_lasso():
    cfg = CRASH._replace(bugs=frozenset({"no_inactive_master_scan"}))
    r = liveness.check(cfg)
    lasso = r.lassos["L1"]
    actions = lasso.prefix + lasso.cycle
    assert liveness.recheck(cfg, actions, len(lasso.prefix), "L1")
    assert liveness.recheck(CRASH, actions, len(lasso.prefix), "L1") is None
    # a lasso that does not close is rejected
    assert liveness.recheck(cfg, actions[:-1], len(lasso.prefix), "L1") is None


def test_liveness_refuses_symmetry():
    with pytest.raises(ValueError, match="without symmetry"):
        liveness.check(CRASH, Bounds(symmetry=True))


def test_the_abstractions_belong_to_the_model_and_import_nothing_else():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(abstraction.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if "checkers" in m or "invariants" in m]
