"""What of the model's state can be seen from outside RocketMQ's code, in the terms a running
cluster shows it (checkers/cluster/views.py reads the same of the code): per broker its role,
masterEpoch, the messages its commit log holds, its confirmOffset and epoch entries (both counted
in messages, so sizes and headers do not matter) and, on a master, its SyncStateSet; the
controller's master, epoch and SyncStateSet. `replay --cluster` compares the two after each
step, and trace validation of a recorded run (traces/real_runs.py) after each operation."""

from __future__ import annotations

from typing import Any

from . import commitlog as cl
from .broker import MASTER, get_confirm_offset
from .config import Config
from .world import State


def in_messages(offset: int, spans: list[tuple[int, int]]) -> int:
    """How many of the (offset, end) messages end at or before `offset`."""
    return sum(1 for _, end in spans if end <= offset)


def starts_before(offset: int, spans: list[tuple[int, int]]) -> int:
    return sum(1 for start, _ in spans if start < offset)


def model_view(s: State, cfg: Config, names: dict[int, str] | None = None, flushed: bool = False) -> dict[str, Any]:
    """The model's state as the cluster can show it (module docstring); message N is named
    `names[N]`, or mN (the replay sends message N as mN). With `flushed`, each broker's flushed
    position too, counted in messages (a recorded run compares it; `replay --cluster` does not,
    as its scenarios say when the model flushes and the code's flush service keeps its own time)."""
    names = names or {}
    brokers: dict[int, Any] = {}
    for b in s.brokers:
        if not b.up:
            brokers[b.id] = "down"
            continue
        held = [m for m in sorted(s.msgs, key=lambda m: m.offset) if cl.has_message(b.log, m)]
        spans = [(m.offset, m.end) for m in held]
        brokers[b.id] = {
            "role": b.role if b.running else "none",
            "masterEpoch": b.master_epoch,
            "messages": [names.get(m.id, f"m{m.id}") for m in held],
            "confirm": in_messages(get_confirm_offset(b, cfg), spans),  # what the store's getter answers
            "epochs": [(e, starts_before(start, spans)) for e, start in b.epochs.entries],
            "syncStateSet": sorted(b.sss) if b.role == MASTER and b.running else None,
        }
        if flushed:
            brokers[b.id]["flushed"] = in_messages(b.log.flushed, spans)
    c = s.ctrl.applied
    return {"brokers": brokers,
            "controller": {"master": c.master, "masterEpoch": c.master_epoch, "syncStateSet": sorted(c.sss),
                           "syncStateSetEpoch": c.sss_epoch}}


def controller_view(state: dict[str, Any]) -> dict[str, Any]:
    """The controller's state as its driver answers it (master, master_epoch, sss, sss_epoch), in
    the view's terms."""
    return {"master": state.get("master"), "masterEpoch": state.get("master_epoch"),
            "syncStateSet": sorted(int(i) for i in state.get("sss") or []), "syncStateSetEpoch": state.get("sss_epoch")}


def differences(model: dict[str, Any], code: dict[str, Any]) -> list[str]:
    """Each field two views (model_view, the cluster's) disagree on, as "where field: model X, code Y"."""
    out = []
    for b, m in model["brokers"].items():
        k = code["brokers"].get(b)
        if m == "down" or k == "down":
            if m != k:
                out.append(f"broker {b}: model {'down' if m == 'down' else 'up'}, code {'down' if k == 'down' else 'up'}")
            continue
        out += [f"broker {b} {f}: model {m[f]}, code {k[f]}" for f in m if m[f] != k[f]]
    out += [f"controller {f}: model {v}, code {code['controller'][f]}"
            for f, v in model["controller"].items() if v != code["controller"][f]]
    return out


def minority_side(b: int, peer: int | None, brokers: int) -> set[int]:
    """The brokers a minority fault at broker `b` cuts off: it, and its peer round the ring (the
    cluster's nemesis cuts them off, and a recorded run's follower partitions the model the same way)."""
    return {b} if peer is None else {b, (b - 1 + peer) % brokers + 1}
