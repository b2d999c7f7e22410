"""Counterexamples to step through in a browser (`replay FILE --html OUT`, and a page per
counterexample of `rmqcheck report`): one self-contained HTML file whose script (stepper_page.py)
draws the replay's states, embedded as JSON. Nothing is fetched: no network, no server.

This module turns a replay into that JSON. Each state is given as the page draws it
(`state_view`); what a step changed is said in the replay table's own words
(describe.changes), and `changed` names the drawn parts that differ from the step before, so the
page can highlight them without knowing any rule. With `replay --java` and `--cluster`, each
step also carries the Java lockstep's verdict and the cluster's view beside the model's, in the
same terms (checkers/cluster/views.py).

Offsets are sent as cell positions, small integers the page can draw, and as decimal strings:
JavaScript's numbers cannot hold an offset near 2^63 (the large scale)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from rmqcheck.checkers.counterexamples.describe import changes
from rmqcheck.checkers.counterexamples.files import Counterexample
from rmqcheck.checkers.counterexamples.replay import Replay, ReplayError, replay
from rmqcheck.invariants.catalogue import BY_ID, Violation, expected_ids
from rmqcheck.invariants.liveness import LIVENESS_BY_ID
from rmqcheck.model import commitlog as cl
from rmqcheck.model import epochfile as ef
from rmqcheck.model.broker import Broker, max_phy
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.config import Config
from rmqcheck.model.configs import to_dict
from rmqcheck.model.observed import model_view
from rmqcheck.model.step import format_action
from rmqcheck.model.world import State

from .stepper_page import SCRIPT, SKELETON, STYLE

SCHEMA = 1  # of the embedded JSON; the page's script reads this version


def first_hit(cx: Counterexample, violations: Sequence[Sequence[Violation]]) -> tuple[int, str] | None:
    """(step, invariant) where the file's invariant first breaks, or for a file that names none
    the first invariant its configuration promises: the step `replay` reports."""
    promised = expected_ids(cx.config)
    for i, vs in enumerate(violations):
        for v in vs:
            if v.invariant == cx.invariant or (cx.invariant is None and v.invariant in promised):
                return i, v.invariant
    return None


def _pos(log: cl.CommitLog, offset: int) -> int | None:
    """The cell an offset falls on (the log's end: one past the last cell); None below the
    log's first offset (a confirmOffset or an ack of -1)."""
    return None if offset < log.base else (offset - log.base) // log.unit


def _mark(log: cl.CommitLog, offset: int) -> dict[str, Any]:
    return {"at": _pos(log, offset), "offset": str(offset)}


def broker_view(b: Broker, s: State) -> dict[str, Any]:
    """One broker as the page draws it: its log's cells (message, part, the epoch its writer
    wrote it in), the flushed, confirm and dispatch marks, epoch entries, role, local
    SyncStateSet, the master's HA connections and the slave's client."""
    log = b.log

    def epoch_of(msg: int) -> int:
        return s.msgs[msg - 1].epoch if 0 < msg <= len(s.msgs) else -1

    entries = [[e, _pos(log, start), str(start)] for e, start in b.epochs.entries]
    return {
        "id": b.id,
        "up": b.up,
        "role": b.role if b.up else "down",
        "fenced": b.up and not b.running,
        "promoting": b.promoting,
        "masterEpoch": b.master_epoch,
        "sss": sorted(b.sss),
        "sssEpoch": b.sss_epoch,
        "proposing": sorted(b.remote_sss) if b.synchronizing else None,
        "queuedAlters": [sorted(p) for p, _, _ in b.alters],
        "cells": [[cl.cell_msg(c), cl.cell_part(c), epoch_of(cl.cell_msg(c))] for c in log.cells],
        "end": str(max_phy(b)),
        "flushed": _mark(log, log.flushed),
        "confirm": _mark(log, b.confirm),
        "reput": _mark(log, b.reput),
        "epochs": entries,
        # Q2: the file on disk can keep a list the memory no longer has (and a down broker has only the disk)
        "disk": [[e, _pos(log, start), str(start)] for e, start in b.epochs.disk]
        if b.epochs.disk != b.epochs.entries else None,
        "lastEnd": None if b.epochs.last_end == ef.INF else str(b.epochs.last_end),
        "conns": [{"slave": c.slave, "learner": c.learner, "lingering": c.lingering, "ack": _mark(log, c.ack),
                   "next": _mark(log, c.next), "epoch": c.transfer_epoch} for c in b.conns],
        "client": None if b.client.master is None else {
            "state": b.client.state, "master": b.client.master, "receivedEpoch": b.client.received_epoch,
            "ack": None if b.client.ack is None else _mark(log, b.client.ack)},
        "puts": [{"msg": p.msg, "until": _mark(log, p.next_offset), "deadline": p.deadline,
                  "needAck": p.need_ack} for p in b.puts],
        "consumerOffsets": list(b.consumer_offsets),
    }


def state_view(s: State, cfg: Config) -> dict[str, Any]:
    """The whole state: the controller, every broker, and every message with what the client was
    told and which brokers hold it."""
    c = s.ctrl.applied
    told = {r.msg: r.status for r in s.sends if r.msg is not None}
    read_from = {r.msg: r.broker for r in s.reads}
    unit = cfg.unit_bytes
    return {
        "now": s.now,
        "cut": sorted(s.cut),
        "offController": sorted(s.off_controller),
        "ctrl": {"master": c.master, "masterEpoch": c.master_epoch, "sss": sorted(c.sss), "sssEpoch": c.sss_epoch,
                 "brokerIds": sorted(c.broker_ids), "unapplied": len(s.ctrl.pending)},
        "brokers": [broker_view(b, s) for b in s.brokers],
        "messages": [{"id": m.id, "cells": m.size // unit, "at": (m.offset - cfg.base_offset) // unit,
                      "offset": str(m.offset), "queue": m.queue, "queueOffset": m.queue_offset, "epoch": m.epoch,
                      "writer": m.writer, "status": told.get(m.id, "?"), "readFrom": read_from.get(m.id),
                      "heldBy": [b.id for b in s.brokers if cl.has_message(b.log, m)]} for m in s.msgs],
        "refused": [{"broker": r.broker, "status": r.status} for r in s.sends if r.msg is None],
    }


def changed(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """The drawn parts of `after` that differ from `before` (a state_view each): `b2.cells`,
    `ctrl.sss`, `m3`, `cut`... (the page's data-k names). Nothing at the start."""
    if before is None:
        return []
    out = [k for k in ("now", "cut", "offController") if before[k] != after[k]]
    out += [f"ctrl.{k}" for k, v in after["ctrl"].items() if before["ctrl"][k] != v]
    for old, new in zip(before["brokers"], after["brokers"]):
        out += [f"b{new['id']}.{k}" for k, v in new.items() if old[k] != v]
    old_msgs = {m["id"]: m for m in before["messages"]}
    out += [f"m{m['id']}" for m in after["messages"] if old_msgs.get(m["id"]) != m]
    if len(after["refused"]) > len(before["refused"]):
        out.append("refused")
    return out


def _violation(v: Violation, promised: frozenset[str]) -> dict[str, Any]:
    inv = BY_ID.get(v.invariant)
    return {"id": v.invariant, "name": inv.name if inv else "", "message": v.message,
            "promised": v.invariant in promised}


def _config_text(cfg: Config) -> str:
    """The settings that differ from the model's defaults (the number of brokers always)."""
    default = to_dict(Config(), with_bugs=False)
    mine = to_dict(cfg, with_bugs=False)
    shown = [f"{k}={v}" for k, v in mine.items() if k != "faults" and (k == "brokers" or v != default[k])]
    faults = [f"{k}={v}" for k, v in mine["faults"].items() if v != default["faults"][k]]
    return ", ".join(shown + ([f"fault budget {' '.join(faults)}"] if faults else []))


def java_steps(reports: Iterable[Any]) -> dict[int, list[dict[str, Any]]]:
    """`replay --java`'s lockstep (checkers/java/lockstep.py StepReport) by step: what was
    called on RocketMQ's classes and the verdict. Step 0 holds the bootstrap's calls."""
    from rmqcheck.checkers.java.lockstep import describe

    out: dict[int, list[dict[str, Any]]] = {}
    for r in reports:
        diffs = [f"{c.method}: {k}: java {j!r}, model {m!r}" for c in r.calls for k, j, m in c.diffs]
        out.setdefault(r.index, []).append({
            "what": describe(r), "verdict": r.verdict, "methods": sorted({c.method for c in r.calls}),
            "modelOnly": r.model_only, "diffs": diffs})
    return out


def cluster_steps(rows: Iterable[Any], states: Sequence[State], cfg: Config) -> dict[int, dict[str, Any]]:
    """`replay --cluster`'s rows (checkers/cluster/replay.py Row) by step: what the harness did,
    the cluster's view and the model's in the same terms (model/observed.py), and their differences."""
    return {r.index: {"kind": r.kind, "did": r.did, "differences": list(r.differences), "settled": r.settled,
                      "code": r.code, "model": model_view(states[r.index], cfg)}
            for r in rows if 0 <= r.index < len(states)}


def data(name: str, cx: Counterexample, r: Replay, java: dict | None = None, java_note: str = "",
         cluster: dict | None = None) -> dict[str, Any]:
    """What the page embeds: the file, its configuration and verdict, and every step."""
    promised = expected_ids(cx.config)
    hit = first_hit(cx, r.violations)
    views = [state_view(s, cx.config) for s in r.states]
    steps = []
    for i, view in enumerate(views):
        steps.append({
            "action": format_action(cx.actions[i - 1]) if i else
            ("the constructed start" if cx.start else "the start: every broker registered, the first election"),
            "changes": changes(r.states[i - 1], r.states[i]) if i else "",
            "changed": changed(views[i - 1] if i else None, view),
            "violations": [_violation(v, promised) for v in r.violations[i]],
            "state": view,
        })
    invariant = cx.invariant
    name_of = (BY_ID[invariant].name if invariant in BY_ID else
               LIVENESS_BY_ID[invariant].name if invariant in LIVENESS_BY_ID else "")
    return {
        "schema": SCHEMA,
        "file": name,
        "config": _config_text(cx.config),
        "toggles": sorted(cx.config.bugs),
        "snapshot": cx.config.bugs == SNAPSHOT,
        "invariant": invariant,
        "invariantName": name_of,
        "note": cx.message,
        "hit": None if hit is None else {"step": hit[0], "invariant": hit[1], "name": BY_ID[hit[1]].name},
        # a lasso: the steps from here on repeat forever and the liveness property never holds
        "loop": None if cx.loop is None else cx.loop + 1,
        "steps": steps,
        "java": None if java is None else {str(k): v for k, v in java.items()},
        "javaNote": java_note,
        "cluster": None if cluster is None else {str(k): v for k, v in cluster.items()},
    }


def page(d: dict[str, Any]) -> str:
    """The self-contained page for `data`'s output."""
    # Inside <script> only `</script` and `<!--` could end or confuse it; JSON has `<` only in strings.
    payload = json.dumps(d, separators=(",", ":")).replace("<", "\\u003c")
    title = f"{d['file']}: {d['invariant'] or 'no invariant named'}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>{SKELETON}"
            f'<script type="application/json" id="replay-data">{payload}</script>'
            f"<script>{SCRIPT}</script></body></html>\n")


def pages(cxs: Iterable[tuple[Path, Counterexample]]) -> dict[Path, tuple[str, str]]:
    """A page for each counterexample that replays: path -> (file name for the page, HTML),
    names made unique (two folders can hold files of one name)."""
    out: dict[Path, tuple[str, str]] = {}
    taken: set[str] = set()
    for path, cx in cxs:
        try:
            r = replay(cx.config, cx.actions, start=cx.start)
        except ReplayError:
            continue  # the report's own section says it does not replay
        name, n = f"{path.stem}.html", 1
        while name in taken:
            n += 1
            name = f"{path.stem}-{n}.html"
        taken.add(name)
        out[path] = (name, page(data(path.name, cx, r)))
    return out
