"""`rmqcheck bugs`: list the bug toggles, or measure how fast each method finds each."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter

from rmqcheck.checkers.search import modes
from rmqcheck.checkers.tables import rediscovery
from rmqcheck.model.bugs import SNAPSHOT, TOGGLES
from rmqcheck.outputs import check_output
from rmqcheck.report import tables as report_tables

from .common import (
    Bar,
    UsageError,
    add_engine_options,
    add_result_options,
    budget_seconds,
    json_file,
    out,
    positive,
    spark_for,
    splice,
    write_text,
)

NAME = "bugs"
HELP = "list the bug toggles"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--markdown", "--json", "--readme")
INPUTS = ("--update",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--list", action="store_true", help="list them (the default)")
    p.add_argument("--measure", action="store_true", help="time every search method on every toggle")
    p.add_argument("--only", action="append", metavar="NAME", help="with --measure: this toggle only (repeatable)")
    p.add_argument("--method", action="append", choices=rediscovery.METHODS,
                   help="with --measure: this method only (repeatable)")
    p.add_argument("--budget", type=budget_seconds, default=300.0, help="with --measure: seconds per run (default 300)")
    p.add_argument("--seeds", type=positive, default=5, help="with --measure: seeds of the seeded methods (default 5)")
    p.add_argument("--jobs", type=positive, default=os.cpu_count() or 1, help="processes (default: one per core)")
    add_engine_options(p, "each (toggle, method) measure")
    p.add_argument("--markdown", help="with --measure: also write the table here")
    p.add_argument("--json", help="with --measure: also write every run as JSON here")
    p.add_argument("--readme", metavar="FILE", help="with --measure: replace the <!-- bugs:start/end --> block of "
                   "this file (make bugs: docs/bugs.md)")
    p.add_argument("--update", metavar="JSON", help="with --measure and --only or --method: replace those measures "
                   "in this earlier --json file, keep the rest, and write the tables of the whole")
    add_result_options(p)


def run(args) -> int:
    if args.measure:
        return _measure_bugs(args)
    for t in TOGGLES:
        where = "in the snapshot (on by default)" if t.in_snapshot else "not in the snapshot"
        caught = ", ".join(t.catches) or "nothing (see docs/findings.md)"
        out.print(f"[bold]{t.name}[/]  {t.ref}, {where}; caught by {caught}")
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
    """The rediscovery benchmark (checkers/tables/rediscovery.py): a table of methods x toggles, in
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
    for option, path in (("--markdown", args.markdown), ("--json", args.json)):
        check_output(path, option)  # before the work, not after
    if args.readme:
        splice(args.readme, "bugs", None)
    runs = sum(args.seeds if m in rediscovery.SEEDED else 1 for s in measured for m in s.methods)
    spark = spark_for(args, "rmqcheck bugs --measure")
    where = f"Spark {spark.sparkContext.master}" if spark else f"{args.jobs} jobs"
    out.print(f"measuring {len(chosen)} toggles: up to {runs} runs of at most {args.budget:g}s, {where}")
    start = time.perf_counter()

    with Bar("measuring", runs, timed=False) as bar:
        def progress(m) -> None:
            bar.update(f"last: {m.toggle} {m.method}: {report_tables._method_cell(m)}", advance=len(m.attempts))

        measures = rediscovery.measure(measured, args.seeds, args.budget, args.jobs, progress, spark)
    minutes = (time.perf_counter() - start) / 60
    note = f"in {minutes:.0f} min with {where}"
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
        write_text(args.markdown, text + "\n")
    if args.json or args.update:
        write_text(args.json or args.update, json.dumps(rediscovery.to_json(measures), indent=1) + "\n")
    if args.readme:
        splice(args.readme, "bugs", text)
    missed = [s.toggle for s in chosen if s.methods and not any(
        m.median_seconds is not None for m in measures if (m.toggle, m.mode) == (s.toggle, s.mode))]
    for s in chosen:
        _toggle_case(args.results, s, [m for m in measures if (m.toggle, m.mode) == (s.toggle, s.mode)])
    if missed:
        out.print(f"[bold red]found by no method: {', '.join(missed)}[/]")
    return 1 if missed else 0


def _toggle_case(results, subject, measures: list) -> None:
    """A toggle is a case: failed when it should be found and no method found it in at least half
    its seeds; each method's time is a note."""
    notes = [f"{m.method}: {report_tables._method_cell(m)}" for m in measures]
    suite = f"bugs {subject.mode}"
    if not subject.methods:
        results.add(suite, subject.toggle, "skipped", f"no counterexample expected: {subject.note}")
    elif any(m.median_seconds is not None for m in measures):
        fastest = min(m.median_seconds for m in measures if m.median_seconds is not None)
        results.add(suite, subject.toggle, seconds=fastest, notes=notes)
    else:
        results.add(suite, subject.toggle, "failed", f"{subject.toggle} ({subject.ref}) found by no method "
                    f"within {max(m.budget for m in measures):g}s", invariant=subject.toggle, notes=notes)


def _earlier_measures(path: str) -> list:
    try:
        return rediscovery.from_json(json_file(path, "--update"))
    except ValueError as exc:
        raise UsageError(f"--update {path}: {exc}") from None
