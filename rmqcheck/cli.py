"""The `rmqcheck` command line. Exit status: 0 nothing violated, 1 a violation was found and
written (or reproduced), 2 bad usage or bad input."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from rmqcheck import __version__
from rmqcheck.checkers import configs, explore, liveness, matrix, modes, rediscovery
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
    find_each,
    write_finding,
)
from rmqcheck.checkers.replay import ReplayError, replay
from rmqcheck.checkers.walk import GUIDED_HOP, guided, walk
from rmqcheck.invariants.catalogue import BY_ID, CATALOGUE, expected_ids
from rmqcheck.invariants.liveness import LIVENESS, LIVENESS_BY_ID
from rmqcheck.model.bugs import BY_NAME, SNAPSHOT, TOGGLES
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, format_action
from rmqcheck.report import tables as report_tables
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
        "guided": f"after delta debugging (the guided walk took {f.raw_steps})",
        "explore": "(breadth-first: shortest within its scope)",
    }.get(cx.method, "")
    out.print(f"  {len(cx.actions)} steps {how}; seed {cx.seed}")
    for i, a in enumerate(cx.actions, start=1):
        out.print(f"  {i:3d}. {format_action(a)}")
    if path is not None:
        out.print(f"  counterexample: {path}   (replay: rmqcheck replay {path})")


# --- commands --------------------------------------------------------------------------------


def cmd_bugs(args) -> int:
    if args.measure:
        return _measure_bugs(args)
    for t in TOGGLES:
        where = "in the snapshot (on by default)" if t.in_snapshot else "not in the snapshot"
        out.print(f"[bold]{t.name}[/]  {t.ref}, {where}; caught by {', '.join(t.catches) or 'nothing (see README)'}")
        out.print(f"    source: {t.source}")
        out.print(f"    {t.summary}\n")
    for mode in modes.MODES.values():
        out.print(f"[bold]{mode.name} mode[/] ({mode.source}): {', '.join(sorted(mode.toggles))}")
    out.print(
        f"The default configuration mirrors the snapshot: its {len(SNAPSHOT)} in-snapshot toggles are on. "
        "`rmqcheck hunt --bug NAME` hunts the intended baseline plus NAME; `rmqcheck bugs --measure` times "
        "every method on every toggle."
    )
    return 0


def _measure_bugs(args) -> int:
    """The rediscovery benchmark (checkers/rediscovery.py): a table of methods x toggles, in
    Markdown and JSON; exits 1 when a toggle that should be found is found by no method."""
    chosen = rediscovery.subjects()
    if args.only:
        unknown = sorted(set(args.only) - {s.toggle for s in chosen})
        if unknown:
            raise UsageError(f"unknown toggle(s) {unknown}; see `rmqcheck bugs --list`")
        chosen = [s for s in chosen if s.toggle in args.only]
    if args.update and not (args.only or args.method):
        raise UsageError("--update re-measures the toggles named by --only (or the methods named by --method) "
                         "in an earlier run's JSON")
    measured = [s._replace(methods=tuple(m for m in s.methods if m in args.method)) for s in chosen] \
        if args.method else chosen
    earlier = _earlier_measures(args.update) if args.update else []  # a bad file fails now, not after the runs
    if args.readme:
        _splice(args.readme, "bugs", None)
    runs = sum(args.seeds if m in rediscovery.SEEDED else 1 for s in measured for m in s.methods)
    out.print(f"measuring {len(chosen)} toggles: up to {runs} runs of at most {args.budget:g}s, {args.jobs} jobs")
    start = time.perf_counter()

    def progress(m) -> None:
        err.print(f"[dim]{m.toggle} {m.method}: {report_tables._method_cell(m)}[/dim]")

    measures = rediscovery.measure(measured, args.seeds, args.budget, args.jobs, progress if err.is_terminal else None)
    minutes = (time.perf_counter() - start) / 60
    note = f"in {minutes:.0f} min with {args.jobs} jobs"
    if args.update:
        # Keep the earlier run's measures of what is not measured now.
        now = {(m.toggle, m.mode, m.method) for m in measures}
        measures = [m for m in earlier if (m.toggle, m.mode, m.method) not in now] + measures
        chosen = [s for s in rediscovery.subjects() if any(m.toggle == s.toggle for m in measures)]
        # The file does not record which earlier call measured what, so say only that some did.
        note = "(cells re-measured since with `--update`, the same command narrowed by `--only`/`--method`)"
    budgets = Counter(m.budget for m in measures)
    usual = budgets.most_common(1)[0][0]
    other = ", ".join(sorted({f"{m.toggle} {m.method} ({m.budget:g}s)" for m in measures if m.budget != usual}))
    text = report_tables.bugs_markdown(chosen, measures, (
        f"Generated by `rmqcheck bugs --measure --budget {usual:g} --seeds {args.seeds}` {note}"
        + (f"; other budgets: {other}." if other else ".")))
    out.print(text)
    if args.markdown:
        _write(args.markdown, text + "\n")
    if args.json or args.update:
        _write(args.json or args.update, json.dumps(rediscovery.to_json(measures), indent=1) + "\n")
    if args.readme:
        _splice(args.readme, "bugs", text)
    missed = [s.toggle for s in chosen if s.methods and not any(
        m.median_seconds is not None for m in measures if (m.toggle, m.mode) == (s.toggle, s.mode))]
    if missed:
        out.print(f"[bold red]found by no method: {', '.join(missed)}[/]")
    return 1 if missed else 0


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
    hunters = {"stateful": _hunt_stateful, "explore": _hunt_explore, "walk": _hunt_walk, "guided": _hunt_guided}
    finding = hunters[args.method](cfg, targets, args, label)
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
    r = walk(cfg, args.seed, args.depth, args.budget, targets, progress=_walk_progress(label, "walks"))
    summary = f"{r.walks:,} walks of up to {args.depth} steps, {r.steps:,} steps in {r.seconds:.1f}s"
    return _walk_finding(cfg, r, args, "walk", summary, "walk")


def _hunt_guided(cfg: Config, targets, args, label: str) -> Finding | None:
    r = guided(cfg, args.seed, args.budget, targets, progress=_walk_progress(label, "rounds"))
    summary = (f"{r.walks:,} rounds of {GUIDED_HOP} steps from {r.kept:,} kept states, {r.steps:,} steps in "
               f"{r.seconds:.1f}s")
    return _walk_finding(cfg, r, args, "guided", summary, "round", " from the start")


def _walk_progress(label: str, unit: str):
    def report(count: int, steps: int, seconds: float) -> None:
        out.print(f"  {label}: {count:,} {unit}, {steps:,} steps, {steps / max(seconds, 1e-9):,.0f} steps/s")

    return report


def _walk_finding(cfg: Config, r, args, method: str, summary: str, unit: str, since: str = "") -> Finding | None:
    """Print a walk run's summary and its hit; the hit's delta-debugged finding."""
    out.print(summary)
    if r.hit is None:
        return None
    h = r.hit
    out.print(f"{unit} {h.walk} of seed {args.seed} violated {h.invariant} after {len(h.actions)} steps{since}")
    return explain(cfg, list(h.shrunk), h.invariant, h.message, args.seed, method, len(h.actions))


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
    if args.config in explore.STANDARD and (overrides or args.messages is not None or args.bug):
        description += "; changed by the options given (what runs is below)"
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
    row = matrix.check_mode(cfg, args.budget, Path(args.out), bounds, f"explore-{args.config}")
    reach = "exhaustive" if row.exhaustive else f"NOT exhaustive (every state within {row.depth} steps)"
    out.print(
        f"{row.states:,} distinct states, {row.transitions:,} transitions, {row.explore_seconds:.1f}s "
        f"({row.states / max(row.explore_seconds, 1e-9):,.0f} states/s); {reach}"
    )
    invariants = {inv.id: inv for inv in mode.invariants}
    table = Table(title=f"{mode.name} invariants")
    for col in ("invariant", "expected here", "verdict", "shortest counterexample"):
        table.add_column(col, overflow="fold")
    for c in row.cells:
        inv = invariants[c.invariant]
        if c.kind is None:
            verdict, where = "holds" + ("" if row.exhaustive else " (so far)"), "-"
        else:
            verdict = f"[red]VIOLATED[/] ({c.kind})" if c.promised else "violated (not promised here)"
            where = f"{c.steps} steps: {c.path}; {c.message}"
        table.add_row(f"{inv.id} {inv.name}", "yes" if c.promised else "no", verdict, where)
    out.print(table)
    return 1 if any(c.promised and c.kind for c in row.cells) else 0


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
        found: list[tuple[Finding, Path]] = []
        for finding, _ in find_each(cfg, BY_ID, per_job, args.seed, on_batch=_progress(f"{name}/{model}")):
            if finding is not None:
                path = write_finding(finding, out_dir / f"{name}-{model}-{finding.counterexample.invariant}.json")
                found.append((finding, path))
                unexplained += finding.kind == UNEXPLAINED
        violated = (
            "\n".join(
                f"{f.counterexample.invariant} ({f.kind}, {len(f.counterexample.actions)} steps): {f.note}\n  -> {p}"
                for f, p in found
            )
            or "-"
        )
        broken = {f.counterexample.invariant for f, _ in found}
        held = ", ".join(i for i in BY_ID if i not in broken) or "-"
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
    """The other-modes stage of the default job: explore each configuration (checkers/matrix.py
    classifies what breaks). Returns the number of unexplained violations."""
    if not args.modes:
        return 0
    table = Table(title="other modes: exhaustive exploration", show_lines=True)
    for col in ("configuration", "explored", "held", "violated"):
        table.add_column(col, overflow="fold")
    unexplained = 0
    for name in args.modes:
        cfg, description = explore.MODE_CONFIGS[name]
        row = matrix.check_mode(cfg, MODE_BUDGET, out_dir, name=f"explore-{name}")
        unexplained += len(row.unexplained())
        held = ", ".join(c.invariant for c in row.cells if c.kind is None)
        if held and not row.exhaustive:
            held += " (so far)"
        violated = [f"{c.invariant} ({c.kind}, {c.steps} steps): {c.message}\n  -> {c.path}" for c in row.cells if c.kind]
        toggles = f"toggles {', '.join(sorted(cfg.bugs))}" if cfg.bugs else "intended (no toggles)"
        table.add_row(
            f"{name}: {description}; {toggles}",
            f"{row.states:,} states, {row.explore_seconds:.1f}s, {'exhaustive' if row.exhaustive else 'NOT exhaustive'}",
            held or "-",
            "\n".join(violated) or "-",
        )
    out.print(table)
    return unexplained


MATRIX_MODES = ("controller", "classic", "dledger", "recovery")


def cmd_matrix(args) -> int:
    """The guarantee matrix (checkers/matrix.py): every configuration of the documented space,
    a verdict per invariant; Markdown and JSON copies, and the README's block when asked."""
    where = dict(_key_value(w) for w in args.where or ())
    controller = matrix.controller_space(args.snapshot) if "controller" in args.modes else []
    others = [c for c in matrix.mode_space(args.snapshot) if modes.mode_for(c).name in args.modes]
    controller = matrix.select(controller, matrix.controller_settings, where)
    others = matrix.select(others, matrix.mode_settings, where)
    if not controller and not others:
        raise UsageError("no configuration matches --where/--modes")
    if args.readme:
        _splice(args.readme, "matrix", None)
    model = "snapshot" if args.snapshot else "intended"
    out.print(
        f"guarantee matrix ({model} model): {len(controller)} controller-mode configurations, {args.budget:g}s each "
        f"(half exploration, a quarter stateful hunting, a quarter guided walks), and {len(others)} of the other "
        f"modes explored; {args.jobs} jobs"
    )
    start = time.perf_counter()

    def progress(row: matrix.Row) -> None:
        broken = ", ".join(f"{c.invariant}:{c.kind}" for c in row.cells if c.kind) or "none broken"
        err.print(f"[dim]{row.mode} {matrix.label(row.settings)}: {row.states:,} states; {broken}[/dim]")

    rows = matrix.run(controller, others, args.budget, MODE_BUDGET, Path(args.out), args.seed, args.jobs,
                      progress if err.is_terminal else None)
    seconds = time.perf_counter() - start
    note = (f"Generated by `rmqcheck matrix --budget {args.budget:g}` ({model} model) in {seconds / 60:.1f} min "
            f"with {args.jobs} jobs.")
    text = report_tables.matrix_markdown(rows, note)
    out.print(text)
    if args.markdown:
        _write(args.markdown, text + "\n")
    if args.json:
        _write(args.json, json.dumps(matrix.to_json(rows), indent=1) + "\n")
    if args.readme:
        _splice(args.readme, "matrix", text)
    failures = [(r, c) for r in rows for c in r.unexplained()]
    for r, c in failures:
        out.print(f"[bold red]UNEXPLAINED: {c.invariant} under {r.mode} {r.settings}[/]: {c.message}\n  -> {c.path}")
    out.print(f"{len(rows)} configurations in {seconds:.0f}s; counterexamples under {args.out}")
    return 1 if failures else 0


def cmd_report(args) -> int:
    """One self-contained HTML page (report/html.py) from the matrix and bug-table JSON and
    counterexample files (or folders of them)."""
    from rmqcheck.report import html as report_html

    paths: list[Path] = []
    for name in args.counterexamples or [str(rediscovery.SCENARIOS / "toggles")]:
        p = Path(name)
        if p.is_dir():
            paths += sorted(q for q in p.iterdir() if q.suffix in (".json", ".scn"))
        elif p.exists():
            paths.append(p)
        else:
            raise UsageError(f"{p}: no such file or folder")
    cxs = report_html.counterexamples(paths)[: args.limit]
    page = report_html.page(_json_file(args.matrix, "--matrix"), _json_file(args.bugs, "--bugs"), cxs)
    _write(args.out, page)
    out.print(f"wrote {args.out}: {len(cxs)} counterexamples drawn, {len(page) / 1e6:.1f} MB")
    return 0


def _earlier_measures(path: str) -> list:
    try:
        return rediscovery.from_json(_json_file(path, "--update"))
    except ValueError as exc:
        raise UsageError(f"--update {path}: {exc}") from None


def _json_file(name: str | None, option: str) -> list | None:
    if name is None:
        return None
    try:
        data = json.loads(Path(name).read_text())
    except FileNotFoundError:
        raise UsageError(f"{option} {name}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{option} {name}: not readable JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise UsageError(f"{option} {name}: expected a JSON list of records, as the command's --json writes")
    return data


def _write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)


def _splice(path: str, name: str, text: str | None) -> None:
    """Replace the block `name` of `path`; with no text, only check now that it can."""
    try:
        if text is None:
            report_tables.check_block(Path(path), name)
        else:
            report_tables.splice(Path(path), name, text)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--readme {path}: {exc}") from None


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"--where wants KEY=VALUE, got {text!r}")
    return key, value


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


def _matrix_modes(text: str) -> tuple[str, ...]:
    names = tuple(n for n in text.split(",") if n)
    unknown = [n for n in names if n not in MATRIX_MODES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown mode(s) {unknown}; known: {', '.join(MATRIX_MODES)}")
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
        choices=("stateful", "explore", "walk", "guided"),
        default="stateful",
        help="stateful (Hypothesis), explore (breadth-first over growing scopes side by side: shortest "
        "counterexamples), walk (seeded random walks, delta-debugged), guided (walks restarted from states of a "
        "new shape, delta-debugged)",
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

    m = sub.add_parser("matrix", help="the guarantee matrix: which invariants hold under which configuration")
    m.add_argument("--budget", type=_budget, default=24.0,
                   help="seconds per controller-mode configuration, half exploring, half hunting (default 24)")
    m.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, help="processes (default: one per core)")
    m.add_argument("--modes", type=_matrix_modes, default=MATRIX_MODES,
                   help=f"comma-separated, of {','.join(MATRIX_MODES)} (default all)")
    m.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="only rows with this setting, as the table names it (repeatable; e.g. brokers=2)")
    m.add_argument("--snapshot", action="store_true", help="the snapshot model (its known defects on) instead of the intended one")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--out", default="counterexamples/matrix", help="directory for counterexample files")
    m.add_argument("--markdown", help="also write the tables to this file")
    m.add_argument("--json", help="also write every row and cell as JSON to this file")
    m.add_argument("--readme", help="replace the <!-- matrix:start/end --> block of this file with the tables")
    m.set_defaults(func=cmd_matrix)

    rp = sub.add_parser("report", help="a self-contained HTML page: matrix, bug table, counterexample diagrams")
    rp.add_argument("--out", default="counterexamples/report.html", help="the HTML file to write")
    rp.add_argument("--matrix", help="JSON written by rmqcheck matrix --json")
    rp.add_argument("--bugs", help="JSON written by rmqcheck bugs --measure --json")
    rp.add_argument("--counterexamples", action="append", metavar="PATH",
                    help="a counterexample file or a folder of them (repeatable; default scenarios/toggles)")
    rp.add_argument("--limit", type=_positive, default=60, help="counterexamples drawn at most (default 60)")
    rp.set_defaults(func=cmd_report)

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
    b.add_argument("--measure", action="store_true", help="time every search method on every toggle")
    b.add_argument("--only", action="append", metavar="NAME", help="with --measure: this toggle only (repeatable)")
    b.add_argument("--method", action="append", choices=rediscovery.METHODS,
                   help="with --measure: this method only (repeatable)")
    b.add_argument("--budget", type=_budget, default=300.0, help="with --measure: seconds per run (default 300)")
    b.add_argument("--seeds", type=_positive, default=5, help="with --measure: seeds of the seeded methods (default 5)")
    b.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, help="processes (default: one per core)")
    b.add_argument("--markdown", help="with --measure: also write the table here")
    b.add_argument("--json", help="with --measure: also write every run as JSON here")
    b.add_argument("--readme", help="with --measure: replace the <!-- bugs:start/end --> block of this file")
    b.add_argument("--update", metavar="JSON", help="with --measure and --only or --method: replace those measures "
                   "in this earlier --json file, keep the rest, and write the tables of the whole")
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
