"""The bug-rediscovery benchmark (`rmqcheck bugs --measure`): how fast each search method finds
each bug toggle, a measure of the harness itself.

Controller-mode toggles are hunted on the intended baseline plus the toggle, under the smallest
configuration known to expose it (model/bugs.py `exposing`), by four methods: the Hypothesis
stateful hunt, seeded random walks and coverage-guided walks (one run per seed), and
breadth-first exploration of growing scopes (deterministic: one run stands for every seed).
Liveness toggles are looked for by the lasso search of checkers/search/liveness.py. Toggles of the
consistent-point search are also refuted by Z3 (checkers/proofs/truncation.py), whose witness logs are then
replicated in the model from a constructed start. The other modes' toggles are explored, walked
and guided-walked on the configuration of their regression scenario. A toggle no method finds is
the harness's bug.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import classic, dledger, recovery
from rmqcheck.model.bugs import TOGGLES

from rmqcheck.model import configs
from rmqcheck.checkers.search import explore, scoped
from rmqcheck.checkers.search import liveness
from rmqcheck.checkers.search import modes
from rmqcheck.checkers.proofs import truncation as proofs
from rmqcheck.checkers.tables.parallel import ordered_map, spark_map
from rmqcheck.checkers.search.hunting import find
from rmqcheck.checkers.search.walk import WALK_DEPTH, guided, mode_guided, mode_walk, walk

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
METHODS = ("stateful", "explore", "walk", "guided", "liveness", "prove")  # table columns, in this order
SEEDED = ("stateful", "walk", "guided")  # methods whose result depends on the seed
LIVENESS_BOUNDS = explore.Bounds(max_sss_epoch=4)  # the L3 lasso needs a failover, a rejoin and a crash
PROVE_K = 8  # entries per epoch list, as `rmqcheck prove` (its default)


class Subject(NamedTuple):
    toggle: str
    mode: str  # controller, classic, dledger, recovery
    ref: str  # known-bugs entry, or where the toggle comes from
    methods: tuple[str, ...]  # empty: no counterexample is expected (`note` says why)
    note: str = ""


class Attempt(NamedTuple):
    seed: int
    found: bool
    invariant: str | None
    steps: int | None
    seconds: float


class Measure(NamedTuple):
    toggle: str
    mode: str
    method: str
    budget: float
    attempts: tuple[Attempt, ...]

    @property
    def median_seconds(self) -> float | None:
        """The median time to find over the seeds tried, a miss counting as never; None when
        at least half missed."""
        median = statistics.median(a.seconds if a.found else float("inf") for a in self.attempts)
        return None if median == float("inf") else median

    @property
    def found(self) -> int:
        return sum(a.found for a in self.attempts)

    @property
    def invariant(self) -> str | None:
        found = [a.invariant for a in self.attempts if a.found]
        return max(set(found), key=found.count) if found else None

    @property
    def steps(self) -> int | None:
        found = [a.steps for a in self.attempts if a.found]
        return min(found) if found else None


def subjects() -> list[Subject]:
    out = []
    for t in TOGGLES:
        if not t.catches:
            out.append(Subject(t.name, "controller", t.ref, (), "no counterexample expected: docs/findings.md"))
        elif all(c.startswith("L") for c in t.catches):
            out.append(Subject(t.name, "controller", t.ref, ("liveness",)))
        else:
            proved = ("prove",) if t.name in proofs.VARIANT_BY_TOGGLE else ()
            out.append(Subject(t.name, "controller", t.ref, ("stateful", "explore", "walk", "guided", *proved)))
    for mode_name, toggles in (("classic", classic.TOGGLES), ("dledger", dledger.TOGGLES + dledger.MUTANTS),
                               ("recovery", recovery.TOGGLES)):
        out += [Subject(t.name, mode_name, _short_ref(t.source), ("explore", "walk", "guided")) for t in toggles]
    return out


def _short_ref(source: str) -> str:
    """A known-bugs id (A4), the first issue number or commit, or "mutant" for a harness mutant."""
    if "harness mutant" in source:
        return "mutant"
    found = re.match(r"[ABC]\d+\b", source) or re.search(r"#\d+|\b[0-9a-f]{10}\b", source)
    return found.group(0) if found else source.split()[0]


def _controller_attempt(name: str, method: str, seed: int, budget: float) -> Attempt:
    cfg = configs.exposing(frozenset({name}))
    targets = expected_ids(cfg)
    start = time.perf_counter()
    if method == "stateful":
        finding, _ = find(cfg, targets, budget, seed)
        hit = finding and (finding.counterexample.invariant, len(finding.counterexample.actions))
    elif method == "walk":
        r = walk(cfg, seed, WALK_DEPTH, budget, targets)
        hit = r.hit and (r.hit.invariant, len(r.hit.shrunk))
    elif method == "guided":
        r = guided(cfg, seed, budget, targets)
        hit = r.hit and (r.hit.invariant, len(r.hit.shrunk))
    elif method == "explore":
        found, _ = scoped.hunt(cfg, targets, budget)
        hit = found and (found.hit.invariant, len(found.hit.actions))
    elif method == "prove":
        # Z3 finds logs on which the search breaks its property; the model, started from those
        # logs, shows which invariant the replication then violates.
        variant = proofs.VARIANT_BY_TOGGLE[name]
        outcome = proofs.refute(variant, PROVE_K)
        cx = outcome.witness and proofs.counterexample(outcome, variant)
        hit = cx and cx.invariant and (cx.invariant, len(cx.actions))
    else:
        lassos = liveness.check(cfg, LIVENESS_BOUNDS, budget).lassos
        prop = next(iter(sorted(lassos)), None)
        hit = prop and (prop, len(lassos[prop].prefix) + len(lassos[prop].cycle))
    return Attempt(seed, bool(hit), hit and hit[0], hit and hit[1], time.perf_counter() - start)


def _mode_attempt(name: str, mode_name: str, method: str, seed: int, budget: float) -> Attempt:
    """Explore or walk the configuration of the toggle's regression scenario with the toggle
    alone on."""
    mode = modes.MODES[mode_name]
    path = next(p for p in sorted((SCENARIOS / mode_name).glob(f"{name}*.scn")))
    cfg = modes.read(path).config._replace(bugs=frozenset({name}))
    start = time.perf_counter()
    if method in ("walk", "guided"):
        w = mode_walk(mode, cfg, seed, WALK_DEPTH, budget) if method == "walk" else mode_guided(mode, cfg, seed, budget)
        hit = w and (w.invariant, len(w.shrunk))
    else:
        r = explore.Explorer(cfg, explore.Bounds(symmetry=True)).run(budget, stop_on=[i.id for i in mode.invariants])
        h = next(iter(r.hits.values()), None)
        hit = h and (h.invariant, len(h.actions))
    return Attempt(seed, bool(hit), hit and hit[0], hit and hit[1], time.perf_counter() - start)


def measure_one(subject: Subject, method: str, seeds: int, budget: float) -> Measure:
    """Seeds 0, 1, ... in turn; stops once more than half have missed (the median is then a
    miss whatever the others do)."""
    attempts: list[Attempt] = []
    for seed in range(seeds if method in SEEDED else 1):
        if subject.mode == "controller":
            attempts.append(_controller_attempt(subject.toggle, method, seed, budget))
        else:
            attempts.append(_mode_attempt(subject.toggle, subject.mode, method, seed, budget))
        if sum(not a.found for a in attempts) > seeds // 2:
            break
    return Measure(subject.toggle, subject.mode, method, budget, tuple(attempts))


def _task(task: tuple) -> Measure:
    return measure_one(*task)


def measure(chosen: Iterable[Subject], seeds: int, budget: float, jobs: int = 1,
            on_measure: Callable[[Measure], None] | None = None, spark: Any = None) -> list[Measure]:
    """Every (toggle, method), `jobs` at a time, or one Spark task each with `spark`."""
    tasks = [(s, m, seeds, budget) for s in chosen for m in s.methods]
    if spark is not None:
        return spark_map(_task, tasks, spark, on_measure)
    return ordered_map(_task, tasks, jobs, on_measure)


def to_json(measures: list[Measure]) -> list[dict[str, Any]]:
    return [
        {"toggle": m.toggle, "mode": m.mode, "method": m.method, "budget": m.budget, "found": m.found,
         "runs": len(m.attempts), "median_seconds": m.median_seconds, "invariant": m.invariant, "steps": m.steps,
         "attempts": [a._asdict() for a in m.attempts]}
        for m in measures
    ]


def from_json(rows: list[dict[str, Any]]) -> list[Measure]:
    """The measures `to_json` wrote; ValueError names the first bad record."""
    known = {(s.toggle, s.mode, m) for s in subjects() for m in s.methods}
    out = []
    for i, r in enumerate(rows, start=1):
        try:
            attempts = tuple(Attempt(**a) for a in r["attempts"])
            m = Measure(r["toggle"], r["mode"], r["method"], float(r["budget"]), attempts)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"record {i}: not a measure as `--json` writes it ({exc!r})") from None
        if (m.toggle, m.mode, m.method) not in known:
            raise ValueError(f"record {i}: no toggle {m.toggle!r} measured by {m.method!r} in {m.mode} mode")
        out.append(m)
    return out
