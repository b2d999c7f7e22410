"""The guarantee matrix: which invariants hold under which configuration (issue 6, issue 7).

Controller mode is checked over the product of the switches an operator chooses
(`allAckInSyncStateSet` x `inSyncReplicas` x `minInSyncReplicas` x flushDiskType x
`enableElectUncleanMaster` x 2/3 brokers x an async learner), at the small and the large scale
of offsets, each configuration twice over:

* breadth-first exploration of a small scope (two one-byte messages, one fault of each kind),
  a fixed number of states: every state within the depth it completes is checked, and what it
  finds is a shortest counterexample within that scope;
* then the invariants exploration did not break are hunted over the whole configuration (four
  messages of two sizes, the full fault budget): by the Hypothesis stateful hunt, then by guided
  walks (checkers/search/walk.py), which reach deep states (a second failover, a reconnect after
  a torn transfer) the stateful hunt rarely does.

Each row's budget is counted in work (`Work`), not seconds, and every search is seeded: a row
gives the same cells on any machine under any load, so a run on a slow or busy machine is the
same run as on a fast idle one, only longer.

The other modes (classic HA, DLedger, store recovery) have few switches and small spaces: each
of their rows is explored exhaustively.

A violation is classified as `rmqcheck check` does (checkers/search/hunting.py): *expected* where the
catalogue does not promise the invariant under that configuration; on the snapshot model a
promised one may be a *snapshot defect*; anything else is *unexplained*, a failure.
"""

from __future__ import annotations

import math
import time
from itertools import product
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from rmqcheck.invariants.catalogue import BY_ID, CATALOGUE
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.classic import ASYNC_MASTER, SYNC_MASTER
from rmqcheck.model.config import FLUSH_MODES, NO_FAULTS, Config, scaled

from rmqcheck.checkers.search import explore, named
from rmqcheck.checkers.search import modes
from rmqcheck.checkers.search.hunting import EXPECTED, SNAPSHOT_DEFECT, UNEXPLAINED, Finding, explain, find_each, guided_each, write_finding
from rmqcheck.checkers.tables.parallel import ordered_map, spark_map

# The breadth-first scope: small enough to reach depth 7-11 in a few seconds, with every fault
# that changes what a configuration promises (controller failovers matter only under a toggle).
EXPLORE_FAULTS = NO_FAULTS._replace(
    crashes=1, partitions=1, lost_responses=1, heartbeat_timeouts=1, admin_elections=1, connection_resets=1,
    consumer_restarts=1,
)
EXPLORE_BOUNDS = explore.Bounds(max_epoch=2, max_sss_epoch=3)


class Work(NamedTuple):
    """A controller-mode row's budget. The default took 19-163 s a row (median 45 s) on one core
    of a 2-core AMD EPYC at 2.25 GHz (docs/matrix.md); the 24 s a row of the earlier, timed runs
    did about three times this work on a faster machine and a smaller model."""

    states: int = 10_000  # breadth-first states expanded in the small scope (about 3 times as many seen)
    batches: int = 1  # Hypothesis stateful batches (stateful.DEEPENING: the first is 400 runs of 25 steps)
    walk_steps: int = 10_000  # guided-walk steps

    def times(self, factor: float) -> "Work":
        """This budget scaled (`rmqcheck matrix --work F`), halves rounded up; at least one of each."""
        return Work(*(max(1, math.floor(n * factor + 0.5)) for n in self))


# Seconds per configuration of the other modes (explored whole); each finishes well within it.
MODE_BUDGET = 600.0


class Cell(NamedTuple):
    invariant: str
    promised: bool  # the catalogue expects it to hold under this configuration
    kind: str | None  # None: no violation found; else EXPECTED, SNAPSHOT_DEFECT or UNEXPLAINED
    steps: int | None  # the counterexample's length
    method: str | None  # "explore" (shortest within its scope), "stateful" or "guided" (delta-debugged)
    path: str | None  # the counterexample file (`rmqcheck replay`)
    message: str = ""


class Row(NamedTuple):
    mode: str  # "controller", "classic", "dledger", "recovery"
    settings: dict[str, Any]  # the switches that vary, as shown in the table
    states: int  # distinct states explored
    transitions: int
    depth: int  # every state within this many steps was checked (exhaustive: the whole space)
    exhaustive: bool
    explore_seconds: float
    hunt_seconds: float
    hunt_steps: int  # stateful and guided steps run (0 for the other modes)
    cells: tuple[Cell, ...]

    def unexplained(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == UNEXPLAINED]


# --- the configuration space -------------------------------------------------------------------

# allAckInSyncStateSet=true waits for the whole SyncStateSet (needAckNums = -1) whatever
# inSyncReplicas says, so that pair is not varied under it.
ACK_MODES = ((True, 1), (False, 1), (False, 2))  # (allAck, inSyncReplicas)


def controller_settings(cfg: Config) -> dict[str, Any]:
    return {
        "brokers": cfg.brokers,
        "allAck": cfg.all_ack,
        "inSyncReplicas": "-" if cfg.all_ack else cfg.in_sync_replicas,
        "minInSyncReplicas": cfg.min_in_sync_replicas,
        "flush": cfg.flush,
        "unclean": cfg.unclean,
        "asyncLearner": bool(cfg.async_learners),
        "scale": cfg.scale,
    }


# Every switch product is checked with the model's own small offsets and with offsets near 2^63
# and replicas gigabytes apart (model/config.py SCALES).
MATRIX_SCALES = ("small", "large")


def controller_space(snapshot: bool = False, scales: tuple[str, ...] = MATRIX_SCALES) -> list[Config]:
    """Every configuration of the documented space (96 a scale): the last broker is the async
    learner where there is one; the model is the intended baseline, or the snapshot with
    `snapshot`."""
    out = []
    for scale, brokers, (all_ack, isr), min_isr, flush, unclean, learner in product(
        scales, (2, 3), ACK_MODES, (1, 2), FLUSH_MODES, (False, True), (False, True)
    ):
        out.append(scaled(Config(
            brokers=brokers, all_ack=all_ack, in_sync_replicas=isr, min_in_sync_replicas=min_isr, flush=flush,
            unclean=unclean, async_learners=frozenset({brokers}) if learner else frozenset(),
            bugs=SNAPSHOT if snapshot else frozenset(),
        ), scale))
    return out


def mode_space(snapshot: bool = False) -> list[Any]:
    """The other modes' rows: classic HA over brokerRole x inSyncReplicas x flushDiskType,
    DLedger mode, and store recovery over flushDiskType x controller mode."""
    classic_base = named.CLASSIC["classic"][0]
    recovery_base = named.RECOVERY["recovery"][0]
    controller_slave = named.RECOVERY["recovery-controller"][0]
    rows: list[Any] = [
        classic_base._replace(role=role, in_sync_replicas=isr, sync_flush=sync_flush)
        for role, isr in ((SYNC_MASTER, 2), (SYNC_MASTER, 3), (ASYNC_MASTER, 2))
        for sync_flush in (True, False)
    ]
    rows.append(named.DLEDGER["dledger"][0])
    rows += [base._replace(sync_flush=sync_flush) for base in (recovery_base, controller_slave) for sync_flush in (False, True)]
    if snapshot:
        rows = [cfg._replace(bugs=modes.mode_for(cfg).snapshot) for cfg in rows]
    else:
        rows = [cfg._replace(bugs=frozenset()) for cfg in rows]
    return rows


def mode_settings(cfg: Any) -> dict[str, Any]:
    name = modes.mode_for(cfg).name
    if name == "classic":
        return {"brokerRole": cfg.role, "inSyncReplicas": cfg.in_sync_replicas if cfg.role == SYNC_MASTER else "-",
                "flush": "SYNC_FLUSH" if cfg.sync_flush else "ASYNC_FLUSH", "slaves": cfg.slaves}
    if name == "dledger":
        return {"nodes": cfg.nodes, "terms": cfg.max_term, "noop on election": cfg.noop_on_election}
    return {"flush": "SYNC_FLUSH" if cfg.sync_flush else "ASYNC_FLUSH", "controller mode": cfg.controller_mode}


def label(settings: dict[str, Any]) -> str:
    """A file-name-safe name for a row."""
    return "-".join(f"{k}={v}".replace(" ", "_").replace("_FLUSH", "") for k, v in settings.items())


def _matches(value: Any, text: str) -> bool:
    text = text.lower()
    if isinstance(value, bool):
        return text in (("true", "yes") if value else ("false", "no"))
    return text in (str(value).lower(), str(value).lower().removesuffix("_flush"))


def select(rows: Iterable[Any], settings: Callable[[Any], dict[str, Any]], where: dict[str, str]) -> list[Any]:
    """The rows whose shown settings match every `key=value` of `where` (case-insensitive;
    yes/no or true/false for switches, SYNC or SYNC_FLUSH for the flush mode)."""
    return [r for r in rows if all(k in settings(r) and _matches(settings(r)[k], v) for k, v in where.items())]


# --- checking one row ------------------------------------------------------------------------


def _cell(inv_id: str, promised: bool, finding, path: Path) -> Cell:
    cx = finding.counterexample
    return Cell(inv_id, promised, finding.kind, len(cx.actions), cx.method, str(path), cx.message)


def check_controller(cfg: Config, work: Work, out_dir: Path, seed: int = 0) -> Row:
    """Explore the small scope for `work.states` states, then hunt the whole configuration for
    the invariants still unbroken: `work.batches` stateful batches, then `work.walk_steps`
    guided-walk steps."""
    name = label(controller_settings(cfg))
    scope = cfg._replace(max_messages=2, message_sizes=(1,), faults=EXPLORE_FAULTS)
    bounds = EXPLORE_BOUNDS._replace(symmetry=cfg.brokers > 2 and not cfg.async_learners)
    r = explore.Explorer(scope, bounds).run(states=work.states)
    cells: dict[str, Cell] = {}
    for inv_id, hit in r.hits.items():
        finding = explain(scope, list(hit.actions), inv_id, hit.message, None, "explore", len(hit.actions))
        path = write_finding(finding, out_dir / f"{name}-{inv_id}.json")
        cells[inv_id] = _cell(inv_id, BY_ID[inv_id].expected(cfg), finding, path)
    start = time.perf_counter()
    hunt_steps = 0

    def record(finding: Finding | None) -> None:
        if finding is not None:
            inv_id = finding.counterexample.invariant
            path = write_finding(finding, out_dir / f"{name}-{inv_id}.json")
            cells[inv_id] = _cell(inv_id, BY_ID[inv_id].expected(cfg), finding, path)

    for finding, result in find_each(cfg, set(BY_ID) - set(cells), work.batches, seed):
        hunt_steps += result.stats.steps
        record(finding)
    for finding, steps in guided_each(cfg, set(BY_ID) - set(cells), work.walk_steps, seed):
        hunt_steps += steps
        record(finding)
    ordered = tuple(cells.get(inv.id) or Cell(inv.id, inv.expected(cfg), None, None, None, None) for inv in CATALOGUE)
    return Row("controller", controller_settings(cfg), r.states, r.transitions, r.depth, r.exhaustive, r.seconds,
               time.perf_counter() - start, hunt_steps, ordered)


def check_mode(cfg: Any, budget: float, out_dir: Path, bounds: explore.Bounds = explore.Bounds(symmetry=True),
               name: str | None = None) -> Row:
    """Explore one configuration of another mode, exhaustively unless `budget` seconds end it
    first; each violation is written as a scenario file `<name>-<invariant>.scn`. A promised
    invariant the snapshot's toggles break is a snapshot defect when the same configuration
    without them, explored too, satisfies it."""
    mode = modes.mode_for(cfg)
    settings = mode_settings(cfg)
    name = name or f"{mode.name}-{label(settings)}"
    r = explore.Explorer(cfg, bounds).run(budget)
    held_when_intended: set[str] | None = None
    cells = []
    for inv in mode.invariants:
        hit = r.hits.get(inv.id)
        promised = inv.expected(cfg)
        if hit is None:
            cells.append(Cell(inv.id, promised, None, None, None, None))
            continue
        kind = EXPECTED if not promised else UNEXPLAINED
        if promised and cfg.bugs:
            if held_when_intended is None:
                ri = explore.Explorer(cfg._replace(bugs=frozenset()), bounds).run(budget)
                held_when_intended = {i.id for i in mode.invariants if i.id not in ri.hits} if ri.exhaustive else set()
            if inv.id in held_when_intended:
                kind = SNAPSHOT_DEFECT
        sc = modes.Scenario(mode, cfg, tuple(hit.actions), inv.id, f"{name}: {hit.message}")
        path = modes.write(sc, out_dir / f"{name}-{inv.id}.scn")
        cells.append(Cell(inv.id, promised, kind, len(hit.actions), "explore", str(path), hit.message))
    return Row(mode.name, settings, r.states, r.transitions, r.depth, r.exhaustive, r.seconds, 0.0, 0, tuple(cells))


# --- the whole matrix --------------------------------------------------------------------------


def _check(task: tuple) -> Row:
    kind, cfg, budget, out_dir, seed = task
    if kind == "controller":
        return check_controller(cfg, budget, out_dir, seed)
    return check_mode(cfg, budget, out_dir)


def run(
    controller: list[Config], others: list[Any], work: Work, mode_budget: float, out_dir: Path, seed: int = 0,
    jobs: int = 1, on_row: Callable[[Row], None] | None = None, spark: Any = None,
) -> list[Row]:
    """Check every row, `jobs` at a time (one process each), or one Spark task each with
    `spark` (`out_dir` must then be a path every executor writes to); rows come back in input
    order."""
    tasks = [("controller", c, work, out_dir, seed) for c in controller]
    tasks += [("mode", c, mode_budget, out_dir, seed) for c in others]
    if spark is not None:
        return spark_map(_check, tasks, spark, on_row)
    return ordered_map(_check, tasks, jobs, on_row)


def to_json(rows: list[Row]) -> list[dict[str, Any]]:
    return [{**r._asdict(), "cells": [c._asdict() for c in r.cells]} for r in rows]


def from_json(rows: list[dict[str, Any]]) -> list[Row]:
    """The rows `to_json` wrote; ValueError names the first bad record."""
    out = []
    for i, r in enumerate(rows, start=1):
        try:
            cells = tuple(Cell(**c) for c in r["cells"])
            row = Row(**{**r, "cells": cells})
        except (KeyError, TypeError) as exc:
            raise ValueError(f"record {i}: not a matrix row as `rmqcheck matrix --json` writes it ({exc!r})") from None
        if not isinstance(row.settings, dict) or row.mode not in ("controller", "classic", "dledger", "recovery"):
            raise ValueError(f"record {i}: not a matrix row (mode {row.mode!r}, settings {type(row.settings).__name__})")
        out.append(row)
    return out
