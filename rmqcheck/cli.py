"""The `rmqcheck` command line. Exit status: 0 nothing violated, 1 a violation was found and
written (or reproduced), 2 bad usage or bad input."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple, Sequence

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from rmqcheck import __version__
from rmqcheck.checkers import configs, explore, liveness, modes
from rmqcheck.checkers.counterexample import Counterexample, CounterexampleError, format_scenario, read, write
from rmqcheck.checkers.describe import changes, state_lines
from rmqcheck.checkers.hunting import (
    BUG_TOGGLE,
    EXPECTED,
    SNAPSHOT_DEFECT,
    UNEXPLAINED,
    Finding,
    default_path,
    explain,
    find,
    write_finding,
)
from rmqcheck.checkers.replay import ReplayError, replay
from rmqcheck.checkers.walk import walk
from rmqcheck.invariants.catalogue import BY_ID, CATALOGUE, Invariant, expected_ids
from rmqcheck.invariants.liveness import LIVENESS, LIVENESS_BY_ID
from rmqcheck.model.bugs import BY_NAME, SNAPSHOT, TOGGLES
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, format_action
from rmqcheck.traces.recorder import Corpus, simulate
from rmqcheck.traces.schema import TraceError
from rmqcheck.traces.validate import CHECK_FAMILY, REPORTED, discover, validate_local

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)


class UsageError(Exception):
    pass


# --- shared ----------------------------------------------------------------------------------


def _progress(label: str):
    if not err.is_terminal:
        return None

    def report(batch, stats, elapsed):
        err.print(
            f"[dim]{label}: batch {batch}, {stats.examples} examples, {stats.steps} steps, "
            f"{stats.steps / max(elapsed, 1e-9):,.0f} steps/s, {elapsed:.0f}s[/dim]",
            end="\r",
        )

    return report


def _toggle_config(toggles: frozenset[str], base_name: str | None, snapshot: bool) -> Config:
    if base_name is None:
        return configs.exposing(toggles, snapshot)
    return configs.with_bugs(configs.load(base_name), toggles, snapshot)


def _print_finding(f: Finding, path: Path | None) -> None:
    cx = f.counterexample
    inv = BY_ID[cx.invariant]
    colour = {EXPECTED: "yellow", SNAPSHOT_DEFECT: "magenta", BUG_TOGGLE: "magenta", UNEXPLAINED: "red"}[f.kind]
    out.print(f"[bold {colour}]{cx.invariant} {inv.name} violated[/] ({f.kind}): {cx.message}")
    out.print(f"  {f.note}")
    how = {
        "stateful": f"after delta debugging (Hypothesis shrank to {f.raw_steps})",
        "walk": f"after delta debugging (the walk took {f.raw_steps})",
        "explore": "(breadth-first: shortest within its scope)",
    }.get(cx.method, "")
    out.print(f"  {len(cx.actions)} steps {how}; seed {cx.seed}")
    for i, a in enumerate(cx.actions, start=1):
        out.print(f"  {i:3d}. {format_action(a)}")
    if path is not None:
        out.print(f"  counterexample: {path}   (replay: rmqcheck replay {path})")


# --- commands --------------------------------------------------------------------------------


def cmd_bugs(args) -> int:
    for t in TOGGLES:
        where = "in the snapshot (on by default)" if t.in_snapshot else "not in the snapshot"
        out.print(f"[bold]{t.name}[/]  {t.ref}, {where}; caught by {', '.join(t.catches)}")
        out.print(f"    source: {t.source}")
        out.print(f"    {t.summary}\n")
    out.print(
        f"The default configuration mirrors the snapshot: its {len(SNAPSHOT)} in-snapshot toggles are on. "
        "`rmqcheck hunt --bug NAME` hunts the intended baseline plus NAME."
    )
    return 0


def cmd_invariants(args) -> int:
    for inv in CATALOGUE:
        out.print(f"[bold]{inv.id} {inv.name}[/]  (expected to hold: {inv.expected_when})")
        out.print(f"    {inv.statement}\n")
    return 0


def cmd_hunt(args) -> int:
    toggles = frozenset(args.bug or ())
    unknown = sorted(toggles - BY_NAME.keys())
    if unknown:
        raise UsageError(f"unknown bug toggle(s) {unknown}; see `rmqcheck bugs --list`")
    if toggles:
        cfg = _toggle_config(toggles, args.config, args.snapshot)
    else:
        cfg = configs.with_bugs(configs.load(args.config or "durable"), frozenset(), not args.intended)
    targets = expected_ids(cfg)
    label = "+".join(sorted(toggles)) or (args.config or "durable") + ("-intended" if args.intended else "")
    out.print(
        f"hunting {label} ({args.method}): {len(cfg.bugs)} toggles on, invariants {', '.join(sorted(targets))}, "
        f"budget {args.budget:g}s, seed {args.seed}"
    )
    finding = {"stateful": _hunt_stateful, "explore": _hunt_explore, "walk": _hunt_walk}[args.method](
        cfg, targets, args, label
    )
    if finding is None:
        out.print(f"[green]no violation found[/] within {args.budget:g}s")
        return 0
    path = Path(args.out) if args.out else default_path("counterexamples", f"{label}-{args.method}", finding)
    write_finding(finding, path)
    _print_finding(finding, path)
    return 1


def _hunt_stateful(cfg: Config, targets, args, label: str) -> Finding | None:
    finding, result = find(cfg, targets, args.budget, args.seed, on_batch=_progress(label))
    rate = result.stats.steps / max(result.seconds, 1e-9)
    out.print(
        f"{result.stats.examples} examples, {result.stats.steps} steps in {result.seconds:.1f}s ({rate:,.0f} steps/s)"
    )
    return finding


def _explore_progress(label: str, p: explore.Progress) -> None:
    out.print(
        f"  {label}: {p.states:,} states, {p.states / max(p.seconds, 1e-9):,.0f} states/s, "
        f"queue {p.queue:,}, depth {p.depth}, {p.seconds:.0f}s"
    )


def _hunt_explore(cfg: Config, targets, args, label: str) -> Finding | None:
    found, tried = explore.hunt(cfg, targets, args.budget, _explore_progress)
    for scope, bounds, r in tried:
        out.print(
            f"scope {explore.describe_scope(scope, bounds)}: {r.states:,} states, {r.transitions:,} "
            f"transitions, depth {r.depth}, {r.seconds:.1f}s, {r.stopped}"
        )
    if found is None:
        return None
    h = found.hit
    return explain(found.cfg, list(h.actions), h.invariant, h.message, None, "explore", len(h.actions))


def _hunt_walk(cfg: Config, targets, args, label: str) -> Finding | None:
    def report(walks: int, steps: int, seconds: float) -> None:
        out.print(f"  {label}: {walks:,} walks, {steps:,} steps, {steps / max(seconds, 1e-9):,.0f} steps/s")

    r = walk(cfg, args.seed, args.depth, args.budget, targets, progress=report)
    out.print(f"{r.walks:,} walks of up to {args.depth} steps, {r.steps:,} steps in {r.seconds:.1f}s")
    if r.hit is None:
        return None
    h = r.hit
    out.print(f"walk {h.walk} of seed {args.seed} violated {h.invariant} after {len(h.actions)} steps")
    return explain(cfg, list(h.shrunk), h.invariant, h.message, args.seed, "walk", len(h.actions))


def cmd_explore(args) -> int:
    if args.config in explore.MODE_CONFIGS:
        return _explore_mode(args)
    if args.config in explore.STANDARD:
        std = explore.STANDARD[args.config]
        cfg, bounds, description = std.cfg, std.bounds, std.description
    else:
        cfg = configs.load(args.config)
        bounds, description = explore.Bounds(), args.config
    overrides = {k: v for k, v in (("max_epoch", args.max_epoch), ("max_sss_epoch", args.max_sss_epoch),
                                   ("max_depth", args.max_depth)) if v is not None}
    if args.symmetry is not None:
        overrides["symmetry"] = args.symmetry
    bounds = bounds._replace(**overrides)
    if args.messages is not None:
        cfg = configs.from_dict({"max_messages": args.messages}, "--messages", cfg)
    if args.bug:
        cfg = configs.from_dict({"bugs": sorted(cfg.bugs | set(args.bug))}, "--bug", cfg)
    if args.liveness:
        return _explore_liveness(args, cfg, bounds._replace(symmetry=False), description)
    out.print(f"exploring {args.config}: {description}")
    _print_bounds(cfg, bounds)
    ex = explore.Explorer(cfg, bounds)
    progress = None if args.quiet else lambda p: _explore_progress(args.config, p)
    r = ex.run(args.budget, progress=progress, progress_every=10.0)
    verdict = "exhaustive" if r.exhaustive else f"NOT exhaustive (stopped: {r.stopped})"
    out.print(
        f"{r.states:,} distinct states, {r.transitions:,} transitions, depth {r.depth}, {r.seconds:.1f}s "
        f"({r.states / max(r.seconds, 1e-9):,.0f} states/s); {r.pruned:,} states at the bounds not expanded; "
        f"{verdict}; fingerprint collision probability <= {r.collision_bound:.1e}"
    )
    table = Table(title="invariants")
    for col in ("invariant", "expected here", "verdict", "shortest counterexample"):
        table.add_column(col, overflow="fold")
    failed = 0
    out_dir = Path(args.out)
    for inv in CATALOGUE:
        hit = r.hits.get(inv.id)
        expected = inv.expected(cfg)
        if hit is None:
            verdict_text = "holds" + ("" if r.exhaustive else " (so far)")
            where = "-"
        else:
            failed += expected
            verdict_text = "[red]VIOLATED[/]" if expected else "violated (not promised here)"
            finding = explain(cfg, list(hit.actions), inv.id, hit.message, None, "explore", len(hit.actions))
            path = write_finding(finding, out_dir / f"explore-{Path(args.config).stem}-{inv.id}.json")
            where = f"{len(hit.actions)} steps: {path}"
        table.add_row(f"{inv.id} {inv.name}", "yes" if expected else "no", verdict_text, where)
    out.print(table)
    _print_coverage(r.coverage)
    return 1 if failed else 0


class ModeVerdict(NamedTuple):
    invariant: Invariant
    expected: bool
    steps: int | None  # the shortest counterexample's length; None when the invariant holds
    path: Path | None  # its scenario file
    message: str


def _explore_mode_config(name: str, cfg, budget: float, out_dir: Path, bounds: explore.Bounds | None = None):
    """Explore one configuration of another mode; a verdict per invariant, and a scenario file
    (`rmqcheck replay`) per violated one."""
    mode = modes.mode_for(cfg)
    r = explore.Explorer(cfg, bounds or explore.Bounds()).run(budget)
    verdicts = []
    for inv in mode.invariants:
        hit = r.hits.get(inv.id)
        if hit is None:
            verdicts.append(ModeVerdict(inv, inv.expected(cfg), None, None, ""))
            continue
        sc = modes.Scenario(mode, cfg, tuple(hit.actions), inv.id, f"rmqcheck explore --config {name}: {hit.message}")
        path = modes.write(sc, out_dir / f"explore-{name}-{inv.id}.scn")
        verdicts.append(ModeVerdict(inv, inv.expected(cfg), len(hit.actions), path, hit.message))
    return r, verdicts


def _explored_text(r) -> str:
    verdict = "exhaustive" if r.exhaustive else f"NOT exhaustive (stopped: {r.stopped})"
    return (
        f"{r.states:,} distinct states, {r.transitions:,} transitions, depth {r.depth}, {r.seconds:.1f}s "
        f"({r.states / max(r.seconds, 1e-9):,.0f} states/s); {verdict}"
    )


def _explore_mode(args) -> int:
    """Classic HA, DLedger or store recovery: the whole space its budgets bound."""
    cfg, description = explore.MODE_CONFIGS[args.config]
    mode = modes.mode_for(cfg)
    toggles = set(args.bug or ())
    unknown = sorted(toggles - mode.toggles)
    if unknown:
        raise UsageError(f"unknown {mode.name} toggle(s) {unknown}; known: {', '.join(sorted(mode.toggles))}")
    cfg = mode.validate(cfg._replace(bugs=cfg.bugs | toggles))
    out.print(f"exploring {args.config}: {description}; toggles {sorted(cfg.bugs) or 'none'}")
    bounds = explore.Bounds(max_depth=args.max_depth, symmetry=args.symmetry is not False)
    r, verdicts = _explore_mode_config(args.config, cfg, args.budget, Path(args.out), bounds)
    out.print(_explored_text(r))
    table = Table(title=f"{mode.name} invariants")
    for col in ("invariant", "expected here", "verdict", "shortest counterexample"):
        table.add_column(col, overflow="fold")
    for v in verdicts:
        if v.steps is None:
            verdict, where = "holds" + ("" if r.exhaustive else " (so far)"), "-"
        else:
            verdict = "[red]VIOLATED[/]" if v.expected else "violated (not promised here)"
            where = f"{v.steps} steps: {v.path}; {v.message}"
        table.add_row(f"{v.invariant.id} {v.invariant.name}", "yes" if v.expected else "no", verdict, where)
    out.print(table)
    return 1 if any(v.expected and v.steps is not None for v in verdicts) else 0


def _print_bounds(cfg: Config, bounds: explore.Bounds) -> None:
    out.print(f"  bounds: {bounds}; faults {explore.fault_text(cfg)}; toggles {sorted(cfg.bugs) or 'none'}")


def _explore_liveness(args, cfg: Config, bounds: explore.Bounds, description: str) -> int:
    out.print(f"liveness on {args.config}: {description} (symmetry off: unsound for liveness)")
    _print_bounds(cfg, bounds)
    r = liveness.check(cfg, bounds, args.budget)
    e = r.explored
    out.print(
        f"{e.states:,} states, {e.transitions:,} transitions in {e.seconds:.1f}s, "
        f"{'exhaustive' if e.exhaustive else 'NOT exhaustive: ' + e.stopped}; {r.checked} obligations analysed"
    )
    failed = 0
    for prop in LIVENESS:
        lasso = r.lassos.get(prop.id)
        if lasso is None:
            out.print(f"[green]{prop.id} {prop.name} holds[/] (no fair cycle keeps it open)")
            continue
        failed += 1
        actions = lasso.prefix + lasso.cycle
        cx = Counterexample(cfg, actions, prop.id, f"obligation {lasso.obligation} open on a fair cycle",
                            method="explore", loop=len(lasso.prefix))
        path = write(cx, Path(args.out) / f"liveness-{Path(args.config).stem}-{prop.id}.json")
        out.print(
            f"[bold red]{prop.id} {prop.name} VIOLATED[/]: {lasso.obligation} stays open on a fair cycle "
            f"({len(lasso.prefix)} steps to it, {len(lasso.cycle)} around it, SCC of {lasso.scc_size} states)"
        )
        for i, a in enumerate(actions, start=1):
            mark = "  <- loop" if i == len(lasso.prefix) + 1 else ""
            out.print(f"  {i:3d}. {format_action(a)}{mark}")
        out.print(f"  counterexample: {path}   (replay: rmqcheck replay {path})")
    return 1 if failed else 0


def _print_coverage(coverage) -> None:
    table = Table(title="coverage: sometimes witnesses")
    for col in ("witness", "status", "situation"):
        table.add_column(col, overflow="fold")
    for name, status, description in coverage.report():
        style = "bold red" if status == "NOT REACHED" else ""
        table.add_row(name, f"[{style}]{status}[/]" if style else status, description)
    out.print(table)
    counts = ", ".join(f"{k} {v:,}" for k, v in sorted(coverage.actions.items(), key=lambda kv: -kv[1]))
    out.print(f"transitions per action: {counts}")
    never = sorted(set(ACTIONS) - set(coverage.actions))
    if never:
        out.print(f"actions never taken: {', '.join(never)}")
    if coverage.unreached():
        out.print(
            f"[bold red]not reached: {', '.join(coverage.unreached())}[/] -- the model cannot reach these "
            "situations within these bounds, and the verdicts above say nothing about them"
        )


# The default job: the snapshot under its defaults and under the durable settings, and the
# intended baseline under the durable settings.
CHECK_JOBS = (
    ("default", True),
    ("durable", True),
    ("durable3", True),
    ("durable3", False),
)


def cmd_check(args) -> int:
    per_job = args.budget / len(CHECK_JOBS)
    out_dir = Path(args.out)
    summary = Table(title=f"rmqcheck check: {per_job:g}s per configuration, seed {args.seed}", show_lines=True)
    for col in ("configuration", "model", "held (no violation found)", "violated"):
        summary.add_column(col, overflow="fold")
    unexplained = 0
    for name, snapshot in CHECK_JOBS:
        cfg = configs.with_bugs(configs.load(name), frozenset(), snapshot)
        model = "snapshot" if snapshot else "intended"
        remaining = set(BY_ID)
        found: list[tuple[Finding, Path]] = []
        start = time.perf_counter()
        seed = args.seed
        while remaining:
            left = per_job - (time.perf_counter() - start)
            if left <= 0:
                break
            finding, result = find(cfg, remaining, left, seed, on_batch=_progress(f"{name}/{model}"))
            seed += result.batches
            if finding is None:
                break
            inv = finding.counterexample.invariant
            remaining.discard(inv)
            path = write_finding(finding, out_dir / f"{name}-{model}-{inv}.json")
            found.append((finding, path))
            unexplained += finding.kind == UNEXPLAINED
        violated = (
            "\n".join(
                f"{f.counterexample.invariant} ({f.kind}, {len(f.counterexample.actions)} steps): {f.note}\n  -> {p}"
                for f, p in found
            )
            or "-"
        )
        held = ", ".join(i for i in BY_ID if i in remaining) or "-"
        summary.add_row(f"{name}: {configs.NAMED[name][1]}", model, held, violated)
    out.print(summary)
    out.print(
        "expected: not promised under that configuration; snapshot defect: disappears with the "
        "intended form of a known defect (rmqcheck bugs --list); unexplained: a failure."
    )
    unexplained += _check_modes(args, out_dir)
    return 1 if unexplained or _check_traces(args, out_dir) else 0


# The other modes' configurations the default job explores exhaustively (about a minute).
CHECK_MODES = ("classic", "classic-async-flush", "dledger", "recovery", "recovery-controller")
MODE_BUDGET = 600.0  # seconds per configuration; every one in CHECK_MODES finishes well within it


def _check_modes(args, out_dir: Path) -> int:
    """The other-modes stage of the default job: explore each configuration; a violation of a
    promised invariant is a snapshot defect when exploring the same configuration with the
    mode's snapshot toggles off shows it holds, and unexplained otherwise. Returns the number
    of unexplained violations."""
    if not args.modes:
        return 0
    table = Table(title="other modes: exhaustive exploration", show_lines=True)
    for col in ("configuration", "explored", "held", "violated"):
        table.add_column(col, overflow="fold")
    unexplained = 0
    for name in args.modes:
        cfg, description = explore.MODE_CONFIGS[name]
        bounds = explore.Bounds(symmetry=True)
        r, verdicts = _explore_mode_config(name, cfg, MODE_BUDGET, out_dir, bounds)
        intended = None
        violated = []
        for v in verdicts:
            if v.steps is None:
                continue
            kind = EXPECTED if not v.expected else UNEXPLAINED
            if v.expected and cfg.bugs:
                if intended is None:
                    ri, vi = _explore_mode_config(f"{name}-intended", cfg._replace(bugs=frozenset()), MODE_BUDGET, out_dir, bounds)
                    intended = {w.invariant.id for w in vi if w.steps is None} if ri.exhaustive else set()
                if v.invariant.id in intended:
                    kind = SNAPSHOT_DEFECT
            unexplained += kind == UNEXPLAINED
            violated.append(f"{v.invariant.id} ({kind}, {v.steps} steps): {v.message}\n  -> {v.path}")
        held = ", ".join(v.invariant.id for v in verdicts if v.steps is None)
        if held and not r.exhaustive:
            held += " (so far)"
        toggles = f"toggles {', '.join(sorted(cfg.bugs))}" if cfg.bugs else "intended (no toggles)"
        table.add_row(
            f"{name}: {description}; {toggles}",
            f"{r.states:,} states, {r.seconds:.1f}s, {'exhaustive' if r.exhaustive else 'NOT exhaustive'}",
            held or "-",
            "\n".join(violated) or "-",
        )
    out.print(table)
    return unexplained


def _check_traces(args, out_dir: Path) -> bool:
    """The trace stage of the default job: record runs of the durable configurations (intended
    model) and validate them on the chosen engine; True if a guarantee broke."""
    corpus_dir = out_dir / "corpus"
    shutil.rmtree(corpus_dir, ignore_errors=True)
    simulate(Corpus(seed=args.seed, runs=args.trace_runs, runs_per_file=max(1, args.trace_runs // 4), stores=True), corpus_dir)
    report, seconds = _validate([str(corpus_dir)], args.engine, False, None, True)
    _print_validation(report, seconds, False, out_dir / "validate-violations.ndjson", 5)
    return report.failed()


def _replay_truncation(cx: Counterexample, where: str) -> bool:
    """Re-check a `rmqcheck prove` truncation section on integers; True when it reproduces."""
    from rmqcheck.checkers import proofs

    sec = cx.truncation
    try:
        got, broken = proofs.recheck(sec, where)
    except ValueError as exc:
        raise CounterexampleError(str(exc)) from None
    out.print(
        f"truncation: local {sec['local']} max {sec['local_max']}, master {sec['master']} max {sec['master_max']}, "
        f"search {sec['search']}"
    )
    out.print(f"  point {got} (recorded {sec['point']}; the faithful search gives {sec['faithful_point']})")
    if got == sec["point"] and broken is not None:
        out.print(f"  [bold red]property {sec['property']} violated on integers[/]: {broken}")
        return True
    out.print(f"  [green]property {sec['property']} holds on these lists now[/]")
    return False


def _replay_mode(path: str) -> int:
    """A classic-HA, DLedger or recovery scenario: every step with what it changed and the violations."""
    sc = modes.read(path)
    try:
        r = modes.replay(sc.mode, sc.config, sc.actions)
    except CounterexampleError as exc:
        raise CounterexampleError(f"{path}: {exc}") from None
    out.print(f"{sc.mode.name} mode ({sc.mode.source}); toggles {sorted(sc.config.bugs) or 'none'}")
    table = Table(title=f"replay {path}")
    table.add_column("step", justify="right")
    for col in ("action", "what changed", "violations"):
        table.add_column(col, overflow="fold")
    for i, a in enumerate(sc.actions, start=1):
        marks = "\n".join(f"{v.invariant}: {v.message}" for v in r.violations[i])
        table.add_row(str(i), modes.format_action(sc.mode, a), modes.changes(r.states[i - 1], r.states[i]), marks)
    out.print(table)
    hit = r.first(sc.invariant)
    if sc.invariant is not None:
        if hit is None:
            out.print(f"[green]not reproduced: {sc.invariant} holds throughout[/]")
            return 0
        out.print(f"[bold red]reproduced: {sc.invariant} violated at step {hit[0]}: {hit[1].message}[/]")
        return 1
    if r.first() is not None:
        out.print(f"[bold red]{r.first()[1].invariant} violated at step {r.first()[0]}[/]")
        return 1
    out.print("[green]every invariant held[/]")
    return 0


def cmd_replay(args) -> int:
    if modes.is_mode_file(args.file):
        return _replay_mode(args.file)
    cx: Counterexample = read(args.file)
    truncation_hit = _replay_truncation(cx, args.file) if cx.truncation is not None else True
    if cx.truncation is not None and not cx.actions:
        return 1 if truncation_hit else 0
    try:
        r = replay(cx.config, cx.actions, start=cx.start)
    except ReplayError as exc:
        raise CounterexampleError(f"{args.file}: {exc}") from None
    expected = expected_ids(cx.config)
    table = Table(title=f"replay {args.file}", show_lines=False)
    for col, kw in (
        ("step", {"justify": "right"}),
        ("action", {}),
        ("what changed", {"overflow": "fold"}),
        ("violations", {"overflow": "fold"}),
    ):
        table.add_column(col, **kw)
    first_hit: tuple[int, str] | None = None
    for i, a in enumerate(cx.actions, start=1):
        vs = r.violations[i]
        marks = []
        for v in vs:
            tag = "" if v.invariant in expected else " (not expected to hold here)"
            marks.append(f"{v.invariant}{tag}: {v.message}")
            if first_hit is None and (
                v.invariant == cx.invariant or (cx.invariant is None and v.invariant in expected)
            ):
                first_hit = (i, v.invariant)
        step_no = f"{i} (loop)" if cx.loop is not None and i == cx.loop + 1 else str(i)
        table.add_row(step_no, format_action(a), changes(r.states[i - 1], r.states[i]), "\n".join(marks))
    if not args.quiet:
        out.print(
            f"configuration: toggles {sorted(cx.config.bugs) or 'none'}"
            + (" (the snapshot)" if cx.config.bugs == SNAPSHOT else "")
        )
        if cx.start:
            out.print("  start: constructed from the replicas' logs (not reached from the empty cluster)")
        for line in state_lines(r.states[0]):
            out.print(f"  start: {line}")
        out.print(table)
        for line in state_lines(r.states[-1]):
            out.print(f"  end:   {line}")
    if cx.loop is not None:
        found = liveness.recheck(cx.config, cx.actions, cx.loop, cx.invariant)
        if found is None:
            out.print(f"[green]not reproduced: no fair cycle keeps {cx.invariant} open from step {cx.loop + 1}[/]")
            return 0
        out.print(f"[bold red]reproduced: {cx.invariant} {LIVENESS_BY_ID[cx.invariant].name} violated: {found}[/]")
        return 1
    if cx.invariant is not None:
        if first_hit is not None and truncation_hit:
            out.print(
                f"[bold red]reproduced: {cx.invariant} {BY_ID[cx.invariant].name} violated at step {first_hit[0]}[/]"
            )
            return 1
        out.print(f"[green]not reproduced: {cx.invariant} holds throughout[/]")
        return 0
    if first_hit is not None:
        out.print(f"[bold red]{first_hit[1]} violated at step {first_hit[0]}[/]")
        return 1
    out.print("[green]every invariant expected to hold did hold[/]")
    return 0


def cmd_prove(args) -> int:
    from rmqcheck.checkers import proofs

    if args.k < 1:
        raise UsageError("--k must be at least 1")
    started = time.perf_counter()
    outcomes = proofs.run_all(args.k, args.only or ())
    table = Table(title=f"rmqcheck prove: model/epochfile.py's consistent-point search, lists of 0..{args.k} entries")
    for col in ("property", "search", "premises", "K", "expected", "result", "time"):
        table.add_column(col, overflow="fold")
    out_dir = Path(args.out)
    files = []
    for o in outcomes:
        variant = proofs.VARIANT_BY_TOGGLE.get(o.toggle)
        prop = proofs.BY_ID[variant.breaks if variant else o.id]
        colour = "green" if o.ok else "bold red"
        table.add_row(
            o.id,
            variant.why if variant else "faithful",
            ", ".join(prop.premises) + (", realistic" if variant else ""),
            str(o.k),
            o.expected,
            f"[{colour}]{o.result}[/]",
            f"{o.seconds:.2f}s",
        )
        if o.witness is not None:
            path = write(proofs.counterexample(o, variant), out_dir / f"{o.id.replace(' / ', '--')}.json")
            files.append((o, path))
    out.print(table)
    for o, path in files:
        w = o.witness
        out.print(
            f"{o.id}: local {list(w.local.entries)} max {w.local.max}, master {list(w.master.entries)} "
            f"max {w.master.max} -> point {o.point}   (rmqcheck replay {path})"
        )
    if not args.only:
        for line in proofs.unbounded_report():
            out.print(line)
        bad_offsets = _prove_dledger_offsets()
    else:
        bad_offsets = []
    bad = [o for o in outcomes if not o.ok] + bad_offsets
    out.print(
        f"{len(outcomes)} checks in {time.perf_counter() - started:.1f}s; bounded: every pair of lists of up to "
        f"{args.k} entries, offsets unbounded integers below Long.MAX_VALUE."
    )
    if bad:
        out.print(f"[bold red]{len(bad)} result(s) differ from what is expected: {', '.join(o.id for o in bad)}[/]")
        return 1
    return 0


def _prove_dledger_offsets() -> list:
    """The DLedgerCommitLog offset mapping: each obligation proved, each mutant refuted."""
    from rmqcheck.checkers import dledger_proofs

    table = Table(title="rmqcheck prove: DLedgerCommitLog offset mapping (preAppend, BODY_OFFSET, divided offset)")
    for col in ("obligation", "rule", "expected", "result", "time", "witness"):
        table.add_column(col, overflow="fold")
    outcomes = dledger_proofs.run()
    for o in outcomes:
        colour = "green" if o.ok else "bold red"
        table.add_row(o.id, o.variant, o.expected, f"[{colour}]{o.result}[/]", f"{o.seconds:.2f}s", o.witness)
    out.print(table)
    return [o for o in outcomes if not o.ok]


def cmd_scenario(args) -> int:
    """Print a counterexample file as scenario text (for regression scenarios)."""
    cx = read(args.file)
    sys.stdout.write(format_scenario(cx, args.title or ""))
    return 0


# --- recorded runs ---------------------------------------------------------------------------


def cmd_simulate(args) -> int:
    for name in args.config or ():
        configs.load(name)  # a clear error for an unknown name before any work
    corpus = Corpus(
        seed=args.seed, runs=args.runs, steps=args.steps, names=tuple(args.config or Corpus().names),
        snapshot=args.snapshot, fmt=args.format, runs_per_file=args.runs_per_file, stores=args.stores,
    )
    start = time.perf_counter()
    events = simulate(corpus, Path(args.out), args.jobs)
    seconds = time.perf_counter() - start
    out.print(
        f"wrote {events:,} events of {corpus.runs:,} runs ({', '.join(corpus.names)}, "
        f"{'snapshot' if corpus.snapshot else 'intended'} model) to {args.out} in {seconds:.1f} s "
        f"({events / max(seconds, 1e-9):,.0f} events/s)"
    )
    return 0


def _validate(paths: Sequence[str], engine: str, skip: bool, master: str | None, quiet: bool):
    """Discover and validate; (report, seconds). Raises TraceError for bad input."""
    inputs = discover(paths)
    start = time.perf_counter()
    if engine == "spark":
        from rmqcheck.traces.spark import validate_spark  # starts nothing, but imports PySpark

        report = validate_spark(inputs, skip, master)
    else:
        with Progress(console=err, transient=True, disable=quiet) as bar:
            task = bar.add_task("validating", total=len(inputs.traces) or None)
            report = validate_local(inputs, skip, lambda what, done, total: bar.update(task, completed=done, description=what))
    return report, time.perf_counter() - start


def _print_validation(report, seconds: float, strict: bool, violations: Path, show: int) -> None:
    """The summary table per check; every violation written to `violations` (NDJSON)."""
    u = report.units
    table = Table(
        title=(
            f"rmqcheck validate ({report.engine}): {u['events']:,} events in {u['runs']:,} runs, "
            f"{u['histories']} OpenChaos histories, {u['store_sets']} store sets, {seconds:.1f} s"
        )
    )
    for col in ("family", "check", "violations", "occurrences", "verdict"):
        table.add_column(col)
    for check, found in report.by_check().items():
        reported = check in REPORTED and not strict
        verdict = "ok" if not found else (f"reported: {REPORTED[check]}" if reported else "VIOLATED")
        table.add_row(CHECK_FAMILY[check], check, str(len(found)), str(sum(v.count for v in found)), verdict)
    out.print(table)
    violations.parent.mkdir(parents=True, exist_ok=True)
    with open(violations, "w") as f:
        for v in report.violations:
            f.write(json.dumps(v._asdict()) + "\n")
    out.print(f"{len(report.violations)} violation records written to {violations}")
    for v in report.violations[:show]:
        out.print(f"  {v.check} {v.run} {v.subject}: {v.detail}")


def cmd_validate(args) -> int:
    try:
        report, seconds = _validate(args.paths, args.engine, args.skip_bad_records, args.master, args.quiet)
    except TraceError as exc:
        print(f"rmqcheck: bad input: {exc}", file=sys.stderr)
        return 2
    _print_validation(report, seconds, args.strict, Path(args.violations), args.show)
    if report.bad:
        rejected = Path(args.rejected)
        rejected.parent.mkdir(parents=True, exist_ok=True)
        with open(rejected, "w") as f:
            for b in report.bad:
                f.write(json.dumps(b.to_json()) + "\n")
        out.print(f"{len(report.bad)} bad records skipped, written to {rejected}")
    return 1 if report.failed(args.strict) else 0


# --- parser ----------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _mode_names(text: str) -> tuple[str, ...]:
    names = tuple(n for n in text.split(",") if n)
    unknown = [n for n in names if n not in explore.MODE_CONFIGS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown configuration(s) {unknown}; known: {', '.join(explore.MODE_CONFIGS)}")
    return names


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the budget must be positive")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rmqcheck", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"rmqcheck {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="the default job: hunt each standard configuration and tabulate")
    c.add_argument("--budget", type=_budget, default=120.0, help="seconds in all (default 120)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", default="counterexamples", help="directory for counterexample files")
    c.add_argument("--trace-runs", type=_positive, default=400, help="recorded runs validated at the end (default 400)")
    c.add_argument("--engine", choices=("local", "spark"), default="spark", help="trace validation engine (default spark)")
    c.add_argument(
        "--modes",
        type=_mode_names,
        default=CHECK_MODES,
        help=f"other modes' configurations to explore, comma-separated, '' for none (default {','.join(CHECK_MODES)})",
    )
    c.set_defaults(func=cmd_check)

    h = sub.add_parser("hunt", help="search for a violation of the invariants expected to hold")
    h.add_argument("--bug", action="append", metavar="NAME", help="turn on a bug toggle (repeatable)")
    h.add_argument(
        "--method",
        choices=("stateful", "explore", "walk"),
        default="stateful",
        help="stateful (Hypothesis), explore (breadth-first over growing scopes: shortest counterexamples), "
        "walk (seeded random walks, delta-debugged)",
    )
    h.add_argument("--depth", type=int, default=60, help="walk: steps per walk (default 60)")
    h.add_argument("--budget", type=_budget, default=120.0, help="seconds (default 120)")
    h.add_argument("--seed", type=int, default=0)
    h.add_argument("--out", help="counterexample file (default counterexamples/<label>-<invariant>-seed<N>.json)")
    h.add_argument("--config", help=f"named configuration ({', '.join(configs.NAMED)}) or JSON file")
    mode = h.add_mutually_exclusive_group()
    mode.add_argument("--snapshot", action="store_true", help="with --bug: keep the snapshot's own defects on as well")
    mode.add_argument(
        "--intended",
        action="store_true",
        help="without --bug: hunt the intended baseline (every in-snapshot defect fixed)",
    )
    h.set_defaults(func=cmd_hunt)

    e = sub.add_parser("explore", help="exhaustive breadth-first exploration of a bounded configuration")
    e.add_argument(
        "--config", default="std2", help=f"standard ({', '.join([*explore.STANDARD, *explore.MODE_CONFIGS])}), named or JSON file"
    )
    e.add_argument("--budget", type=_budget, default=None, help="seconds (default: until exhausted)")
    e.add_argument("--messages", type=int, help="override max_messages")
    e.add_argument("--max-epoch", type=int, help="masterEpoch bound")
    e.add_argument("--max-sss-epoch", type=int, help="syncStateSetEpoch bound")
    e.add_argument("--max-depth", type=int, help="depth bound")
    e.add_argument("--symmetry", action=argparse.BooleanOptionalAction, default=None, help="broker renaming")
    e.add_argument("--out", default="counterexamples", help="directory for counterexample files")
    e.add_argument("--quiet", action="store_true", help="no progress lines")
    e.add_argument("--liveness", action="store_true", help="check the liveness properties (L1-L3) instead")
    e.add_argument("--bug", action="append", metavar="NAME", help="turn on a bug toggle (repeatable)")
    e.set_defaults(func=cmd_explore)

    r = sub.add_parser("replay", help="re-run a counterexample or scenario file deterministically")
    r.add_argument("file")
    r.add_argument("--quiet", action="store_true", help="print only the verdict")
    r.set_defaults(func=cmd_replay)

    pr = sub.add_parser("prove", help="Z3 proofs of the truncation search, and counterexamples to its wrong variants")
    pr.add_argument("--k", type=int, default=8, help="longest epoch list on each side (default 8)")
    pr.add_argument("--only", action="append", metavar="ID", help="one property id or variant toggle (repeatable)")
    pr.add_argument("--out", default="counterexamples/prove", help="directory for counterexample files")
    pr.set_defaults(func=cmd_prove)

    b = sub.add_parser("bugs", help="list the bug toggles")
    b.add_argument("--list", action="store_true", help="list them (the default)")
    b.set_defaults(func=cmd_bugs)

    i = sub.add_parser("invariants", help="list the invariant catalogue")
    i.set_defaults(func=cmd_invariants)

    sim = sub.add_parser("simulate", help="record runs of the model with random faults as event traces")
    sim.add_argument("--runs", type=_positive, default=100)
    sim.add_argument("--out", required=True, help="directory for the part files")
    sim.add_argument("--steps", type=_positive, default=100, help="transitions per run (default 100)")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--config", action="append", metavar="NAME", help="named configuration to cycle through (repeatable)")
    sim.add_argument("--snapshot", action="store_true", help="keep the snapshot's known defects on")
    sim.add_argument("--format", choices=("ndjson", "parquet"), default="ndjson")
    sim.add_argument("--runs-per-file", type=_positive, default=1000)
    sim.add_argument("--stores", action="store_true", help="also write each run's epoch files under OUT/stores/")
    sim.add_argument("--jobs", type=_positive, default=1, help="processes (default 1)")
    sim.set_defaults(func=cmd_simulate)

    v = sub.add_parser("validate", help="check recorded traces, OpenChaos histories and epoch files")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.add_argument("--engine", choices=("local", "spark"), default="local")
    v.add_argument("--master", help="Spark master URL (default local[*]; e.g. local-cluster[2,1,1024], spark://host:7077)")
    v.add_argument("--violations", default="counterexamples/validate-violations.ndjson", help="where violations are written")
    v.add_argument("--skip-bad-records", action="store_true", help="skip bad records, writing them to --rejected")
    v.add_argument("--rejected", default="counterexamples/validate-rejected.ndjson")
    v.add_argument("--strict", action="store_true", help="count duplicates and stuck replicas as violations too")
    v.add_argument("--show", type=int, default=10, help="violations to print (default 10)")
    v.add_argument("--quiet", action="store_true", help="no progress bar")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("scenario", help="print a counterexample file as readable scenario text")
    s.add_argument("file")
    s.add_argument("--title")
    s.set_defaults(func=cmd_scenario)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, configs.ConfigError, CounterexampleError) as exc:
        print(f"rmqcheck: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
