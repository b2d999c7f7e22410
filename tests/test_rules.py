"""Protocol rules of the model, each checked on a short scenario (reference §2, §3.6)."""

from __future__ import annotations

import pytest

from rmqcheck.checkers.counterexamples.files import parse_scenario
from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.model import commitlog as cl
from rmqcheck.model.broker import MASTER, READY, SLAVE, TRANSFER, get_confirm_offset, max_phy
from rmqcheck.model.config import Config
from rmqcheck.model.step import NotEnabled, enabled, initial_state, step
from rmqcheck.model.world import FLUSH_SLAVE_TIMEOUT, IN_SYNC_REPLICAS_NOT_ENOUGH, PENDING, PUT_OK

DURABLE = "config all_ack=true flush=SYNC_FLUSH"
# Durable settings, broker 2 caught up and in the master's SyncStateSet.
MEMBER_2 = f"""{DURABLE}
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
alter_sss broker=1 lost=0"""


def run(text: str):
    """Replay a scenario (no invariants checked) and return its configuration and last state."""
    cx = parse_scenario(text + "\nexpect none\n", "test")
    return cx.config, replay(cx.config, cx.actions, ids=frozenset()).states[-1]


def status(s, msg):
    return next(r.status for r in s.sends if r.msg == msg)


def test_bootstrap_elects_broker_1_and_makes_the_others_its_slaves():
    s = initial_state(Config(brokers=3))
    assert [b.role for b in s.brokers] == [MASTER, SLAVE, SLAVE]
    assert s.broker(1).epochs.entries == ((1, 0),)
    assert (s.ctrl.applied.master, s.ctrl.applied.master_epoch, s.ctrl.applied.sss) == (1, 1, {1})
    assert s.ctrl.grants == ((1, 1),)
    assert all(b.master_epoch == 1 and b.running for b in s.brokers)


def test_step_raises_on_an_action_that_is_not_enabled():
    s = initial_state(Config())
    with pytest.raises(NotEnabled):
        step(s, ("send", 2, 0, 1), Config())  # broker 2 is a slave
    with pytest.raises(NotEnabled):
        step(s, ("no_such_action",), Config())
    assert ("send", 2, 0, 1) not in enabled(s, Config())


# --- put path (§2.8) ---------------------------------------------------------------------------


def test_defaults_ack_on_the_master_alone():
    _, s = run("send broker=1 queue=0 size=2")
    assert status(s, 1) == PUT_OK and max_phy(s.broker(1)) == 2


def test_min_in_sync_replicas_refuses_before_writing():
    _, s = run("config min_in_sync_replicas=2\nsend broker=1 queue=0 size=1")
    assert s.sends[0].status == IN_SYNC_REPLICAS_NOT_ENOUGH and s.msgs == ()


def test_all_ack_waits_for_every_sync_state_set_member_then_times_out():
    cfg, s = run(MEMBER_2 + """
send broker=1 queue=0 size=1""")
    assert s.broker(1).sss == {1, 2} and status(s, 1) == PENDING
    with pytest.raises(NotEnabled):
        step(s, ("put_complete", 1, 1), cfg)
    s = step(step(s, ("tick",), cfg), ("put_timeout", 1, 1), cfg)
    assert status(s, 1) == FLUSH_SLAVE_TIMEOUT and max_phy(s.broker(1)) == 1  # no rollback


def test_all_ack_completes_once_the_member_acks_the_next_offset():
    cfg, s = run(MEMBER_2 + """
send broker=1 queue=0 size=1
ha_transfer slave=2
ha_read_ack slave=2
put_complete broker=1 msg=1""")
    assert status(s, 1) == PUT_OK


def test_in_sync_replicas_counts_any_connection_even_an_async_learner():
    _, s = run("""config in_sync_replicas=2 async_learners=2
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
send broker=1 queue=0 size=1
ha_transfer slave=2
ha_read_ack slave=2
put_complete broker=1 msg=1""")
    assert status(s, 1) == PUT_OK
    assert s.broker(1).sss == {1} and not s.broker(1).alters  # a learner is never proposed


# --- HA handshake and transfer (§2.3, §2.4) ---------------------------------------------------


def test_transfer_batches_are_not_message_aligned():
    _, s = run("""config batch_size=1
send broker=1 queue=0 size=2
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
ha_transfer slave=2""")
    b2 = s.broker(2)
    assert max_phy(b2) == 1 and b2.epochs.entries == ((1, 0),)
    assert cl.check_message(b2.log, 0, s.msgs) == (False, 0)  # a partial message


def test_an_empty_epoch_file_skips_truncation_even_with_a_divergent_log():
    # Broker 2 holds data, loses its epoch file, and reconnects: doTruncate trusts it as it is.
    cfg, s = run("""faults epoch_file_losses=1
send broker=1 queue=0 size=1
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
ha_transfer slave=2
flush broker=2
crash broker=2 keep=0
lose_epoch_file broker=2
restart broker=2
register broker=2 lost=0
ha_connect slave=2""")
    b2 = s.broker(2)
    assert b2.client.state == TRANSFER and max_phy(b2) == 1
    # reportSlaveMaxOffset right after the skipped truncation: it asks to continue from its own end
    assert b2.client.ack == 1 and b2.client.reported == 1


def test_a_power_loss_takes_the_epoch_file_back_to_the_version_the_file_system_wrote_back():
    # Broker 2 records epoch 1 as a slave; a power loss before the file system wrote it back
    # leaves an empty file, so the restart reads no epoch (CheckpointFile.write has no fsync).
    synced = f"""{MEMBER_2}
faults epoch_file_reverts=1
send broker=1 queue=0 size=1
ha_transfer slave=2"""
    cfg, s = run(f"{synced}\ncrash broker=2 keep=0\nrevert_epoch_file broker=2\nrestart broker=2")
    assert s.broker(2).epochs.entries == () and max_phy(s.broker(2)) == 1
    cfg, s = run(f"{synced}\nwrite_back_epoch_file broker=2\ncrash broker=2 keep=0")
    assert ("revert_epoch_file", 2) not in enabled(s, cfg)  # the last version is on the device
    cfg, s = run(f"{synced.replace('epoch_file_reverts=1', 'epoch_file_reverts=0')}\ncrash broker=2 keep=0")
    assert not {("revert_epoch_file", 2), ("write_back_epoch_file", 2)} & set(enabled(s, cfg))  # off by default


def test_a_death_before_the_checkpoint_s_flush_takes_confirm_offset_back():
    """StoreCheckpoint writes its file only in flush(), once a second: a slave killed after its
    confirmOffset moved and before the next flush restarts with the one flushed before
    (durable3 seed 500, step 115: 21 where the model kept 22)."""
    flushed = f"""{MEMBER_2}
faults checkpoint_reverts=1
send broker=1 queue=0 size=1
ha_transfer slave=2
ha_read_ack slave=2
flush_checkpoint broker=2
ha_transfer slave=2"""
    cfg, s = run(f"{flushed}\ncrash broker=2 keep=0")
    moved = s.broker(2)
    assert moved.checkpoint_confirm < moved.confirm and ("revert_checkpoint", 2) in enabled(s, cfg)
    cfg, s = run(f"{flushed}\ncrash broker=2 keep=0\nrevert_checkpoint broker=2")
    assert s.broker(2).confirm == moved.checkpoint_confirm and s.used.checkpoint_reverts == 1
    assert ("revert_checkpoint", 2) not in enabled(s, cfg)
    cfg, s = run(f"{flushed}\nflush_checkpoint broker=2\ncrash broker=2 keep=0")
    assert ("revert_checkpoint", 2) not in enabled(s, cfg)  # the last move is in the file
    cfg, s = run(f"{flushed.replace('checkpoint_reverts=1', 'checkpoint_reverts=0').replace('flush_checkpoint broker=2', '')}"
                 "\ncrash broker=2 keep=0")
    assert not {("revert_checkpoint", 2), ("flush_checkpoint", 2)} & set(enabled(s, cfg))  # off by default
    assert s.broker(2).checkpoint_confirm == -1  # untracked: the explored spaces are unchanged


def test_no_consistent_point_closes_the_connection_and_retries():
    cfg, s = run("""config brokers=2
send broker=1 queue=0 size=1
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
ha_transfer slave=2""")
    # Give broker 2 an epoch file that shares nothing with the master's.
    b2 = s.broker(2)
    s = s.with_broker(
        b2._replace(epochs=b2.epochs._replace(entries=((7, 0),)), client=b2.client._replace(state=READY, master=None))
    )
    m = s.broker(1)
    s = s.with_broker(m._replace(conns=()))
    s = step(s, ("ha_connect", 2), cfg)
    assert s.broker(2).client.state == READY and not s.broker(1).conns
    assert ("ha_connect", 2) in enabled(s, cfg)


def test_boundary_batch_label_snapshot_vs_intended():
    # Broker 1 is re-elected (same master, new epoch 5 at offset 1); broker 2 syncs from 0 with
    # a batch that crosses the epoch boundary.
    text = """{toggles}
faults heartbeat_timeouts=1
send broker=1 queue=0 size=1
hb_timeout broker=1
controller_elect
heartbeat broker=1
sync_replica_info broker=1 lost=0
send broker=1 queue=0 size=1
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
ha_transfer slave=2"""
    _, snap = run(text.format(toggles="toggles snapshot"))
    _, fixed = run(text.format(toggles="toggles none"))
    assert snap.broker(1).epochs.entries == ((1, 0), (5, 1))
    # HA1: the batch [0, 1) goes out labelled with epoch 5, so epoch 1 is never recorded.
    assert snap.broker(2).epochs.entries == ((5, 1),) and max_phy(snap.broker(2)) == 1
    assert fixed.broker(2).epochs.entries == ((1, 0),) and max_phy(fixed.broker(2)) == 1


# --- confirmOffset and the SyncStateSet (§2.5, §2.6) ------------------------------------------


def test_confirm_offset_is_the_max_when_alone_and_the_min_ack_with_members():
    cfg, s = run(MEMBER_2 + """
send broker=1 queue=0 size=2""")
    m = s.broker(1)
    assert m.sss == {1, 2} and get_confirm_offset(m, cfg) == 0  # member 2 acked 0
    _, alone = run("send broker=1 queue=0 size=2")
    assert get_confirm_offset(alone.broker(1), Config()) == 2


def test_a_caught_up_slave_is_proposed_and_a_lost_response_keeps_the_proposal_pending():
    cfg, s = run(f"""{DURABLE}
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
alter_sss broker=1 lost=1""")
    m = s.broker(1)
    assert s.ctrl.applied.sss == {1, 2}  # the controller applied it
    assert m.sss == {1} and m.synchronizing and m.remote_sss == {1, 2}  # the master never heard


def test_a_lost_rejection_is_a_rejection_and_uses_no_lost_response():
    """The controller has timed the master out, so it refuses the master's expansion (a member
    must be alive). Whether the answer comes back or not, the broker changes nothing, so the lost
    answer is not a fault spent (a recorded run loses many such answers a step)."""
    cfg, s = run(f"""{DURABLE}
faults lost_responses=1
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
hb_timeout broker=1""")
    assert s.broker(1).alters and s.broker(1).running
    lost, answered = step(s, ("alter_sss", 1, 1), cfg), step(s, ("alter_sss", 1, 0), cfg)
    assert lost == answered and lost.used.lost_responses == 0 and lost.ctrl.applied.sss_epoch == s.ctrl.applied.sss_epoch


def test_a_broker_not_yet_running_drops_its_proposals_unsent():
    """ReplicasManager registers its SyncStateSet listener only once it is RUNNING
    (startBasicService, ReplicasManager.java:213): what a restarted broker with no role proposes
    for its reconnected slave never reaches the controller, and no RPC means no lost answer."""
    cfg, s = run(f"""{DURABLE}
faults crashes=1 lost_responses=1
crash broker=1 keep=0
restart broker=1
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2""")
    assert s.broker(1).alters and not s.broker(1).running
    assert ("alter_sss", 1, 1) not in enabled(s, cfg) and ("alter_sss_fail", 1) not in enabled(s, cfg)
    dropped = step(s, ("alter_sss", 1, 0), cfg)
    assert dropped.broker(1).alters == s.broker(1).alters[1:] and dropped.ctrl == s.ctrl


def test_shrink_drops_a_member_not_caught_up_for_longer_than_the_limit():
    cfg, s = run(MEMBER_2)
    for _ in range(cfg.not_catchup_time + 1):
        s = step(s, ("tick",), cfg)
    s = step(s, ("check_sss", 1), cfg)
    assert s.broker(1).alters[-1][0] == {1}


def test_periodic_tasks_run_at_most_once_per_tick():
    cfg, s = run(MEMBER_2 + """
tick
tick
tick
tick
check_sss broker=1""")
    assert ("check_sss", 1) not in enabled(s, cfg)


# --- failover and role changes (§2.7, §3.4, §3.6) ---------------------------------------------


def test_a_dead_master_is_replaced_by_a_live_sync_state_set_member():
    cfg, s = run(MEMBER_2 + """
crash broker=1 keep=0
tick
heartbeat broker=2
tick
heartbeat broker=2
tick
heartbeat broker=2
controller_elect
sync_replica_info broker=2 lost=0
finish_promotion broker=2""")
    assert s.ctrl.applied.master == 2 and s.ctrl.applied.master_epoch == 2
    b2 = s.broker(2)
    assert b2.role == MASTER and b2.epochs.entries == ((2, 0),)  # it never received a byte


def test_a_controller_triggered_failed_election_bumps_the_epoch_three_times():
    cfg, s = run(f"""{DURABLE}
crash broker=1 keep=0
tick
heartbeat broker=2
tick
heartbeat broker=2
tick
heartbeat broker=2
controller_elect""")
    assert s.ctrl.applied.master is None and s.ctrl.applied.master_epoch == 4


def test_a_new_master_cuts_a_torn_tail_and_waits_for_dispatch():
    cfg, s = run("""config batch_size=1
ha_connect slave=2
ha_slave_ack slave=2
ha_read_ack slave=2
alter_sss broker=1 lost=0
send broker=1 queue=0 size=2
ha_transfer slave=2
admin_elect broker=2""")
    s = step(s, ("sync_replica_info", 2, 0), cfg)
    b2 = s.broker(2)
    assert b2.promoting == 2 and max_phy(b2) == 0  # the half message is gone...
    assert b2.epochs.entries == ((2, 0),)  # ...and with it epoch 1's entry (truncateSuffixByOffset(0))


def test_restart_recovery_cuts_a_torn_tail_and_clamps_confirm():
    cfg, s = run("""send broker=1 queue=0 size=2
dispatch broker=1
crash broker=1 keep=1
restart broker=1""")
    b1 = s.broker(1)
    assert max_phy(b1) == 0 and b1.confirm == 0 and not b1.running and b1.role == "NONE"


def test_consumers_see_only_dispatched_messages():
    cfg, s = run("send broker=1 queue=0 size=1")
    assert ("consume", 1, 0) not in enabled(s, cfg)
    s = step(step(s, ("dispatch", 1), cfg), ("consume", 1, 0), cfg)
    assert s.reads[0].msg == 1 and s.consumer == (1,)


def test_recovery_aligns_a_mid_message_confirm_offset():
    # recoverAbnormally in controller mode clamps confirmOffset to the end of the last valid
    # message that ends at or before it, and dispatch restarts from there.
    from rmqcheck.model.broker import new_broker, recover

    m1, m2 = cl.Message(1, 1, 0, 0, 0, 1, 1), cl.Message(2, 2, 0, 1, 1, 1, 1)
    log = cl.CommitLog(m1.cells() + m2.cells(), 3, True)
    b = recover(new_broker(2, 1)._replace(up=False, log=log, confirm=2), (m1, m2), Config())
    assert b.confirm == 1 and b.reput == 1 and b.cq == ((1,),)
    lost = recover(new_broker(2, 1)._replace(up=False, log=cl.CommitLog((), 0, True), confirm=2), (m1, m2), Config())
    assert lost.confirm == 0  # the file survived the page-cache loss, so the clamp applies
