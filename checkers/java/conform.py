"""Conformance: RocketMQ's own classes and the model, request by request.

Sequences of requests (checkers/java/requests.py: the controller, the epoch caches and the HA
service, edge values included) go to the Java drivers (checkers/java/driver.py) and through the
model (checkers/java/model_side.py, ha_side.py); every compared field of the two answers must be
equal. A divergence is shrunk (delta debugging, or Hypothesis with its own draws) to a short
sequence and written as a scenario file (`conform` text) that `rmqcheck replay` runs against both
sides.

Symbolic arguments (`$master`, `$master_epoch`, `$sss_epoch`, `$master_epoch-1`, ...) are bound
from the model's state just before the request is sent, so AlterSyncStateSet is often sent with
current epochs; until the first divergence both sides hold the same state, and the scenario file
records the bound values.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from random import Random
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import FlakyFailure, NoSuchExample

from rmqcheck.checkers.counterexamples.replay import ddmin
from rmqcheck.model.bugs import SNAPSHOT

from .driver import run_both
from .model_side import ModelSide
from .requests import PREAMBLE, RandomChooser, address, sequence, sequences

# What the model does not represent, so is not compared.
NOT_COMPARED = ("remark", "header.masterAddress", "header.brokerName", "header.clusterName", "state.master_address", "state.brokers' addresses",
                "body.brokerMemberGroup", "state.file", "state.bak")


# --- binding and comparing --------------------------------------------------------------------


_SYMBOLIC = ("alter_sss", "apply_broker_id")  # the requests that may hold `$` arguments


def bind(req: dict, model: ModelSide) -> dict:
    """Replace `$name`, `$name-1`, `$name+1` by the model's current values."""
    if req["op"] not in _SYMBOLIC:
        return req
    s = model.controller.applied
    values = {"master": s.master if s.master is not None else 1, "master_epoch": s.master_epoch,
              "sss_epoch": s.sss_epoch, "next_id": s.next_id if s.exists else 1}

    def value(v: Any) -> Any:
        if isinstance(v, list):
            return [value(x) for x in v]
        if not isinstance(v, str) or not v.startswith("$"):
            return v
        name, delta = v[1:], 0
        for sign in "+-":
            if sign in name:
                name, n = name.split(sign)
                delta = int(n) * (1 if sign == "+" else -1)
        return values[name] + delta

    out = {k: value(v) for k, v in req.items()}
    if "sss" in out:
        out["sss"] = sorted(set(out["sss"]))
    if "address" in out and isinstance(req.get("id"), str):
        out["address"] = address(out["id"])
    return out


_NAMES = ("masterAddress", "brokerName", "clusterName")  # names and addresses: not modelled
_STRUCTURED = ("ok", "remark", "header", "body", "events", "state", "live")


def observed(answer: dict) -> dict[str, Any]:
    """The compared fields of an answer, flattened, with unset (null) header fields dropped."""
    if not answer.get("ok", False):
        return {"error": answer.get("error"), "exception": (answer.get("exception") or "").split(":")[0]}
    # every plain field (code, result, and the HA answers' offsets, sets and flags), then the
    # structured ones; a field one side lacks differs
    out: dict[str, Any] = {k: v for k, v in answer.items() if k not in _STRUCTURED}
    for k, v in (answer.get("header") or {}).items():
        if v is not None and k not in _NAMES:
            out[f"header.{k}"] = v
    body = answer.get("body")
    if body:
        for k in ("sss", "sss_epoch"):
            if k in body:
                out[f"body.{k}"] = body[k]
    if "events" in answer:
        out["events"] = [{k: v for k, v in e.items() if k != "address"} for e in answer["events"]]
    state = answer.get("state")
    if isinstance(state, dict):
        for k, v in state.items():
            if k == "brokers":
                v = sorted(int(i) for i in v)  # ids; addresses are not modelled
            if k in ("master_address", "file", "bak"):
                continue
            out[f"state.{k}"] = v
    for broker, info in (answer.get("live") or {}).items():
        for k, v in info.items():
            out[f"live.{broker}.{k}"] = v
    return out


def differences(java: dict, model: dict) -> list[tuple[str, Any, Any]]:
    j, m = observed(java), observed(model)
    return [(k, j.get(k), m.get(k)) for k in sorted(set(j) | set(m)) if j.get(k) != m.get(k)]


# --- running ----------------------------------------------------------------------------------


class Step(NamedTuple):
    request: dict
    java: dict
    model: dict
    diffs: list


class Divergence(NamedTuple):
    steps: list[Step]  # the whole (shrunk) sequence, the last step the divergent one

    @property
    def last(self) -> Step:
        return self.steps[-1]


def run_sequence(driver: Any, requests: Sequence[dict], stop_at_first: bool = True, ha_driver: Any = None,
                 bugs: frozenset[str] = SNAPSHOT) -> list[Step]:
    """Run one sequence on both sides; the steps up to and including the first divergence (or
    all of them)."""
    return run_many(driver, [requests], stop_at_first, ha_driver, bugs)[0]


def is_ha(req: dict) -> bool:
    return req["op"].startswith("ha_")


class _Prepared(NamedTuple):
    """Sequences with every request bound and answered by the model, ready for the JVMs."""

    sequences: Sequence[Sequence[dict]]
    bound: list[dict]
    mine: list[dict]

    def core(self) -> list[dict]:
        return [b for b in self.bound if not is_ha(b)]

    def ha(self) -> list[dict]:
        return [b for b in self.bound if is_ha(b)]


def prepare(sequences: Sequence[Sequence[dict]], bugs: frozenset[str] = SNAPSHOT) -> _Prepared:
    """The model's side first: each request's symbolic arguments bound from the model's state,
    then answered (each sequence starts with a reset, so they can share one batch). `bugs`: the
    toggles the model keeps on, the snapshot's defects unless an intended form is asked for."""
    bound, mine = [], []
    for requests in sequences:
        model = ModelSide(bugs=bugs)
        for req in requests:
            b = bind(req, model)
            bound.append(b)
            try:
                mine.append(model.answer(b))
            except ValueError as exc:  # the model refuses an input the Java accepts
                mine.append({"ok": False, "exception": f"ValueError: {exc}"})
    return _Prepared(sequences, bound, mine)


def compare(p: _Prepared, core: list[dict], ha: list[dict], stop_at_first: bool = True) -> list[list[Step]]:
    """The steps of each sequence, up to its first divergence (or all of them)."""
    core_answers, ha_answers = iter(core), iter(ha)
    out, k = [], 0
    for requests in p.sequences:
        steps: list[Step] = []
        for b, m in zip(p.bound[k:k + len(requests)], p.mine[k:k + len(requests)]):
            j = next(ha_answers if is_ha(b) else core_answers)
            if steps and steps[-1].diffs and stop_at_first:
                continue
            steps.append(Step(b, j, m, differences(j, m)))
        k += len(requests)
        out.append(steps)
    return out


def run_many(driver: Any, sequences: Sequence[Sequence[dict]], stop_at_first: bool = True,
             ha_driver: Any = None, bugs: frozenset[str] = SNAPSHOT) -> list[list[Step]]:
    """Run sequences on both sides: the model, then every bound request through the JVMs in one
    round trip each (HA requests carry their state and go to the HA driver)."""
    p = prepare(sequences, bugs)
    return compare(p, *run_both(driver, p.core(), ha_driver, p.ha()), stop_at_first)


class Tally(NamedTuple):
    sequences: int
    operations: int
    seconds: float
    divergence: Divergence | None


def _diverged_on(steps: list[Step]) -> frozenset[str]:
    return frozenset(k for k, _, _ in steps[-1].diffs) if steps and steps[-1].diffs else frozenset()


def shrink(driver: Any, requests: Sequence[dict], ha_driver: Any = None, bugs: frozenset[str] = SNAPSHOT) -> list[dict]:
    """Delta debugging over the requests after the preamble, keeping a divergence in the same
    fields; ends 1-minimal."""
    head, target = list(requests[:PREAMBLE]), _diverged_on(run_sequence(driver, requests, ha_driver=ha_driver, bugs=bugs))

    def still(tail: list[dict]) -> list[dict] | None:
        steps = run_sequence(driver, head + tail, ha_driver=ha_driver, bugs=bugs)
        return tail[: len(steps) - PREAMBLE] if _diverged_on(steps) == target else None

    return head + ddmin(list(requests[PREAMBLE:]), still)


BATCH = 25  # sequences per JVM round trip


def conform(driver: Any, seed: int, budget: float, max_ops: int = 40, max_sequences: int | None = None,
            progress: Callable[[int, int, float], None] | None = None, generator: str = "random",
            ha_driver: Any = None, bugs: frozenset[str] = SNAPSHOT) -> Tally:
    """Generate sequences until one diverges (then shrink it) or the budget (or max_sequences)
    is spent. Sequence i of seed S is drawn from `Random(f"{S}:{i}")`, so it can be re-made
    alone; with generator="hypothesis" Hypothesis draws them and shrinks the divergence."""
    if generator == "hypothesis":
        return _conform_hypothesis(driver, seed, budget, max_ops, max_sequences, ha_driver, bugs)
    start, made, ops = time.perf_counter(), 0, 0
    last_report = start
    ha = ha_driver is not None

    def batch(first: int) -> _Prepared | None:
        if time.perf_counter() - start >= budget or (max_sequences is not None and first >= max_sequences):
            return None
        n = BATCH if max_sequences is None else min(BATCH, max_sequences - first)
        return prepare([sequence(RandomChooser(Random(f"{seed}:{first + i}")), max_ops, ha) for i in range(n)], bugs)

    # The JVMs answer one batch while this thread prepares the next (the drivers wait on pipes,
    # which releases the GIL).
    with ThreadPoolExecutor(1) as jvm:
        current = batch(0)
        while current is not None:
            answers = jvm.submit(run_both, driver, current.core(), ha_driver, current.ha())
            following = batch(made + len(current.sequences))
            for requests, steps in zip(current.sequences, compare(current, *answers.result())):
                made += 1
                ops += len(steps)
                if steps[-1].diffs:
                    shrunk = shrink(driver, requests, ha_driver, bugs)
                    return Tally(made, ops, time.perf_counter() - start,
                                 Divergence(run_sequence(driver, shrunk, ha_driver=ha_driver, bugs=bugs)))
            current = following
            if progress and time.perf_counter() - last_report > 5:
                last_report = time.perf_counter()
                progress(made, ops, last_report - start)
    return Tally(made, ops, time.perf_counter() - start, None)


class _Spent(Exception):
    pass


def _conform_hypothesis(driver: Any, seed: int, budget: float, max_ops: int, max_sequences: int | None,
                        ha_driver: Any, bugs: frozenset[str]) -> Tally:
    start = time.perf_counter()
    count = {"sequences": 0, "ops": 0}
    found: list[bool] = []

    def diverges(requests: list[dict]) -> bool:
        if not found and (time.perf_counter() - start > budget or count["sequences"] == max_sequences):
            raise _Spent
        steps = run_sequence(driver, requests, ha_driver=ha_driver, bugs=bugs)
        if not found:
            count["sequences"] += 1
            count["ops"] += len(steps)
        if steps[-1].diffs:
            found.append(True)
        return bool(steps[-1].diffs)

    conf = settings(max_examples=10**9, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.generate, Phase.shrink])
    try:
        shrunk = find(sequences(max_ops, ha_driver is not None), diverges, settings=conf, random=Random(seed))
    except (_Spent, NoSuchExample):
        return Tally(count["sequences"], count["ops"], time.perf_counter() - start, None)
    except FlakyFailure as exc:  # the budget ran out while Hypothesis re-ran an example it had passed
        if not found and any(isinstance(e, _Spent) for e in exc.exceptions):
            return Tally(count["sequences"], count["ops"], time.perf_counter() - start, None)
        raise
    return Tally(count["sequences"], count["ops"], time.perf_counter() - start,
                 Divergence(run_sequence(driver, shrunk, ha_driver=ha_driver, bugs=bugs)))


# --- scenario files ---------------------------------------------------------------------------

HEADER = "conform"


def format_request(req: dict) -> str:
    args = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in req.items() if k != "op")
    return f"{req['op']} {args}".rstrip()


def parse_request(line: str, where: str) -> dict:
    op, _, rest = line.partition(" ")
    req: dict[str, Any] = {"op": op}
    for token in rest.split():
        key, sep, value = token.partition("=")
        if not sep:
            raise ValueError(f"{where}: expected key=value, got {token!r}")
        if key in req:
            raise ValueError(f"{where}: {key} given twice; give it once")
        try:
            req[key] = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: {key}: not a JSON value: {value!r} ({exc.msg})") from None
        except RecursionError:
            raise ValueError(f"{where}: {key}: not a JSON value: nested too deeply") from None
    return req


INTENDED = "intended"  # a scenario line naming a toggle the model had off (conform --intended)


def write_scenario(div: Divergence, path: Path, note: str = "", intended: Iterable[str] = ()) -> Path:
    last = div.last
    lines = [f"{HEADER}   # RocketMQ's classes against the model, one request per line", f"# {note}" if note else None,
             f"# diverges at request {len(div.steps)}: "
             + "; ".join(f"{k}: java {j!r}, model {m!r}" for k, j, m in last.diffs)]
    lines += [f"{INTENDED} {t}   # the model's intended form of this defect" for t in sorted(intended)]
    lines += [format_request(s.request) for s in div.steps]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(line for line in lines if line is not None) + "\n")
    return path


def is_scenario(path: str | Path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().split("#")[0].strip() == HEADER
    except (OSError, UnicodeDecodeError):
        return False


def read_scenario(path: str | Path) -> list[dict]:
    out = []
    text = Path(path).read_text(encoding="utf-8").splitlines()
    for n, raw in enumerate(text[1:], start=2):
        line = raw.split("#")[0].strip()
        if line.split()[:1] == [INTENDED]:
            if len(line.split()) != 2:
                raise ValueError(f"{path}:{n}: `{INTENDED} TOGGLE` names one toggle")
        elif line:
            out.append(parse_request(line, f"{path}:{n}"))
    if not out:
        raise ValueError(f"{path}: a conform scenario with no request")
    return out


def intended_form(names: Iterable[str]) -> frozenset[str]:
    """The toggles the model keeps on for the intended form of `names`: the snapshot's, less them."""
    names = frozenset(names)
    unknown = sorted(names - SNAPSHOT)
    if unknown:
        raise ValueError(f"{INTENDED} {unknown[0]}: not one of the snapshot's defects")
    return SNAPSHOT - names


def scenario_bugs(path: str | Path) -> frozenset[str]:
    """The toggles the model keeps on for a scenario: the snapshot's, less its `intended` lines."""
    lines = (raw.split("#")[0].split() for raw in Path(path).read_text(encoding="utf-8").splitlines()[1:])
    try:
        return intended_form(words[1] for words in lines if words[:1] == [INTENDED])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def side_by_side(steps: Iterable[Step]) -> list[tuple[int, str, str, str, str]]:
    """(index, request, java, model, verdict) rows for a replay table."""
    rows = []
    for i, s in enumerate(steps, start=1):
        j, m = observed(s.java), observed(s.model)
        brief = _brief(j), _brief(m)
        verdict = "agreed" if not s.diffs else "DIFFERS: " + ", ".join(k for k, _, _ in s.diffs)
        rows.append((i, format_request(s.request), *brief, verdict))
    return rows


def _brief(obs: dict) -> str:
    keep = ("code", "result", "exception", "error", "state.master", "state.master_epoch", "state.sss", "state.sss_epoch",
            "state.entries", "state.disk")
    return ", ".join(f"{k.removeprefix('state.')}={obs[k]}" for k in keep if k in obs and obs[k] not in (None, ""))
