"""`rmqcheck scenario`: print a counterexample file as scenario text."""

from __future__ import annotations

import argparse
import sys

from rmqcheck.checkers.counterexamples.files import format_scenario, read

NAME = "scenario"
HELP = "print a counterexample file as readable scenario text"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ()
INPUTS = ("file",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file")
    p.add_argument("--title")


def run(args) -> int:
    """Print a counterexample file as scenario text (for regression scenarios)."""
    cx = read(args.file)
    sys.stdout.write(format_scenario(cx, args.title or ""))
    return 0
