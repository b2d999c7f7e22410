"""The vocabulary of conformance requests, drawn through a `Chooser`: seeded `random.Random` for
throughput (the default of `rmqcheck conform`, shrunk by delta debugging), or Hypothesis draws
(shrunk by Hypothesis; the property tests and `generator="hypothesis"`). Both give the same
distribution.

A sequence drives the controller (broker-id applications and races, registrations, some from a
moved broker, heartbeats, elections designated or not, AlterSyncStateSet with current, stale and
future epochs and sets with unknown or dead members or without the master, expiry, clean-up,
snapshot and restore; half from a broker set brought up first, `_bring_up`), the epoch caches
(append, suffix and prefix truncation, last end, reload, file loss, lookups, the truncation
point; half from caches holding entries) or the HA service (a broker's whole state and one
call), including edge values (Long.MAX_VALUE, 2^31, equal and negative values the Java accepts).
Symbolic arguments (`$master`, `$master_epoch`, `$sss_epoch`, `$master_epoch-1`, ...) are bound
from the model's state just before the request is sent (`conform.bind`).
"""

from __future__ import annotations

from random import Random
from typing import Any, Callable, Sequence

from hypothesis import strategies as st

from .model_side import MAX_ID

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

# Offsets as the model's large scales make them (model/config.py SCALES): a base and a few
# cells of 512 MiB, so two of them differ by multiples of 2^29 up to 2^32.
SCALED_BASES = (2**30, 2**63 - 2**34)
SCALED_UNIT = 2**29
SCALED_OFFSETS = tuple(base + SCALED_UNIT * k for base in SCALED_BASES for k in range(9))
EDGE_OFFSETS = (INT_MAX, INT_MAX + 1, 2**32, LONG_MAX - 1, LONG_MAX, -1)
EDGE_EPOCHS = (INT_MAX, -1)


class RandomChooser:
    def __init__(self, rng: Random) -> None:
        self.random = rng.random  # uniform floats: a few times cheaper than randint

    def integer(self, lo: int, hi: int) -> int:
        return lo + int(self.random() * (hi - lo + 1))

    def pick(self, options: Sequence) -> Any:
        return options[int(self.random() * len(options))]

    def repeat(self, element: Callable[[Any], Any], most: int) -> list:
        return [element(self) for _ in range(self.integer(1, most))]


class DrawChooser:
    def __init__(self, draw: Callable) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def pick(self, options: Sequence) -> Any:
        return self.draw(st.sampled_from(options))

    def repeat(self, element: Callable[[Any], Any], most: int) -> list:
        """A list Hypothesis knows as one: shrinking deletes whole elements."""
        one = st.composite(lambda draw: element(DrawChooser(draw)))()
        return self.draw(st.lists(one, min_size=1, max_size=most))


def address(i: Any) -> str:
    return f"10.0.0.{i}:10911"


def moved_address(i: Any) -> str:
    """Where a broker registers from after it moved (restarted on another host)."""
    return f"10.0.1.{i}:10911"


def _bring_up(ch: Any) -> list[tuple[int | None, dict]]:
    """A broker set coming up as RocketMQ's brokers bring it up: 1-4 brokers apply for the next
    id and (half of them) register, heartbeat, and one asks for an election; then the master
    asks 0-2 times to add members (live, maybe one never registered). Without it the random
    requests seldom make a set with several registered, live members and a master, the state in
    which AlterSyncStateSet's member checks (unknown, not alive, master left out) and
    registration beside a live master are decided. (ticks, request) pairs, as `_request` gives."""
    n = ch.integer(1, MAX_ID)
    out: list[tuple[int | None, dict]] = []
    for i in range(1, n + 1):
        out.append((0, {"op": "apply_broker_id", "id": "$next_id", "address": address(i), "check_code": "c1"}))
        if ch.integer(0, 1):  # a coin, so that Hypothesis can shrink the registration away
            out.append((0, {"op": "register_broker", "id": i, "address": address(i)}))
    for i in range(1, n + 1):
        out.append((0, {"op": "heartbeat", "id": i, "address": address(i), "epoch": 0, "max_offset": 0,
                        "confirm_offset": 0, "priority": ch.pick((INT_MAX, 0, 1, 2))}))
    out.append((0, {"op": "elect", "id": ch.integer(1, n), "designate": False}))
    for _ in range(ch.integer(0, 2)):  # the master adds the slaves that caught up (maybe one unknown)
        out.append((0, {"op": "alter_sss", "master": "$master", "master_epoch": "$master_epoch",
                        "sss": ["$master"] + _subset(ch, range(1, MAX_ID + 1)), "sss_epoch": "$sss_epoch"}))
    return out


def _offset(ch: Any, stored: bool = False) -> int:
    """An offset; `stored` ones (written to the checkpoint file) are never negative: the file's
    "epoch-start" lines cannot hold a minus sign (see docs/conformance.md), and RocketMQ never
    writes one (offsets start at 0, epochs at 1)."""
    edges = EDGE_OFFSETS[:-1] if stored else EDGE_OFFSETS
    return ch.pick(edges) if ch.integer(0, 4) == 0 else ch.integer(0, 12)


def _epoch(ch: Any, stored: bool = False) -> int:
    edges = EDGE_EPOCHS[:-1] if stored else EDGE_EPOCHS
    return ch.pick(edges) if ch.integer(0, 9) == 0 else ch.integer(0, 6)


def _entries(ch: Any) -> list[list[int]]:
    """Strictly increasing (epoch, start) pairs."""
    out, e, s = [], 0, -1
    for _ in range(ch.integer(0, 4)):
        e, s = e + ch.integer(1, 3), s + ch.integer(1, 3)
        out.append([e, s])
    return out


def _controller_op(ch: Any) -> dict:
    # heartbeats, elections and AlterSyncStateSet weigh most: they make the states in which
    # the election order and the fences matter
    kind = ch.pick(("apply_broker_id", "apply_broker_id", "get_next_broker_id", "register_broker", "heartbeat",
                    "heartbeat", "heartbeat", "heartbeat", "elect", "elect", "alter_sss", "alter_sss",
                    "expire", "get_replica_info", "get_sync_state_data", "clean", "scan", "snapshot_restore"))
    i = ch.integer(1, MAX_ID)
    if kind == "apply_broker_id":
        i = ch.pick((i, "$next_id"))
        return {"op": kind, "id": i, "address": address(i), "check_code": ch.pick(("c1", "c2"))}
    if kind == "register_broker":
        # one time in four from a new address (a broker restarted elsewhere): registerBroker
        # then emits an UpdateBrokerAddressEvent (the driver applies it; addresses are not modelled)
        return {"op": kind, "id": i, "address": address(i) if ch.integer(0, 3) else moved_address(i)}
    if kind == "expire":
        return {"op": kind, "id": i}
    if kind == "heartbeat":
        # a quarter at the model's large scales: the election comparator's int cast meets them
        max_offset = ch.pick(SCALED_OFFSETS) if ch.integer(0, 3) == 3 else _offset(ch)
        return {"op": kind, "id": i, "address": address(i), "epoch": _epoch(ch), "max_offset": max_offset,
                "confirm_offset": _offset(ch), "priority": ch.pick((INT_MAX, 0, 1, 2))}
    if kind == "elect":
        return {"op": kind, "id": ch.pick((None, i)), "designate": ch.pick((False, True))}
    if kind == "clean":
        ids = sorted({ch.integer(1, MAX_ID) for _ in range(ch.integer(0, 2))})
        return {"op": kind, "ids": ";".join(map(str, ids)), "living": ch.pick((False, True))}
    if kind == "alter_sss":
        # a set without the master one time in four: a wrong or stale broker may send one
        members = ["$master"] * (ch.integer(0, 3) > 0) + [ch.integer(1, MAX_ID) for _ in range(ch.integer(0, 3))]
        return {"op": kind, "master": ch.pick(("$master", "$master", i)),
                "master_epoch": ch.pick(("$master_epoch", "$master_epoch", "$master_epoch-1", "$master_epoch+1")),
                "sss": members,
                "sss_epoch": ch.pick(("$sss_epoch", "$sss_epoch", "$sss_epoch-1", "$sss_epoch+1"))}
    return {"op": kind}


def _epoch_op(ch: Any) -> dict:
    kind = ch.pick(("epoch_new", "epoch_append", "epoch_append", "epoch_append", "epoch_set_last_end",
                    "epoch_truncate_suffix_by_epoch", "epoch_truncate_suffix_by_offset",
                    "epoch_truncate_prefix_by_offset", "epoch_reload", "epoch_lose_file", "epoch_get_entry",
                    "epoch_find_by_offset", "epoch_next_entry", "epoch_truncation_point", "find_consistent_point"))
    if kind == "find_consistent_point":
        return {"op": kind, "local": _entries(ch), "local_max": _offset(ch), "master": _entries(ch),
                "master_max": _offset(ch)}
    req: dict[str, Any] = {"op": kind, "name": ch.pick(("a", "b"))}
    if kind == "epoch_append":
        req.update(epoch=_epoch(ch, stored=True), start=_offset(ch, stored=True))
    elif kind == "epoch_set_last_end":
        req.update(end=_offset(ch))
    elif kind in ("epoch_truncate_suffix_by_epoch", "epoch_get_entry", "epoch_next_entry"):
        req.update(epoch=_epoch(ch))
    elif kind in ("epoch_truncate_suffix_by_offset", "epoch_truncate_prefix_by_offset", "epoch_find_by_offset"):
        req.update(offset=_offset(ch))
    elif kind == "epoch_truncation_point":
        req.update(local_max=_offset(ch), master=_entries(ch), master_max=_offset(ch))
    return req


def _subset(ch: Any, ids: Sequence[int]) -> list[int]:
    return [i for i in ids if ch.integer(0, 1)]


def _ha_op(ch: Any) -> dict:
    """One HA-service request: a broker's whole state (a log of small whole messages, maybe with a
    torn head; SyncStateSets, connections and acks, confirmOffset, epochs, caught-up times) and a
    call. Acks and confirmOffsets range over -1 (none yet), the log and a little beyond it. One
    request in three is at the model's large scale (`scale`: the log starts near 2^63 and a cell
    is 512 MiB), so the code's long and int arithmetic meets the offsets the model checks."""
    me = ch.integer(1, 3)
    base, unit = ch.pick(((0, 1), (0, 1), (SCALED_BASES[1], SCALED_UNIT)))
    sizes = [ch.integer(1, 3) for _ in range(ch.integer(0, 4))]
    head = ch.pick((0, 0, 0, 1, 2))  # cells of a message that began before the log's first one
    starts, size = [], head
    for n in sizes:
        starts.append(size)
        size += n

    def at(cells: int) -> int:
        return base + unit * cells

    def offset() -> int:
        return ch.pick((-1, LONG_MAX)) if ch.integer(0, 9) == 0 else at(ch.integer(0, size + 1))

    entries = [[e, at(s)] for e, s in _entries(ch)]
    others = [i for i in (1, 2, 3) if i != me]
    req = {
        **({"scale": [base, unit]} if unit > 1 else {}),
        "id": me, "role": ch.pick(("MASTER", "MASTER", "SLAVE", "NONE")), "fenced": ch.integer(0, 3) == 0,
        "all_ack": ch.pick((True, True, False)), "not_catchup": ch.integer(1, 3), "max": at(size),
        "message_starts": [at(s) for s in starts], "confirm": offset(),
        "sss": sorted(set(_subset(ch, others)) | ({me} if ch.integer(0, 3) else set())),
        "remote": sorted(_subset(ch, (1, 2, 3))), "synchronizing": ch.integer(0, 1) == 1,
        # every other broker connected, two times in three: a missing member makes computeConfirmOffset
        # return the stored value at once
        "conns": [[s, offset()] for s in (others if ch.integer(0, 2) else _subset(ch, others))],
        "now": ch.integer(0, 6),
        "caught_up": [[s, ch.integer(-3, 6)] for s in _subset(ch, others)],
        "epochs": entries, "last_end": ch.pick((LONG_MAX, LONG_MAX, entries[-1][1] if entries else LONG_MAX)),
    }
    if req["conns"] and ch.integer(0, 3) == 0:
        # a slave's earlier connection still in the list beside its new one (a lingering one)
        slave = ch.pick([s for s, _ in req["conns"]])
        req["conns"].insert(ch.integer(0, len(req["conns"])), [slave, offset()])
    # ha_wait is rarer: a put that is not acked costs the driver its 1 ms deadline
    kind = ch.pick(("ha_confirm", "ha_ack", "ha_expand", "ha_shrink", "ha_set_sss", "ha_truncate", "ha_remove") * 3
                   + ("ha_wait",))
    req = {"op": kind, **req}
    if kind in ("ha_ack", "ha_expand"):  # the slave that acks is connected
        req["slave"] = ch.pick(others)
        if all(s != req["slave"] for s, _ in req["conns"]):
            req["conns"] = sorted(req["conns"] + [[req["slave"], offset()]])
    if kind == "ha_expand":
        req["offset"] = offset()
    if kind == "ha_set_sss":
        req["new_sss"] = sorted({me} | set(_subset(ch, others)))
    if kind == "ha_truncate":
        req.update(reported=at(size), master=[[e, at(s)] for e, s in _entries(ch)], master_max=at(ch.integer(0, size + 3)))
    if kind == "ha_remove":  # one of the installed connections ends, or (-1) the second service of one already out
        req["conn"] = ch.integer(-1, len(req["conns"]) - 1)
        req["slave"] = req["conns"][req["conn"]][0] if req["conn"] >= 0 else ch.pick(others)
    if kind == "ha_wait":  # -1: every SyncStateSet member (allAck); the model acks 0 or 1 at once
        req.update(next_offset=offset(), need_ack=ch.pick((-1, -1, 2, 3)))
    return req


def sequence(ch: Any, max_ops: int, ha: bool = False) -> list[dict]:
    """A controller reset and two fresh epoch caches, then requests: a third of the sequences
    drive the controller only, a third the epoch caches only, a third both (two to one), so
    each side gets long runs of its own; with `ha`, a quarter instead send HA-service requests,
    each carrying its own state. The logical clock advances 0-2 ticks before each controller
    request, against a heartbeat timeout of 1-4 ticks."""
    out = [{"op": "ctl_reset", "unclean": ch.pick((False, True)), "heartbeat_timeout": ch.integer(1, 4)},
           {"op": "epoch_new", "name": "a"}, {"op": "epoch_new", "name": "b"}]
    share = ch.pick((3, 0, 2, -1) if ha else (3, 0, 2))  # of every three requests, how many go to the controller
    now = 0
    # half the sequences that drive the controller start from a broker set brought up
    up = _bring_up(ch) if share > 0 and ch.integer(0, 1) else []
    # and half of those that drive the epoch caches from caches that already hold entries (a
    # broker's epoch file after a few elections), so lookups meet several entries and their ends
    if 0 <= share < 3 and ch.integer(0, 1):
        up += [(None, {"op": "epoch_append", "name": name, "epoch": e, "start": start})
               for name in ("a", "b") for e, start in _entries(ch)]
    for ticks, op in up + ch.repeat(lambda c: _request(c, share), max_ops):
        if ticks is None:
            out.append(op)
        else:
            now += ticks
            out.append({**op, "now": now})
    return out


def _request(ch: Any, share: int) -> tuple[int | None, dict]:
    """One request after the preamble: (ticks the clock advances first, None for a request
    that does not read it; the request)."""
    if share < 0:
        return None, _ha_op(ch)
    if ch.integer(0, 2) < share:
        ticks = ch.integer(0, 2)
        return ticks, _controller_op(ch)
    return None, _epoch_op(ch)


PREAMBLE = 3  # the reset and the two epoch_new requests every sequence starts with


def sequences(max_ops: int = 40, ha: bool = False) -> st.SearchStrategy[list[dict]]:
    """The same sequences as Hypothesis draws (shrinkable)."""
    return st.composite(lambda draw: sequence(DrawChooser(draw), max_ops, ha))()


