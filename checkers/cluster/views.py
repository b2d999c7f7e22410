"""What the cluster shows after a step, in the terms of the model's view (model/observed.py:
per broker its role, masterEpoch, the messages its commit log holds, its confirmOffset, flushed
position and epoch entries counted in messages, on a master its SyncStateSet; the controller's
master, epoch and SyncStateSet); what the client was told; and what the running code shows of the model's
invariants (`x` is replay.py's Context: the cluster, the history, the outcomes the client
received)."""

from __future__ import annotations

from typing import Any

from rmqcheck.invariants.catalogue import attributed
from rmqcheck.model.broker import MASTER
from rmqcheck.model.observed import controller_view, in_messages, starts_before
from rmqcheck.model.world import PENDING, State


def cluster_view(states: dict[int, dict[str, Any] | None], controller: dict[str, Any]) -> dict[str, Any]:
    brokers: dict[int, Any] = {}
    for b, st in states.items():
        if st is None:
            brokers[b] = "down"
            continue
        running = st.get("rm_state") == "RUNNING"
        role = "none" if not running else MASTER if st.get("role") == "SYNC_MASTER" else "SLAVE"
        msgs = st.get("messages") or []
        spans = [(int(o), int(o) + int(size)) for o, size, _ in msgs]
        brokers[b] = {
            "role": role,
            "masterEpoch": st.get("master_epoch"),
            "messages": [body for _, _, body in msgs],
            "confirm": in_messages(int(st.get("confirm_offset", -1)), spans),
            "flushed": in_messages(int(st.get("flushed_offset", -1)), spans),
            "epochs": [(int(e[0]), starts_before(int(e[1]), spans)) for e in st.get("epochs", [])],
            "syncStateSet": sorted(int(i) for i in st.get("rm_sss", [])) if role == MASTER else None,
        }
    return {"brokers": brokers, "controller": controller_view(controller)}


# --- what the client saw ----------------------------------------------------------------------------


def result_differences(s: State, x) -> list[str]:
    """Each put the model has an outcome for, against the code's (PENDING in the model: not yet)."""
    out = []
    for n, rec in enumerate(s.sends, start=1):
        if rec.status != PENDING and x.outcomes.get(n, PENDING) != rec.status:
            out.append(f"put {n}: model {rec.status}, code {x.outcomes.get(n, 'no outcome yet')}")
    return out


def code_violations(x, states: dict[int, dict[str, Any] | None]) -> list[tuple[str, str]]:
    """What the running code shows of the model's invariants, as (invariant, what): an
    acknowledged message missing from the commit log of the broker the controller names master
    (I1) or of a live member of the controller's SyncStateSet (I2; a broker that is down cannot
    be looked at), or the confirmed master acking with a set that misses a controller member
    (I2); a message the consumer read missing from the confirmed master's commit log (I3); with
    allAck, a master's confirmOffset beyond the last ack a connected member of its
    SyncStateSet sent (I4's core); two replicas with the same epoch entry and different messages
    under it, or a connected slave that attributes a message to another epoch than its master
    (I5); an async learner as master (I7's learner clause)."""
    acked = [body for body, (n, _) in _sent(x).items() if x.outcomes.get(n) == "PUT_OK"]
    controller = x.c.controller.last
    master = x.c.master()
    members = sorted(int(i) for i in controller.get("sss") or [])
    out = []
    for b in sorted({*members, *([master] if master is not None else [])}):
        st = states.get(b)
        if not st or st.get("messages") is None or (b == master and st.get("role") != "SYNC_MASTER"):
            continue
        held = {body for _, _, body in st["messages"]}
        for body in acked:
            if body in held:
                continue
            if b == master:
                out.append(("I1", f"acknowledged {body} is not in master broker {b}'s commit log"))
            if b in members:
                out.append(("I2", f"broker {b} is in the controller's SyncStateSet {members} but its commit log "
                                  f"lacks acknowledged {body}"))
    for b, st in states.items():
        if not st or st.get("role") != "SYNC_MASTER" or not x.cfg.all_ack:
            continue
        confirm = int(st.get("confirm_offset", -1))
        acks = {int(slave): int(ack) for slave, ack, _ in st.get("connections", []) if int(ack) >= 0}
        for member in sorted(int(i) for i in st.get("sss", [])):
            if member != st.get("broker_id") and member in acks and confirm > acks[member]:
                out.append(("I4", f"master broker {b}: confirmOffset {confirm} is beyond SyncStateSet member "
                                  f"{member}'s ack {acks[member]}"))
    st = states.get(master) if master is not None else None
    if st and st.get("role") == "SYNC_MASTER" and st.get("master_epoch") == controller.get("master_epoch"):
        effective = {int(i) for i in st.get("sss", [])}
        if not set(members) <= effective:
            out.append(("I2", f"master broker {master} acks with SyncStateSet {sorted(effective)}, which misses "
                              f"controller members {sorted(set(members) - effective)}"))
        if st.get("messages") is not None:
            held = {body for _, _, body in st["messages"]}
            out += [("I3", f"{body}, read by the consumer, is not in confirmed master broker {master}'s commit log")
                    for body in _read(x) if body not in held]
    if master is not None and master in x.cfg.async_learners:
        out.append(("I7", f"broker {master}, an async learner, is the controller's master"))
    return out + _log_matching(states) + _attribution(states)


def _epoch_ranges(st: dict[str, Any]) -> dict[tuple[int, int], int]:
    """(epoch, start) -> where that epoch ends in this replica (the next entry's start, or the
    log's end)."""
    entries = [(int(e[0]), int(e[1])) for e in st.get("epochs", [])]
    ends = [start for _, start in entries[1:]] + [int(st.get("max_offset", 0))]
    return {entry: end for entry, end in zip(entries, ends)}


def _log_matching(states: dict[int, dict[str, Any] | None]) -> list[tuple[str, str]]:
    """I5's first half on the code: two live replicas that record the same (epoch, start) hold
    the same messages over that epoch's common range."""
    out = []
    live = [(b, st) for b, st in sorted(states.items()) if st and st.get("messages") is not None]
    for i, (a, sa) in enumerate(live):
        for b, sb in live[i + 1:]:
            ra, rb = _epoch_ranges(sa), _epoch_ranges(sb)
            for (epoch, start) in sorted(set(ra) & set(rb)):
                end = min(ra[(epoch, start)], rb[(epoch, start)])
                # whole messages only: a slave's last one may be half copied (a transfer batch ends mid-message)
                ma = [(o, body) for o, size, body in sa["messages"] if start <= o and o + size <= end]
                mb = [(o, body) for o, size, body in sb["messages"] if start <= o and o + size <= end]
                if ma != mb:
                    out.append(("I5", f"brokers {a} and {b} both record epoch {epoch} from {start} but hold "
                                      f"{[m for _, m in ma]} and {[m for _, m in mb]} there"))
    return out


def _epoch_at(st: dict[str, Any], offset: int) -> int | None:
    """The epoch a replica's entries attribute `offset` to (invariants.catalogue.attributed)."""
    return attributed(tuple((int(e[0]), int(e[1])) for e in st.get("epochs", [])), offset)


def _attribution(states: dict[int, dict[str, Any] | None]) -> list[tuple[str, str]]:
    """I5's second half on the code: a slave connected to its master (both ends in TRANSFER)
    attributes each message they both hold to the epoch its master does."""
    out = []
    for m, sm in sorted(states.items()):
        if not sm or sm.get("role") != "SYNC_MASTER" or sm.get("messages") is None:
            continue
        held = {(o, body) for o, _, body in sm["messages"]}
        for slave, _, state in sm.get("connections", []):
            ss = states.get(int(slave))
            if state != "TRANSFER" or not ss or ss.get("client") != "TRANSFER" or ss.get("messages") is None:
                continue
            for o, _, body in ss["messages"]:
                mine, theirs = _epoch_at(ss, o), _epoch_at(sm, o)
                if (o, body) in held and None not in (mine, theirs) and mine != theirs:
                    out.append(("I5", f"slave {slave} attributes {body} to epoch {mine}, its master {m} to epoch "
                                      f"{theirs}"))
                    break
    return out


def _read(x) -> list[str]:
    """The bodies the consumer read, each once, in the order first read."""
    read = [f[4] for f in (line.split("\t") for line in x.history.lines)
            if f[1] == "dequeue" and f[2] == "RESPONSE" and f[3] == "SUCCESS"]
    return list(dict.fromkeys(read))


def _sent(x) -> dict[str, tuple[int, int]]:
    """body -> (send number, queue) of every put the replay sent, from its history."""
    sent = {}
    for line in x.history.lines:
        f = line.split("\t")
        if f[1] == "enqueue" and f[2] == "REQUEST":
            sent[f[3]] = (int(f[0]), int(f[4][1:]))
    return sent
