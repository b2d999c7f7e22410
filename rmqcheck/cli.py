"""The `rmqcheck` command line. Exit statuses: EXIT_STATUSES below, the one place they are
defined (the README's Commands section and docs/commands.md quote it; tests/test_cli.py checks both).

Only the dispatcher: each command is a module of `rmqcheck.commands` with its NAME, HELP,
`add_arguments(parser)` and `run(args) -> exit status`. A judging command adds its verdicts to
`args.results` (report/ci.py), which the dispatcher writes for CI (`--junit`, `--summary-json`,
$GITHUB_STEP_SUMMARY) whatever the exit status.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
from typing import Sequence


def _interrupted_while_loading(signum, frame):
    """Ctrl-C during the imports below (a second or two): one line, as later, not a traceback."""
    sys.stderr.write("rmqcheck: interrupted\n")
    raise SystemExit(130)


try:
    _default_sigint = signal.signal(signal.SIGINT, _interrupted_while_loading)
except ValueError:  # imported outside the main thread: nothing to install
    _default_sigint = None

from rmqcheck import __version__  # noqa: E402
from rmqcheck.checkers.counterexamples.files import CounterexampleError  # noqa: E402
from rmqcheck.commands import COMMANDS  # noqa: E402
from rmqcheck.commands.common import Stage, UsageError  # noqa: E402
from rmqcheck.model.configs import ConfigError  # noqa: E402
from rmqcheck.outputs import OutputError, check_output, check_roles  # noqa: E402
from rmqcheck.report import ci  # noqa: E402

if _default_sigint is not None:
    signal.signal(signal.SIGINT, _default_sigint)


EXIT_STATUSES = {
    0: "nothing violated",
    1: "a violation was found and written (or reproduced); replay: also a file's violation not reproduced "
       "(unless --expect-fixed)",
    2: "bad usage or bad input (a message names the file, the line or record, and what is wrong)",
    130: "interrupted (Ctrl-C: one line, no partial output)",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rmqcheck", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"rmqcheck {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        c = sub.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(c)
        c.set_defaults(func=command.run, command_module=command)
    return p


class _Reader(io.TextIOBase):
    """Standard output that a reader may stop reading (`rmqcheck validate | head`): what can no
    longer be written is dropped, and the command's verdict stands."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.gone = True
        try:  # nothing left to flush at exit either
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


def main(argv: Sequence[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = _Reader(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.results = ci.Results(args.command, argv)
    judging = hasattr(args, "junit")
    try:
        _check_roles(args, judging, argv)
        outputs = (check_output(args.junit, "--junit"), check_output(args.summary_json, "--summary-json")) \
            if judging else (None, None)
    except OutputError as exc:
        print(f"rmqcheck: error: {exc}", file=sys.stderr)
        return 2
    try:
        status = _run(args)
    except (UsageError, ConfigError, CounterexampleError, OutputError) as exc:
        print(f"rmqcheck: error: {exc}", file=sys.stderr)
        args.results.add(args.command, "usage", "error", str(exc))
        status = 2
    except KeyboardInterrupt:
        print("rmqcheck: interrupted", file=sys.stderr)
        status = 130
    except Exception as exc:
        if not _interrupted(exc):
            raise
        print("rmqcheck: interrupted", file=sys.stderr)
        status = 130
    if judging:
        try:
            ci.write_all(args.results, status, *outputs)
        except OutputError as exc:
            print(f"rmqcheck: error: {exc}", file=sys.stderr)
            return 2
    return status


# Long commands, in a log (no terminal): a line at least every 30 s while they run and one as
# they end, with the verdict and time. `check` also says when each of its stages starts.
LOGGED = ("hunt", "matrix", "conform", "explore", "cluster", "findings")


def _run(args) -> int:
    if args.command not in LOGGED and not (args.command == "bugs" and args.measure):
        return args.func(args)
    with Stage(args.command, announce=False) as stage:
        status = args.func(args)
        stage.verdict = {0: "passed", 1: "failed"}.get(status, f"exit {status}")
    return status


def _interrupted(exc: BaseException) -> bool:
    """An error raised while a Ctrl-C unwound (PySpark's clean-up calls the JVM the interrupt
    broke, and py4j's error takes the KeyboardInterrupt's place): an interruption, not a failure."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _check_roles(args, judging: bool, argv: Sequence[str]) -> None:
    """No output that is an input too, and no path named by two outputs (rmqcheck/outputs.py).
    A command names its roles by option: OUTPUTS (files or folders it writes), INPUTS (what it
    reads; a positional argument by its name), REPLACED (output folders replaced whole) and
    READ_WHOLE (input folders whose every file is read). An output left at its default (which
    the command may not even write) is held against the inputs only."""
    command = args.command_module
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}

    def values(option: str):
        value = getattr(args, option.lstrip("-").replace("-", "_"), None)
        label = option if option.startswith("-") else "input"
        for v in value if isinstance(value, list) else [value]:
            yield label, v

    outputs = [pair for o in getattr(command, "OUTPUTS", ()) for pair in values(o)]
    if judging:
        outputs += [("--junit", args.junit), ("--summary-json", args.summary_json)]
    inputs = [(label, v) for o in getattr(command, "INPUTS", ()) for label, v in values(o)
              if v is not None and os.path.exists(v)]
    read_whole = ["input" if not o.startswith("-") else o for o in getattr(command, "READ_WHOLE", ())]
    explicit = [(option, v) for option, v in outputs if option in given]
    check_roles(explicit, inputs, getattr(command, "REPLACED", ()), read_whole)
    check_roles([(option, v) for option, v in outputs if option not in given], inputs, (), read_whole)


if __name__ == "__main__":
    sys.exit(main())
