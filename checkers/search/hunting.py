"""Hunting: run the stateful checker, shrink what it finds, explain it, write it down.

A violation is explained in one of three ways:
* `expected`: the invariant is not expected to hold under this configuration (the guarantee
  the configuration gives up, for example acked loss under the defaults, C4 / #7017);
* `snapshot defect` / `bug toggle`: it disappears when one active toggle (model/bugs.py)
  takes its intended form, so it is that defect's doing;
* `unexplained`: neither. A new finding, or a harness bug: either way a failure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID
from rmqcheck.model.bugs import BY_NAME, SNAPSHOT
from rmqcheck.model.config import Config

from rmqcheck.checkers.counterexamples.files import Counterexample, write
from rmqcheck.checkers.counterexamples.replay import replay, run_lenient, shrink, toggle_dependencies
from rmqcheck.checkers.search.stateful import HuntResult, hunt
from rmqcheck.checkers.search.walk import guided

EXPECTED = "expected"
SNAPSHOT_DEFECT = "snapshot defect"
BUG_TOGGLE = "bug toggle"
UNEXPLAINED = "unexplained"


class Finding(NamedTuple):
    counterexample: Counterexample
    kind: str
    note: str
    raw_steps: int  # length before delta debugging (Hypothesis's own shrunk run, or the walk)


def classify(cfg: Config, inv_id: str, depends_on: Iterable[str], needs_several: bool = False) -> tuple[str, str]:
    """`needs_several`: no single active toggle explains it, but it disappears when every
    in-snapshot defect takes its intended form at once."""
    inv = BY_ID[inv_id]
    depends_on = list(depends_on)
    if not inv.expected(cfg):
        return EXPECTED, f"{inv_id} is expected to hold only when {inv.expected_when}"
    if depends_on:
        refs = ", ".join(f"{d} ({BY_NAME[d].source})" for d in depends_on)
        kind = SNAPSHOT_DEFECT if all(BY_NAME[d].in_snapshot for d in depends_on) else BUG_TOGGLE
        return kind, f"disappears with the intended form of {refs}"
    if needs_several:
        return SNAPSHOT_DEFECT, "disappears only when the in-snapshot defects are fixed together (no single one suffices)"
    return UNEXPLAINED, "expected to hold here and not attributable to a known snapshot defect"


def explain(
    cfg: Config, actions: list, inv_id: str, message: str, seed: int | None, method: str, raw_steps: int
) -> Finding:
    """Attribute and classify a counterexample that already violates `inv_id`."""
    hit = replay(cfg, actions, frozenset({inv_id})).first(inv_id)
    message = hit[1].message if hit else message
    deps = tuple(toggle_dependencies(cfg, actions, inv_id))
    several = (not deps and bool(cfg.bugs & SNAPSHOT)
               and run_lenient(cfg._replace(bugs=cfg.bugs - SNAPSHOT), actions, inv_id) is None)
    kind, note = classify(cfg, inv_id, deps, several)
    cx = Counterexample(cfg, tuple(actions), inv_id, message, seed, method, deps)
    return Finding(cx, kind, note, raw_steps)


def find(
    cfg: Config, targets: Iterable[str], budget: float, seed: int = 0, profile: str = "deep", on_batch=None,
    deadline: float | None = None, max_batches: int | None = None,
) -> tuple[Finding | None, HuntResult]:
    result = hunt(cfg, targets, budget, seed, profile, on_batch, deadline, max_batches)
    if result.violation is None:
        return None, result
    v = result.violation
    inv_id = v.violation.invariant
    actions = shrink(cfg, v.actions, inv_id)
    return explain(cfg, actions, inv_id, v.violation.message, result.seed, "stateful", len(v.actions)), result


def find_each(
    cfg: Config, targets: Iterable[str], batches: int, seed: int = 0, on_batch=None
) -> Iterator[tuple[Finding | None, HuntResult]]:
    """Hunt again for the targets not yet violated, on fresh seeds, until all are or `batches`
    stateful batches in all are spent: one shrunk finding per violated invariant (the last
    pair's finding is None when the budget ended with targets unbroken). Counted in batches, not
    seconds: the same findings on any machine under any load."""

    def search(remaining: set[str], left: int, seed: int) -> tuple[Finding | None, HuntResult, int, int]:
        finding, result = find(cfg, remaining, math.inf, seed, on_batch=on_batch, max_batches=left)
        return finding, result, seed + result.batches, result.batches

    return _each(search, targets, batches, seed)


def guided_each(
    cfg: Config, targets: Iterable[str], steps: int, seed: int = 0
) -> Iterator[tuple[Finding | None, int]]:
    """`find_each` with guided walks (checkers/search/walk.py), seeds `seed`, `seed + 1`, ..., until
    `steps` walk steps in all: one shrunk finding per violated invariant, with the steps walked
    for it."""

    def search(remaining: set[str], left: int, seed: int) -> tuple[Finding | None, int, int, int]:
        r = guided(cfg, seed, math.inf, remaining, max_steps=left)
        h = r.hit
        finding = h and explain(cfg, list(h.shrunk), h.invariant, h.message, seed, "guided", len(h.actions))
        return finding, r.steps, seed + 1, r.steps

    return _each(search, targets, steps, seed)


def _each(search, targets: Iterable[str], work: int, seed: int) -> Iterator[tuple[Finding | None, Any]]:
    """Run `search(remaining, work left, seed) -> (finding, stats, next seed, work done)` until
    every target is violated, a search finds nothing, or the work is spent."""
    remaining = set(targets)
    while remaining and work > 0:
        finding, stats, seed, done = search(remaining, work, seed)
        work -= done
        yield finding, stats
        if finding is None:
            return
        remaining.discard(finding.counterexample.invariant)


def default_path(out_dir: str | Path, label: str, finding: Finding) -> Path:
    cx = finding.counterexample
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in label)
    return Path(out_dir) / f"{safe}-{cx.invariant}-seed{cx.seed}.json"


def write_finding(finding: Finding, path: str | Path) -> Path:
    return write(finding.counterexample, path)
