"""Start states given by the replicas' logs instead of reached from the empty cluster.

A truncation counterexample (checkers/proofs/truncation.py) is a pair of epoch lists; to replay it as a
divergent-log scenario the model needs replicas that hold exactly those logs. Each replica's
log is what its epoch list says: offset o holds the byte the master of the epoch covering o
wrote there (one master per epoch, so equal (epoch, offset) means equal bytes), one one-byte
message per offset. Broker 1 is the master of the highest epoch; every listed broker is in the
SyncStateSet, and the messages every replica holds up to its consistent point with the master
are acked, so over-truncation shows as lost acked data and divergence as a mismatch of epochs.

Such a state is constructed, not reached: scenarios that use one say so (`replica` lines).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from rmqcheck.model import commitlog as cl
from rmqcheck.model import epochfile as ef
from rmqcheck.model.broker import MASTER, SLAVE
from rmqcheck.model.commitlog import CommitLog, Message
from rmqcheck.model.config import Config
from rmqcheck.model.controller import LiveInfo
from rmqcheck.model.step import initial_state
from rmqcheck.model.world import PUT_OK, SendRecord, State


class Replica(NamedTuple):
    broker: int
    epochs: tuple[ef.Entry, ...]  # (epoch, start offset), ascending
    log: int  # the commit log's length (maxPhyOffset)


class StartError(ValueError):
    """Replica descriptions that do not make a start state; the message names the replica."""


def epoch_at(epochs: Sequence[ef.Entry], offset: int) -> int:
    """The epoch whose entry covers `offset` (callers check coverage)."""
    return max(e for e, s in epochs if s <= offset)


def check(replicas: Sequence[Replica], cfg: Config) -> tuple[Replica, ...]:
    """The replicas, validated (StartError names the replica); () for none."""
    if not replicas:
        return ()
    seen: set[int] = set()
    out = []
    for r in replicas:
        where = f"replica broker={r.broker}"
        if not 1 <= r.broker <= cfg.brokers or r.broker in seen:
            raise StartError(f"{where}: broker must be a distinct id between 1 and {cfg.brokers}")
        seen.add(r.broker)
        try:
            entries = ef.validated_entries(r.epochs, f"{where} epochs")
        except ValueError as exc:
            raise StartError(str(exc)) from None
        if r.log > cfg.max_messages:  # each offset becomes a message (a log of 2^63 would never be built)
            raise StartError(f"{where}: log {r.log} is more than max_messages ({cfg.max_messages}): each offset is "
                             "a one-byte message")
        if r.log < 0 or (r.log > 0 and (not entries or entries[0][1] != 0)):
            raise StartError(f"{where}: a non-empty log needs epochs starting at offset 0 (every byte attributed)")
        if any(s > r.log for _, s in entries):
            raise StartError(f"{where}: an epoch starts beyond the log end {r.log}")
        out.append(Replica(r.broker, entries, r.log))
    if 1 not in seen:
        raise StartError("replicas: broker 1 (the master) must be described")
    master = next(r for r in out if r.broker == 1)
    top = max((e for r in out for e, _ in r.epochs), default=0)
    if not master.epochs or master.epochs[-1][0] != top:
        raise StartError("replica broker=1: the master must hold the highest epoch of all replicas")
    return tuple(out)


def start_state(cfg: Config, replicas: Sequence[Replica]) -> State:
    """The warm-started cluster with the given logs; `replicas` empty: the plain initial state."""
    s = initial_state(cfg)
    if not replicas:
        return s
    replicas = check(replicas, cfg)
    master = next(r for r in replicas if r.broker == 1)
    epoch = master.epochs[-1][0]
    acked_end = max(
        0, min(ef.find_consistent_point(r.epochs, r.log, master.epochs, master.log) for r in replicas)
    )

    written = sorted({(o, epoch_at(r.epochs, o)) for r in replicas for o in range(r.log)})
    ids = {key: i for i, key in enumerate(written, start=1)}
    holders = {key: sorted(r.broker for r in replicas if key[0] < r.log and epoch_at(r.epochs, key[0]) == key[1])
               for key in written}
    msgs = tuple(
        Message(ids[(o, e)], 1, 0, o, o, e, 1 if 1 in holders[(o, e)] else holders[(o, e)][0]) for o, e in written
    )
    members = frozenset(r.broker for r in replicas)
    brokers = list(s.brokers)
    live = list(s.ctrl.live)
    reports = list(s.reports)
    for r in replicas:
        cells = tuple(cl.cell(ids[(o, epoch_at(r.epochs, o))], 0) for o in range(r.log))
        confirm = min(acked_end, r.log)
        b = brokers[r.broker - 1]
        brokers[r.broker - 1] = b._replace(
            role=MASTER if r.broker == 1 else SLAVE,
            master_epoch=epoch,
            master_id=1,
            sss=members if r.broker == 1 else frozenset(),
            log=CommitLog(cells, len(cells), len(cells) > 0),
            epochs=ef.EpochFile(r.epochs, ef.INF, r.epochs, r.epochs),  # on the device as written
            confirm=confirm,
            reput=confirm,
            cq=(tuple(cl.cell_msg(c) for c in cells[:confirm]),) + b.cq[1:],
            queue_table=(r.log if r.broker == 1 else confirm,) + b.queue_table[1:],
        )
        live[r.broker - 1] = reports[r.broker - 1] = LiveInfo(s.now, r.epochs[-1][0] if r.epochs else -1, r.log, confirm)
    ctrl = s.ctrl._replace(
        applied=s.ctrl.applied._replace(master=1, master_epoch=epoch, sss=members),
        live=tuple(live),
        grants=((epoch, 1),),
    )
    sends = tuple(SendRecord(m.id, 1, PUT_OK) for m in msgs if m.end <= acked_end and m.writer == 1)
    return s._replace(brokers=tuple(brokers), ctrl=ctrl, msgs=msgs, sends=sends, reports=tuple(reports))
