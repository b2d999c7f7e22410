"""Regression scenarios (scenarios/): every toggle's minimal counterexample violates its
invariant with the toggle and not without it; every guarantee a configuration gives up is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqcheck.checkers.search import liveness
from rmqcheck.checkers.counterexamples.files import read
from rmqcheck.checkers.counterexamples.replay import ReplayError, replay, reproduces, run_lenient
from rmqcheck.invariants.catalogue import BY_ID, expected_ids
from rmqcheck.model.broker import dispatch_behind, get_confirm_offset
from rmqcheck.model.bugs import BY_NAME, SNAPSHOT, TOGGLES
from rmqcheck.model.step import rule_controller_elect

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
TOGGLE_FILES = sorted((SCENARIOS / "toggles").glob("*.scn"))
EXPECTED_FILES = sorted((SCENARIOS / "expected").glob("*.scn"))

# Toggles with no scenario, and why (docs/findings.md).
NO_SCENARIO = {
    "expand_without_epoch_start_check": "harmless in the snapshot: the guard never decides (tests/test_invariants.py)",
}


def toggle_of(path: Path) -> str:
    """toggles/<toggle>.scn or toggles/<toggle>--<invariant>.scn"""
    return path.stem.split("--")[0]


def test_every_toggle_has_a_scenario_or_a_reason():
    have = {toggle_of(p) for p in TOGGLE_FILES}
    assert have | NO_SCENARIO.keys() == {t.name for t in TOGGLES}
    assert not have & NO_SCENARIO.keys()


@pytest.mark.parametrize("path", TOGGLE_FILES, ids=lambda p: p.stem)
def test_toggle_scenario_violates_only_with_its_toggle(path):
    cx = read(path)
    toggle = toggle_of(path)
    assert toggle in BY_NAME and toggle in cx.config.bugs, f"{path}: must turn on {toggle}"
    if "--" in path.stem:
        assert path.stem.split("--")[1] == cx.invariant
    without = cx.config._replace(bugs=cx.config.bugs - {toggle})
    if cx.loop is not None:  # a liveness lasso
        assert liveness.recheck(cx.config, cx.actions, cx.loop, cx.invariant) is not None
        assert liveness.recheck(without, cx.actions, cx.loop, cx.invariant) is None
        return
    assert cx.invariant is not None and BY_ID[cx.invariant].expected(cx.config)
    step = reproduces(cx.config, cx.actions, cx.invariant, cx.start)
    assert step is not None, f"{path}: {cx.invariant} is not violated"
    assert run_lenient(without, cx.actions, cx.invariant, cx.start) is None, f"{path}: violated without {toggle} too"


@pytest.mark.parametrize("path", EXPECTED_FILES, ids=lambda p: p.stem)
def test_expected_violations_are_not_promised_by_their_configuration(path):
    cx = read(path)
    assert reproduces(cx.config, cx.actions, cx.invariant) is not None
    assert not BY_ID[cx.invariant].expected(cx.config)


def test_the_defaults_lose_acked_messages_c4():
    names = {p.stem for p in EXPECTED_FILES}
    assert {"defaults-lose-acked-messages", "c4-deposed-master-acks-alone"} <= names
    cx = read(SCENARIOS / "expected" / "c4-deposed-master-acks-alone.scn")
    assert cx.config.sync_flush and not cx.config.all_ack  # the loss is replication's, not the disk's
    last = replay(cx.config, cx.actions).states[-1]
    assert last.ctrl.applied.master != last.msgs[0].writer  # a deposed master acked it


def test_a_torn_tail_ack_moves_confirm_offset_back_to_a_message_boundary():
    """scenarios/quirks/: the real confirmOffset goes back within an epoch; I4 holds because the
    message boundary below it does not."""
    cx = read(SCENARIOS / "quirks" / "torn-tail-ack-moves-confirm-back.scn")
    assert cx.invariant is None and BY_ID["I4"].expected(cx.config)
    r = replay(cx.config, cx.actions, frozenset(expected_ids(cx.config)))
    assert r.first() is None
    confirms = [get_confirm_offset(s.broker(1), cx.config) for s in r.states]
    assert confirms[-2:] == [4, 3] and r.states[-1].broker(1).master_epoch == r.states[-3].broker(1).master_epoch


def test_a_restarted_broker_with_no_role_confirms_for_no_one():
    """scenarios/quirks/: the Java recomputes confirmOffset on an ack only for a member of the
    local SyncStateSet (AutoSwitchHAService.java:356), empty after a restart, so the deposed
    broker 1 never confirms message 1 for broker 2, in the snapshot and in the intended model;
    broker 2 therefore has nothing to dispatch (the intended form once let it serve message 1)."""
    cx = read(SCENARIOS / "quirks" / "restarted-broker-confirms-for-no-one.scn")
    assert replay(cx.config, cx.actions, frozenset(expected_ids(cx.config))).first() is None
    for cfg in (cx.config, cx.config._replace(bugs=SNAPSHOT)):
        end = replay(cfg, cx.actions).states[-1]
        assert end.broker(1).remote_sss == {2} and not end.broker(1).sss  # it proposed 2, holds none
        assert end.broker(1).confirm == 0 and end.broker(2).confirm == 0
        assert dispatch_behind(end.broker(2), cfg) == 0


def test_a_broker_cut_from_the_controller_alone_cannot_shrink_to_itself():
    """scenarios/quirks/ (from the real runs' isolate_controller): the master's HA link works, so
    its put is acked; its AlterSyncStateSet fails, so it keeps proposing {1} with the set {1, 2}
    and cannot ack alone after the controller elects broker 2. A partition could not show it:
    it cuts the HA link too."""
    cx = read(SCENARIOS / "quirks" / "controller-path-cut-alone.scn")
    for cfg in (cx.config, cx.config._replace(bugs=SNAPSHOT)):
        r = replay(cfg, cx.actions, frozenset(expected_ids(cfg)))
        assert r.first() is None
        end = r.states[-1]
        assert end.broker(1).sss == {1, 2} and end.broker(1).remote_sss == {1}
        assert end.ctrl.applied.master == 2 and [x.status for x in end.sends] == ["PUT_OK", "FLUSH_SLAVE_TIMEOUT"]
    cut = cx.actions.index(("controller_cut", 1))
    with pytest.raises(ReplayError, match=r"alter_sss_fail\(broker=1\) is not enabled"):
        replay(cx.config, cx.actions[:cut] + cx.actions[cut + 1:])


def test_a_closed_connection_is_removed_by_each_of_its_two_services():
    """scenarios/quirks/ (from the real runs' isolate_ha, durable3 seed 12): each service's
    removeConnection proposes the removal from the local set as it is then, so master 1 ends at
    {1}; one removal per connection ends at {1, 2}, a member with no connection. Without the
    `second_removals` budget the second call is not a step of its own."""
    cx = read(SCENARIOS / "quirks" / "closed-connection-removed-twice.scn")
    r = replay(cx.config, cx.actions, frozenset(expected_ids(cx.config)))
    assert r.first() is None
    applied = [s.ctrl.applied.sss for s in r.states]
    assert [x for i, x in enumerate(applied) if i == 0 or x != applied[i - 1]][-5:] == \
        [{1, 2, 3}, {1, 3}, {1, 2}, {1, 3}, {1}]  # the code's four proposals, accepted in order
    end = r.states[-1]
    assert (end.broker(1).sss, end.broker(1).sss_epoch) == ({1}, 7) and not end.broker(1).closing
    second = cx.actions.index(("ha_second_removal", 1, 2))
    once = replay(cx.config, cx.actions[:second] + (("alter_sss", 1, 0),) * 2).states[-1]
    assert end.broker(1).conns == once.broker(1).conns == () and once.broker(1).sss == {1, 2}
    no_budget = cx.config._replace(faults=cx.config.faults._replace(second_removals=0))
    with pytest.raises(ReplayError, match=r"ha_second_removal\(broker=1, slave=2\) is not enabled"):
        replay(no_budget, cx.actions)


def test_a_restarted_master_heartbeats_before_it_registers_and_stays_master():
    """scenarios/quirks/ (from the long real runs): BrokerController heartbeats whatever
    ReplicasManager's state, with the id from the metadata file, so the controller keeps the
    restarted master alive and elects no one; its register hands it the master role back. Without
    those heartbeats the controller would elect broker 2."""
    cx = read(SCENARIOS / "quirks" / "restarted-master-heartbeats-before-register.scn")
    r = replay(cx.config, cx.actions, frozenset(expected_ids(cx.config)))
    assert r.first() is None
    before_register = r.states[-2]
    assert not before_register.broker(1).running and rule_controller_elect(before_register, cx.config) is None
    assert before_register.ctrl.applied.master == 1 and r.states[-1].broker(1).promoting == 1
    silent = [a for a in cx.actions[:-1] if a != ("heartbeat", 1)]
    end = replay(cx.config, silent).states[-1]
    elected = rule_controller_elect(end, cx.config)
    assert elected is not None and elected.ctrl.applied.master == 2


def test_a_master_restarted_twice_in_a_tick_checks_its_set_at_once_each_time():
    """scenarios/quirks/ (from the long real runs): changeToMaster submits the SyncStateSet check
    at once, so the second restart's first check drops the slave not yet reconnected, though a
    check already ran in this tick."""
    cx = read(SCENARIOS / "quirks" / "restarted-master-checks-at-once.scn")
    r = replay(cx.config, cx.actions, frozenset(expected_ids(cx.config)))
    assert r.first() is None
    end = r.states[-1]
    assert end.now == 0 and cx.actions.count(("check_sss", 1)) == 2
    assert end.broker(1).sss == {1, 2} and [a[0] for a in end.broker(1).alters] == [{1}]


def test_a_superseded_connection_leaves_its_connected_slave_in_the_set():
    """scenarios/quirks/ (from `rmqcheck conform` on acks_counted_per_connection's patch): in the
    intended form, the old connection's second service proposes no removal while the slave's new
    connection is in the list, so master 1 keeps {1, 2}; the snapshot proposes {1} again."""
    cx = read(SCENARIOS / "quirks" / "superseded-connection-keeps-member.scn")
    assert "acks_counted_per_connection" not in cx.config.bugs
    ends = {}
    for cfg in (cx.config, cx.config._replace(bugs=frozenset({"acks_counted_per_connection"}))):
        r = replay(cfg, cx.actions, frozenset(expected_ids(cfg)))
        assert r.first() is None
        m = r.states[-1].broker(1)
        assert [c.slave for c in m.conns] == [2] and m.sss == {1, 2} and not m.closing
        ends[cfg.has("acks_counted_per_connection")] = m.remote_sss
    assert ends == {False: {1, 2}, True: {1}}
