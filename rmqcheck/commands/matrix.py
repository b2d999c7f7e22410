"""`rmqcheck matrix`: the guarantee matrix."""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from rmqcheck.checkers.search import modes
from rmqcheck.checkers.tables import matrix
from rmqcheck.checkers.tables.matrix import MODE_BUDGET
from rmqcheck.outputs import check_output
from rmqcheck.report import tables as report_tables

from .common import (
    Bar,
    UsageError,
    add_engine_options,
    add_result_options,
    name_list,
    out,
    positive,
    row_case,
    spark_for,
    splice,
    write_text,
)

NAME = "matrix"
HELP = "the guarantee matrix: which invariants hold under which configuration"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out", "--markdown", "--json", "--readme")
INPUTS = ()


MATRIX_MODES = ("controller", "classic", "dledger", "recovery")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"--where wants KEY=VALUE, got {text!r}")
    return key, value


def _factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _describe(work: matrix.Work) -> str:
    return (f"{work.states:,} states expanded, {work.batches} stateful batch{'es' if work.batches > 1 else ''} "
            f"and {work.walk_steps:,} guided-walk steps")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--work", type=_factor, default=1.0, metavar="F",
                   help=f"the work per controller-mode configuration, as a multiple of {_describe(matrix.Work())} "
                        "(default 1); counted, not timed, so a row's cells are the same on any machine")
    p.add_argument("--jobs", type=positive, default=os.cpu_count() or 1, help="processes (default: one per core)")
    add_engine_options(p, "each row")
    p.add_argument("--modes", type=name_list(MATRIX_MODES, "mode(s)"), default=MATRIX_MODES,
                   help=f"comma-separated, of {','.join(MATRIX_MODES)} (default all)")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="only rows with this setting, as the table names it (repeatable; e.g. brokers=2)")
    p.add_argument("--snapshot", action="store_true", help="the snapshot model (its known defects on) instead of the intended one")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="counterexamples/matrix", help="directory for counterexample files")
    p.add_argument("--markdown", help="also write the tables to this file")
    p.add_argument("--json", help="also write every row and cell as JSON to this file")
    p.add_argument("--readme", metavar="FILE", help="replace the <!-- matrix:start/end --> block of this file "
                   "with the tables (make matrix: docs/matrix.md)")
    add_result_options(p)


def run(args) -> int:
    """The guarantee matrix (checkers/tables/matrix.py): every configuration of the documented space,
    a verdict per invariant; Markdown and JSON copies, and docs/matrix.md's block when asked."""
    where = dict(_key_value(w) for w in args.where or ())
    controller = matrix.controller_space(args.snapshot) if "controller" in args.modes else []
    others = [c for c in matrix.mode_space(args.snapshot) if modes.mode_for(c).name in args.modes]
    controller = matrix.select(controller, matrix.controller_settings, where)
    others = matrix.select(others, matrix.mode_settings, where)
    if not controller and not others:
        raise UsageError("no configuration matches --where/--modes")
    for option, path in (("--markdown", args.markdown), ("--json", args.json)):
        check_output(path, option)  # before the work, not after
    if args.readme:
        splice(args.readme, "matrix", None)
    model = "snapshot" if args.snapshot else "intended"
    spark = spark_for(args, "rmqcheck matrix")
    where = f"Spark {spark.sparkContext.master}" if spark else f"{args.jobs} jobs"
    work = matrix.Work().times(args.work)
    out.print(
        f"guarantee matrix ({model} model): {len(controller)} controller-mode configurations, each {_describe(work)}, "
        f"and {len(others)} of the other modes explored; {where}"
    )
    start = time.perf_counter()

    with Bar("guarantee matrix", len(controller) + len(others), timed=False) as bar:
        def progress(row: matrix.Row) -> None:
            broken = ", ".join(f"{c.invariant}:{c.kind}" for c in row.cells if c.kind) or "none broken"
            bar.update(f"last: {row.mode} {matrix.label(row.settings)}: {broken}", advance=1)

        rows = matrix.run(controller, others, work, MODE_BUDGET, Path(args.out), args.seed, args.jobs, progress,
                          spark)
    seconds = time.perf_counter() - start
    note = (f"Generated by `rmqcheck matrix --work {args.work:g}` ({model} model: {_describe(work)} a "
            f"controller-mode row) in {seconds / 60:.1f} min with {where}.")
    text = report_tables.matrix_markdown(rows, note)
    out.print(text)
    if args.markdown:
        write_text(args.markdown, text + "\n")
    if args.json:
        write_text(args.json, json.dumps(matrix.to_json(rows), indent=1) + "\n")
    if args.readme:
        splice(args.readme, "matrix", text)
    for r in rows:
        row_case(args.results, f"matrix {r.mode}", matrix.label(r.settings), r)
    failures = [(r, c) for r in rows for c in r.unexplained()]
    for r, c in failures:
        out.print(f"[bold red]UNEXPLAINED: {c.invariant} under {r.mode} {r.settings}[/]: {c.message}\n  -> {c.path}")
    out.print(f"{len(rows)} configurations in {seconds:.0f}s; counterexamples under {args.out}")
    return 1 if failures else 0
