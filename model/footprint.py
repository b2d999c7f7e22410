"""What each step of model/step.py reads and writes, for the explorer's sleep sets. Not RocketMQ code.

Two actions are *independent* in a state when neither writes what the other reads or writes.
Each rule's guard and effect read only its `reads`, so then each stays enabled after the
other and the two orders end in the same state (tests/test_footprint.py checks exactly that
for every pair along seeded walks of every named configuration and every toggle). The explorer
(checkers/search/explore.py, `SleepSets`) uses it to skip steps whose result another order of
the same steps reaches at the same depth.

A resource is the component of one broker ("B", id), a broker's heartbeat-table entry
("live", id) and heartbeat report ("report", id), a periodic task's mark ("ran", task), one
send record's status ("send", msg id), a fault budget ("used", fault), or one of "now", "cut"
(the partition and the controller cuts: what `reaches_controller` reads),
"msgs", "sends", "consumer", "reads". `None` stands for everything: the steps that touch the
controller's replicated state, the clock, the partition or the send log are dependent on
every other step, as are the rare ones not worth a footprint. So nothing that `Bounds.expands` or the election invariants (I7, I7b) read, and
no message or grant (I10), is ever changed by a step that is put to sleep; the other step
invariants (I3b, I4, I9) compare each broker with itself before and after.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .broker import MASTER, Broker, max_phy
from .config import Config
from .step import ACTIONS, Action
from .world import State


class Footprint(NamedTuple):
    reads: frozenset
    writes: frozenset


def _b(*ids: int | None) -> set:
    return {("B", i) for i in ids if i is not None}


def _close_connection(s: State, slave: int) -> set:
    """What `close_connection` of `slave` touches: the slave and the master its client names."""
    return _b(slave, s.broker(slave).client.master)


def _served(s: State, b: Broker) -> set:
    """`destroy_connections` of `b` (and a crash): every slave it serves, with its master."""
    out = set()
    for c in b.conns:
        out |= _close_connection(s, c.slave)
    return out


def _linked(s: State, slave: int, extra: set = frozenset()) -> Footprint:
    """A step of one slave's HA connection: the slave, the broker its client or its role names,
    the partition, the clock; it writes both brokers."""
    b = s.broker(slave)
    both = _b(slave, b.client.master, b.master_id)
    return Footprint(frozenset(both | {"cut", "now", "msgs"} | extra), frozenset(both | extra))


def _heartbeat(s: State, cfg: Config, b_id: int) -> Footprint:
    # rule_heartbeat / _heartbeat: the broker's own data, its table entry, the clock
    mark = ("ran", f"heartbeat:{b_id}")
    return Footprint(frozenset({("B", b_id), "cut", "now", ("live", b_id), mark}),
                     frozenset({("live", b_id), ("report", b_id), mark}))


def _crash(s: State, cfg: Config, b_id: int, keep: int) -> Footprint:
    # rule_crash: closes the connections it serves and its own client's, answers its pending puts
    b = s.broker(b_id)
    brokers = _b(b_id) | _served(s, b) | _close_connection(s, b_id)
    sends = {("send", p.msg) for p in b.puts}
    used = ("used", "crashes")
    return Footprint(frozenset(brokers | {used}), frozenset(brokers | sends | {used}))


def _own(*extra_reads: str) -> Callable[..., Footprint]:
    """A step that reads and writes one broker's own component (plus `extra_reads`)."""

    def footprint(s: State, cfg: Config, b_id: int, *_: int) -> Footprint:
        mine = frozenset({("B", b_id)})
        return Footprint(mine | frozenset(extra_reads), mine)

    return footprint


def _put_done(s: State, cfg: Config, b_id: int, msg: int) -> Footprint:
    # rule_put_complete / rule_put_timeout: the deadline against the clock, one send's status
    mine = frozenset({("B", b_id)})
    return Footprint(mine | {"now", "sends"}, mine | {("send", msg)})


def _consume(s: State, cfg: Config, b_id: int, queue: int) -> Footprint:
    # rule_consume: a slave serves pulls only while no broker is master (_serves_pulls)
    b = s.broker(b_id)
    seen = {("B", b_id)} if b.role == MASTER else _b(*range(1, cfg.brokers + 1))
    return Footprint(frozenset(seen | {"consumer", "reads"}), frozenset({("B", b_id), "consumer", "reads"}))


def _ha_connect(s: State, cfg: Config, slave: int) -> Footprint:
    # rule_ha_connect: the handshake with the master its role names, then (a truncation) the
    # connections the slave itself serves
    b = s.broker(slave)
    brokers = _b(slave, b.master_id) | _served(s, b)
    return Footprint(frozenset(brokers | {"cut", "msgs"}), frozenset(brokers))


def _sync_consumer_offsets(s: State, cfg: Config, b_id: int) -> Footprint:
    both = _b(b_id, s.broker(b_id).master_id)
    return Footprint(frozenset(both | {"cut"}), frozenset({("B", b_id)}))


def _check_sss(s: State, cfg: Config, b_id: int) -> Footprint:
    mark = ("ran", f"check_sss:{b_id}")
    return Footprint(frozenset({("B", b_id), "now", mark}), frozenset({("B", b_id), mark}))


def _finish_promotion(s: State, cfg: Config, b_id: int) -> Footprint:
    # a start-up promotion ends with the broker's first heartbeat (_heartbeat)
    hb = _heartbeat(s, cfg, b_id)
    return Footprint(hb.reads | {"msgs"}, hb.writes | {("B", b_id)})


def _file_fault(budget: str) -> Callable[..., Footprint]:
    """A fault on one broker's epoch file or checkpoint: that broker and its budget."""

    def footprint(s: State, cfg: Config, b_id: int) -> Footprint:
        both = frozenset({("B", b_id), ("used", budget)})
        return Footprint(both, both)

    return footprint


def _written_back(budget: str) -> Callable[..., Footprint]:
    """A file written to the device, kept only while its revert's budget is left: that broker,
    reading the budget."""

    def footprint(s: State, cfg: Config, b_id: int) -> Footprint:
        return Footprint(frozenset({("B", b_id), ("used", budget)}), frozenset({("B", b_id)}))

    return footprint


# Per action kind, its footprint in a state; kinds not named here are dependent on all. Each step
# that closes an HA connection also reads the `second_removals` budget (model/step.py
# `_first_removal`); left out, since its only writer, `ha_second_removal`, is dependent on all.
FOOTPRINTS: dict[str, Callable[..., Footprint]] = {
    "heartbeat": _heartbeat,
    "crash": _crash,
    "restart": _own("msgs"),
    "dispatch": _own("msgs"),
    "flush": _own(),
    "put_complete": _put_done,
    "put_timeout": _put_done,
    "consume": _consume,
    "ha_connect": _ha_connect,
    "ha_transfer": lambda s, cfg, slave: _linked(s, slave),
    "ha_slave_ack": _own(),
    "ha_read_ack": lambda s, cfg, slave: _linked(s, slave),
    "ha_timeout": lambda s, cfg, slave: _linked(s, slave),
    "conn_reset": lambda s, cfg, slave: _linked(s, slave, {("used", "connection_resets")}),
    "sync_consumer_offsets": _sync_consumer_offsets,
    "check_sss": _check_sss,
    "alter_sss_fail": _own("cut"),
    "finish_promotion": _finish_promotion,
    "lose_epoch_file": _file_fault("epoch_file_losses"),
    "revert_epoch_file": _file_fault("epoch_file_reverts"),
    "write_back_epoch_file": _written_back("epoch_file_reverts"),
    "revert_checkpoint": _file_fault("checkpoint_reverts"),
    "flush_checkpoint": _written_back("checkpoint_reverts"),
}


def footprint(s: State, action: Action, cfg: Config) -> Footprint | None:
    """What `action` reads and writes in `s` (None: everything)."""
    f = FOOTPRINTS.get(action[0])
    return None if f is None else f(s, cfg, *action[1:])


def independent(x: Footprint | None, y: Footprint | None) -> bool:
    return (
        x is not None
        and y is not None
        and x.writes.isdisjoint(y.reads)
        and x.writes.isdisjoint(y.writes)
        and y.writes.isdisjoint(x.reads)
    )


_KIND_ORDER = {kind: i for i, kind in enumerate(ACTIONS)}


def rank(s: State, action: Action, symmetric: bool) -> tuple:
    """The order of sleep sets, read only from the acting broker's component. Under broker
    renaming it must not name the broker, so it describes it instead (ties only prune less)."""
    if not symmetric:
        return (_KIND_ORDER[action[0]], action)
    b = s.broker(action[1])
    return (_KIND_ORDER[action[0]], (b.up, b.running, b.role or "", b.promoting, b.master_epoch, max_phy(b), b.confirm,
                                     b.reput, b.client.state, len(b.conns), len(b.puts)))
