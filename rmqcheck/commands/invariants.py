"""`rmqcheck invariants`: the invariant catalogue."""

from __future__ import annotations

import argparse

from rmqcheck.invariants.catalogue import CATALOGUE

from .common import out

NAME = "invariants"
HELP = "list the invariant catalogue"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass  # no options


def run(args) -> int:
    for inv in CATALOGUE:
        out.print(f"[bold]{inv.id} {inv.name}[/]  (expected to hold: {inv.expected_when})")
        out.print(f"    {inv.statement}\n")
    return 0
