"""Trace conformance: replay recorded runs through the model.

Every transition record must name an action the model has enabled in the replayed state, and
the state after it must match every field the record carries (etcd's ValidateTraceState); the
run must start with run_start, have no gap in `seq`, and end with a run_end that counts the
transitions and lists the held messages, so a trace that stops early or matches only a prefix
fails (TraceAccepted: the whole trace consumed). A failure names the run, the longest matched
prefix and the failing rule and field.

Runs are replayed from the columns of an Arrow table (one list per field, one tuple per
record's post-state), so a record costs one tuple comparison beyond the model's own step.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Iterator, NamedTuple

import pyarrow as pa

from rmqcheck.model.configs import ConfigError, from_dict
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, NotEnabled, argument_problem, format_action, initial_state, step
from rmqcheck.model.world import State

from .recorder import STATE_FIELDS, held_messages, observe
from .schema import RUN_END, RUN_START, shown

_COLUMNS = ("run", "group", "seq", "kind", "args", "config", "events", "held")


class RunVerdict(NamedTuple):
    run: str
    group: str
    transitions: int  # transition records in the run
    matched: int  # transitions matched before the first failure (all of them when ok)
    failed_seq: int | None  # None: the run conforms
    problem: str


class _Columns:
    """A table's columns as Python lists, sorted by (run, seq)."""

    def __init__(self, table: pa.Table):
        table = table.sort_by([("run", "ascending"), ("seq", "ascending")])
        for name in _COLUMNS:
            setattr(self, name, table.column(name).to_pylist())
        self.state = list(zip(*(table.column(n).to_pylist() for n in STATE_FIELDS)))


def replay_table(table: pa.Table) -> Iterator[RunVerdict]:
    """A verdict for each run in `table` (which holds whole runs)."""
    c = _Columns(table)
    start = 0
    for i in range(1, len(c.run) + 1):
        if i == len(c.run) or c.run[i] != c.run[start]:
            yield _replay(c, start, i)
            start = i


@lru_cache(maxsize=64)
def _start(config: str) -> tuple[Config, State]:
    """The configuration and initial state of a run_start (corpora reuse a few configurations)."""
    cfg = from_dict(json.loads(config), "run_start config")
    return cfg, initial_state(cfg)


def _diff(recorded: tuple, expected: tuple) -> str:
    return "; ".join(
        f"{name} recorded {shown(r)}, model {shown(e)}" for name, r, e in zip(STATE_FIELDS, recorded, expected) if r != e
    )


def _replay(c: _Columns, a: int, b: int) -> RunVerdict:
    run, group = c.run[a], c.group[a]
    transitions = sum(1 for k in c.kind[a:b] if k not in (RUN_START, RUN_END))

    def fail(matched: int, seq: int, problem: str) -> RunVerdict:
        return RunVerdict(run, group, transitions, matched, seq, problem)

    if c.kind[a] != RUN_START or c.seq[a] != 0:
        return fail(0, c.seq[a], f"the run does not begin with run_start at seq 0 (found {c.kind[a]} at seq {c.seq[a]})")
    try:
        cfg, s = _start(c.config[a])
    except (ConfigError, ValueError) as exc:
        return fail(0, 0, f"run_start config: {shown(str(exc))}")
    except RecursionError:
        return fail(0, 0, "run_start config: JSON nested too deeply")
    matched = 0
    for i in range(a + 1, b):
        expected_seq, seq, kind = i - a, c.seq[i], c.kind[i]
        if c.group[i] != group:
            return fail(matched, seq, f"group changes from {shown(group)} to {shown(c.group[i])} inside the run")
        if seq < expected_seq:  # the record found repeats an earlier seq: name the one repeated
            return fail(matched, seq, f"seq {seq} repeated (where seq {expected_seq} was expected)")
        if seq > expected_seq:
            return fail(matched, expected_seq, f"seq {expected_seq} missing (next is seq {seq})")
        if kind == RUN_END:
            if i != b - 1:
                return fail(matched, seq + 1, "records after run_end")
            if c.events[i] != matched:
                return fail(matched, seq, f"run_end counts {c.events[i]} transitions, the trace has {matched}")
            held = held_messages(s)
            if c.held[i] != held:
                return fail(matched, seq, f"run_end held recorded {c.held[i]}, model {held}")
            return RunVerdict(run, group, matched, matched, None, "")
        if kind == RUN_START:
            return fail(matched, seq, "a second run_start inside the run")
        action = (kind, *(c.args[i] or ()))
        if len(action) != len(ACTIONS[kind].args) + 1:
            return fail(matched, seq, f"{kind} takes {len(ACTIONS[kind].args)} args, the record has {len(action) - 1}")
        problem = argument_problem(action, cfg)
        if problem:
            return fail(matched, seq, f"{format_action(action)}: {problem}")
        try:
            nxt = step(s, action, cfg)
        except NotEnabled:
            return fail(matched, seq, f"{format_action(action)} is not enabled in the replayed state")
        expected = observe(s, action, nxt)
        if c.state[i] != expected:
            return fail(matched, seq, f"{format_action(action)}: {_diff(c.state[i], expected)}")
        s = nxt
        matched += 1
    return fail(matched, c.seq[b - 1] + 1, "the trace ends without run_end (truncated or incomplete)")
