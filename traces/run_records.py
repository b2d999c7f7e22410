"""A recorded cluster run's files, for `rmqcheck validate` (issue 45, section 2): `run.json` (the
configuration, seed and length `rmqcheck cluster` ran with) and `steps.jsonl` (each operation as
resolved and what could be seen after it: traces/real_runs.py follows it on the model). Reading
them checks every field the follower uses, so a damaged record is bad input naming its file and
line, never an error inside the model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rmqcheck.model.config import Config
from rmqcheck.model.configs import ConfigError, from_dict, to_dict

from .history import Violation
from .real_runs import follow
from .schema import TraceError

STEPS = "steps.jsonl"
RUN = "run.json"  # the run's configuration, seed and length
RUN_KIND = "rmqcheck cluster run record"
CHECKS = ("real_run_conformance",)


def write_run(folder: Path, cfg: Config, seed: int, steps: int, faults: int) -> None:
    """A recorded run's run.json: what `judge_run` needs beside its steps."""
    record = {"kind": RUN_KIND, "config": to_dict(cfg), "seed": seed, "steps": steps, "faults": faults}
    (Path(folder) / RUN).write_text(json.dumps(record) + "\n")


def read_steps(folder: Path) -> list[dict[str, Any]]:
    """steps.jsonl's records; a line that is not a JSON object with a step and an op is a TraceError."""
    path = Path(folder) / STEPS
    out = []
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(str(path), "file", f"cannot be read: {exc}") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise TraceError(str(path), f"line {n}", f"not JSON: {exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int) or not isinstance(record.get("op"), str):
            raise TraceError(str(path), f"line {n}", "a record needs an integer step and an op")
        record["line"] = n
        out.append(record)
    return out


def read_run(folder: Path) -> tuple[Config, list[dict[str, Any]]]:
    """A run's configuration (run.json) and its records (steps.jsonl); TraceError on bad input."""
    path = Path(folder) / RUN
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TraceError(str(path), "file", f"not a run record: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != RUN_KIND:
        raise TraceError(str(path), "file", f'not a run record (its "kind" must be "{RUN_KIND}")')
    try:
        cfg = from_dict(data.get("config"), "config")
    except ConfigError as exc:
        raise TraceError(str(path), "config", str(exc)) from None
    records = read_steps(folder)
    if not records:
        raise TraceError(str(Path(folder) / STEPS), "file", "no recorded step")
    for record in records:
        problem = _record_problem(record, cfg.brokers)
        if problem:
            raise TraceError(str(Path(folder) / STEPS), f"line {record['line']}", problem)
    return cfg, records


_BROKER_FIELDS = {"role": str, "masterEpoch": (int, type(None)), "messages": list, "confirm": int, "epochs": list,
                  "syncStateSet": (list, type(None))}
_CONTROLLER_FIELDS = {"master": (int, type(None)), "masterEpoch": (int, type(None)), "syncStateSet": list,
                      "syncStateSetEpoch": (int, type(None))}
_RESOLVED = re.compile(r"(to )?broker \d+")  # what the client or the nemesis says it hit


def _record_problem(record: dict[str, Any], brokers: int) -> str | None:
    """What keeps a record from being followed: the fields `rmqcheck cluster` writes, with
    their types (None: it can be followed)."""
    arg, result = record.get("arg"), record.get("result", "")
    if arg is not None and (not isinstance(arg, int) or isinstance(arg, bool)):
        return f"arg must be an integer or null, got {arg!r}"
    if record["op"] == "put" and "arg" not in record:
        return "a put needs its queue (arg)"
    if not isinstance(result, str):
        return f"result must be a string, got {result!r}"
    if result.startswith(("to broker", "broker")) and not _RESOLVED.fullmatch(result):
        return f"result {result!r} does not name a broker by its number"
    if not isinstance(record.get("controller", {}), dict):
        return "controller must be an object"
    if record.get("epoch_files", "kept") not in ("kept", "reverted", "lost"):  # checkers/cluster/epochfiles.py
        return f"epoch_files must be kept, reverted or lost, got {record['epoch_files']!r}"
    if "view" not in record:
        return None
    view = record["view"]
    if not isinstance(view, dict) or not isinstance(view.get("brokers"), dict) or not isinstance(view.get("controller"), dict):
        return "view must be an object with a brokers object and a controller object"
    if sorted(view["brokers"], key=str) != sorted(str(b) for b in range(1, brokers + 1)):
        return f"view must show brokers 1 to {brokers}, shows {sorted(view['brokers'])}"
    for b, shown in view["brokers"].items():
        fields = {**_BROKER_FIELDS, **({"flushed": int} if isinstance(shown, dict) and "flushed" in shown else {})}
        if shown != "down" and (not isinstance(shown, dict) or
                                any(not isinstance(shown.get(f, ...), t) for f, t in fields.items())):
            return f"view of broker {b} must be \"down\" or hold {', '.join(fields)} with their types"
    if any(not isinstance(view["controller"].get(f, ...), t) for f, t in _CONTROLLER_FIELDS.items()):
        return f"view's controller must hold {', '.join(_CONTROLLER_FIELDS)} with their types"
    return None


def judge_run(folder: str) -> tuple[list[Violation], int, int]:
    """The run's conformance violation (the first step the model cannot explain, none when it
    explains every one), its recorded steps, and how many the model explains."""
    root = Path(folder)
    cfg, records = read_run(root)
    f = follow(cfg, records, views=True)
    found = []
    if f.stopped is not None:
        s = f.stopped
        found.append(Violation("real_run_conformance", root.name, f"step {s.step} ({s.op})", 1,
                               f"the model explains {f.explained} of {len(records)} recorded steps; at step {s.step} "
                               f"({s.op}): {s.why}"))
    return found, len(records), f.explained
