"""The `rmqcheck` command line. Exit status: 0 nothing violated, 1 a violation was found and
written (or reproduced), 2 bad usage or bad input.

Only the dispatcher: each command is a module of `rmqcheck.commands` with its NAME, HELP,
`add_arguments(parser)` and `run(args) -> exit status`.
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
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ConfigError, CounterexampleError) as exc:
        print(f"rmqcheck: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
