"""Counterexample files: versioned JSON (what checkers write) and a readable scenario text
(what regression scenarios are written in). `rmqcheck replay` reads both.

Scenario text, one directive per line, `#` starts a comment:

    config brokers=2 all_ack=true flush=SYNC_FLUSH
    toggles ack_uses_local_sss_only        # or: toggles none / toggles snapshot [+ more]
    seed 7                                  # optional
    expect I2                               # the invariant the actions violate; "expect none": all hold
    replica broker=1 epochs=1:0,2:1 log=2   # optional: start from these logs (checkers/counterexamples/startstate.py)
    ha_connect slave=2                      # then one action per line
    alter_sss broker=1 lost=1
    loop                                    # liveness (expect L1/L2): the actions after it repeat for ever

A JSON counterexample of `rmqcheck prove` also carries a `truncation` section: the two epoch
lists, the search variant and the property its point violates, re-checked on integers by replay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import rmqcheck
from rmqcheck.outputs import write_atomically
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, Action, argument_problem, format_action

from rmqcheck.model.configs import ConfigError, from_dict, to_dict
from rmqcheck.checkers.counterexamples.startstate import Replica, StartError, check as check_start

SCHEMA_VERSION = 1
MODEL = "apache/rocketmq 8fc57f1468 (2025-09-19), controller mode"


class CounterexampleError(ValueError):
    """A counterexample or scenario file that cannot be used; names the file and the record."""


class Counterexample(NamedTuple):
    config: Config  # toggles included (config.bugs)
    actions: tuple[Action, ...]
    invariant: str | None  # expected violated invariant; None: the run must violate nothing
    message: str = ""
    seed: int | None = None
    method: str = "stateful"
    depends_on: tuple[str, ...] = ()  # active toggles the violation needs
    start: tuple[Replica, ...] = ()  # constructed start logs; () is the model's initial state
    truncation: dict[str, Any] | None = None  # a consistent-point counterexample (checkers/proofs/truncation.py)
    loop: int | None = None  # a liveness lasso: actions[loop:] return to the state after actions[:loop]
    # What a reader should know about where the file came from: written by another rmqcheck or
    # for another model, or carrying fields this version does not know.
    notes: tuple[str, ...] = ()


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def action_to_json(a: Action) -> dict[str, Any]:
    return {"action": a[0], **dict(zip(ACTIONS[a[0]].args, a[1:]))}


def action_from_json(obj: Any, where: str) -> Action:
    if not isinstance(obj, dict) or "action" not in obj:
        raise CounterexampleError(f"{where}: an action must be an object with an 'action' field, got {obj!r}")
    kind = obj["action"]
    if not isinstance(kind, str) or kind not in ACTIONS:
        raise CounterexampleError(f"{where}: unknown action {kind!r}")
    names = ACTIONS[kind].args
    extra = sorted(set(obj) - {"action", *names})
    missing = [n for n in names if n not in obj]
    if extra or missing:
        raise CounterexampleError(f"{where}: action {kind} takes {list(names)}; missing {missing}, unexpected {extra}")
    values = [obj[n] for n in names]
    for n, v in zip(names, values):
        if not _int(v):
            raise CounterexampleError(f"{where}: action {kind}: argument '{n}' must be an integer, got {v!r}")
    return (kind, *values)


def to_json(cx: Counterexample) -> dict[str, Any]:
    inv = _property(cx.invariant) if cx.invariant else None
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": f"rmqcheck {rmqcheck.__version__}",
        "model": MODEL,
        "method": cx.method,
        "seed": cx.seed,
        "config": to_dict(cx.config, with_bugs=False),
        "toggles": sorted(cx.config.bugs),
        "invariant": None
        if inv is None
        else {
            "id": inv.id,
            "name": inv.name,
            "statement": inv.statement,
            "message": cx.message,
            "expected_to_hold": inv.expected(cx.config),
            "expected_when": inv.expected_when,
        },
        "depends_on_toggles": list(cx.depends_on),
        "steps": len(cx.actions),
        **({"start": [replica_to_json(r) for r in cx.start]} if cx.start else {}),
        **({"truncation": cx.truncation} if cx.truncation is not None else {}),
        **({"loop": cx.loop} if cx.loop is not None else {}),
        "actions": [action_to_json(a) for a in cx.actions],
    }


def replica_to_json(r: Replica) -> dict[str, Any]:
    return {"broker": r.broker, "epochs": [list(e) for e in r.epochs], "log": r.log}


def replica_from_json(obj: Any, where: str) -> Replica:
    if not isinstance(obj, dict) or set(obj) != {"broker", "epochs", "log"}:
        raise CounterexampleError(f"{where}: a replica is an object with exactly 'broker', 'epochs' and 'log'")
    epochs = obj["epochs"]
    if not isinstance(epochs, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(_int(v) for v in e) for e in epochs
    ):
        raise CounterexampleError(f"{where}: 'epochs' must be a list of [epoch, start] integer pairs")
    if not _int(obj["broker"]) or not _int(obj["log"]):
        raise CounterexampleError(f"{where}: 'broker' and 'log' must be integers")
    return Replica(obj["broker"], tuple(tuple(e) for e in epochs), obj["log"])


def write(cx: Counterexample, path: str | Path) -> Path:
    return write_atomically(path, json.dumps(to_json(cx), indent=2) + "\n")


def from_json(data: Any, where: str) -> Counterexample:
    if not isinstance(data, dict):
        raise CounterexampleError(f"{where}: a counterexample must be a JSON object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise CounterexampleError(
            f"{where}: schema_version {version!r} is not supported (this rmqcheck reads {SCHEMA_VERSION})"
        )
    for key in ("config", "toggles", "actions"):
        if key not in data:
            raise CounterexampleError(f"{where}: missing field '{key}'")
    toggles = data["toggles"]
    if not isinstance(toggles, list) or not all(isinstance(t, str) for t in toggles):
        raise CounterexampleError(f"{where}: 'toggles' must be a list of toggle names")
    try:
        cfg = from_dict(
            {**data["config"], "bugs": toggles} if isinstance(data["config"], dict) else data["config"],
            f"{where}: config",
        )
    except ConfigError as exc:
        raise CounterexampleError(str(exc)) from None
    if not isinstance(data["actions"], list):
        raise CounterexampleError(f"{where}: 'actions' must be a list")
    actions = tuple(action_from_json(a, f"{where}: actions[{i}]") for i, a in enumerate(data["actions"]))
    _check_arguments(actions, cfg, lambda i: f"{where}: actions[{i}]")
    inv = data.get("invariant")
    inv_id = None
    message = ""
    if inv is not None:
        if not isinstance(inv, dict) or not isinstance(inv.get("id"), str):
            raise CounterexampleError(f"{where}: 'invariant' must be null or an object with an 'id'")
        inv_id, message = inv["id"], inv.get("message", "")
        _check_invariant(inv_id, where)
    seed = data.get("seed")
    if seed is not None and not _int(seed):
        raise CounterexampleError(f"{where}: 'seed' must be an integer or null")
    start = data.get("start", [])
    if not isinstance(start, list):
        raise CounterexampleError(f"{where}: 'start' must be a list of replicas")
    truncation = data.get("truncation")
    if truncation is not None and not isinstance(truncation, dict):
        raise CounterexampleError(f"{where}: 'truncation' must be an object")
    replicas = tuple(replica_from_json(r, f"{where}: start[{i}]") for i, r in enumerate(start))
    _check_start(replicas, cfg, f"{where}: start")
    loop = data.get("loop")
    _check_loop(loop, len(actions), inv_id, where)
    depends = data.get("depends_on_toggles", [])
    if not isinstance(depends, list) or not all(isinstance(t, str) for t in depends):
        raise CounterexampleError(f"{where}: 'depends_on_toggles' must be a list of toggle names")
    return Counterexample(
        cfg,
        actions,
        inv_id,
        message,
        seed,
        str(data.get("method", "stateful")),
        tuple(depends),
        replicas,
        truncation,
        loop,
        _provenance(data, where),
    )


FIELDS = {"schema_version", "tool", "model", "method", "seed", "config", "toggles", "invariant",
          "depends_on_toggles", "steps", "start", "truncation", "loop", "actions"}


def _provenance(data: dict[str, Any], where: str) -> tuple[str, ...]:
    """Warnings for a file another rmqcheck or another model wrote, or with unknown fields: it
    still replays, but a difference may come from there."""
    notes = []
    ours = {"tool": f"rmqcheck {rmqcheck.__version__}", "model": MODEL}
    for key, now in ours.items():
        if key in data and data[key] != now:
            notes.append(f"{where}: written by {key} {data[key]!r}; this is {now!r}")
    unknown = sorted(str(k) for k in set(data) - FIELDS)
    if unknown:
        notes.append(f"{where}: fields this rmqcheck does not know, ignored: {', '.join(unknown)}")
    return tuple(notes)


def _check_arguments(actions: tuple[Action, ...], cfg: Config, where) -> None:
    """Every argument within what the configuration allows (no broker -1, 0 or beyond the count)."""
    for i, a in enumerate(actions):
        problem = argument_problem(a, cfg)
        if problem:
            raise CounterexampleError(f"{where(i)}: {format_action(a)}: {problem}")


def _property(inv_id: str):
    """The safety invariant or liveness property with this id, or None."""
    from rmqcheck.invariants.catalogue import BY_ID
    from rmqcheck.invariants.liveness import LIVENESS_BY_ID

    return BY_ID.get(inv_id) or LIVENESS_BY_ID.get(inv_id)


def _check_invariant(inv_id: str, where: str) -> None:
    from rmqcheck.invariants.catalogue import BY_ID
    from rmqcheck.invariants.liveness import LIVENESS_BY_ID

    if _property(inv_id) is None:
        known = ", ".join([*BY_ID, *LIVENESS_BY_ID])
        raise CounterexampleError(f"{where}: unknown invariant {inv_id!r} (known: {known})")


def _check_loop(loop: Any, n_actions: int, inv_id: str | None, where: str) -> None:
    from rmqcheck.invariants.liveness import LIVENESS_BY_ID

    if loop is None:
        if inv_id in LIVENESS_BY_ID:
            raise CounterexampleError(f"{where}: a liveness counterexample ({inv_id}) needs a loop")
        return
    if not _int(loop) or not 0 <= loop < n_actions:
        raise CounterexampleError(f"{where}: 'loop' must be an action index below {n_actions}, got {loop!r}")
    if inv_id not in LIVENESS_BY_ID:
        raise CounterexampleError(f"{where}: a loop needs a liveness property (expect L1 or L2), not {inv_id!r}")


def _parse_value(text: str, where: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if text.lstrip("-").isdigit():
        if len(text) > 30:  # no argument or field is that large; int() refuses 4,300 digits anyway
            raise CounterexampleError(f"{where}: the number {text[:20]}... ({len(text):,} digits) is out of range")
        return int(text)
    if "," in text or text.startswith("["):
        return [_parse_value(t, where) for t in text.strip("[]").split(",") if t]
    return text


def _pairs_text(words: list[str], where: str) -> dict[str, str]:
    """name=value words, each name once."""
    out: dict[str, str] = {}
    for w in words:
        k, eq, v = w.partition("=")
        if not eq:
            raise CounterexampleError(f"{where}: expected name=value, got {w!r}")
        if k in out:
            raise CounterexampleError(f"{where}: {k} given twice ({k}={out[k]} and {w}); give it once")
        out[k] = v
    return out


def _pairs(words: list[str], where: str) -> dict[str, Any]:
    return {k: _parse_value(v, where) for k, v in _pairs_text(words, where).items()}


_LIST_FIELDS = ("async_learners", "message_sizes", "priorities")


def parse_scenario(text: str, where: str) -> Counterexample:
    cfg_fields: dict[str, Any] = {}
    faults: dict[str, Any] = {}
    toggles: frozenset[str] | None = None
    expect: str | None = None
    seen_expect = False
    seed = None
    actions: list[Action] = []
    action_lines: list[str] = []  # where each action is, for the messages
    start: list[Replica] = []
    loop: int | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        at = f"{where}:{lineno}"
        head, *rest = line.split()
        if head == "config":
            for name, value in _pairs(rest, at).items():
                if name in cfg_fields:
                    raise CounterexampleError(f"{at}: config {name} given twice; give it once")
                # list-valued fields may be written with one element: async_learners=2
                cfg_fields[name] = [value] if name in _LIST_FIELDS and not isinstance(value, list) else value
        elif head == "faults":
            for name, value in _pairs(rest, at).items():
                if name in faults:
                    raise CounterexampleError(f"{at}: faults {name} given twice; give it once")
                faults[name] = value
        elif head == "toggles":
            names = set(rest)
            base = frozenset()
            if "snapshot" in names:
                base, names = SNAPSHOT, names - {"snapshot"}
            names.discard("none")
            toggles = base | frozenset(names)
        elif head == "seed":
            if len(rest) != 1 or not rest[0].isdigit() or len(rest[0]) > 30:  # as any number here (_parse_value)
                raise CounterexampleError(f"{at}: seed takes one non-negative integer of at most 30 digits")
            seed = int(rest[0])
        elif head == "expect":
            if len(rest) != 1:
                raise CounterexampleError(f"{at}: expect takes one invariant id or 'none'")
            seen_expect = True
            expect = None if rest[0] == "none" else rest[0]
            if expect is not None:
                _check_invariant(expect, at)
        elif head == "replica":
            start.append(_parse_replica(rest, at))
        elif head == "loop":
            if rest or loop is not None:
                raise CounterexampleError(f"{at}: 'loop' stands alone on its line, once")
            loop = len(actions)
        elif head in ACTIONS:
            args = _pairs(rest, at)
            actions.append(action_from_json({"action": head, **args}, at))
            action_lines.append(at)
        else:
            raise CounterexampleError(f"{at}: unknown directive or action {head!r}")
    if not seen_expect:
        raise CounterexampleError(f"{where}: missing 'expect <invariant>|none'")
    if faults:
        cfg_fields["faults"] = faults
    if toggles is not None:
        cfg_fields["bugs"] = sorted(toggles)
    try:
        cfg = from_dict(cfg_fields, f"{where}: config")
    except ConfigError as exc:
        raise CounterexampleError(str(exc)) from None
    _check_start(start, cfg, where)
    _check_arguments(tuple(actions), cfg, action_lines.__getitem__)
    _check_loop(loop, len(actions), expect, where)
    return Counterexample(cfg, tuple(actions), expect, seed=seed, method="scenario", start=tuple(start), loop=loop)


def _check_start(replicas, cfg: Config, where: str) -> None:
    try:
        check_start(replicas, cfg)
    except StartError as exc:
        raise CounterexampleError(f"{where}: {exc}") from None


def _parse_replica(words: list[str], where: str) -> Replica:
    """replica broker=N epochs=E:S,E:S,... log=L  (epochs=none for an empty list)"""
    fields = _pairs_text(words, where)
    if set(fields) != {"broker", "epochs", "log"}:
        raise CounterexampleError(f"{where}: replica takes broker=N epochs=E:S,... log=L")
    try:
        epochs = () if fields["epochs"] == "none" else tuple(
            (int(e), int(s)) for e, s in (pair.split(":") for pair in fields["epochs"].split(","))
        )
        return Replica(int(fields["broker"]), epochs, int(fields["log"]))
    except ValueError:
        raise CounterexampleError(f"{where}: replica: integers expected, got {' '.join(words)!r}") from None


def format_scenario(cx: Counterexample, title: str = "") -> str:
    default = Config()
    fields = to_dict(cx.config, with_bugs=False)
    plain = [
        f"{k}={str(v).lower() if isinstance(v, bool) else ','.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in fields.items()
        if k != "faults" and v != to_dict(default, with_bugs=False)[k]
    ]
    lines = [f"# {title}"] if title else []
    lines.append("config " + " ".join(plain) if plain else "config")
    if cx.config.faults != default.faults:
        lines.append("faults " + " ".join(f"{k}={v}" for k, v in cx.config.faults._asdict().items()))
    bugs = cx.config.bugs
    if bugs == SNAPSHOT:
        lines.append("toggles snapshot")
    elif bugs >= SNAPSHOT:
        lines.append("toggles snapshot " + " ".join(sorted(bugs - SNAPSHOT)))
    else:
        lines.append("toggles " + (" ".join(sorted(bugs)) if bugs else "none"))
    if cx.seed is not None:
        lines.append(f"seed {cx.seed}")
    lines.append(f"expect {cx.invariant or 'none'}")
    for r in cx.start:
        epochs = ",".join(f"{e}:{s}" for e, s in r.epochs) or "none"
        lines.append(f"replica broker={r.broker} epochs={epochs} log={r.log}")
    for i, a in enumerate(cx.actions):
        if i == cx.loop:
            lines.append("loop")
        args = " ".join(f"{n}={v}" for n, v in zip(ACTIONS[a[0]].args, a[1:]))
        lines.append(f"{a[0]} {args}".rstrip())
    return "\n".join(lines) + "\n"


def read(path: str | Path) -> Counterexample:
    """Read a JSON counterexample or a scenario text file; CounterexampleError names the file,
    the line or record, and what is wrong."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise CounterexampleError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CounterexampleError(f"{path}: cannot read: {exc}") from None
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CounterexampleError(
                f"{path}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise CounterexampleError(f"{path}: not a counterexample: JSON nested too deeply") from None
        except ValueError as exc:  # a number of more than 4,300 digits
            raise CounterexampleError(f"{path}: not valid JSON: {exc}") from None
        return from_json(data, str(path))
    return parse_scenario(text, str(path))
