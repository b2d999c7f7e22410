"""When a step of the cluster may end (harness.Cluster.settle): what must stay the same for the
cluster to count as quiet, and the slaves it still waits for. Pure functions of the brokers'
polled states, the controller's master and the HA links' modes, so each clause is tested without
a JVM (tests/test_cluster.py)."""

from __future__ import annotations

from typing import Any, Mapping

from .proxy import OPEN

States = Mapping[int, "dict[str, Any] | None"]


def shape(state: dict[str, Any] | None) -> Any:
    """What must stay the same for the cluster to count as quiet (HA progress, roles, epochs)."""
    if state is None:
        return None
    return tuple(state.get(k) if not isinstance(state.get(k), list) else repr(state.get(k))
                 for k in ("role", "master_epoch", "max_offset", "confirm_offset", "epochs", "sss", "local_sss",
                           "synchronizing", "connections", "client"))


def lagging(states: States, m: int | None, links: Mapping[tuple[int, int], Any]) -> set[int]:
    """The slaves of the current master `m`, on an open link, that do not hold all it holds yet:
    its log and its ack of it; and a slave with no epoch entry yet under a master that has one (a
    new slave takes the master's first entry from a frame after its handshake, with or without
    messages; a busy machine can leave that frame unread for longer than the quiet window, and
    the step's view then showed a slave in the SyncStateSet with no entry); and every slave amid
    a handshake (`handshaking`). `links`: (slave, master) -> its proxy."""
    master = states.get(m) if m is not None else None
    if not master or master.get("role") != "SYNC_MASTER":
        return handshaking(states, links)
    acks = {int(slave): ack for slave, ack, _ in master["connections"]}
    return handshaking(states, links) | {
        b for b, s in states.items()
        if b != m and s and s.get("role") == "SLAVE" and links[(b, m)].mode == OPEN
        and s["master_epoch"] == master["master_epoch"]
        and (s["max_offset"] != master["max_offset"] or acks.get(s["broker_id"]) != master["max_offset"]
             or (not s.get("epochs") and bool(master.get("epochs"))))}


def handshaking(states: States, links: Mapping[tuple[int, int], Any]) -> set[int]:
    """The slaves, up, whose HA connection to a broker is still in HANDSHAKE on an open link,
    whatever that broker's role. The master's end leaves HANDSHAKE when it reads the slave's
    first TRANSFER report, and its write thread can wait a second before it sends its own
    handshake, longer than the quiet window, with no state changing meanwhile. A step's view
    read then showed a slave with no TRANSFER frame yet (durable3 seed 500, step 77: a slave of
    a fenced broker, with its checkpoint's confirmOffset, not the frames')."""
    by_id = {s["broker_id"]: b for b, s in states.items() if s and s.get("started")}
    return {slave for m, s in states.items() if s and s.get("started")
            for sid, _, state in s["connections"]
            if state == "HANDSHAKE" and (slave := by_id.get(int(sid))) is not None and slave != m
            and links[(slave, m)].mode == OPEN}
