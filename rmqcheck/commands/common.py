"""What every command shares: the consoles, the option types, progress printers, JSON and
text outputs, and trace validation (used by `check` and `validate`). No command imports another
command's module; what two need lives here."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from rmqcheck.checkers.search import explore
from rmqcheck.outputs import check_output, writable_folder, write_atomically
from rmqcheck.checkers.search.hunting import UNEXPLAINED
from rmqcheck.report import tables as report_tables
from rmqcheck.report.ci import Results
from rmqcheck.traces.validate import CHECK_FAMILY, MASTER_FORMS, REPORTED, discover, validate_local

out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)


class UsageError(Exception):
    """Bad usage: `rmqcheck: error: ...` and exit status 2."""


def _whole(text: str, least: int, says: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(says)
    return value


def positive(text: str) -> int:
    return _whole(text, 1, "must be at least 1")


def natural(text: str) -> int:
    """A whole number >= 0."""
    return _whole(text, 0, "must be 0 or more")


def name_list(known, what: str, allow_empty: bool = False):
    """An argparse type: comma-separated names, each one of `known`."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n for n in text.split(",") if n)
        unknown = [n for n in names if n not in known]
        if unknown or not (names or allow_empty):
            raise argparse.ArgumentTypeError(f"unknown or no {what} {unknown}; known: {', '.join(known)}")
        return names
    return parse


def seconds(text: str, allow_zero: bool = False) -> float:
    """A finite number of seconds: nan ran forever and inf claimed an exhaustive search."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds")
    if value < 0 or (value == 0 and not allow_zero):
        raise argparse.ArgumentTypeError("the budget must be positive" + (" or 0" if allow_zero else ""))
    return value


def budget_seconds(text: str) -> float:
    return seconds(text)


def budget_or_none(text: str) -> float:
    return seconds(text, allow_zero=True)


def live() -> bool:
    """Progress bars only on a terminal, and never in CI (no escape codes in its logs)."""
    return err.is_terminal and not os.environ.get("CI")


HEARTBEAT = 30.0  # seconds between a stage's "still running" lines in a log


class Stage:
    """A stage of a long command, as a log shows it (no live progress bars: a pipe, a file, CI):
    a line when it starts, one at least every HEARTBEAT seconds while it runs (with what the
    stage's progress bar last said), and one when it ends, with its verdict and time. On a
    terminal the bars say all this and the stage prints nothing."""

    current: "Stage | None" = None  # the stage running, which Bar tells what it does

    def __init__(self, name: str, every: float | None = None, announce: bool = True) -> None:
        """`announce` False (a whole command, whose start the command line shows): no start line,
        and no end line for a command that an error or Ctrl-C ended before it said anything."""
        self.name, self.every, self.announce = name, HEARTBEAT if every is None else every, announce
        self.said = False
        self.verdict = "done"  # the body sets it: "passed", "failed: ...", "skipped: ..."
        self.detail = ""
        self.log = not live()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> "Stage":
        self.start = time.perf_counter()
        Stage.current = self
        if self.log:
            if self.announce:
                self._say("started")
            self._ticker.start()
        return self

    def _say(self, what: str) -> None:
        self.said = True
        out.print(f"stage {self.name}: {what}")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            detail = f": {self.detail}" if self.detail else ""
            self._say(f"running, {time.perf_counter() - self.start:.0f}s{detail}")

    def __exit__(self, kind, *exc) -> None:
        Stage.current = None
        if not self.log:
            return
        self._stop.set()
        self._ticker.join()
        if kind is not None and not self.said:
            return  # the error or the interruption says it all, in one line
        verdict = ("interrupted" if kind is KeyboardInterrupt else "ended by an error") if kind else self.verdict
        self._say(f"{verdict} in {time.perf_counter() - self.start:.0f}s")


class Bar:
    """One progress bar on stderr (rich): what runs, how far, its rate, elapsed and remaining
    time. `total` counts seconds for a run its budget ends (`timed`), else units of work; None
    when unknown. Nothing is shown when not `live()` or when `quiet`; in a Stage, what it shows
    is what the stage's log lines say."""

    def __init__(self, label: str, total: float | None, timed: bool = True, quiet: bool = False) -> None:
        self.timed = timed
        self.start = time.perf_counter()
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20),
                                 TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                 TimeRemainingColumn(), console=err, transient=True, disable=quiet or not live())
        self.task = self.progress.add_task(label, total=total, detail="")

    def __enter__(self) -> "Bar":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def update(self, detail: str = "", advance: float | None = None, completed: float | None = None,
               description: str | None = None) -> None:
        if self.timed:
            completed = time.perf_counter() - self.start
        self.progress.update(self.task, advance=advance, completed=completed, description=description, detail=detail)
        if Stage.current is not None:
            Stage.current.detail = f"{description or self.progress.tasks[0].description} {detail}".strip()

    # The searches' progress callbacks.
    def stateful(self, batch, stats, elapsed) -> None:
        rate = stats.steps / max(elapsed, 1e-9)
        self.update(f"{stats.examples:,} examples, {stats.steps:,} steps, {rate:,.0f} steps/s")

    def explored(self, p: explore.Progress, label: str = "") -> None:
        self.update(f"{label + ': ' if label else ''}{p.states:,} states, {p.states / max(p.seconds, 1e-9):,.0f} "
                    f"states/s, depth {p.depth}, queue {p.queue:,}")

    def walked(self, unit: str):
        def report(count: int, steps: int, seconds: float) -> None:
            self.update(f"{count:,} {unit}, {steps:,} steps, {steps / max(seconds, 1e-9):,.0f} steps/s")

        return report


def json_file(name: str | None, option: str) -> list | None:
    if name is None:
        return None
    try:
        data = json.loads(Path(name).read_text())
    except FileNotFoundError:
        raise UsageError(f"{option} {name}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{option} {name}: not readable JSON: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply, or a number of 4,300 digits
        raise UsageError(f"{option} {name}: not readable JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise UsageError(f"{option} {name}: expected a JSON list of records, as the command's --json writes")
    return data


def write_text(path: str, text: str, option: str = "--out") -> None:
    """Write an output file whole or not at all (rmqcheck/outputs.py)."""
    try:
        write_atomically(check_output(path, option), text)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot be written: {exc.strerror or exc}") from None


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
        with Bar("validating", len(inputs.traces) or None, timed=False, quiet=quiet) as bar:
            report = validate_local(inputs, skip, lambda what, done, total: bar.update(
                f"{done:,} of {total:,}", completed=done, description=what))
    return report, time.perf_counter() - start


def print_validation(report, seconds: float, strict: bool, violations: Path, show: int, results: Results,
                     suite: str = "validate") -> None:
    """The summary table per check, and a result case per check; every violation written to
    `violations` (NDJSON)."""
    u = report.units
    table = Table(
        title=(
            f"rmqcheck validate ({report.engine}): {u['events']:,} events in {u['runs']:,} runs, "
            f"{u['histories']} OpenChaos histories ({u['history_records']:,} records), {u['store_sets']} store sets, "
            f"{u['log_sets']} log sets ({u['log_records']:,} records)"
            + (f", {u['real_runs']} recorded cluster runs ({u['real_run_steps_explained']:,} of "
               f"{u['real_run_steps']:,} steps explained by the model)" if u["real_runs"] else "")
            + (f", {len(report.bad):,} bad records skipped" if report.bad else "") + f", {seconds:.1f} s"
        )
    )
    for col in ("family", "check", "violations", "occurrences", "verdict"):
        table.add_column(col)
    skipped = _skipped_by_check(report.bad)
    for check, found in report.by_check().items():
        reported = check in REPORTED and not strict
        verdict = "ok" if not found else (f"reported: {REPORTED[check]}" if reported else "VIOLATED")
        caveat = [f"may differ: {skipped[check]}"] if check in skipped else []
        table.add_row(CHECK_FAMILY[check], check, str(len(found)), str(sum(v.count for v in found)),
                      "; ".join([verdict, *caveat]))
        name = f"{CHECK_FAMILY[check]}/{check}"
        if not found:
            results.add(suite, name, notes=caveat)
            continue
        first = f"{len(found):,} violations, the first: {found[0].run} {found[0].subject}: {found[0].detail}"
        if reported:
            results.add(suite, name, notes=[f"{verdict}; {first}; {violations}", *caveat])
        else:
            results.add(suite, name, "failed", first, invariant=check, file=violations, notes=caveat)
    out.print(table)
    write_text(str(violations), "".join(json.dumps(v._asdict()) + "\n" for v in report.violations), "--violations")
    out.print(f"{len(report.violations)} violation records written to {violations}")
    runs_skipped = {b.affects[0] for b in report.bad if b.affects}
    for v in report.violations[:show]:
        mark = " (records of this run were skipped: it may be their consequence)" \
            if v.run in runs_skipped and v.check in skipped else ""
        out.print(f"  {v.check} {v.run} {v.subject}: {v.detail}{mark}")


def _skipped_by_check(bad) -> dict[str, str]:
    """For each check whose verdict skipped records may change (BadRecord.affects), which runs
    and how many records: what --skip-bad-records leaves unjudged, said next to that check."""
    runs: dict[str, dict[str, int]] = {}
    for b in bad:
        if b.affects:
            run, checks = b.affects
            for check in checks:
                runs.setdefault(check, {}).setdefault(run, 0)
                runs[check][run] += 1
    return {check: "skipped records in " + ", ".join(f"{run} ({n})" for run, n in sorted(by_run.items()))
            for check, by_run in runs.items()}


def add_result_options(p: argparse.ArgumentParser) -> None:
    """The machine-readable results of a judging command (report/ci.py; docs/ci.md)."""
    g = p.add_argument_group("results for CI")
    g.add_argument("--junit", metavar="FILE",
                   help="also write the verdicts as JUnit XML, one test case per configuration, toggle, proof, "
                        "invariant or check")
    g.add_argument("--summary-json", metavar="FILE",
                   help="also write the verdicts as JSON (schema: rmqcheck/report/summary.schema.json, docs/ci.md)")


def findings_case(results: Results, suite: str, name: str, found: Sequence[tuple], seconds: float,
                  notes: Sequence[str] = ()) -> None:
    """One case per hunted or explored configuration. `found`: (invariant, kind, steps, message,
    file) of each violation. An unexplained one fails the case; the others (not promised here, or
    the snapshot's known defects) are notes."""
    bad = [f for f in found if f[1] == UNEXPLAINED]
    notes = [f"{i} ({kind}, {steps} steps): {message}; {path}" for i, kind, steps, message, path in found
             if kind != UNEXPLAINED] + list(notes)
    if not bad:
        results.add(suite, name, seconds=seconds, notes=notes)
        return
    invariant, _, steps, message, path = bad[0]
    results.add(suite, name, "failed", f"{invariant} violated (unexplained, {steps} steps): {message}",
                invariant=invariant, file=path, seconds=seconds,
                notes=notes + [f"also {i} (unexplained): {p}" for i, _, _, _, p in bad[1:]])


def invariant_case(results: Results, suite: str, name: str, promised: bool, found: tuple | None, seconds: float,
                   notes: Sequence[str] = ()) -> None:
    """One case per invariant of an explored configuration: failed by a violation (`found`, as in
    `findings_case`) of what the configuration promises; one it does not promise is a note."""
    if found is None:
        results.add(suite, name, seconds=seconds, notes=notes)
        return
    invariant, kind, steps, message, path = found
    text = f"{invariant} violated ({kind}, {steps} steps): {message}"
    if promised:
        results.add(suite, name, "failed", text, invariant=invariant, file=path, seconds=seconds, notes=notes)
    else:
        results.add(suite, name, seconds=seconds, notes=[f"not promised here: {text}; {path}", *notes])


def row_case(results: Results, suite: str, name: str, row) -> None:
    """A matrix row (checkers/tables/matrix.py) as a case."""
    found = [(c.invariant, c.kind, c.steps, c.message, c.path) for c in row.cells if c.kind]
    reach = [] if row.exhaustive else [f"not exhaustive: every state within {row.depth} steps checked"]
    findings_case(results, suite, name, found, row.explore_seconds + row.hunt_seconds, reach)


def divergence_text(divergence) -> str:
    """A conformance divergence in one line: where, and every field that differs."""
    return (f"the code and the model differ after {len(divergence.steps)} requests (shrunk): "
            + "; ".join(f"{k}: java {j!r}, model {m!r}" for k, j, m in divergence.last.diffs))


def spark_master(text: str) -> str:
    """A --master option: a Spark master URL."""
    if not MASTER_FORMS.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Spark master URL: local, local[N], local[*], "
                                         "local-cluster[N,C,M], spark://HOST:PORT, yarn or k8s://...")
    return text


def work_folder(path: str | Path | None, default: Path) -> Path:
    """`--work-dir` (or `default`), created now: a run resumes there, so what it holds is kept."""
    work = Path(path or default)
    writable_folder(work, "--work-dir")
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--work-dir {work}: {exc.strerror}") from None
    return work


def add_engine_options(p: argparse.ArgumentParser, what: str) -> None:
    """--engine local|spark and --master, for a command whose `what` can run as Spark tasks."""
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help=f"local (this machine's processes, the default) or spark ({what} as Spark tasks)")
    p.add_argument("--master", type=spark_master,
                   help="with --engine spark: the Spark master URL (default local[*]; e.g. local-cluster[2,1,1024], "
                        "spark://host:7077)")


def spark_for(args, app: str, python: str | None = None):
    """The Spark session --engine spark asks for (None with --engine local); a master that does
    not start is a UsageError."""
    if args.engine != "spark":
        if args.master:
            raise UsageError("--master goes with --engine spark")
        return None
    from rmqcheck.traces.spark import session
    from rmqcheck.traces.validate import SparkUnavailable

    try:
        return session(args.master, python, app)
    except SparkUnavailable as exc:
        raise UsageError(str(exc)) from None


def add_source_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rocketmq-src", metavar="PATH",
                   help="a RocketMQ checkout or source tarball (default: $RMQCHECK_ROCKETMQ_SRC, then "
                        "../shared/rocketmq/)")


class Drivers:
    """The core driver (controller and epoch cache) and, when its build works, the HA driver
    (the broker's HA service; `ha` None and `ha_missing` saying why when it does not)."""

    def __init__(self, src: str | None, ha: bool = True, coverage: Path | None = None) -> None:
        """With `coverage` (a folder), the drivers record what of RocketMQ's classes ran into it
        (checkers/java/coverage.py)."""
        from rmqcheck.checkers.java import build, coverage as cov
        from rmqcheck.checkers.java.driver import JavaDriver

        def driver(tree, target, name):
            cp = build.build(tree, target=target)
            if coverage is None:
                return JavaDriver(cp)
            self.builds.append((cp.classes, coverage / f"{name}.exec"))
            return JavaDriver(cp._replace(jvm_flags=cp.jvm_flags + cov.agent_flags(coverage / f"{name}.exec")))

        self.builds: list[tuple[Path, Path]] = []  # each coverage build's classes and execution data
        try:
            tree = build.locate(src)
            self.core = driver(tree, build.CORE, "core")
        except build.BuildError as exc:
            raise UsageError(str(exc)) from None
        self.ha = None
        self.ha_missing = "not asked for"
        if ha:
            try:
                self.ha = driver(tree, build.HA, "ha")
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
