"""The `rmqcheck` command line. Exit status: 0 nothing violated, 1 a violation was found and
written (or reproduced), 2 bad usage or bad input, 130 interrupted.

Only the dispatcher: each command is a module of `rmqcheck.commands` with its NAME, HELP,
`add_arguments(parser)` and `run(args) -> exit status`. A judging command adds its verdicts to
`args.results` (report/ci.py), which the dispatcher writes for CI (`--junit`, `--summary-json`,
$GITHUB_STEP_SUMMARY) whatever the exit status.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from rmqcheck import __version__
from rmqcheck.checkers.counterexamples.files import CounterexampleError
from rmqcheck.commands import COMMANDS
from rmqcheck.commands.common import UsageError
from rmqcheck.model.configs import ConfigError
from rmqcheck.outputs import OutputError, check_output
from rmqcheck.report import ci


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rmqcheck", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"rmqcheck {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        c = sub.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(c)
        c.set_defaults(func=command.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.results = ci.Results(args.command, argv)
    judging = hasattr(args, "junit")
    try:
        outputs = (check_output(args.junit, "--junit"), check_output(args.summary_json, "--summary-json")) \
            if judging else (None, None)
    except OutputError as exc:
        print(f"rmqcheck: error: {exc}", file=sys.stderr)
        return 2
    try:
        status = args.func(args)
    except (UsageError, ConfigError, CounterexampleError, OutputError) as exc:
        print(f"rmqcheck: error: {exc}", file=sys.stderr)
        args.results.add(args.command, "usage", "error", str(exc))
        status = 2
    except KeyboardInterrupt:
        print("rmqcheck: interrupted", file=sys.stderr)
        status = 130
    if judging:
        try:
            ci.write_all(args.results, status, *outputs)
        except OSError as exc:
            print(f"rmqcheck: error: cannot write the results: {exc}", file=sys.stderr)
            return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
