"""Invariants of classic master/slave HA (model/classic.py).

What a producer is promised when a SYNC_MASTER put returns PUT_OK: the message is on the
replicas the put waited for. Each check names the known bug it catches.
"""

from __future__ import annotations

from rmqcheck.model.classic import PUT_OK, SYNC_MASTER, Action, ClassicConfig, ClassicState, holds, max_phy

from .catalogue import Invariant


def _acked_now(pre: ClassicState, post: ClassicState) -> list[int]:
    """Messages whose status became PUT_OK in this step."""
    old = pre.status + (None,) * (len(post.status) - len(pre.status))
    return [i + 1 for i, (a, b) in enumerate(zip(old, post.status)) if b == PUT_OK and a != PUT_OK]


def _copies(s: ClassicState, msg: int) -> int:
    m = s.msgs[msg - 1]
    return sum(holds(n, m) for n in s.nodes)


def sync_put_replicated(pre: ClassicState, a: Action, post: ClassicState, cfg: ClassicConfig) -> list[str]:
    """A SYNC put acked PUT_OK is whole on at least needAckNums replicas (master included)."""
    if cfg.role != SYNC_MASTER:
        return []
    need = max(cfg.in_sync_replicas, 1)
    return [
        f"message {m} acked PUT_OK on {_copies(post, m)} replica(s), needAckNums {need}"
        for m in _acked_now(pre, post)
        if _copies(post, m) < need
    ]


def sync_master_two_copies(pre: ClassicState, a: Action, post: ClassicState, cfg: ClassicConfig) -> list[str]:
    """What SYNC_MASTER meant before 5.0: a PUT_OK message is on the master and a slave."""
    if cfg.role != SYNC_MASTER:
        return []
    return [
        f"message {m} acked PUT_OK by a SYNC_MASTER on {_copies(post, m)} replica"
        for m in _acked_now(pre, post)
        if _copies(post, m) < 2
    ]


def ack_within_master_log(s: ClassicState, cfg: ClassicConfig) -> list[str]:
    """No connection's slaveAckOffset is beyond the master's max offset: an ack for bytes the
    master does not have acknowledges nothing (#3015's derived check)."""
    m = s.master
    if not m.up:
        return []
    return [f"slave {c.slave} ack {c.ack} > master max offset {max_phy(m)}" for c in m.conns if c.ack > max_phy(m)]


def _one_durable_file(cfg: ClassicConfig) -> bool:
    """SYNC_FLUSH and a log that stays in one commit-log file. Classic HA has no truncation, so
    under ASYNC_FLUSH a slave that kept a tail the master lost acks the master's next message of
    that length (offsets agree, bytes differ); and a slave that starts empty asks for offset 0,
    which the master serves from its last file (seed 001), so it acks puts from earlier files
    it never received. Both are the design, tested in tests/test_classic.py."""
    return cfg.sync_flush and cfg.max_messages * max(cfg.message_sizes) <= cfg.file_size


_ONE_DURABLE_FILE = "SYNC_FLUSH, and the log stays in one commit-log file"

CLASSIC: tuple[Invariant, ...] = (
    Invariant(
        "C1",
        "sync_put_replicated",
        "A SYNC_MASTER put acked PUT_OK is on at least needAckNums replicas (catches #3015's inflated ack).",
        lambda cfg: cfg.role == SYNC_MASTER and _one_durable_file(cfg),
        "SYNC_MASTER, " + _ONE_DURABLE_FILE,
        check_step=sync_put_replicated,
    ),
    Invariant(
        "C2",
        "sync_master_two_copies",
        "A SYNC_MASTER put acked PUT_OK is on the master and a slave. Since 5.0 this needs "
        "inSyncReplicas >= 2: with the default 1, handleHA acks at once.",
        lambda cfg: cfg.role == SYNC_MASTER and cfg.in_sync_replicas >= 2 and _one_durable_file(cfg),
        "SYNC_MASTER with inSyncReplicas >= 2, " + _ONE_DURABLE_FILE,
        check_step=sync_master_two_copies,
    ),
    Invariant(
        "C3",
        "ack_within_master_log",
        "The master never holds a slave ack beyond its own max offset (#3015).",
        lambda cfg: True,
        "always",
        check=ack_within_master_log,
    ),
)
CLASSIC_BY_ID = {inv.id: inv for inv in CLASSIC}

