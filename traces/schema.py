"""Event schema v1 for recorded runs: one record per protocol transition.

A run is one broker set's causal history: `run_start` (seq 0, the configuration), then one
record per transition in the order it happened (seq 1, 2, ...), then `run_end` (the number of
transitions and the messages the stores still hold). Order comes from `seq`, never from clocks.
A transition record names the action (`kind`, `args` as the model's `format_action` names
them) and the observable state after it: the acting broker's store and role, the client's view
of the message it touched, and the controller's replicated state. Fields that do not apply are
null (absent in NDJSON). The table below is the schema; `docs/traces.md` explains it and
`docs/trace-schema-v1.json` is the JSON Schema generated from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa

from rmqcheck.model.step import ACTIONS

VERSION = 1
RUN_START = "run_start"
RUN_END = "run_end"
KINDS = (RUN_START, *ACTIONS, RUN_END)


def shown(value: Any, limit: int = 200) -> str:
    """A value as messages show it: its repr, clipped (a 50 MB field once went whole into every
    message and the violations file)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class TraceError(ValueError):
    """An input record that cannot be used: names the file, the record and what is wrong."""

    def __init__(self, path: str, where: str, what: str):
        super().__init__(f"{path}: {where}: {what}")
        self.path, self.where, self.what = path, where, what

    def __reduce__(self):  # pickled whole (a Spark task returns one)
        return TraceError, (self.path, self.where, self.what)


class Field(NamedTuple):
    name: str
    type: pa.DataType
    doc: str
    required: bool = False


_IDS = pa.list_(pa.int32())

FIELDS: tuple[Field, ...] = (
    Field("v", pa.int32(), "schema version, 1", True),
    Field("run", pa.string(), "run id, unique in a corpus", True),
    Field("group", pa.string(), "broker set (brokerName)", True),
    Field("seq", pa.int64(), "position in the run: 0 for run_start, then 1, 2, ... without gaps", True),
    Field("kind", pa.string(), "run_start, run_end or a transition kind (rmqcheck.model.step.ACTIONS)", True),
    Field("args", _IDS, "the transition's arguments in ACTIONS order (broker, queue, size, ...)"),
    Field("node", pa.int32(), "the broker that acted (brokerId), null for controller, clock and network"),
    # the acting broker after the transition
    Field("up", pa.bool_(), "the process is running"),
    Field("role", pa.string(), "MASTER, SLAVE or NONE (restarted, no role yet)"),
    Field("epoch", pa.int32(), "ReplicasManager masterEpoch"),
    Field("max_offset", pa.int64(), "CommitLog maxPhyOffset"),
    Field("flushed", pa.int64(), "CommitLog flushed position"),
    Field("confirm", pa.int64(), "CommitLog confirmOffset"),
    Field("sss", _IDS, "the broker's local SyncStateSet"),
    Field("sss_epoch", pa.int32(), "the broker's SyncStateSet epoch"),
    Field("last_epoch", pa.int32(), "epoch of the last epoch-file entry, -1 when empty"),
    Field("last_epoch_start", pa.int64(), "start offset of the last epoch-file entry"),
    # the client's view of the message the transition touched
    Field("msg", pa.int64(), "message id (send, put_complete, put_timeout; consume when the pull read one)"),
    Field("queue", pa.int32(), "queue id of that message"),
    Field("queue_offset", pa.int64(), "its queue offset (assigned at send; read position at consume)"),
    Field("status", pa.string(), "send status after the transition (PUT_OK, PENDING, FLUSH_SLAVE_TIMEOUT, ...)"),
    # the controller's replicated state after the transition
    Field("ctrl_master", pa.int32(), "the controller's master, null when none"),
    Field("ctrl_epoch", pa.int32(), "the controller's masterEpoch"),
    Field("ctrl_sss", _IDS, "the controller's SyncStateSet"),
    Field("ctrl_sss_epoch", pa.int32(), "the controller's syncStateSetEpoch"),
    # run_start / run_end
    Field("config", pa.string(), "run_start: the model configuration as JSON (rmqcheck.checkers.configs)"),
    Field("events", pa.int64(), "run_end: the number of transitions in the run"),
    Field("held", pa.list_(pa.int64()), "run_end: ids of the messages some broker's log still holds whole"),
)

NAMES = tuple(f.name for f in FIELDS)
BY_NAME = {f.name: f for f in FIELDS}
ARROW = pa.schema([pa.field(f.name, f.type, nullable=not f.required) for f in FIELDS])


def _json_type(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_list(t):
        return {"type": "array", "items": _json_type(t.value_type)}
    if pa.types.is_integer(t):
        return {"type": "integer"}
    if pa.types.is_boolean(t):
        return {"type": "boolean"}
    return {"type": "string"}


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one NDJSON record."""
    props: dict[str, Any] = {}
    for f in FIELDS:
        t = _json_type(f.type)
        props[f.name] = {**t, "description": f.doc} if f.required else {"anyOf": [t, {"type": "null"}], "description": f.doc}
    props["v"] = {"const": VERSION, "description": BY_NAME["v"].doc}
    props["kind"] = {"enum": list(KINDS), "description": BY_NAME["kind"].doc}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://rmqcheck.invalid/trace-schema-v1.json",
        "title": "rmqcheck trace event, schema v1",
        "type": "object",
        "required": [f.name for f in FIELDS if f.required],
        "additionalProperties": False,
        "properties": props,
    }


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_ok(t: pa.DataType, v: Any) -> bool:
    """An integer the column's Arrow type holds (int32 or int64, as the Java's int or long)."""
    return _is_int(v) and -(1 << (t.bit_width - 1)) <= v < 1 << (t.bit_width - 1)


def _type_ok(t: pa.DataType, v: Any) -> bool:
    if pa.types.is_list(t):
        return isinstance(v, list) and all(_int_ok(t.value_type, x) for x in v)
    if pa.types.is_integer(t):
        return _int_ok(t, v)
    if pa.types.is_boolean(t):
        return isinstance(v, bool)
    return isinstance(v, str) and _encodable(v)


def _encodable(v: str) -> bool:
    """JSON can escape a lone surrogate, which no UTF-8 column holds."""
    try:
        v.encode()
    except UnicodeEncodeError:
        return False
    return True


def row_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with a record whose fields have the right types; None when nothing is.
    The one definition both engines apply to every record (NDJSON and Parquet alike)."""
    if rec.get("v") is None:
        return "missing required field 'v'"
    if rec["v"] != VERSION:
        return f"unknown schema version {shown(rec['v'])} (this reader knows {VERSION})"
    for f in FIELDS:
        if f.required and rec.get(f.name) is None:
            return f"missing required field {f.name!r}"
    if rec["kind"] not in KINDS:
        return f"unknown event kind {shown(rec['kind'])}"
    if rec["seq"] < 0:
        return f"seq must be >= 0, got {rec['seq']}"
    if rec["kind"] == RUN_START and rec.get("config") is None:
        return "run_start without config"
    return None


def check_record(rec: Any, path: str, where: str) -> dict[str, Any]:
    """The record if it is a v1 event; else TraceError naming what is wrong."""
    if not isinstance(rec, dict):
        raise TraceError(path, where, f"a record must be a JSON object, got {type(rec).__name__}")
    if rec.get("v", VERSION) != VERSION:
        raise TraceError(path, where, f"unknown schema version {shown(rec['v'])} (this reader knows {VERSION})")
    for f in FIELDS:
        v = rec.get(f.name)
        if v is not None and not _type_ok(f.type, v):
            t = f.type.value_type if pa.types.is_list(f.type) else f.type
            expected = _json_type(f.type)["type"] + (f" of {t} range" if pa.types.is_integer(t) else "")
            raise TraceError(path, where, f"field {f.name!r} has {shown(v)}, expected {expected}")
    extra = rec.keys() - BY_NAME.keys()
    if extra:
        raise TraceError(path, where, f"unknown field(s) {sorted(extra)}")
    problem = row_problem(rec)
    if problem:
        raise TraceError(path, where, problem)
    return rec


def schema_problem(have: pa.Schema) -> str | None:
    """What keeps a Parquet file's schema from being read as v1; None when nothing does."""
    twice = sorted({n for n in have.names if have.names.count(n) > 1})
    if twice:
        return f"column(s) {twice} appear more than once"
    missing = [f.name for f in FIELDS if f.required and f.name not in have.names]
    if missing:
        return f"missing required column(s) {missing}"
    unknown = [n for n in have.names if n not in BY_NAME]
    if unknown:
        return f"unknown column(s) {unknown}"
    for name in have.names:
        if have.field(name).type != BY_NAME[name].type:
            return f"column {name!r} has type {have.field(name).type}, expected {BY_NAME[name].type}"
    return None


DOCS = Path(__file__).resolve().parents[1] / "docs"
_TABLE_START = "<!-- fields: generated by `python -m rmqcheck.traces.schema`, do not edit -->\n"
_TABLE_END = "<!-- end of fields -->"


def field_table() -> str:
    rows = ["| field | type | meaning |", "|---|---|---|"]
    for f in FIELDS:
        rows.append(f"| `{f.name}` | {str(f.type).replace('item: ', '')}{'' if f.required else ', null'} | {f.doc} |")
    return "\n".join(rows) + "\n"


def documented(text: str) -> str:
    """docs/traces.md with its field table regenerated."""
    head, rest = text.split(_TABLE_START)
    return head + _TABLE_START + field_table() + _TABLE_END + rest.split(_TABLE_END, 1)[1]


def write_docs(docs: Path = DOCS) -> None:
    (docs / "trace-schema-v1.json").write_text(json.dumps(json_schema(), indent=2) + "\n")
    guide = docs / "traces.md"
    guide.write_text(documented(guide.read_text()))


if __name__ == "__main__":
    write_docs()
