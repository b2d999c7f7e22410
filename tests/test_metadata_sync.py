"""Consumer offsets across failovers (seed 003): pulls commit the consumer's offset, slaves copy
the master's table, consumers fall back to a slave while no master is up, and I11 (offsets may
go back, never forward past an unread message)."""

from __future__ import annotations

from rmqcheck.invariants.catalogue import i11_no_skipped_message
from rmqcheck.model.step import enabled, step

from test_rules import MEMBER_2, run

# Message 1 is on both brokers; broker 1 (master) has dispatched it and the consumer read it.
READ_ONCE = MEMBER_2 + """
send broker=1 queue=0 size=1
ha_transfer slave=2
ha_read_ack slave=2
dispatch broker=1
consume broker=1 queue=0"""

# ... and broker 2 has dispatched it too (the next transfer carries confirmOffset 1).
DISPATCHED_ON_BOTH = READ_ONCE + "\nha_transfer slave=2\ndispatch broker=2"

def test_a_pull_commits_the_offset_it_carries_and_a_slave_copies_the_masters_table():
    cfg, s = run(DISPATCHED_ON_BOTH)
    assert [r.msg for r in s.reads] == [1] and s.consumer == (1,)
    assert s.broker(1).consumer_offsets == (0,)  # committed with the next pull, not this one
    cfg, s = run(DISPATCHED_ON_BOTH + "\nconsume broker=1 queue=0\nsync_consumer_offsets broker=2")
    assert len(s.reads) == 1 and s.broker(1).consumer_offsets == s.broker(2).consumer_offsets == (1,)


def test_consumers_pull_from_a_slave_only_while_no_master_is_up():
    cfg, s = run(DISPATCHED_ON_BOTH)
    assert ("consume", 2, 0) not in enabled(s, cfg)
    cfg, s = run(DISPATCHED_ON_BOTH + "\ncrash broker=1 keep=0\nconsume broker=2 queue=0")
    assert s.broker(2).consumer_offsets == (1,)  # slaves store pull commits too (RIP-32)


def test_a_restarted_consumer_resumes_at_the_masters_committed_offset_and_reads_again():
    cfg, s = run(DISPATCHED_ON_BOTH + "\nconsumer_restart")
    assert s.consumer == (-1,)
    cfg, s = run(DISPATCHED_ON_BOTH + "\nconsumer_restart\nconsume broker=1 queue=0")
    assert [r.msg for r in s.reads] == [1, 1] and s.consumer == (1,)  # a duplicate, which seed 003 allows


def test_an_offset_past_the_queue_end_is_corrected_by_a_master_and_kept_by_a_slave():
    # Broker 2 holds message 1 but has not dispatched it: its consume queue is empty.
    cfg, s = run(READ_ONCE + "\ncrash broker=1 keep=0\nconsume broker=2 queue=0")
    assert s.broker(2).cq == ((),) and s.consumer == (1,) and s.broker(2).consumer_offsets == (1,)
    cfg, s = run(DISPATCHED_ON_BOTH)
    s = step(s._replace(consumer=(3,)), ("consume", 1, 0), cfg)  # OFFSET_OVERFLOW_BADLY
    assert s.consumer == (1,) and s.broker(1).consumer_offsets == (1,) and len(s.reads) == 1


def test_i11_names_the_message_an_offset_skipped():
    cfg, s = run(DISPATCHED_ON_BOTH)
    assert not i11_no_skipped_message(s, cfg)
    assert i11_no_skipped_message(s._replace(reads=()), cfg) == [
        "the consumer 1 in queue 0 is past msg 1 (offset 0, queue 0/0, written by broker 1 in epoch 1), "
        "which no consumer read"
    ]
