"""Trace conformance: replay one recorded run through the model.

Every transition record must name an action the model has enabled in the replayed state, and
the state after it must match every field the record carries (etcd's ValidateTraceState); the
run must start with run_start, have no gap in `seq`, and end with a run_end that counts the
transitions and lists the held messages, so a trace that stops early or matches only a prefix
fails (TraceAccepted: the whole trace consumed). A failure names the run, the longest matched
prefix and the failing rule and field.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Sequence

from rmqcheck.checkers.configs import ConfigError, from_dict
from rmqcheck.model.step import ACTIONS, NotEnabled, format_action, initial_state, step

from .recorder import held_messages, transition_record
from .schema import NAMES, RUN_END, RUN_START

_HEAD = ("v", "run", "group", "seq", "kind", "args")
_STATE_FIELDS = tuple(n for n in NAMES if n not in _HEAD and n not in ("config", "events", "held"))


class RunVerdict(NamedTuple):
    run: str
    group: str
    transitions: int  # transition records in the run
    matched: int  # transitions matched before the first failure (all of them when ok)
    failed_seq: int | None  # None: the run conforms
    problem: str


def _fail(run: str, group: str, records: Sequence[dict], matched: int, seq: int, problem: str) -> RunVerdict:
    transitions = sum(1 for r in records if r["kind"] not in (RUN_START, RUN_END))
    return RunVerdict(run, group, transitions, matched, seq, problem)


def _mismatch(recorded: dict[str, Any], expected: dict[str, Any]) -> str | None:
    diffs = [
        f"{name} recorded {recorded.get(name)!r}, model {expected.get(name)!r}"
        for name in _STATE_FIELDS
        if recorded.get(name) != expected.get(name)
    ]
    return "; ".join(diffs) or None


def replay_run(records: Sequence[dict[str, Any]]) -> RunVerdict:
    """Replay one run's records, sorted by seq."""
    run, group = records[0]["run"], records[0]["group"]

    def fail(matched: int, seq: int, problem: str) -> RunVerdict:
        return _fail(run, group, records, matched, seq, problem)

    first = records[0]
    if first["kind"] != RUN_START or first["seq"] != 0:
        return fail(0, first["seq"], f"the run does not begin with run_start at seq 0 (found {first['kind']} at seq {first['seq']})")
    try:
        cfg = from_dict(json.loads(first["config"]), f"run {run} run_start config")
        s = initial_state(cfg)
    except (ConfigError, ValueError) as exc:
        return fail(0, 0, f"run_start config: {exc}")
    matched = 0
    for expected_seq, rec in enumerate(records[1:], start=1):
        seq, kind = rec["seq"], rec["kind"]
        if rec["group"] != group:
            return fail(matched, seq, f"group changes from {group!r} to {rec['group']!r} inside the run")
        if seq != expected_seq:
            what = "repeated" if seq < expected_seq else f"missing (next is seq {seq})"
            return fail(matched, expected_seq, f"seq {expected_seq} {what}")
        if kind == RUN_END:
            if expected_seq != len(records) - 1:
                return fail(matched, seq + 1, "records after run_end")
            if rec.get("events") != matched:
                return fail(matched, seq, f"run_end counts {rec.get('events')} transitions, the trace has {matched}")
            held = held_messages(s)
            if rec.get("held") != held:
                return fail(matched, seq, f"run_end held recorded {rec.get('held')}, model {held}")
            return RunVerdict(run, group, matched, matched, None, "")
        if kind == RUN_START:
            return fail(matched, seq, "a second run_start inside the run")
        action = (kind, *(rec.get("args") or ()))
        if len(action) != len(ACTIONS[kind].args) + 1:
            return fail(matched, seq, f"{kind} takes {len(ACTIONS[kind].args)} args, the record has {len(action) - 1}")
        try:
            nxt = step(s, action, cfg)
        except NotEnabled:
            return fail(matched, seq, f"{format_action(action)} is not enabled in the replayed state")
        diff = _mismatch(rec, transition_record(s, action, nxt))
        if diff:
            return fail(matched, seq, f"{format_action(action)}: {diff}")
        s = nxt
        matched += 1
    return fail(matched, records[-1]["seq"] + 1, "the trace ends without run_end (truncated or incomplete)")
