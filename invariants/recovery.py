"""Invariants of store crash recovery (model/recovery.py): what a restarted store promises about
its commit log, consume queues and index, checked while the store runs.

`durable` is a ghost of the state: the messages ever wholly flushed.
"""

from __future__ import annotations

from rmqcheck.model import commitlog as cl
from rmqcheck.model.recovery import BLANK, RecoveryConfig, RState, max_phy, scan, whole_messages

from .catalogue import Invariant


def _describe(s: RState, m: cl.Message) -> str:
    return f"message {m.id} (queue {m.queue} offset {m.queue_offset}, bytes [{m.offset}, {m.end}))"


def cq_entries_point_at_their_messages(s: RState, cfg: RecoveryConfig) -> list[str]:
    """Every consume-queue entry points at a whole message in the commit log whose queue offset
    is the entry's position: no entry past the recovered end, none shifted by a gap."""
    if not s.up:
        return []
    out = []
    for q, queue in enumerate(s.queues):
        for i, mid in enumerate(queue.ids):
            m = s.msgs[mid - 1]
            where = f"queue {q} offset {queue.min + i}"
            if m.end > max_phy(s) or not cl.has_message(cl.CommitLog(s.cells), m):
                out.append(f"{where} points at {_describe(s, m)}, which the commit log (end {max_phy(s)}) no longer holds")
            elif m.queue_offset != queue.min + i:
                out.append(f"{where} holds {_describe(s, m)}")
    return out


def flushed_messages_survive(s: RState, cfg: RecoveryConfig) -> list[str]:
    """Every message that was ever wholly flushed is still in the commit log."""
    if not s.up:
        return []
    log = cl.CommitLog(s.cells)
    return [
        f"{_describe(s, m)} was flushed but the commit log lost it"
        for m in s.msgs
        if m.id in s.durable and not cl.has_message(log, m)
    ]


def no_torn_bytes(s: RState, cfg: RecoveryConfig) -> list[str]:
    """The running store's commit log is whole messages and file-end padding from start to
    end: recovery cut every torn message, so nothing after one is exposed."""
    if not s.up:
        return []
    end = scan(s, 0, cfg._replace(bugs=frozenset())).end
    return [] if all(c == BLANK for c in s.cells[end:]) else [f"the commit log has unreadable bytes at {end} before its end {max_phy(s)}"]


def dispatched_messages_reachable(s: RState, cfg: RecoveryConfig) -> list[str]:
    """Every whole message below the dispatch position is in its consume queue at its queue
    offset, where consumers read it."""
    if not s.up:
        return []
    out = []
    for m in whole_messages(s):
        if m.end > s.reput:
            continue
        q = s.queues[m.queue]
        pos = m.queue_offset - q.min
        if not (0 <= pos < len(q.ids) and q.ids[pos] == m.id):
            out.append(f"{_describe(s, m)} is below the dispatch position {s.reput} but not in its consume queue")
    return out


def nothing_visible_unconfirmed(s: RState, cfg: RecoveryConfig) -> list[str]:
    """Controller mode: consumers see only messages the master confirmed (a consume-queue entry
    may outlive a confirmOffset that went back with the checkpoint, but never precede the ack)."""
    if not s.up or not cfg.controller_mode:
        return []
    return [
        f"{_describe(s, s.msgs[mid - 1])} is in the consume queue but was never confirmed (confirmOffset {s.confirm})"
        for q in s.queues
        for mid in q.ids
        if mid not in s.confirmed
    ]


def index_complete(s: RState, cfg: RecoveryConfig) -> list[str]:
    """Every whole message below the dispatch position is in the index (queryable by key)."""
    if not s.up:
        return []
    indexed = set(s.index)
    return [
        f"{_describe(s, m)} is below the dispatch position {s.reput} but in no index file"
        for m in whole_messages(s)
        if m.end <= s.reput and m.id not in indexed
    ]


RECOVERY: tuple[Invariant, ...] = (
    Invariant(
        "R1",
        "cq_entries_point_at_their_messages",
        "After recovery every consume-queue entry points at its own whole message: none past the "
        "commit-log end (truncateDirtyLogicFiles), none shifted by a gap.",
        lambda cfg: True,
        "always",
        check=cq_entries_point_at_their_messages,
    ),
    Invariant(
        "R2",
        "flushed_messages_survive",
        "Every message flushed before a crash is in the recovered commit log.",
        lambda cfg: True,
        "always",
        check=flushed_messages_survive,
    ),
    Invariant(
        "R3",
        "no_torn_bytes",
        "The recovered commit log ends at its last whole message: nothing at or after a torn "
        "message is exposed.",
        lambda cfg: True,
        "always",
        check=no_torn_bytes,
    ),
    Invariant(
        "R4",
        "dispatched_messages_reachable",
        "Every message below the dispatch position is in its consume queue at its queue offset "
        "(abnormal recovery re-dispatches what the crash took from the consume queue).",
        lambda cfg: True,
        "always",
        check=dispatched_messages_reachable,
    ),
    Invariant(
        "R5",
        "nothing_visible_unconfirmed",
        "Controller mode: every consume-queue entry is of a message the master confirmed.",
        lambda cfg: cfg.controller_mode,
        "controller mode",
        check=nothing_visible_unconfirmed,
    ),
    Invariant(
        "R6",
        "index_complete",
        "Every message below the dispatch position is in the index. Only messageIndexSafe promises "
        "it: otherwise recovery may start after messages whose index file was destroyed.",
        lambda cfg: cfg.index_safe,
        "messageIndexSafe=true",
        check=index_complete,
    ),
)
RECOVERY_BY_ID = {inv.id: inv for inv in RECOVERY}
