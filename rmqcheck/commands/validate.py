"""`rmqcheck validate`: check recorded runs, OpenChaos histories and store files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rmqcheck.outputs import check_output
from rmqcheck.traces.log_records import is_log_set
from rmqcheck.traces.schema import TraceError
from rmqcheck.traces.validate import SparkUnavailable

from .common import (UsageError, add_result_options, natural, out, print_validation, run_validation, spark_master,
                     write_text)

NAME = "validate"
HELP = "check recorded traces, OpenChaos histories and epoch files"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--violations", "--rejected")
INPUTS = ("paths", "--logs")
READ_WHOLE = ("paths", "--logs")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--logs", action="append", default=[], metavar="DIR",
                   help="RocketMQ's own logs after an incident: a folder a node (broker.log, store.log, storeerror.log, "
                        "controller.log, and a broker's epochFileCheckpoint where kept); docs/traces.md")
    p.add_argument("--engine", choices=("local", "spark"), default="local")
    p.add_argument("--master", type=spark_master, help="Spark master URL (default local[*]; e.g. local-cluster[2,1,1024], "
                   "spark://host:7077)")
    p.add_argument("--violations", default="counterexamples/validate-violations.ndjson", help="where violations are written")
    p.add_argument("--skip-bad-records", action="store_true", help="skip bad records, writing them to --rejected")
    p.add_argument("--rejected", default="counterexamples/validate-rejected.ndjson")
    p.add_argument("--strict", action="store_true", help="count duplicates and stuck replicas as violations too")
    p.add_argument("--show", type=natural, default=10, help="violations to print (default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--allow-empty", action="store_true",
                   help="inputs that hold no record pass (by default: 'nothing to validate', exit status 2)")
    add_result_options(p)


def run(args) -> int:
    check_output(args.violations, "--violations")
    check_output(args.rejected, "--rejected")
    if not args.paths and not args.logs:
        raise UsageError("give a PATH to validate, or --logs DIR")
    try:
        for folder in args.logs:
            if not Path(folder).is_dir() or not is_log_set(Path(folder)):
                raise TraceError(folder, "--logs", "not a folder of nodes' log folders (DIR/<node>/broker.log, "
                                                   "store.log, storeerror.log or controller.log)")
        report, seconds = run_validation(args.paths + args.logs, args.engine, args.skip_bad_records, args.master,
                                         args.quiet)
    except TraceError as exc:
        print(f"rmqcheck: bad input: {exc}", file=sys.stderr)
        args.results.add("validate", "input", "error", f"bad input: {exc}")
        return 2
    except SparkUnavailable as exc:
        print(f"rmqcheck: error: --master: {exc}", file=sys.stderr)
        args.results.add("validate", "spark", "error", str(exc))
        return 2
    if report.records() == 0 and not args.allow_empty:
        message = f"nothing to validate: {', '.join(args.paths)} hold(s) no record (--allow-empty to pass)"
        print(f"rmqcheck: {message}", file=sys.stderr)
        args.results.add("validate", "input", "error", message)
        return 2
    print_validation(report, seconds, args.strict, Path(args.violations), args.show, args.results)
    if report.bad:
        write_text(args.rejected, "".join(json.dumps(b.to_json()) + "\n" for b in report.bad), "--rejected")
        out.print(f"{len(report.bad)} bad records skipped, written to {args.rejected}")
    return 1 if report.failed(args.strict) else 0
