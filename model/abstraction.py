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
  only away from such ties; tests measure both (tests/test_explore.py).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import permutations
from math import factorial
from operator import itemgetter

from .broker import Broker, Client, Conn, PendingPut
from .commitlog import Message
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
assert Controller._fields == ("applied", "pending", "live", "grants", "before_last", "last_event")
assert State._fields == (
    "now", "brokers", "ctrl", "cut", "off_controller", "msgs", "sends", "reads", "used", "ran", "consumer", "reports"
)
assert Message._fields[-1] == "writer" and SendRecord._fields[1] == ReadRecord._fields[-1] == "broker"
assert Conn._fields[0] == "slave" and Client._fields[1] == "master"


def _timeless_broker(b: Broker, now: int, caught_cap: int) -> tuple:
    caught = tuple((k, min(now - t, caught_cap)) for k, t in b[_CAUGHT_UP])
    conns = tuple(c[:-1] + (min(now - c[-1], caught_cap),) for c in b[_CONNS])
    puts = tuple((p[0], p[1], max(p[2] - now, 0), p[3]) for p in b[_PUTS])
    return b[:_CAUGHT_UP] + (caught, conns) + b[_CONNS + 1 : _PUTS] + (puts,) + b[_PUTS + 1 :]


def timeless(s: State, cfg: Config, ghost: bool = True) -> tuple:
    """The state with every timestamp replaced by its clamped age (a plain tuple, for hashing):
    (brokers, controller, the rest of the state from `cut` on). Without `ghost`, the ghost
    `reports` are left out: no rule reads them, so states that differ only there have the same
    futures, and only an invariant that reads them (I7) needs them told apart."""
    now = s.now
    live_cap = cfg.heartbeat_timeout + 1
    # lastTransferTime becomes a caught-up time (`updateConnectionLastCaughtUpTime`), so both
    # are compared with haMaxTimeSlaveNotCatchup.
    caught_cap = cfg.not_catchup_time + 1
    brokers = tuple(
        _timeless_broker(b, now, caught_cap) if (b[_CAUGHT_UP] or b[_CONNS] or b[_PUTS]) else b for b in s.brokers
    )
    c = s.ctrl
    live = _aged(c.live, now, live_cap)
    reports = _aged(s.reports, now, live_cap) if ghost else ()
    return (brokers, _make(Controller, c[:2] + (live,) + c[3:]), s[3:-1] + (reports,))


def _aged(infos: tuple, now: int, cap: int) -> tuple:
    """Heartbeat records (LiveInfo) with their time as a clamped age."""
    return tuple(None if i is None else (min(now - i[0], cap),) + i[1:] for i in infos)


# --- broker renaming ---------------------------------------------------------------------------


def symmetries(cfg: Config) -> list[tuple[int, ...]]:
    """Renamings `perm` (broker i becomes perm[i - 1]) that keep the configuration: asyncLearner
    brokers map to asyncLearner brokers, and each broker to one of equal election priority.
    The identity comes first."""
    ids = range(1, cfg.brokers + 1)

    def kind(i: int) -> tuple[bool, int]:
        return i in cfg.async_learners, cfg.priority(i)

    return [p for p in permutations(ids) if all(kind(p[i - 1]) == kind(i) for i in ids)]


def _make(cls, values) -> tuple:
    return tuple.__new__(cls, values)  # a NamedTuple without `_replace`'s keyword handling


class _Renamer:
    def __init__(self, perm: tuple[int, ...]):
        self.perm = perm

    def id(self, i: int | None) -> int | None:
        return self.perm[i - 1] if i is not None and i > 0 else i

    def ids(self, xs: frozenset[int]) -> frozenset[int]:
        return frozenset([self.perm[i - 1] for i in xs])

    def pairs(self, pairs: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
        return tuple(sorted([(self.perm[k - 1], v) for k, v in pairs]))  # kept sorted (`_set_pair`)

    def task(self, name: str) -> str:
        kind, _, who = name.partition(":")
        return f"{kind}:{self.perm[int(who) - 1]}" if who else name

    def conns(self, conns: tuple[Conn, ...]) -> tuple[Conn, ...]:
        return tuple([_make(Conn, (self.perm[c[0] - 1],) + c[1:]) for c in conns])

    def client(self, c: Client) -> Client:
        return _make(Client, (c[0], self.id(c[1])) + c[2:]) if c[1] is not None else c

    def alters(self, alters: tuple) -> tuple:
        return tuple([(self.ids(sss), e, se) for sss, e, se in alters])

    def broker(self, b: Broker) -> Broker:
        fields = list(b)
        for i, f in _ID_FIELDS:
            fields[i] = f(self, fields[i])
        return _make(Broker, fields)

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

    def controller(self, c: Controller) -> Controller:
        return _make(
            Controller,
            (
                self.set_state(c[0]),
                tuple([self.event(ev) for ev in c[1]]),
                self.permuted(c[2]),
                tuple([(e, self.id(b)) for e, b in c[3]]),
                self.set_state(c[4]),
                self.event(c[5]),
            ),
        )

    def rest(self, rest: tuple) -> tuple:
        """State fields from `cut` on."""
        cut, off_controller, msgs, sends, reads, used, ran, consumer, reports = rest
        return (
            self.ids(cut),
            self.ids(off_controller),
            tuple([_make(Message, m[:-1] + (self.id(m[-1]),)) for m in msgs]),
            tuple([_make(SendRecord, (x[0], self.id(x[1]), x[2])) for x in sends]),
            tuple([_make(ReadRecord, x[:3] + (self.id(x[3]),)) for x in reads]),
            used,
            frozenset([self.task(t) for t in ran]),
            consumer,
            self.permuted(reports),
        )

    def permuted(self, items: tuple) -> tuple:
        """A tuple indexed by broker id - 1, reordered."""
        out = [None] * len(items)
        for i, x in enumerate(items):
            out[self.perm[i] - 1] = x
        return tuple(out)


# How each Broker field that names brokers is renamed; None: the field names none.
_BROKER_FIELD_RENAMES = {
    "id": _Renamer.id,
    "master_id": _Renamer.id,
    "sss": _Renamer.ids,
    "remote_sss": _Renamer.ids,
    "caught_up": _Renamer.pairs,
    "conns": _Renamer.conns,
    "client": _Renamer.client,
    "alters": _Renamer.alters,
    "last_acks": _Renamer.pairs,
    "closing": _Renamer.ids,
}
_BROKER_RENAMES = tuple(_BROKER_FIELD_RENAMES.get(f) for f in Broker._fields)
assert set(_BROKER_FIELD_RENAMES) <= set(Broker._fields)
_ID_FREE = tuple(i for i, f in enumerate(_BROKER_RENAMES) if f is None)
_ID_FIELDS = tuple((i, f) for i, f in enumerate(_BROKER_RENAMES) if f is not None)


def rename(s: State, perm: tuple[int, ...]) -> State:
    """The state with broker i called perm[i - 1] everywhere."""
    r = _Renamer(perm)
    brokers = r.permuted(tuple([r.broker(b) for b in s.brokers]))
    return _make(State, (s.now, brokers, r.controller(s.ctrl)) + r.rest(s[3:]))


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


_id_free_fields = itemgetter(*_ID_FREE)
_id_fields = itemgetter(*(i for i, _ in _ID_FIELDS))


# The parts of a view that name brokers repeat across states (a 30 s std3 run of 160,000
# states has 2,187 distinct controller views), so their renamings are memoized.
@lru_cache(maxsize=1 << 16)
def _renamed_broker_ids(perm: tuple[int, ...], ids: tuple) -> tuple:
    r = _Renamer(perm)
    return tuple([f(r, v) for (_, f), v in zip(_ID_FIELDS, ids)])


@lru_cache(maxsize=1 << 16)
def _renamed_controller(perm: tuple[int, ...], ctrl: Controller) -> Controller:
    return _Renamer(perm).controller(ctrl)


@lru_cache(maxsize=1 << 16)
def _renamed_rest(perm: tuple[int, ...], rest: tuple) -> tuple:
    return _Renamer(perm).rest(rest)


def key_view(view: tuple, free: list[int], perm: tuple[int, ...] | None = None) -> tuple:
    """What the key hashes for the timeless `view` renamed by `perm` (None: as it is): each
    broker as the hash of its fields that name no broker (`free`, one per broker, the same
    under any renaming) with its renamed fields that do. The log, epochs and queues are so
    hashed once per state, not once per renaming tried; two of them with one hash merge two
    states, as two states with one fingerprint do (checkers/search/explore.py)."""
    brokers, ctrl, rest = view
    ids = map(_id_fields, brokers)
    if perm is None:
        return tuple(zip(free, ids)), ctrl, rest
    renamed = tuple([(f, _renamed_broker_ids(perm, b)) for f, b in zip(free, ids)])
    return _Renamer(perm).permuted(renamed), _renamed_controller(perm, ctrl), _renamed_rest(perm, rest)


def free_hashes(view: tuple) -> list[int]:
    """Per broker of a timeless view, the hash of its fields that name no broker."""
    return [hash(_id_free_fields(b)) for b in view[0]]


def canonical_key(s: State, cfg: Config, group: list[tuple[int, ...]], ghost: bool = True) -> int:
    """A fingerprint shared by all renamings of `s` in `group` (identity first).

    The renamings tried are those that put the brokers' renaming-free signatures in the least
    order (sorted, for the full group); among them the least hash of the key view wins. Both
    choices depend on the renaming class only, so the key is canonical, and the usual case
    (distinct signatures) costs one renaming at most."""
    view = timeless(s, cfg, ghost)
    brokers = view[0]
    free = free_hashes(view)
    cut, off = s.cut, s.off_controller
    sigs = tuple([(b[0] in cut, b[0] in off, f) for b, f in zip(brokers, free)])
    n = len(sigs)
    if len(group) == factorial(n) and len(set(sigs)) == n:
        # the full group, no ties: the one renaming that sorts the signatures
        perm = [0] * n
        for rank, i in enumerate(sorted(range(n), key=sigs.__getitem__), 1):
            perm[i] = rank
        chosen = [tuple(perm)]
    else:
        chosen = _least_order(sigs, group)
    identity = group[0]
    return min(hash(key_view(view, free, None if perm == identity else perm)) for perm in chosen)


def _least_order(sigs: tuple, group: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The renamings in `group` that put `sigs` in the least order."""
    best_order = None
    chosen: list[tuple[int, ...]] = []
    for perm in group:
        order = _Renamer(perm).permuted(sigs)
        if best_order is None or order < best_order:
            best_order, chosen = order, [perm]
        elif order == best_order:
            chosen.append(perm)
    return chosen
