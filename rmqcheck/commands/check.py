"""`rmqcheck check`, the default job: a portfolio hunt of each standard configuration at each
scale, the other modes explored, a conformance pass, recorded runs validated."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from rich.table import Table

from rmqcheck.checkers.java import conform, coverage
from rmqcheck.checkers.java.build import BuildError
from rmqcheck.checkers.java.driver import DriverError
from rmqcheck.checkers.search import explore, named
from rmqcheck.checkers.search.hunting import EXPECTED, UNEXPLAINED, write_finding
from rmqcheck.checkers.search.portfolio import Found, portfolio
from rmqcheck.checkers.tables import matrix
from rmqcheck.checkers.tables.matrix import MODE_BUDGET
from rmqcheck.invariants.catalogue import BY_ID
from rmqcheck.model import configs
from rmqcheck.model.config import SCALES, scaled
from rmqcheck.traces.recorder import Corpus, simulate

from .common import (
    Bar,
    Drivers,
    UsageError,
    add_result_options,
    add_source_argument,
    budget_or_none,
    budget_seconds,
    divergence_text,
    findings_case,
    name_list,
    out,
    positive,
    print_validation,
    row_case,
    Stage,
    run_validation,
)

NAME = "check"
HELP = "the default job: hunt each standard configuration and tabulate"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ("--rocketmq-src",)


# The default job: the snapshot under its defaults and under the durable settings, and the
# intended baseline under the durable settings.
CHECK_JOBS = (
    ("default", True),
    ("durable", True),
    ("durable3", True),
    ("durable3", False),
    ("learner-first", True),
    ("priority-last", False),
)


# The other modes' configurations the default job explores exhaustively (about a minute).
CHECK_MODES = ("classic", "classic-async-flush", "dledger", "recovery", "recovery-controller")


# Each configuration is hunted with the model's own small offsets and with offsets near 2^63 and
# replicas gigabytes apart (model/config.py SCALES), where the code's int casts of long
# differences show.
CHECK_SCALES = ("small", "large")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=budget_seconds, default=240.0,
                   help="seconds of hunting in all, shared by the configurations and scales (default 240)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=positive, default=2,
                   help="portfolio rounds per configuration, so seeds per seeded method (default 2)")
    p.add_argument("--jobs", type=positive, default=os.cpu_count() or 1,
                   help="2 or more: each portfolio's three methods side by side, a process each; 1: in turns on one core "
                        "(default: the number of cores)")
    p.add_argument("--scales", type=name_list(SCALES, "scale(s)"), default=CHECK_SCALES,
                   help=f"offset scales to hunt each configuration at, comma-separated (default {','.join(CHECK_SCALES)})")
    p.add_argument("--out", default="counterexamples", help="directory for counterexample files")
    p.add_argument("--trace-runs", type=positive, default=400, help="recorded runs validated at the end (default 400)")
    p.add_argument("--engine", choices=("local", "spark"), default="spark", help="trace validation engine (default spark)")
    p.add_argument(
        "--modes",
        type=name_list(named.MODE_CONFIGS, "configuration(s)", allow_empty=True),
        default=CHECK_MODES,
        help=f"other modes' configurations to explore, comma-separated, '' for none (default {','.join(CHECK_MODES)})",
    )
    p.add_argument("--conform-budget", type=budget_or_none, default=15.0,
                   help="seconds of conformance against RocketMQ's classes, 0 for none (default 15)")
    add_source_argument(p)
    add_result_options(p)


def run(args) -> int:
    with Stage("hunt") as stage:
        unexplained = _check_hunts(args, Path(args.out))
        stage.verdict = f"failed ({unexplained} unexplained)" if unexplained else "passed"
    with Stage("other modes") as stage:
        modes = _check_modes(args, Path(args.out))
        stage.verdict = f"failed ({modes} unexplained)" if modes else "passed" if args.modes else "skipped"
    with Stage("conformance") as stage:
        diverged = _check_conformance(args, Path(args.out))
        stage.verdict = "failed (diverged)" if diverged else "passed" if args.conform_budget > 0 else "skipped"
    with Stage("traces") as stage:
        broken = _check_traces(args, Path(args.out))
        stage.verdict = "failed" if broken else "passed"
    return 1 if unexplained or modes or diverged or broken else 0


class Legend:
    """Why a violation is expected, said once below a table and named by a number in its cells."""

    def __init__(self) -> None:
        self.reasons: dict[str, int] = {}

    def mark(self, inv_id: str) -> str:
        n = self.reasons.setdefault(BY_ID[inv_id].expected_when, len(self.reasons) + 1)
        return f"not promised here [{n}]"

    def print(self) -> None:
        for reason, n in self.reasons.items():
            out.print(f"[{n}] promised only with {reason}")


def _check_hunts(args, out_dir: Path) -> int:
    """The hunting stage: a portfolio per configuration and scale. Returns the number of
    unexplained violations."""
    jobs = [(name, snapshot, scale) for name, snapshot in CHECK_JOBS for scale in args.scales]
    per_job = args.budget / len(jobs)
    legend = Legend()
    summary = Table(title=f"rmqcheck check: a {per_job:g}s portfolio per configuration and scale, seed {args.seed}",
                    show_lines=True)
    for col in ("configuration", "scale", "model", "held (no violation found)", "violated (found by)", "methods"):
        summary.add_column(col, overflow="fold")
    unexplained = 0
    for name, snapshot, scale in jobs:
        cfg = scaled(configs.with_bugs(configs.load(name), frozenset(), snapshot), scale)
        model = "snapshot" if snapshot else "intended"
        found: list[tuple[Found, Path]] = []

        def on_found(f: Found) -> None:
            inv = f.finding.counterexample.invariant
            found.append((f, write_finding(f.finding, out_dir / f"{name}-{scale}-{model}-{inv}.json")))

        with Bar(f"{name}/{scale}/{model}", per_job) as bar:
            result = portfolio(cfg, BY_ID, per_job, args.seed, args.rounds, on_found,
                               lambda method, share: bar.update(f"{method} {share:.1f}s"), jobs=args.jobs)
        unexplained += sum(f.finding.kind == UNEXPLAINED for f, _ in found)
        methods = [run.describe() for run in result.methods]
        findings_case(args.results, "hunt", f"{name}/{scale}/{model}", [
            (f.finding.counterexample.invariant, f.finding.kind, len(f.finding.counterexample.actions),
             f.finding.counterexample.message, p) for f, p in found], result.seconds, methods)
        violated = "\n".join(
            f"{f.finding.counterexample.invariant} ({f.finding.kind}, {len(f.finding.counterexample.actions)} steps, "
            f"{f.method}{'' if f.seed is None else f' seed {f.seed}'} at {f.at:.1f}s): "
            f"{legend.mark(f.finding.counterexample.invariant) if f.finding.kind == EXPECTED else f.finding.note}"
            f"\n  -> {p}"
            for f, p in found
        ) or "-"
        broken = {f.finding.counterexample.invariant for f, _ in found}
        held = ", ".join(i for i in BY_ID if i not in broken) or "-"
        summary.add_row(f"{name}: {configs.NAMED[name][1]}", scale, model, held, violated, "\n".join(methods))
    out.print(summary)
    legend.print()
    out.print(
        "expected: not promised under that configuration; snapshot defect: disappears with the "
        "intended form of a known defect (rmqcheck bugs --list); unexplained: a failure."
    )
    return unexplained


def _check_conformance(args, out_dir: Path) -> bool:
    """The conformance stage: a short `rmqcheck conform` pass on the shared RocketMQ tree (or
    --rocketmq-src); True if the code and the model diverged. Without a JDK or a tree it says so
    in one line and goes on."""
    case = "RocketMQ's classes against the model"
    if args.conform_budget <= 0:
        args.results.add("conformance", case, "skipped", "--conform-budget 0")
        return False
    with tempfile.TemporaryDirectory(prefix="rmqcheck-coverage-") as scratch:
        try:  # with the branch coverage of RocketMQ's classes, where JaCoCo is installed
            drivers, measured = Drivers(args.rocketmq_src, coverage=Path(scratch)), ""
        except UsageError as exc:
            measured = f"coverage not measured: {exc}"
            try:
                drivers = Drivers(args.rocketmq_src)
            except UsageError as exc:
                out.print(f"[yellow]conformance skipped: {exc}[/]")
                args.results.add("conformance", case, "skipped", str(exc))
                return False
        try:
            with drivers:
                tally = conform.conform(drivers.core, args.seed, args.conform_budget, ha_driver=drivers.ha)
            measured = measured or coverage.summary(coverage.measure(drivers.builds))
        except DriverError as exc:
            out.print(f"[bold red]conformance failed: {exc}[/]")
            args.results.add("conformance", case, "error", f"the Java driver failed: {exc}")
            return True
        except BuildError as exc:
            measured = f"coverage not measured: {exc}"
    rate = tally.operations / max(tally.seconds, 1e-9)
    line = (f"conformance with RocketMQ's classes ({drivers.loaded()}): {tally.sequences:,} sequences, "
            f"{tally.operations:,} requests compared in {tally.seconds:.1f}s ({rate:,.0f}/s); {measured}")
    if tally.divergence is None:
        out.print(f"{line}: [green]agreed on every request[/]")
        args.results.add("conformance", case, seconds=tally.seconds, notes=[line])
        return False
    path = conform.write_scenario(tally.divergence, out_dir / f"conform-seed{args.seed}.scn",
                                  f"rmqcheck check --seed {args.seed}")
    out.print(f"{line}: [bold red]diverged[/] after {len(tally.divergence.steps)} requests -> {path}")
    args.results.add("conformance", case, "failed", divergence_text(tally.divergence),
                     invariant="conformance", file=path, seconds=tally.seconds)
    return True


def _check_modes(args, out_dir: Path) -> int:
    """The other-modes stage of the default job: explore each configuration (checkers/tables/matrix.py
    classifies what breaks). Returns the number of unexplained violations."""
    if not args.modes:
        return 0
    table = Table(title="other modes: exhaustive exploration", show_lines=True)
    for col in ("configuration", "explored", "held", "violated"):
        table.add_column(col, overflow="fold")
    unexplained = 0
    for name in args.modes:
        cfg, description = named.MODE_CONFIGS[name]
        row = matrix.check_mode(cfg, MODE_BUDGET, out_dir, name=f"explore-{name}")
        unexplained += len(row.unexplained())
        row_case(args.results, "explore", name, row)
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


def _check_traces(args, out_dir: Path) -> bool:
    """The trace stage of the default job: record runs of the durable configurations (intended
    model) and validate them on the chosen engine; True if a guarantee broke."""
    corpus_dir = out_dir / "corpus"
    shutil.rmtree(corpus_dir, ignore_errors=True)
    simulate(Corpus(seed=args.seed, runs=args.trace_runs, runs_per_file=max(1, args.trace_runs // 4), stores=True), corpus_dir)
    report, seconds = run_validation([str(corpus_dir)], args.engine, False, None, True)
    print_validation(report, seconds, False, out_dir / "validate-violations.ndjson", 5, args.results)
    return report.failed()
