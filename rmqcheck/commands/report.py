"""`rmqcheck report`: the self-contained HTML report."""

from __future__ import annotations

import argparse
from pathlib import Path

from rmqcheck.checkers.tables import matrix, rediscovery
from rmqcheck.outputs import check_output

from .common import UsageError, json_file, out, positive, write_text

NAME = "report"
HELP = "a self-contained HTML page: matrix, bug table, counterexample diagrams"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ("--matrix", "--bugs", "--counterexamples")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="counterexamples/report.html", help="the HTML file to write")
    p.add_argument("--matrix", help="JSON written by rmqcheck matrix --json")
    p.add_argument("--bugs", help="JSON written by rmqcheck bugs --measure --json")
    p.add_argument("--counterexamples", action="append", metavar="PATH",
                    help="a counterexample file or a folder of them (repeatable; default scenarios/toggles)")
    p.add_argument("--limit", type=positive, default=60, help="counterexamples drawn at most (default 60)")


def run(args) -> int:
    """One self-contained HTML page (report/html.py) from the matrix and bug-table JSON and
    counterexample files (or folders of them)."""
    from rmqcheck.report import html as report_html

    check_output(args.out, "--out")  # before drawing anything
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
    page = report_html.page(_checked(args.matrix, "--matrix", matrix.from_json),
                            _checked(args.bugs, "--bugs", rediscovery.from_json), cxs)
    write_text(args.out, page)
    out.print(f"wrote {args.out}: {len(cxs)} counterexamples drawn, {len(page) / 1e6:.1f} MB")
    return 0


def _checked(path: str | None, option: str, parse) -> list[dict] | None:
    """The records of a --matrix or --bugs file, each checked to be what that command writes."""
    rows = json_file(path, option)
    if rows is not None:
        try:
            parse(rows)
        except ValueError as exc:
            raise UsageError(f"{option} {path}: {exc}") from None
    return rows
