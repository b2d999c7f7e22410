"""`rmqcheck explore`: exhaustive breadth-first exploration of a bounded configuration (or liveness)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from rmqcheck.checkers.counterexamples.files import Counterexample, write
from rmqcheck.checkers.search import explore, liveness, named, scoped
from rmqcheck.checkers.search import modes
from rmqcheck.checkers.search.hunting import explain, write_finding
from rmqcheck.checkers.tables import matrix
from rmqcheck.invariants.catalogue import CATALOGUE
from rmqcheck.invariants.liveness import LIVENESS
from rmqcheck.model import configs
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, format_action

from .common import (
    Bar,
    UsageError,
    work_folder,
    add_engine_options,
    add_result_options,
    budget_seconds,
    invariant_case,
    natural,
    out,
    positive,
)

NAME = "explore"
HELP = "exhaustive breadth-first exploration of a bounded configuration"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ("--config",)


def epoch_bound(text: str) -> int:
    """An epoch bound: 0 would leave nothing to explore (no election, so no master) and be
    reported as an exhaustive pass."""
    value = natural(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 leaves nothing to explore (the first election makes epoch 1); give 1 or more")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", default="std2", help=f"standard ({', '.join([*named.STANDARD, *named.MODE_CONFIGS])}), named or JSON file"
    )
    p.add_argument("--budget", type=budget_seconds, default=None, help="seconds (default: until exhausted)")
    p.add_argument("--messages", type=natural, help="override max_messages")
    p.add_argument("--max-epoch", type=epoch_bound, help="masterEpoch bound (1 or more: the first election makes 1)")
    p.add_argument("--max-sss-epoch", type=epoch_bound, help="syncStateSetEpoch bound (1 or more)")
    p.add_argument("--max-depth", type=positive, help="depth bound")
    p.add_argument("--symmetry", action=argparse.BooleanOptionalAction, default=None, help="broker renaming")
    p.add_argument("--sleep-sets", action="store_true",
                   help="skip steps that another order of the same independent steps covers: the same states, "
                        "fewer transitions (controller mode's safety invariants; docs/exploration.md)")
    p.add_argument("--out", default="counterexamples", help="directory for counterexample files")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--liveness", action="store_true", help="check the liveness properties (L1-L3) instead")
    p.add_argument("--bug", action="append", metavar="NAME", help="turn on a bug toggle (repeatable)")
    add_engine_options(p, "the levels of the breadth-first search")
    p.add_argument("--work-dir", help="with --engine spark: where each level is written (default "
                   "build/explore/<config>); a run interrupted there resumes from its last level done")
    add_result_options(p)


def run(args) -> int:
    if args.engine != "spark" and (args.master or args.work_dir):
        raise UsageError("--master and --work-dir go with --engine spark")
    if args.engine == "spark" and (args.config in named.MODE_CONFIGS or args.liveness):
        raise UsageError("--engine spark explores controller mode's safety invariants (not the other modes, nor --liveness)")
    if args.sleep_sets and (args.config in named.MODE_CONFIGS or args.liveness):
        raise UsageError("--sleep-sets goes with controller mode's safety invariants (not the other modes, nor "
                         "--liveness, which needs every transition)")
    if args.config in named.MODE_CONFIGS:
        return _explore_mode(args)
    if args.config in named.STANDARD:
        std = named.STANDARD[args.config]
        cfg, bounds, description = std.cfg, std.bounds, std.description
    else:
        cfg = configs.load(args.config)
        bounds, description = explore.Bounds(), args.config
    overrides = {k: v for k, v in (("max_epoch", args.max_epoch), ("max_sss_epoch", args.max_sss_epoch),
                                   ("max_depth", args.max_depth)) if v is not None}
    if args.symmetry is not None:
        overrides["symmetry"] = args.symmetry
    if args.sleep_sets:
        overrides["sleep_sets"] = True
    bounds = bounds._replace(**overrides)
    if args.messages is not None:
        cfg = configs.from_dict({"max_messages": args.messages}, "--messages", cfg)
    if args.bug:
        cfg = configs.from_dict({"bugs": sorted(cfg.bugs | set(args.bug))}, "--bug", cfg)
    if args.config in named.STANDARD and (overrides or args.messages is not None or args.bug):
        description += "; changed by the options given (what runs is below)"
    if args.liveness:
        return _explore_liveness(args, cfg, bounds._replace(symmetry=False), description)
    out.print(f"exploring {args.config}: {description}")
    _print_bounds(cfg, bounds)
    if args.engine == "spark":
        r = _explore_spark(args, cfg, bounds)
    else:
        ex = explore.Explorer(cfg, bounds)
        with Bar(f"exploring {args.config}", args.budget, quiet=args.quiet) as bar:
            r = ex.run(args.budget, progress=bar.explored, progress_every=1.0)
    verdict = "exhaustive" if r.exhaustive else f"NOT exhaustive (stopped: {r.stopped})"
    slept = f" ({r.slept:,} more skipped by sleep sets)" if bounds.sleep_sets else ""
    out.print(
        f"{r.states:,} distinct states, {r.transitions:,} transitions{slept}, depth {r.depth}, {r.seconds:.1f}s "
        f"({r.states / max(r.seconds, 1e-9):,.0f} states/s); {r.pruned:,} states at the bounds not expanded; "
        f"{verdict}; fingerprint collision probability <= {r.collision_bound:.1e}"
    )
    table = Table(title="invariants")
    for col in ("invariant", "expected here", "verdict", "shortest counterexample"):
        table.add_column(col, overflow="fold")
    failed = 0
    out_dir = Path(args.out)
    suite = f"explore {args.config}"
    reach = [] if r.exhaustive else [f"not exhaustive: {r.stopped}, every state within {r.depth} steps checked"]
    for inv in CATALOGUE:
        hit = r.hits.get(inv.id)
        expected = inv.expected(cfg)
        name = f"{inv.id} {inv.name}"
        if hit is None:
            verdict_text = "holds" + ("" if r.exhaustive else " (so far)")
            where = "-"
            invariant_case(args.results, suite, name, expected, None, r.seconds, reach)
        else:
            failed += expected
            verdict_text = "[red]VIOLATED[/]" if expected else "violated (not promised here)"
            finding = explain(cfg, list(hit.actions), inv.id, hit.message, None, "explore", len(hit.actions))
            path = write_finding(finding, out_dir / f"explore-{configs.label(args.config)}-{inv.id}.json")
            where = f"{len(hit.actions)} steps: {path}"
            invariant_case(args.results, suite, name, expected,
                           (inv.id, finding.kind, len(hit.actions), hit.message, path), r.seconds, reach)
        table.add_row(name, "yes" if expected else "no", verdict_text, where)
    out.print(table)
    _print_coverage(r.coverage)
    return 1 if failed else 0


def _explore_spark(args, cfg: Config, bounds: explore.Bounds) -> explore.Result:
    """The breadth-first search as Spark jobs, a line per level (checkers/search/distributed.py)."""
    from rmqcheck.checkers.search import distributed
    from rmqcheck.traces.spark import session
    from rmqcheck.traces.validate import SparkUnavailable

    work = work_folder(args.work_dir, Path("build") / "explore" / configs.label(args.config))
    try:
        python = distributed.stable_python(Path("build") / "spark")
        spark = session(args.master, python, "rmqcheck explore")
        ex = distributed.SparkExplorer(spark, cfg, bounds, work)
        out.print(f"Spark master {spark.sparkContext.master}, work directory {work}")

        def level(p: distributed.Level) -> None:
            out.print(f"  depth {p.depth:3d}: {p.states:>12,} states, frontier {p.new:,} new, {p.transitions:,} "
                      f"transitions, {p.seconds:.1f}s, {p.new / max(p.seconds, 1e-9):,.0f} new states/s")

        return ex.run(args.budget, progress=level)
    except (distributed.ExploreError, SparkUnavailable) as exc:
        raise UsageError(str(exc)) from None


def _explore_mode(args) -> int:
    """Classic HA, DLedger or store recovery: the whole space its budgets bound."""
    cfg, description = named.MODE_CONFIGS[args.config]
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
    for c in row.cells:
        inv = invariants[c.invariant]
        invariant_case(args.results, f"explore {args.config}", f"{inv.id} {inv.name}", c.promised,
                       (c.invariant, c.kind, c.steps, c.message, c.path) if c.kind else None, row.explore_seconds)
    return 1 if any(c.promised and c.kind for c in row.cells) else 0


def _print_bounds(cfg: Config, bounds: explore.Bounds) -> None:
    out.print(f"  bounds: {bounds}; faults {scoped.fault_text(cfg)}; toggles {sorted(cfg.bugs) or 'none'}")


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
            args.results.add(f"liveness {args.config}", f"{prop.id} {prop.name}", seconds=e.seconds)
            continue
        failed += 1
        actions = lasso.prefix + lasso.cycle
        cx = Counterexample(cfg, actions, prop.id, f"obligation {lasso.obligation} open on a fair cycle",
                            method="explore", loop=len(lasso.prefix))
        path = write(cx, Path(args.out) / f"liveness-{configs.label(args.config)}-{prop.id}.json")
        out.print(
            f"[bold red]{prop.id} {prop.name} VIOLATED[/]: {lasso.obligation} stays open on a fair cycle "
            f"({len(lasso.prefix)} steps to it, {len(lasso.cycle)} around it, SCC of {lasso.scc_size} states)"
        )
        for i, a in enumerate(actions, start=1):
            mark = "  <- loop" if i == len(lasso.prefix) + 1 else ""
            out.print(f"  {i:3d}. {format_action(a)}{mark}")
        out.print(f"  counterexample: {path}   (replay: rmqcheck replay {path})")
        args.results.add(f"liveness {args.config}", f"{prop.id} {prop.name}", "failed",
                         f"{prop.id} violated: {lasso.obligation} stays open on a fair cycle", invariant=prop.id,
                         file=path, seconds=e.seconds)
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
