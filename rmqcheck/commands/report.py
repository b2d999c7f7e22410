"""`rmqcheck report`: the self-contained HTML report, and beside it a page per counterexample to
step through (report/stepper.py) in a folder named after it (report.html: report-steps/)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rmqcheck.checkers.tables import matrix, rediscovery
from rmqcheck.outputs import OutputError, check_folder, check_output, output_folder, writable_folder

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
    from rmqcheck.report import stepper

    check_output(args.out, "--out")  # before drawing anything
    steps_dir = _steps_folder(args.out)
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
    matrix_rows = _checked(args.matrix, "--matrix", matrix.from_json)
    measures = _checked(args.bugs, "--bugs", rediscovery.from_json)
    step_pages = stepper.pages(cxs) if steps_dir is not None else {}
    links = {p: f"{steps_dir.name}/{name}" for p, (name, _) in step_pages.items()} if steps_dir is not None else {}
    page = report_html.page(matrix_rows, measures, cxs, steps=links)  # all drawn before anything is written
    # The step pages first, whole (a folder renamed into place), so the report never links to nothing.
    if steps_dir is not None:
        try:
            with output_folder(steps_dir, "rmqcheck report") as folder:
                for name, text in step_pages.values():
                    (folder / name).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out {args.out}: its step pages cannot be written to {steps_dir}: "
                             f"{exc.strerror or exc}") from None
    write_text(args.out, page)
    out.print(f"wrote {args.out}: {len(cxs)} counterexamples drawn, {len(page) / 1e6:.1f} MB"
              + (f"; {len(step_pages)} pages to step through in {steps_dir}" if steps_dir else ""))
    return 0


def _steps_folder(report: str) -> Path | None:
    """Where the step pages go (report.html: report-steps/ beside it), refused before any work
    when it cannot be written or holds anything rmqcheck did not write there; None when the
    report goes to a device or a FIFO (/dev/stdout: no folder beside it)."""
    if not Path(report).is_file() and (Path(report).exists() or report.startswith(("/dev/", "/proc/"))):
        return None
    folder = Path(report).with_name(Path(report).stem + "-steps")
    try:
        writable_folder(folder, "--out")
    except OutputError as exc:
        raise UsageError(f"--out {report}: its step pages go to {folder}: {str(exc).split(': ', 1)[-1]}") from None
    try:
        check_folder(folder, "--out", force=True)
    except OutputError:
        raise UsageError(f"--out {report}: its step pages go to {folder}, which holds files rmqcheck did not write "
                         "there; move them or choose another --out") from None
    return folder


def _checked(path: str | None, option: str, parse) -> list[dict] | None:
    """The records of a --matrix or --bugs file, each checked to be what that command writes."""
    rows = json_file(path, option)
    if rows is not None:
        try:
            parse(rows)
        except ValueError as exc:
            raise UsageError(f"{option} {path}: {exc}") from None
    return rows
