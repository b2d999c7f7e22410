"""The other modes (classic master/slave HA, DLedger) behind one interface, and their
counterexamples as readable scenario text that `rmqcheck replay` runs:

    mode dledger
    config nodes=3 max_term=4 max_messages=2 noop_on_election=false
    toggles replica_counted_in_leader_term      # or: toggles none / toggles snapshot [+ more]
    expect D3                                   # the invariant the actions violate; "expect none": all hold
    timeout node=0                              # then one action per line
    vote candidate=0 voter=1

Controller-mode files (checkers/counterexamples/files.py) have no `mode` line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from rmqcheck.invariants import classic as classic_invariants
from rmqcheck.invariants import dledger as dledger_invariants
from rmqcheck.invariants import recovery as recovery_invariants
from rmqcheck.invariants.catalogue import Invariant, Violation, state_violations, step_violations
from rmqcheck.model import classic, dledger, recovery
from rmqcheck.model.step import NotEnabled

from rmqcheck.checkers.counterexamples.files import CounterexampleError
from rmqcheck.checkers.counterexamples.replay import Replay


class Mode(NamedTuple):
    name: str
    config: type  # a NamedTuple of the mode's configuration, with defaults
    validate: Callable[[Any], Any]
    initial_state: Callable[[Any], Any]
    step: Callable[[Any, tuple, Any], Any]
    successors: Callable[[Any, Any], list]
    rules: dict[str, Any]
    arg_names: Callable[[str], tuple[str, ...]]
    invariants: tuple[Invariant, ...]
    toggles: frozenset[str]
    snapshot: frozenset[str]
    source: str

    def check_state(self, s: Any, cfg: Any, ids: frozenset[str] | None = None) -> list[Violation]:
        return state_violations(self.invariants, s, cfg, ids)

    def check_transition(self, pre: Any, a: tuple, post: Any, cfg: Any, ids: frozenset[str] | None = None) -> list[Violation]:
        return step_violations(self.invariants, pre, a, post, cfg, ids)


MODES: dict[str, Mode] = {
    "classic": Mode(
        "classic", classic.ClassicConfig, classic.validate, classic.initial_state, classic.step, classic.successors,
        classic.RULES,
        classic.arg_names, classic_invariants.CLASSIC, classic.TOGGLE_NAMES, classic.SNAPSHOT,
        "apache/rocketmq 8fc57f1468 DefaultHAService",
    ),
    "dledger": Mode(
        "dledger", dledger.DLedgerConfig, dledger.validate, dledger.initial_state, dledger.step, dledger.successors,
        dledger.RULES,
        dledger.arg_names, dledger_invariants.DLEDGER, dledger.TOGGLE_NAMES, dledger.SNAPSHOT,
        "openmessaging/dledger dledger-all-0.3.1.2 under apache/rocketmq 8fc57f1468",
    ),
    "recovery": Mode(
        "recovery", recovery.RecoveryConfig, recovery.validate, recovery.initial_state, recovery.step,
        recovery.successors, recovery.RULES,
        recovery.arg_names, recovery_invariants.RECOVERY, recovery.TOGGLE_NAMES, recovery.SNAPSHOT,
        "apache/rocketmq 8fc57f1468 DefaultMessageStore load/recover, CommitLog, StoreCheckpoint",
    ),
}


def mode_for(cfg: Any) -> Mode:
    """The mode whose configuration type `cfg` is."""
    return next(m for m in MODES.values() if isinstance(cfg, m.config))


class Scenario(NamedTuple):
    mode: Mode
    config: Any
    actions: tuple[tuple, ...]
    invariant: str | None  # expected violated invariant; None: every invariant holds
    title: str = ""


def is_mode_file(path: str | Path) -> bool:
    """A scenario whose first directive is `mode`."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return False
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            return line.split()[0] == "mode"
    return False


def _value(mode: Mode, key: str, raw: str, where: str) -> Any:
    default = mode.config._field_defaults[key]
    try:
        if isinstance(default, bool):
            if raw not in ("true", "false"):
                raise ValueError("expected true or false")
            return raw == "true"
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, tuple):
            return tuple(int(x) for x in raw.split(","))
        return raw
    except ValueError as exc:
        raise CounterexampleError(f"{where}: config {key}={raw!r}: {exc}") from None


def _toggles(mode: Mode, words: list[str], where: str) -> frozenset[str]:
    names: set[str] = set()
    for w in words:
        for name in filter(None, w.split(",")):
            if name == "snapshot":
                names |= mode.snapshot
            elif name != "none":
                names.add(name)
    unknown = sorted(names - mode.toggles)
    if unknown:
        raise CounterexampleError(f"{where}: unknown {mode.name} toggle(s) {unknown}; known: {sorted(mode.toggles)}")
    return frozenset(names)


def parse(text: str, where: str) -> Scenario:
    """Parse scenario text; CounterexampleError names the file and line."""
    mode: Mode | None = None
    fields: dict[str, Any] = {}
    bugs: frozenset[str] | None = None
    expect: str | None = None
    expect_seen = False
    actions: list[tuple] = []
    title = ""
    for no, raw in enumerate(text.splitlines(), start=1):
        at = f"{where}:{no}"
        if raw.startswith("# ") and not title and mode is None:
            title = raw[2:].strip()
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        word, *rest = line.split()
        if mode is None:
            if word != "mode" or len(rest) != 1 or rest[0] not in MODES:
                raise CounterexampleError(f"{at}: the first directive must be 'mode {'|'.join(MODES)}', got {line!r}")
            mode = MODES[rest[0]]
        elif word == "config":
            for kv in rest:
                key, eq, val = kv.partition("=")
                if key in fields:
                    raise CounterexampleError(f"{at}: {key} given twice; give it once")
                if not eq or key not in mode.config._fields or key == "bugs":
                    raise CounterexampleError(
                        f"{at}: config takes key=value with keys {[f for f in mode.config._fields if f != 'bugs']}, got {kv!r}")
                fields[key] = _value(mode, key, val, at)
        elif word == "toggles":
            bugs = _toggles(mode, rest, at)
        elif word == "expect":
            ids = {inv.id for inv in mode.invariants}
            if len(rest) != 1 or (rest[0] != "none" and rest[0] not in ids):
                raise CounterexampleError(f"{at}: expect takes one of {sorted(ids)} or none, got {line!r}")
            expect, expect_seen = (None if rest[0] == "none" else rest[0]), True
        elif word in mode.rules:
            names = mode.arg_names(word)
            got = dict(kv.partition("=")[::2] for kv in rest)
            if len(got) != len(rest) or sorted(got) != sorted(names) or not all(v.lstrip("-").isdigit() and len(v) <= 20
                                                        for v in got.values()):
                raise CounterexampleError(f"{at}: {word} takes {' '.join(n + '=<int>' for n in names)}, got {line!r}")
            actions.append((word, *(int(got[n]) for n in names)))
        else:
            raise CounterexampleError(f"{at}: unknown directive or action {word!r}; actions: {sorted(mode.rules)}")
    if mode is None:
        raise CounterexampleError(f"{where}: empty scenario (no 'mode' line)")
    if not expect_seen:
        raise CounterexampleError(f"{where}: no 'expect' line (an invariant id, or none)")
    if bugs is not None:
        fields["bugs"] = bugs
    try:
        cfg = mode.validate(mode.config(**fields))
    except ValueError as exc:
        raise CounterexampleError(f"{where}: {exc}") from None
    return Scenario(mode, cfg, tuple(actions), expect, title)


def read(path: str | Path) -> Scenario:
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CounterexampleError(f"{path}: cannot read: {exc}") from None
    return parse(text, str(path))


def format_action(mode: Mode, a: tuple) -> str:
    return " ".join([a[0], *(f"{n}={v}" for n, v in zip(mode.arg_names(a[0]), a[1:]))])


def _config_text(sc: Scenario) -> str:
    default = sc.mode.config()
    parts = []
    for key in sc.mode.config._fields:
        v = getattr(sc.config, key)
        if key == "bugs" or v == getattr(default, key):
            continue
        text = str(v).lower() if isinstance(v, bool) else ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def format_scenario(sc: Scenario) -> str:
    lines = [f"# {sc.title}"] if sc.title else []
    lines.append(f"mode {sc.mode.name}")
    cfg = _config_text(sc)
    if cfg:
        lines.append(f"config {cfg}")
    lines.append(f"toggles {','.join(sorted(sc.config.bugs)) or 'none'}")
    lines.append(f"expect {sc.invariant or 'none'}")
    lines += [format_action(sc.mode, a) for a in sc.actions]
    return "\n".join(lines) + "\n"


def write(sc: Scenario, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_scenario(sc))
    return path


def replay(mode: Mode, cfg: Any, actions: Sequence[tuple]) -> Replay:
    """Run the actions with every invariant checked after each; CounterexampleError names the
    first action that is not enabled."""
    s = mode.initial_state(cfg)
    states, violations = [s], [mode.check_state(s, cfg)]
    for i, a in enumerate(actions, start=1):
        try:
            nxt = mode.step(s, a, cfg)
        except (NotEnabled, TypeError):
            raise CounterexampleError(f"step {i}: {format_action(mode, a)} is not enabled") from None
        violations.append(mode.check_transition(s, a, nxt, cfg) + mode.check_state(nxt, cfg))
        states.append(nxt)
        s = nxt
    return Replay(states, violations)


def changes(pre: Any, post: Any) -> str:
    """What an action changed, field by field (members/nodes by index)."""
    out = []
    for field in pre._fields:
        a, b = getattr(pre, field), getattr(post, field)
        if a == b:
            continue
        if field in ("members", "nodes"):
            for x, y in zip(a, b):
                diffs = [f"{f}={getattr(y, f)}" for f in x._fields if getattr(x, f) != getattr(y, f)]
                if diffs:
                    out.append(f"{field[0]}{x.id}: " + ", ".join(diffs))
        else:
            out.append(f"{field}={b}")
    return "; ".join(out)
