"""Named configurations and the JSON codec for `Config` (config files, counterexample files)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from rmqcheck.model.bugs import BY_NAME, SNAPSHOT, check_toggle_names
from rmqcheck.model.config import SYNC_FLUSH, Config, FaultBudget, validate


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the source and the field."""


NAMED: dict[str, tuple[Config, str]] = {
    "default": (
        Config(),
        "the snapshot's defaults: allAckInSyncStateSet=false, inSyncReplicas=1, ASYNC_FLUSH, 2 brokers",
    ),
    "durable": (Config(all_ack=True, flush=SYNC_FLUSH), "allAckInSyncStateSet=true, SYNC_FLUSH, 2 brokers"),
    "durable3": (Config(brokers=3, all_ack=True, flush=SYNC_FLUSH), "allAckInSyncStateSet=true, SYNC_FLUSH, 3 brokers"),
    "learner-first": (
        Config(brokers=3, all_ack=True, flush=SYNC_FLUSH, async_learners=frozenset({1})),
        "durable3 where broker 1, the first to register, is an async learner",
    ),
    "priority-last": (
        Config(brokers=3, all_ack=True, flush=SYNC_FLUSH, priorities=(3, 1, 2)),
        "durable3 where broker 1, the first to register, has the worst brokerElectionPriority (3, against 1 and 2)",
    ),
    "isr2": (
        Config(in_sync_replicas=2, min_in_sync_replicas=2, flush=SYNC_FLUSH),
        "inSyncReplicas=2, minInSyncReplicas=2, SYNC_FLUSH, 2 brokers",
    ),
}

_TYPES: dict[str, type] = {
    "brokers": int,
    "all_ack": bool,
    "in_sync_replicas": int,
    "min_in_sync_replicas": int,
    "flush": str,
    "async_learners": list,
    "priorities": list,
    "unclean": bool,
    "queues": int,
    "message_sizes": list,
    "max_messages": int,
    "batch_size": int,
    "slave_timeout": int,
    "heartbeat_timeout": int,
    "not_catchup_time": int,
    "faults": dict,
    "bugs": list,
    "faithful_q1": bool,
    "faithful_q2": bool,
    "base_offset": int,
    "unit_bytes": int,
}
assert set(_TYPES) == set(Config._fields)


def to_dict(cfg: Config, with_bugs: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in Config._fields:
        value = getattr(cfg, name)
        if name == "faults":
            value = value._asdict()
        elif name in ("async_learners", "bugs"):
            value = sorted(value)
        elif name in ("message_sizes", "priorities"):
            value = list(value)
        if name != "bugs" or with_bugs:
            out[name] = value
    return out


def _check_type(where: str, name: str, value: Any, expected: type) -> None:
    ok = isinstance(value, expected) and not (expected is int and isinstance(value, bool))
    if not ok:
        raise ConfigError(f"{where}: field '{name}' must be {expected.__name__}, got {value!r}")


def from_dict(data: Any, where: str, base: Config | None = None) -> Config:
    """Build a Config from a JSON object; unknown fields, wrong types and out-of-range values
    raise ConfigError naming `where` and the field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a configuration must be a JSON object, got {type(data).__name__}")
    cfg = base or Config()
    fields: dict[str, Any] = {}
    for name, value in data.items():
        if name not in _TYPES:
            raise ConfigError(f"{where}: unknown field '{name}' (known: {', '.join(Config._fields)})")
        _check_type(where, name, value, _TYPES[name])
        if name == "faults":
            faults = cfg.faults._asdict()
            for k, v in value.items():
                if k not in faults:
                    raise ConfigError(f"{where}: unknown fault '{k}' (known: {', '.join(FaultBudget._fields)})")
                _check_type(where, f"faults.{k}", v, int)
                faults[k] = v
            value = FaultBudget(**faults)
        elif name in ("async_learners", "bugs"):
            for item in value:
                _check_type(where, name, item, int if name == "async_learners" else str)
            value = frozenset(value)
        elif name in ("message_sizes", "priorities"):
            for item in value:
                _check_type(where, name, item, int)
            value = tuple(value)
        fields[name] = value
    try:
        if "bugs" in fields:
            check_toggle_names(fields["bugs"])
        return validate(cfg._replace(**fields))
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load(name_or_path: str) -> Config:
    """A named configuration, a JSON object given inline (it starts with "{"), or a JSON file
    holding Config fields over the defaults."""
    if name_or_path in NAMED:
        return NAMED[name_or_path][0]
    if name_or_path.lstrip().startswith("{"):
        return from_dict(_parse(lambda: name_or_path, "the inline configuration"), "the inline configuration")
    path = Path(name_or_path)
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for a path, or holding a NUL
        exists = False
    if not exists:
        raise ConfigError(f"{name_or_path}: no such named configuration ({', '.join(NAMED)}) or file")
    return from_dict(_parse(path.read_text, str(path)), str(path))


def label(name_or_path: str) -> str:
    """A short name for file names and reports: the named configuration's, a JSON file's stem,
    or `inline-` and a hash of the inline object."""
    if name_or_path in NAMED:
        return name_or_path
    if name_or_path.lstrip().startswith("{"):
        return "inline-" + hashlib.sha256(name_or_path.encode()).hexdigest()[:8]
    return Path(name_or_path).stem


def _parse(text: Callable[[], str], where: str) -> Any:
    try:
        return json.loads(text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{where}: not a configuration: JSON nested too deeply") from None
    except ValueError as exc:  # a number of more than 4,300 digits
        raise ConfigError(f"{where}: not valid JSON: {exc}") from None


def exposing(toggles: frozenset[str], snapshot: bool = False) -> Config:
    """The hunting configuration of a set of toggles: their exposing overrides (model/bugs.py)
    over the defaults, with the toggles on, and the toggles they need."""
    check_toggle_names(toggles)
    overrides: dict[str, Any] = {}
    for name in sorted(toggles):
        overrides.update(BY_NAME[name].exposing)
    needed = toggles.union(*(BY_NAME[name].needs for name in toggles))
    return with_bugs(from_dict(overrides, "exposing configuration of " + "+".join(sorted(toggles))), needed, snapshot)


def with_bugs(cfg: Config, toggles: frozenset[str], snapshot: bool) -> Config:
    """The hunting configuration for a set of toggles: the intended baseline plus the toggles,
    or the snapshot plus the toggles."""
    check_toggle_names(toggles)
    return cfg._replace(bugs=(SNAPSHOT if snapshot else frozenset()) | toggles)
