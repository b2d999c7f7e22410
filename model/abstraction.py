"""Two views under which the explorer may treat states as one. Neither is RocketMQ code.

* Time as ages (TLC's VIEW). The model compares timestamps only with thresholds: a broker is
  alive while `now - lastUpdate <= heartbeat_timeout` (`isBrokerActive`), a SyncStateSet member
  is dropped once `now - caughtUp > not_catchup_time` (`maybeShrinkSyncStateSet`), a put times
  out once `now >= deadline` (GroupTransferService). Replacing each timestamp by its age,
  clamped one past its threshold, keeps every such comparison, now and after any further ticks
  (ages only grow, a clamp is monotone and `max` of timestamps is `min` of ages), so states with
  one view have the same futures and the clock no longer makes the space infinite.
* Broker renaming (symmetry). `rename` maps every broker id in a state to another. The rules
  treat ids alike except where the real code breaks exact ties by id: the election policy's
  TreeSet keeps the smallest id among brokers with equal (epoch, maxOffset, priority)
  (`_tree_set_first`), and asyncLearner settings name brokers. So symmetry reduction is exact
  only away from such ties; tests measure both (tests/test_abstraction.py).
"""

from __future__ import annotations

from itertools import permutations

from .broker import Broker, Conn, PendingPut
from .config import Config
from .controller import AlterSyncStateSetEvent, ApplyBrokerIdEvent, Controller, ElectMasterEvent, LiveInfo, SetState
from .world import ReadRecord, SendRecord, State

# Field positions, read from the definitions so that a new field cannot shift them silently.
_CAUGHT_UP = Broker._fields.index("caught_up")
_CONNS = Broker._fields.index("conns")
_PUTS = Broker._fields.index("puts")
assert Conn._fields[-1] == "last_transfer_time"
assert PendingPut._fields.index("deadline") == 2
assert LiveInfo._fields[0] == "last_update"
assert Controller._fields[2] == "live" and State._fields[:3] == ("now", "brokers", "ctrl")


def _timeless_broker(b: Broker, now: int, caught_cap: int) -> tuple:
    caught = tuple((k, min(now - t, caught_cap)) for k, t in b[_CAUGHT_UP])
    conns = tuple(c[:-1] + (min(now - c[-1], caught_cap),) for c in b[_CONNS])
    puts = tuple((p[0], p[1], max(p[2] - now, 0), p[3]) for p in b[_PUTS])
    return b[:_CAUGHT_UP] + (caught, conns) + b[_CONNS + 1 : _PUTS] + (puts,) + b[_PUTS + 1 :]


def timeless(s: State, cfg: Config) -> tuple:
    """The state with every timestamp replaced by its clamped age (a plain tuple, for hashing)."""
    now = s.now
    live_cap = cfg.heartbeat_timeout + 1
    # lastTransferTime becomes a caught-up time (`updateConnectionLastCaughtUpTime`), so both
    # are compared with haMaxTimeSlaveNotCatchup.
    caught_cap = cfg.not_catchup_time + 1
    brokers = tuple(
        _timeless_broker(b, now, caught_cap) if (b[_CAUGHT_UP] or b[_CONNS] or b[_PUTS]) else b for b in s.brokers
    )
    c = s.ctrl
    live = tuple(None if i is None else (min(now - i[0], live_cap),) + i[1:] for i in c.live)
    return (brokers, c[:2], live, c[3:], s[3:])


# --- broker renaming ---------------------------------------------------------------------------


def symmetries(cfg: Config) -> list[tuple[int, ...]]:
    """Renamings `perm` (broker i becomes perm[i - 1]) that keep the configuration: asyncLearner
    brokers map to asyncLearner brokers. The identity comes first."""
    ids = range(1, cfg.brokers + 1)
    learners = cfg.async_learners
    return [p for p in permutations(ids) if all((p[i - 1] in learners) == (i in learners) for i in ids)]


class _Renamer:
    def __init__(self, perm: tuple[int, ...]):
        self.perm = perm

    def id(self, i: int | None) -> int | None:
        return self.perm[i - 1] if i is not None and i > 0 else i

    def ids(self, xs: frozenset[int]) -> frozenset[int]:
        return frozenset(self.perm[i - 1] for i in xs)

    def pairs(self, pairs: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
        return tuple(sorted((self.perm[k - 1], v) for k, v in pairs))  # kept sorted (`_set_pair`)

    def task(self, name: str) -> str:
        kind, _, who = name.partition(":")
        return f"{kind}:{self.perm[int(who) - 1]}" if who else name

    def broker(self, b: Broker) -> Broker:
        return b._replace(
            id=self.perm[b.id - 1],
            master_id=self.id(b.master_id),
            sss=self.ids(b.sss),
            remote_sss=self.ids(b.remote_sss),
            caught_up=self.pairs(b.caught_up),
            conns=tuple(c._replace(slave=self.perm[c.slave - 1]) for c in b.conns),
            client=b.client._replace(master=self.id(b.client.master)),
            alters=tuple((self.ids(sss), e, se) for sss, e, se in b.alters),
            last_acks=self.pairs(b.last_acks),
        )

    def set_state(self, s: SetState | None) -> SetState | None:
        if s is None:
            return None
        return s._replace(master=self.id(s.master), sss=self.ids(s.sss), broker_ids=self.ids(s.broker_ids))

    def event(self, ev):
        if isinstance(ev, ElectMasterEvent):
            return ElectMasterEvent(self.id(ev.new_master))
        if isinstance(ev, AlterSyncStateSetEvent):
            return AlterSyncStateSetEvent(self.ids(ev.new_sss))
        if isinstance(ev, ApplyBrokerIdEvent):
            return ApplyBrokerIdEvent(self.perm[ev.broker_id - 1])
        return ev

    def permuted(self, items: tuple) -> tuple:
        """A tuple indexed by broker id - 1, reordered."""
        out = [None] * len(items)
        for i, x in enumerate(items):
            out[self.perm[i] - 1] = x
        return tuple(out)


def rename(s: State, perm: tuple[int, ...]) -> State:
    """The state with broker i called perm[i - 1] everywhere."""
    r = _Renamer(perm)
    c = s.ctrl
    ctrl = Controller(
        applied=r.set_state(c.applied),
        pending=tuple(r.event(ev) for ev in c.pending),
        live=r.permuted(c.live),
        grants=tuple((e, r.id(b)) for e, b in c.grants),
        before_last=r.set_state(c.before_last),
        last_event=r.event(c.last_event),
    )
    return s._replace(
        brokers=r.permuted(tuple(r.broker(b) for b in s.brokers)),
        ctrl=ctrl,
        cut=r.ids(s.cut),
        msgs=tuple(m._replace(writer=r.id(m.writer)) for m in s.msgs),
        sends=tuple(SendRecord(x.msg, r.id(x.broker), x.status) for x in s.sends),
        reads=tuple(ReadRecord(x.queue, x.queue_offset, x.msg, r.id(x.broker)) for x in s.reads),
        ran=frozenset(r.task(t) for t in s.ran),
    )


# Action arguments that name a broker; `mask` is a bit set of brokers.
_BROKER_ARGS = {"broker", "slave"}


def rename_action(action: tuple, arg_names: tuple[str, ...], perm: tuple[int, ...]) -> tuple:
    out = [action[0]]
    for name, value in zip(arg_names, action[1:]):
        if name in _BROKER_ARGS:
            value = perm[value - 1]
        elif name == "mask":
            value = sum(1 << (perm[i] - 1) for i in range(len(perm)) if value >> i & 1)
        out.append(value)
    return tuple(out)


def canonical_key(s: State, cfg: Config, group: list[tuple[int, ...]]) -> int:
    """A fingerprint shared by all renamings of `s` in `group` (identity first): the least hash
    of their timeless views."""
    best = hash(timeless(s, cfg))
    for perm in group[1:]:
        h = hash(timeless(rename(s, perm), cfg))
        if h < best:
            best = h
    return best

