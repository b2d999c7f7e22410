"""CommitLog cells, message validity, tearing and truncation."""

from __future__ import annotations

from rmqcheck.model import commitlog as cl
from rmqcheck.model.commitlog import CommitLog, Message

M1 = Message(1, 1, 0, 0, 0, 1, 1)
M2 = Message(2, 2, 0, 1, 1, 1, 1)
M3 = Message(3, 2, 0, 2, 3, 1, 1)
MSGS = (M1, M2, M3)
FULL = M1.cells() + M2.cells() + M3.cells()
LOG = CommitLog(FULL)


def test_valid_messages_scan_to_the_end():
    assert cl.scan_valid(LOG, 0, MSGS) == 5
    assert [m.id for m in cl.messages_in(LOG, 0, 5, MSGS)] == [1, 2, 3]
    assert cl.check_message(LOG, 1, MSGS) == (True, 2)


def test_a_partial_tail_and_a_mid_message_start_are_invalid_without_a_size():
    torn = CommitLog(FULL[:4])  # M3 has one of its two bytes
    assert cl.check_message(torn, 3, MSGS) == (False, 0)
    assert cl.scan_valid(torn, 0, MSGS) == 3
    assert cl.check_message(LOG, 2, MSGS) == (False, 0)  # starts inside M2


def test_bytes_of_two_messages_meeting_are_invalid_with_a_size():
    mixed = CommitLog(M1.cells() + (cl.cell(2, 0), cl.cell(3, 1)))
    assert cl.check_message(mixed, 1, MSGS) == (False, 2)
    assert cl.message_at(mixed, 1, MSGS) is None


def test_crash_keeps_the_flushed_prefix_and_what_the_os_wrote_back():
    log = CommitLog(FULL, 1)
    assert cl.crash(log, 0) == CommitLog(FULL[:1], 1)
    assert cl.crash(log, 3) == CommitLog(FULL[:4], 4)  # tears M3
    assert cl.crash(log, 99).cells == FULL


def test_append_flushes_only_under_sync_flush_and_truncate_clamps_flushed():
    log = cl.append(cl.EMPTY, M1.cells(), sync_flush=False)
    assert log.flushed == 0 and cl.flush(log).flushed == 1
    assert cl.append(cl.EMPTY, M1.cells(), sync_flush=True).flushed == 1
    assert cl.truncate(CommitLog(FULL, 5), 3) == CommitLog(FULL[:3], 3)
    assert cl.truncate(CommitLog(FULL, 5), 9) == CommitLog(FULL, 5)


def test_has_message_compares_the_bytes_at_its_offset():
    assert cl.has_message(CommitLog(FULL, 0), M2)
    assert not cl.has_message(CommitLog(FULL[:2], 0), M2)
    other = M1.cells() + M3.cells()  # M3's bytes where M2 belongs
    assert not cl.has_message(CommitLog(other, 0), M2)


def test_a_scaled_log_keeps_offsets_in_bytes_and_indexes_cells():
    unit, base = 2**29, 2**63 - 2**34
    big = [Message(m.id, m.size * unit, 0, m.queue_offset, base + m.offset * unit, 1, 1) for m in MSGS]
    log = CommitLog(tuple(c for m in big for c in m.cells(unit)), base, True, base, unit)
    assert log.cells == FULL and cl.max_phy(log) == base + 5 * unit
    assert cl.scan_valid(log, base, big) == base + 5 * unit
    assert cl.check_message(log, base + unit, big) == (True, 2 * unit)
    assert cl.has_message(log, big[1]) and cl.message_floor(log, base + 2 * unit) == base + unit
    assert cl.truncate(log, base + 3 * unit).cells == FULL[:3] and cl.unflushed(log) == 5
    assert list(cl.offsets(log, base + 2 * unit)) == [base, base + unit]
