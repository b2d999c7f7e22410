"""What every command shares: the consoles, the option types, progress printers, JSON and
text outputs, and trace validation (used by `check` and `validate`). No command imports another
command's module; what two need lives here."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from rmqcheck.checkers.search import explore
from rmqcheck.report import tables as report_tables
from rmqcheck.traces.validate import CHECK_FAMILY, REPORTED, discover, validate_local

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)


class UsageError(Exception):
    """Bad usage: `rmqcheck: error: ...` and exit status 2."""


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def budget_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the budget must be positive")
    return value


def stateful_progress(label: str):
    if not err.is_terminal:
        return None

    def report(batch, stats, elapsed):
        err.print(
            f"[dim]{label}: batch {batch}, {stats.examples} examples, {stats.steps} steps, "
            f"{stats.steps / max(elapsed, 1e-9):,.0f} steps/s, {elapsed:.0f}s[/dim]",
            end="\r",
        )

    return report


def explore_progress(label: str, p: explore.Progress) -> None:
    out.print(
        f"  {label}: {p.states:,} states, {p.states / max(p.seconds, 1e-9):,.0f} states/s, "
        f"queue {p.queue:,}, depth {p.depth}, {p.seconds:.0f}s"
    )


def json_file(name: str | None, option: str) -> list | None:
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


def write_text(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)


def splice(path: str, name: str, text: str | None) -> None:
    """Replace the block `name` of `path`; with no text, only check now that it can."""
    try:
        if text is None:
            report_tables.check_block(Path(path), name)
        else:
            report_tables.splice(Path(path), name, text)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--readme {path}: {exc}") from None


def run_validation(paths: Sequence[str], engine: str, skip: bool, master: str | None, quiet: bool):
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


def print_validation(report, seconds: float, strict: bool, violations: Path, show: int) -> None:
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


def add_source_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rocketmq-src", metavar="PATH",
                   help="a RocketMQ checkout or source tarball (default: $RMQCHECK_ROCKETMQ_SRC, then "
                        "../shared/rocketmq/)")


class Drivers:
    """The core driver (controller and epoch cache) and, when its build works, the HA driver
    (the broker's HA service; `ha` None and `ha_missing` saying why when it does not)."""

    def __init__(self, src: str | None, ha: bool = True) -> None:
        from rmqcheck.checkers.java import build
        from rmqcheck.checkers.java.driver import JavaDriver

        try:
            tree = build.locate(src)
            core = build.build(tree)
        except build.BuildError as exc:
            raise UsageError(str(exc)) from None
        self.core = JavaDriver(core)
        self.ha = None
        self.ha_missing = "not asked for"
        if ha:
            try:
                self.ha = JavaDriver(build.build(tree, target=build.HA))
                self.ha_missing = ""
            except build.BuildError as exc:
                self.ha_missing = str(exc)

    def __enter__(self) -> "Drivers":
        self.core.start()
        if self.ha is not None:
            self.ha.start()
        return self

    def __exit__(self, *exc) -> None:
        self.core.close()
        if self.ha is not None:
            self.ha.close()

    def loaded(self) -> str:
        """One line: which of RocketMQ's classes run."""
        core = "the controller and the epoch cache"
        if self.ha is not None:
            return f"{core} and the broker's HA service"
        return f"{core} (the HA service not loaded: {self.ha_missing})"
