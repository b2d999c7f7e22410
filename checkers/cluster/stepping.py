"""The HA steps of `replay --cluster`: each model HA action as frames a stepping link holds,
released (proxy.py, step mode), and the kinds every replayed step is of (replay.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rmqcheck.model import commitlog as cl
from rmqcheck.model.step import Action
from rmqcheck.model.world import State

from .proxy import CUT, HANDSHAKE, TRANSFER, carries_data, data_end, frame_state, header_confirm

if TYPE_CHECKING:
    from .replay import Context

DRIVEN, OWN, NOT_DRIVABLE = "driven", "the code's own", "not drivable"
FRAME_WAIT = 3.0  # seconds to wait for a frame the code sends on its own (an ack: every 100 ms)
APPLY_WAIT = 10.0  # seconds a slave may take to apply frames released to it (a new file, a GC pause)
CONNECT_WAIT = 7.0  # an HA client whose connection closed tries again after 5 s
# replay --cluster scales the model's sizes: a message of N model bytes is stored in N x CELL_BYTES
# bytes (its body padded; one with a short name takes about 109 unpadded), and haTransferBatchSize
# is the model's batch_size x CELL_BYTES, so a batch ends where the model's does, within a message
# or across an epoch's end.
CELL_BYTES = 128


def _link_of(x: Context, slave: int, s: State):
    """The stepping link from `slave` to the master the model connects it to (or names)."""
    b = s.broker(slave)
    master = b.client.master or b.master_id
    return x.c.links.get((slave, master)) if master is not None else None


def _client_state(x: Context, slave: int) -> str | None:
    state = x.c.observe(slave)
    return state.get("client") if state else None


def ha_connect(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`ha_connect`: the handshake's frames pass both ways until the slave's HA client is in
    TRANSFER (the consistent point is found and the slave truncates to it)."""
    slave = a[1]
    link = _link_of(x, slave, after)
    if link is None or not x.c.nodes[slave].alive:
        return NOT_DRIVABLE, "the model's master for this slave is unknown to the cluster"
    end = time.monotonic() + CONNECT_WAIT
    released = 0
    while time.monotonic() < end:
        for to_master in (True, False):
            frames = link.held(to_master)
            n = next((i for i, f in enumerate(frames) if frame_state(f) != HANDSHAKE), len(frames))
            released += link.release(to_master, n)
        if _client_state(x, slave) == "TRANSFER" and not any(
                frame_state(f) == HANDSHAKE for d in (True, False) for f in link.held(d)):
            return DRIVEN, f"handshake through {link.name}: {released} frames"
        time.sleep(0.05)
    return DRIVEN, f"handshake through {link.name}: {released} frames, the client is {_client_state(x, slave)}"


def ha_transfer(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`ha_transfer`: the master's frames until the slave has each whole message the model's
    slave has after the step (batches as the model's, `CELL_BYTES`), up
    to the first with data when the model's transfer carries only part of one, or one heartbeat
    when it carries none; frames the master has not written yet are waited for, and so is the
    slave, until it has applied them (`_applied`)."""
    slave = a[1]
    link = _link_of(x, slave, before)
    if link is None:
        return NOT_DRIVABLE, "no link to the slave's master"
    b0, b1 = before.broker(slave), after.broker(slave)
    whole = [f"m{m.id}" for m in after.msgs if cl.has_message(b1.log, m)]
    target = None
    if len(whole) > sum(1 for m in before.msgs if cl.has_message(b0.log, m)):
        master = (x.c.observe(b0.client.master or b0.master_id, messages=True) or {}).get("messages") or []
        target = max((o + size for o, size, body in master if body in whole), default=None)
    data_in_model = cl.max_phy(b1.log) > cl.max_phy(b0.log)
    end = time.monotonic() + FRAME_WAIT
    while True:
        frames = link.held(to_master=False)
        if target is not None:
            n = next((i + 1 for i, f in enumerate(frames) if data_end(f) >= target), 0)
        else:
            n = next((i + 1 for i, f in enumerate(frames) if carries_data(f)), 0) if data_in_model else min(1, len(frames))
        if n or not data_in_model or time.monotonic() > end:
            break
        time.sleep(0.02)
    n = n or (len(frames) if target is not None else min(1, len(frames)))
    # The model's writer sends a heartbeat only when it has nothing to send; the code's sends one
    # whenever haSendHeartbeatInterval (100 ms here, shorter than a step) has passed, headed with
    # the epoch it transfers, which the slave records: before a batch the model sends, not delivered.
    beats = {i for i, f in enumerate(frames[:n]) if data_in_model and frame_state(f) == TRANSFER and not carries_data(f)}
    link.drop_held(False, beats)
    sent = [f for i, f in enumerate(frames[:n]) if i not in beats]
    link.release(False, len(sent))
    data = [f for f in sent if carries_data(f)]
    applied = _applied(x, slave, max(map(data_end, data), default=-1), header_confirm(sent[-1]) if sent else None)
    return DRIVEN, f"{len(sent)} frames to broker {a[1]} ({len(data)} with messages)" + \
        (f"; {len(beats)} heartbeats before them not delivered" if beats else "") + \
        ("" if applied else f"; broker {slave} had not applied them after {APPLY_WAIT:.0f} s")


def _applied(x: Context, slave: int, end: int, confirm: int | None) -> bool:
    """Wait until the slave has applied the frames just released: its commit log reaches `end`
    (the last data released) and its confirmOffset is the last frame's, clamped to its log
    (AutoSwitchHAClient sets it after each transfer frame), or it has left TRANSFER. The settle
    after a step waits only for a quiet cluster, and a slave's first append, which maps a new
    commit-log file, can stay quiet longer."""
    deadline = time.monotonic() + APPLY_WAIT
    while time.monotonic() < deadline:
        state = x.c.observe(slave) or {}
        if state.get("client") != "TRANSFER":  # the frames broke the connection: nothing more comes
            return True
        top = state.get("max_offset", -1)
        if top >= end and (confirm is None or state.get("confirm_offset") == min(confirm, top)):
            return True
        time.sleep(0.02)
    return False


def ha_slave_ack(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`ha_slave_ack`: the slave's next ack (its current offset, sent every heartbeat interval)
    is written; it stays held until `ha_read_ack`."""
    link = _link_of(x, a[1], before)
    if link is None:
        return NOT_DRIVABLE, "no link to the slave's master"
    count = len(link.held(to_master=True))
    end = time.monotonic() + FRAME_WAIT
    while len(link.held(to_master=True)) <= count and time.monotonic() < end:
        time.sleep(0.02)
    x.ack_marks[a[1]] = len(link.held(to_master=True))
    return DRIVEN, f"broker {a[1]} wrote an ack ({x.ack_marks[a[1]]} held)"


def ha_read_ack(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`ha_read_ack`: the master reads the ack `ha_slave_ack` marked; older ones held are dropped,
    as the model's acks coalesce (each the code read would propose the same expansion again)."""
    link = _link_of(x, a[1], before)
    if link is None:
        return NOT_DRIVABLE, "no link to the slave's master"
    held = link.held(to_master=True)
    n = x.ack_marks.pop(a[1], len(held))
    acks = [i for i, f in enumerate(held[:n]) if frame_state(f) == TRANSFER]
    link.drop_held(True, set(acks[:-1]))
    link.release(True, n - len(acks[:-1]))
    return DRIVEN, f"the master read broker {a[1]}'s ack {int.from_bytes(held[acks[-1]][4:12], 'big')}" if acks \
        else "no ack held"


def conn_reset(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`conn_reset`: the slave's connection is closed (the link cut, then stepping again)."""
    link = _link_of(x, a[1], before)
    if link is None:
        return NOT_DRIVABLE, "no link to the slave's master"
    link.set_mode(CUT)
    link.set_mode(x.c.link_mode)
    return DRIVEN, f"{link.name} reset"


def ha_linger(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`ha_linger`: the proxy closes the slave's end of its connection (the slave connects again
    by itself) and keeps the master's end open and silent, so the master keeps it in its list."""
    link = _link_of(x, a[1], before)
    done = link is not None and link.linger()
    return (DRIVEN, f"{link.name}: the slave's end closed, the master's kept") if done else \
        (NOT_DRIVABLE, "no connection of the slave's to linger")


def ha_close_lingering(x: Context, a: Action, before: State, after: State) -> tuple[str, str]:
    """`ha_close_lingering`: the proxy closes the master's end; the master's read loop sees the
    end of the stream and removes the connection."""
    closed = sum(link.close_lingering() for (slave, _), link in x.c.links.items() if slave == a[1])
    return (DRIVEN, f"the master's end of broker {a[1]}'s lingering connection closed") if closed else \
        (NOT_DRIVABLE, f"no lingering connection of broker {a[1]}'s")
