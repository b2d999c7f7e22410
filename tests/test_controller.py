"""Controller requests, events and DefaultElectPolicy (reference §3)."""

from __future__ import annotations

import pytest

from rmqcheck.model import controller as ctl
from rmqcheck.model.controller import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    ElectMasterEvent,
    LiveInfo,
    SetState,
)


def registered(*ids: int) -> SetState:
    s = SetState()
    for i in ids:
        code, events = ctl.apply_broker_id(s, i)
        assert code == ctl.SUCCESS
        for ev in events:
            s = ctl.apply_event(s, ev)
    return s


def mastered(master: int, sss, ids=(1, 2, 3)) -> SetState:
    s = ctl.apply_event(registered(*ids), ElectMasterEvent(master))
    if set(sss) != {master}:
        s = ctl.apply_event(s, AlterSyncStateSetEvent(frozenset(sss)))
    return s


ALL = frozenset({1, 2, 3})


def live(**kw) -> tuple:
    """live(b1=(epoch, max_offset[, priority]), ...)"""
    out = [None, None, None]
    for name, v in kw.items():
        out[int(name[1:]) - 1] = LiveInfo(0, v[0], v[1], 0, *v[2:])
    return tuple(out)


# --- broker ids and registration (§3.7) -------------------------------------------------------


def test_broker_ids_start_at_one_and_the_counter_grows_by_one():
    s = SetState()
    assert ctl.get_next_broker_id(s) == 1
    assert ctl.apply_broker_id(s, 2) == (ctl.CONTROLLER_BROKER_ID_INVALID, ())
    s = registered(1, 2)
    assert ctl.get_next_broker_id(s) == 3
    assert ctl.apply_broker_id(s, 2)[0] == ctl.CONTROLLER_BROKER_ID_INVALID
    assert ctl.apply_event(s, ApplyBrokerIdEvent(2)) == s  # re-applying is a no-op


def test_register_reports_only_a_live_master_but_always_the_set():
    s = mastered(1, {1, 2})
    code, role, sss, epoch = ctl.register_broker(s, 2, frozenset({2}))
    assert code == ctl.SUCCESS and role is None and sss == {1, 2} and epoch == 2
    code, role, _, _ = ctl.register_broker(s, 2, ALL)
    assert role == ctl.RoleInfo(1, 1, 2, frozenset({1, 2}))
    assert ctl.register_broker(s, 7, ALL)[0] == ctl.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED


# --- AlterSyncStateSet pre-checks in order (§3.3) ----------------------------------------------


def test_alter_checks_run_in_the_reference_order():
    s = mastered(1, {1})  # master 1, masterEpoch 1, sss {1}, sssEpoch 1
    alter = ctl.alter_sync_state_set
    assert alter(SetState(), 1, 1, frozenset({1, 2}), 1, ALL)[0] == ctl.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    # the same set is refused before the master and epochs are looked at
    assert alter(s, 9, 9, frozenset({1}), 9, ALL)[0] == ctl.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    assert alter(s, 2, 1, frozenset({1, 2}), 1, ALL)[0] == ctl.CONTROLLER_INVALID_MASTER
    assert alter(s, 1, 0, frozenset({1, 2}), 1, ALL)[0] == ctl.CONTROLLER_FENCED_MASTER_EPOCH
    assert alter(s, 1, 1, frozenset({1, 2}), 0, ALL)[0] == ctl.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    assert alter(s, 1, 1, frozenset({1, 7}), 1, ALL)[0] == ctl.CONTROLLER_INVALID_REPLICAS
    assert alter(s, 1, 1, frozenset({1, 2}), 1, frozenset({1}))[0] == ctl.CONTROLLER_BROKER_NOT_ALIVE
    assert alter(s, 1, 1, frozenset({2, 3}), 1, ALL)[0] == ctl.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    code, body, events = alter(s, 1, 1, frozenset({1, 2}), 1, ALL)
    assert code == ctl.SUCCESS and body == (frozenset({1, 2}), 2)
    assert ctl.apply_event(s, events[0]).sss_epoch == 2


def test_a_masterless_set_refuses_alters_as_invalid_master():
    s = ctl.apply_event(mastered(1, {1, 2}), ElectMasterEvent(None))
    assert ctl.alter_sync_state_set(s, 1, s.master_epoch, frozenset({1}), 2, ALL)[0] == ctl.CONTROLLER_INVALID_MASTER


# --- ElectMaster (§3.4) and DefaultElectPolicy (§3.5) ------------------------------------------


def test_first_election_takes_the_requester_without_any_check():
    code, role, events = ctl.elect_master(registered(1, 2, 3), 3, False, False, frozenset(), live())
    assert code == ctl.SUCCESS and role.master == 3 and role.master_epoch == 1 and role.sss == {3}
    assert events == (ElectMasterEvent(3),)


def test_a_live_old_master_wins_and_nothing_changes():
    s = mastered(1, {1, 2})
    code, role, events = ctl.elect_master(s, ctl.NO_BROKER, False, False, ALL, live(b1=(1, 0), b2=(9, 99)))
    assert code == ctl.CONTROLLER_MASTER_STILL_EXIST and events == () and role.master == 1


def test_the_best_by_epoch_then_offset_then_priority_wins_ties_to_the_smallest_id():
    s = mastered(1, {1, 2, 3})
    alive = frozenset({2, 3})
    assert ctl.elect_master(s, ctl.NO_BROKER, False, False, alive, live(b2=(1, 5), b3=(2, 1)))[1].master == 3
    assert ctl.elect_master(s, ctl.NO_BROKER, False, False, alive, live(b2=(2, 5), b3=(2, 4)))[1].master == 2
    assert ctl.elect_master(s, ctl.NO_BROKER, False, False, alive, live(b2=(2, 5, 9), b3=(2, 5, 1)))[1].master == 3
    assert ctl.elect_master(s, ctl.NO_BROKER, False, False, alive, live(b2=(2, 5), b3=(2, 5)))[1].master == 2


def test_the_design_text_pitfall_ignores_heartbeat_data():
    s = mastered(1, {1, 2, 3})
    role = ctl.elect_master(
        s, ctl.NO_BROKER, False, False, frozenset({2, 3}), live(b2=(1, 0), b3=(2, 9)), ctl.ANY
    )[1]
    assert role.master == 2


def test_unclean_pass_only_when_enabled():
    s = mastered(1, {1})
    alive = frozenset({2})
    code, role, events = ctl.elect_master(s, ctl.NO_BROKER, False, False, alive, live(b2=(1, 0)))
    assert code == ctl.CONTROLLER_MASTER_NOT_AVAILABLE and events == (ElectMasterEvent(None),)
    code, role, _ = ctl.elect_master(s, ctl.NO_BROKER, False, True, alive, live(b2=(1, 0)))
    assert code == ctl.SUCCESS and role.master == 2


def test_a_failed_election_bumps_the_epoch_only_when_the_controller_triggered_it():
    s = mastered(1, {1})
    code, _, events = ctl.elect_master(s, 2, False, False, frozenset({2}), live(b2=(1, 0)))
    assert code == ctl.CONTROLLER_ELECT_MASTER_FAILED and events == ()
    masterless = ctl.apply_event(s, ElectMasterEvent(None))
    assert masterless.master is None and masterless.master_epoch == s.master_epoch + 1
    assert (masterless.sss, masterless.sss_epoch) == (s.sss, s.sss_epoch)


def test_an_admin_preference_is_taken_or_nothing():
    s = mastered(1, {1, 2, 3})
    alive = frozenset({1, 2, 3})
    info = live(b1=(1, 0), b2=(1, 0), b3=(1, 0))
    assert ctl.elect_master(s, 3, True, False, alive, info)[1].master == 3
    assert ctl.elect_master(s, 1, True, False, alive, info)[0] == ctl.CONTROLLER_MASTER_STILL_EXIST
    # 3 is dead: a preference is taken or nothing, with no fallback to the live old master
    code, _, events = ctl.elect_master(s, 3, True, False, frozenset({1, 2}), info)
    assert code == ctl.CONTROLLER_ELECT_MASTER_FAILED and events == ()


def test_election_resets_the_set_and_bumps_both_epochs():
    s = ctl.apply_event(mastered(1, {1, 2}), ElectMasterEvent(2))
    assert (s.master, s.master_epoch, s.sss, s.sss_epoch) == (2, 2, frozenset({2}), 3)


# --- heartbeats (§3.5) -------------------------------------------------------------------------


def test_heartbeat_data_only_grows_but_the_timestamp_always_refreshes():
    c = ctl.Controller(live=(None, None))
    c = ctl.on_broker_heartbeat(c, 1, 0, 2, 50, 40)
    assert c.live[0] == LiveInfo(0, 2, 50, 0)  # the first heartbeat's confirmOffset is dropped (conform)
    c = ctl.on_broker_heartbeat(c, 1, 5, 2, 30, 30, priority=3)  # a truncation does not lower the view
    assert c.live[0] == LiveInfo(5, 2, 50, 0, 3)  # but the priority is always taken
    c = ctl.on_broker_heartbeat(c, 1, 6, 3, 10, 10)
    assert c.live[0] == LiveInfo(6, 3, 10, 10)
    assert ctl.is_alive(c, 1, 8, 2) and not ctl.is_alive(c, 1, 9, 2)
    assert not ctl.is_alive(ctl.expire(c, 1), 1, 6, 2)


def test_comparator_casts_to_int_like_java():
    x, y = LiveInfo(0, 1, 2**32, 0), LiveInfo(0, 1, 0, 0)
    assert ctl.compare_candidates(x, y) == 0  # a difference that is a multiple of 2**32 compares equal
    assert ctl.compare_candidates(x, y, ctl.EXACT) < 0  # the intended form: more data first
    assert ctl.compare_candidates(LiveInfo(0, 1, 3 * 2**30, 0), y) > 0  # 3 GiB ahead sorts last
    assert ctl.compare_candidates(LiveInfo(0, 1, 2**31, 0), y) < 0 > ctl.compare_candidates(y, LiveInfo(0, 1, 2**31, 0))


def test_the_tree_set_walks_from_its_root_as_java_util_treemap_does():
    """With the cast comparator, which is not transitive, the answer depends on which nodes an
    insertion meets: a list kept sorted by scanning from its smallest element elects broker 3
    here, java.util.TreeMap broker 2 (conformance compares the answers with RocketMQ's code)."""
    unit = 2**29
    live = [(1, LiveInfo(0, 1, 0, 0)), (2, LiveInfo(0, 1, unit, 0)), (3, LiveInfo(0, 1, 5 * unit, 0))]
    assert ctl.tree_set_first(live) == 2
    assert ctl.tree_set_first(live, ctl.EXACT) == 3


# --- controller log (A7 toggle machinery) -----------------------------------------------------


def test_a_lagging_leader_applies_committed_events_in_order():
    c = ctl.Controller(applied=registered(1, 2))
    c = ctl.commit(c, (ElectMasterEvent(1),), keep_history=True)
    lag = ctl.failover_lagging(c)
    assert lag.applied.master is None and lag.pending == (ElectMasterEvent(1),)
    lag = ctl.commit(lag, (ElectMasterEvent(2),), keep_history=True)
    assert ctl.committed(lag).master_epoch == 2
    lag = ctl.apply_pending(ctl.apply_pending(lag))
    assert lag.applied.master == 2 and lag.applied.master_epoch == 2 and not lag.pending


def test_unknown_event_is_rejected():
    with pytest.raises(TypeError):
        ctl.apply_event(SetState(), object())
