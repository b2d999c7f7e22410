"""`rmqcheck conform`: RocketMQ's own controller, election policy and epoch cache, compiled from a
source tree, driven beside the model request by request (checkers/java/)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rmqcheck.checkers.java import conform
from rmqcheck.checkers.java.driver import DriverError

from .common import UsageError, add_source_argument, budget_seconds, err, out, positive, start_driver

NAME = "conform"
HELP = "compare the model with RocketMQ's own classes, compiled from a source tree"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_argument(p)
    p.add_argument("--ops", type=positive, default=40, help="requests per generated sequence at most (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=budget_seconds, default=60.0, help="seconds of generation (default 60)")
    p.add_argument("--sequences", type=positive, help="stop after this many sequences (default: the budget decides)")
    p.add_argument("--out", default="counterexamples/conform", help="directory for the divergence's scenario file")


def run(args) -> int:
    with start_driver(args.rocketmq_src) as driver:
        out.print(f"conformance: RocketMQ's classes against the model, seed {args.seed}, budget {args.budget:g}s, "
                  f"up to {args.ops} requests a sequence")

        def progress(sequences: int, ops: int, seconds: float) -> None:
            err.print(f"[dim]  {sequences:,} sequences, {ops:,} requests compared, "
                      f"{ops / max(seconds, 1e-9):,.0f}/s[/dim]")

        try:
            tally = conform.conform(driver, args.seed, args.budget, args.ops, args.sequences,
                                    progress if err.is_terminal else None)
        except DriverError as exc:
            raise UsageError(f"the Java driver failed: {exc}") from None
    rate = tally.operations / max(tally.seconds, 1e-9)
    out.print(f"{tally.sequences:,} sequences, {tally.operations:,} requests compared in {tally.seconds:.1f}s "
              f"({rate:,.0f}/s); not compared (the model has none): {', '.join(conform.NOT_COMPARED)}")
    if tally.divergence is None:
        out.print("[green]the code and the model agreed on every request[/]")
        return 0
    path = conform.write_scenario(tally.divergence, Path(args.out) / f"conform-seed{args.seed}.scn",
                                  f"rmqcheck conform --seed {args.seed}")
    last = tally.divergence.last
    out.print(f"[bold red]divergence after {len(tally.divergence.steps)} requests (shrunk)[/]:")
    for step in tally.divergence.steps:
        out.print(f"  {conform.format_request(step.request)}")
    for key, java, model in last.diffs:
        out.print(f"  {key}: java {java!r}, model {model!r}")
    out.print(f"  scenario: {path}   (replay: rmqcheck replay {path})")
    return 1
