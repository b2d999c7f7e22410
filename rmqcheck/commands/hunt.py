"""`rmqcheck hunt`: search one configuration, or the intended baseline plus bug toggles, with one method."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path

from rmqcheck.checkers.search import explore, scoped, swarm
from rmqcheck.checkers.search.hunting import (
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
from rmqcheck.checkers.search.portfolio import Found, portfolio
from rmqcheck.checkers.search.walk import GUIDED_HOP, WALK_DEPTH, guided, walk
from rmqcheck.invariants.catalogue import BY_ID, expected_ids
from rmqcheck.model import configs
from rmqcheck.model.bugs import BY_NAME
from rmqcheck.model.config import SCALES, Config, scaled
from rmqcheck.model.step import format_action

from .common import (
    Bar,
    UsageError,
    work_folder,
    add_engine_options,
    add_result_options,
    budget_seconds,
    findings_case,
    out,
    positive,
    spark_for,
)

NAME = "hunt"
HELP = "search for a violation of the invariants expected to hold"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ("--config",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bug", action="append", metavar="NAME", help="turn on a bug toggle (repeatable)")
    p.add_argument(
        "--method",
        choices=("stateful", "explore", "walk", "guided", "portfolio"),
        default="stateful",
        help="stateful (Hypothesis), explore (breadth-first over growing scopes side by side: shortest "
        "counterexamples), walk (seeded random walks, delta-debugged), guided (walks restarted from states of a "
        "new shape, delta-debugged), portfolio (stateful, guided and explore side by side with --jobs 2 or more, in "
        "turns with one; a seed of each per round, "
        "every violated invariant reported with the method that found it)",
    )
    p.add_argument("--rounds", type=positive, default=4, help="portfolio: rounds, so seeds per seeded method (default 4)")
    p.add_argument("--swarm", type=positive, metavar="N",
                   help="N independent seeds (--seed, --seed + 1, ...) of the method side by side, each with the whole "
                        "budget; the first finding wins and the others stop (stateful, walk or guided)")
    p.add_argument("--jobs", type=positive, default=os.cpu_count() or 1,
                   help="--swarm with --engine local: processes; --method portfolio: 2 or more runs its three methods side "
                        "by side, a process each, 1 in turns on one core (default: the number of cores)")
    add_engine_options(p, "--swarm's seeds, or --method explore's levels")
    p.add_argument("--work-dir", help="--method explore with --engine spark: where the scopes' levels are written "
                   "(default build/hunt/<configuration hash>); a run with the same options resumes there")
    p.add_argument("--scale", choices=tuple(SCALES), help="offsets at this scale (model/config.py SCALES; default: "
                   "the configuration's own, small for the named ones)")
    p.add_argument("--stratified", action="store_true",
                   help="--method guided: stratified swarm rounds (rounds from rare offset shapes with faults left, "
                        "action kinds left out at random: reach a restart with confirmOffset inside a message; "
                        "slower on some toggles, docs/exploration.md)")
    p.add_argument("--depth", type=positive, default=WALK_DEPTH, help=f"walk: steps per walk (default {WALK_DEPTH})")
    p.add_argument("--budget", type=budget_seconds, default=120.0, help="seconds (default 120)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="counterexample file (default counterexamples/<label>-<invariant>-seed<N>.json)")
    p.add_argument("--config", help=f"named configuration ({', '.join(configs.NAMED)}) or JSON file")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--snapshot", action="store_true", help="with --bug: keep the snapshot's own defects on as well")
    mode.add_argument(
        "--intended",
        action="store_true",
        help="without --bug: hunt the intended baseline (every in-snapshot defect fixed)",
    )
    add_result_options(p)


def run(args) -> int:
    toggles = frozenset(args.bug or ())
    unknown = sorted(toggles - BY_NAME.keys())
    if unknown:
        raise UsageError(f"unknown bug toggle(s) {unknown}; see `rmqcheck bugs --list`")
    if toggles:
        cfg = _toggle_config(toggles, args.config, args.snapshot)
    else:
        cfg = configs.with_bugs(configs.load(args.config or "durable"), frozenset(), not args.intended)
    if args.scale:
        cfg = scaled(cfg, args.scale)
    targets = expected_ids(cfg)
    label = "+".join(sorted(toggles)) or configs.label(args.config or "durable") + ("-intended" if args.intended else "")
    if args.scale:
        label += f"-{args.scale}"
    if args.stratified and (args.method != "guided" or args.swarm):
        raise UsageError("--stratified goes with --method guided, without --swarm")
    if args.swarm:
        return _hunt_swarm(cfg, targets, label, args)
    if (args.engine != "local" or args.master) and args.method != "explore":
        raise UsageError("--engine spark and --master go with --swarm or --method explore")
    if args.method == "portfolio":
        return _hunt_portfolio(cfg, targets, label, args)
    out.print(
        f"hunting {label} ({args.method}): {len(cfg.bugs)} toggles on, invariants {', '.join(sorted(targets))}, "
        f"budget {args.budget:g}s, seed {args.seed}"
    )
    hunters = {"stateful": _hunt_stateful, "explore": _hunt_explore, "walk": _hunt_walk, "guided": _hunt_guided}
    started = time.perf_counter()
    with Bar(f"{label} ({args.method})", args.budget) as bar:
        finding = hunters[args.method](cfg, targets, args, bar)
    seconds = time.perf_counter() - started
    case = f"{label} ({args.method}, seed {args.seed})"
    if finding is None:
        out.print(f"[green]no violation found[/] within {args.budget:g}s")
        args.results.add("hunt", case, seconds=seconds, notes=[f"invariants {', '.join(sorted(targets))}"])
        return 0
    path = Path(args.out) if args.out else default_path("counterexamples", f"{label}-{args.method}", finding)
    write_finding(finding, path)
    _print_finding(finding, path)
    cx = finding.counterexample
    args.results.add("hunt", case, "failed", f"{cx.invariant} {BY_ID[cx.invariant].name} violated ({finding.kind}, "
                     f"{len(cx.actions)} steps): {cx.message}", invariant=cx.invariant, file=path, seconds=seconds,
                     notes=[finding.note])
    return 1


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
        "explore": "(breadth-first)",
    }.get(cx.method, "")
    seed = "" if cx.seed is None else f"; seed {cx.seed}"
    out.print(f"  {len(cx.actions)} steps {how}{seed}")
    for i, a in enumerate(cx.actions, start=1):
        out.print(f"  {i:3d}. {format_action(a)}")
    if path is not None:
        out.print(f"  counterexample: {path}   (replay: rmqcheck replay {path})")


def _hunt_stateful(cfg: Config, targets, args, bar: Bar) -> Finding | None:
    finding, result = find(cfg, targets, args.budget, args.seed, on_batch=bar.stateful)
    rate = result.stats.steps / max(result.seconds, 1e-9)
    out.print(
        f"{result.stats.examples} examples, {result.stats.steps} steps in {result.seconds:.1f}s ({rate:,.0f} steps/s)"
    )
    return finding


def _hunt_explore(cfg: Config, targets, args, bar: Bar) -> Finding | None:
    if args.engine == "spark":
        from rmqcheck.checkers.search import distributed

        digest = hashlib.sha1(json.dumps(configs.to_dict(cfg), sort_keys=True).encode()).hexdigest()[:12]
        work = work_folder(args.work_dir, Path("build") / "hunt" / digest)
        try:
            spark = spark_for(args, "rmqcheck hunt --method explore", distributed.stable_python(Path("build") / "spark"))
            found, tried = distributed.hunt(spark, cfg, targets, args.budget, work)
        except distributed.ExploreError as exc:
            raise UsageError(str(exc)) from None
    else:
        found, tried = scoped.hunt(cfg, targets, args.budget, lambda scope, p: bar.explored(p, scope))
    for scope, bounds, r in tried:
        out.print(
            f"scope {scoped.describe_scope(scope, bounds)}: {r.states:,} states, {r.transitions:,} "
            f"transitions, depth {r.depth}, {r.seconds:.1f}s, {r.stopped}"
        )
    if found is None:
        return None
    h = found.hit
    if found.shortest:
        out.print(f"the shortest counterexample of every scope ({len(h.actions)} steps; the first scope and invariant "
                  f"on a tie): the same on either engine")
    else:
        out.print(f"shortest within its scope only: the budget ended before {len(found.unsettled)} other scope(s) were "
                  f"explored deep enough to rule out a shorter one ({'; '.join(found.unsettled)})")
    return explain(found.cfg, list(h.actions), h.invariant, h.message, None, "explore", len(h.actions))


def _print_reached(coverage) -> None:
    """The "sometimes" witnesses a randomised hunt reached, as `explore` reports them: one it
    never reached is a situation it says nothing about."""
    rows = [(name, status) for name, status, _ in coverage.report() if not status.startswith("n/a")]
    missed = [name for name, status in rows if status == "NOT REACHED"]
    line = f"coverage: {len(rows) - len(missed)} of {len(rows)} witnesses reached"
    if missed:
        line += f"; [bold red]not reached: {', '.join(missed)}[/] (this hunt says nothing about them)"
    out.print(line)


def _hunt_walk(cfg: Config, targets, args, bar: Bar) -> Finding | None:
    r = walk(cfg, args.seed, args.depth, args.budget, targets, progress=bar.walked("walks"))
    summary = f"{r.walks:,} walks of up to {args.depth} steps, {r.steps:,} steps in {r.seconds:.1f}s"
    return _walk_finding(cfg, r, args, "walk", summary, "walk")


def _hunt_guided(cfg: Config, targets, args, bar: Bar) -> Finding | None:
    r = guided(cfg, args.seed, args.budget, targets, progress=bar.walked("rounds"), stratified=args.stratified)
    summary = (f"{r.walks:,} rounds of {GUIDED_HOP} steps from {r.kept:,} kept states, {r.steps:,} steps in "
               f"{r.seconds:.1f}s")
    return _walk_finding(cfg, r, args, "guided", summary, "round", " from the start")


def _hunt_swarm(cfg: Config, targets, label: str, args) -> int:
    """--swarm N (checkers/search/swarm.py): the first seed to find wins."""
    if args.method not in swarm.METHODS:
        raise UsageError(f"--swarm runs seeds of a seeded method: {', '.join(swarm.METHODS)}, not {args.method}")
    seeds = range(args.seed, args.seed + args.swarm)
    spark = spark_for(args, "rmqcheck hunt --swarm")
    where = f"Spark {spark.sparkContext.master}" if spark else f"{min(args.jobs, args.swarm)} processes"
    out.print(f"swarm of {args.swarm} seeds ({seeds.start}-{seeds.stop - 1}) of {args.method}, {args.budget:g}s each, "
              f"on {where}")
    started = time.perf_counter()
    with Bar(f"{label} (swarm)", args.swarm, timed=False) as bar:
        winner, ended = swarm.swarm(cfg, targets, args.method, seeds, args.budget, args.jobs, spark,
                                    lambda r: bar.update(f"seed {r.seed} ended", advance=1))
    seconds = time.perf_counter() - started
    misses = sorted(r.seed for r in ended if r.finding is None)
    out.print(f"{len(ended)} seeds ended in {seconds:.1f}s" + (f"; no violation with seeds {misses}" if misses else ""))
    case = f"{label} ({args.method} swarm of {args.swarm}, seeds {seeds.start}-{seeds.stop - 1})"
    if winner is None:
        out.print(f"[green]no violation found[/] by any seed within {args.budget:g}s")
        args.results.add("hunt", case, seconds=seconds)
        return 0
    out.print(f"seed {winner.seed} found it first, after {winner.seconds:.1f}s:")
    path = Path(args.out) if args.out else default_path("counterexamples", f"{label}-{args.method}", winner.finding)
    write_finding(winner.finding, path)
    _print_finding(winner.finding, path)
    cx = winner.finding.counterexample
    args.results.add("hunt", case, "failed", f"{cx.invariant} {BY_ID[cx.invariant].name} violated "
                     f"({winner.finding.kind}, {len(cx.actions)} steps, seed {winner.seed}): {cx.message}",
                     invariant=cx.invariant, file=path, seconds=seconds, notes=[winner.finding.note])
    return 1


def _hunt_portfolio(cfg: Config, targets, label: str, args) -> int:
    """Every method, side by side or in turns (checkers/search/portfolio.py): each violated
    invariant printed and written as it is found, then what each method did."""
    found: list[tuple] = []

    def on_found(f: Found) -> None:
        path = default_path("counterexamples", f"{label}-portfolio", f.finding)
        if args.out and not found:
            path = Path(args.out)
        write_finding(f.finding, path)
        seed = "" if f.seed is None else f", seed {f.seed}"
        out.print(f"found by {f.method}{seed} after {f.at:.1f}s:")
        _print_finding(f.finding, path)
        cx = f.finding.counterexample
        found.append((cx.invariant, f.finding.kind, len(cx.actions), cx.message, path))

    with Bar(f"{label} (portfolio)", args.budget) as bar:
        result = portfolio(cfg, targets, args.budget, args.seed, args.rounds, on_found,
                           lambda method, share: bar.update(f"{method} {share:.0f}s"), jobs=args.jobs)
    for run in result.methods:
        out.print(f"  {run.describe()}")
    if not found:
        out.print(f"[green]no violation found[/] within {args.budget:g}s")
    findings_case(args.results, "hunt", f"{label} (portfolio, seed {args.seed})", found, result.seconds,
                  [run.describe() for run in result.methods])
    return 1 if found else 0


def _walk_finding(cfg: Config, r, args, method: str, summary: str, unit: str, since: str = "") -> Finding | None:
    """Print a walk run's summary, its coverage and its hit; the hit's delta-debugged finding."""
    out.print(summary)
    _print_reached(r.coverage)
    if r.hit is None:
        return None
    h = r.hit
    out.print(f"{unit} {h.walk} of seed {args.seed} violated {h.invariant} after {len(h.actions)} steps{since}")
    return explain(cfg, list(h.shrunk), h.invariant, h.message, args.seed, method, len(h.actions))
