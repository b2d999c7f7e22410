"""`rmqcheck simulate`: record runs of the model as event traces."""

from __future__ import annotations

import argparse
import time

from rmqcheck.model import configs
from rmqcheck.outputs import check_folder, output_folder
from rmqcheck.traces.recorder import Corpus, simulate

from .common import out, positive

NAME = "simulate"
HELP = "record runs of the model with random faults as event traces"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ("--config",)
REPLACED = ("--out",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=positive, default=100)
    p.add_argument("--out", required=True, help="directory for the part files")
    p.add_argument("--steps", type=positive, default=100, help="transitions per run (default 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--config", action="append", metavar="NAME", help="named configuration to cycle through (repeatable)")
    p.add_argument("--snapshot", action="store_true", help="keep the snapshot's known defects on")
    p.add_argument("--format", choices=("ndjson", "parquet"), default="ndjson")
    p.add_argument("--runs-per-file", type=positive, default=1000)
    p.add_argument("--stores", action="store_true", help="also write each run's epoch files under OUT/stores/")
    p.add_argument("--jobs", type=positive, default=1, help="processes (default 1)")
    p.add_argument("--force", action="store_true", help="replace --out when it already holds files")


def run(args) -> int:
    for name in args.config or ():
        configs.load(name)  # a clear error for an unknown name before any work
    corpus = Corpus(
        seed=args.seed, runs=args.runs, steps=args.steps, names=tuple(args.config or Corpus().names),
        snapshot=args.snapshot, fmt=args.format, runs_per_file=args.runs_per_file, stores=args.stores,
    )
    check_folder(args.out, "--out", args.force)
    start = time.perf_counter()
    with output_folder(args.out) as partial:  # a complete corpus or none: never part of one
        events = simulate(corpus, partial, args.jobs)
    seconds = time.perf_counter() - start
    out.print(
        f"wrote {events:,} events of {corpus.runs:,} runs ({', '.join(corpus.names)}, "
        f"{'snapshot' if corpus.snapshot else 'intended'} model) to {args.out} in {seconds:.1f} s "
        f"({events / max(seconds, 1e-9):,.0f} events/s)"
    )
    return 0
