"""`rmqcheck conform`: RocketMQ's own controller, election policy and epoch cache, compiled from a
source tree, driven beside the model request by request (checkers/java/); with `--record DIR`,
walks of the whole model whose controller and epoch-cache calls those classes answer, written as
a trace corpus for `rmqcheck validate`."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from random import Random
from typing import Any, Iterator

from rmqcheck.checkers.java import build, conform, coverage, lockstep
from rmqcheck.checkers.java.driver import DriverError
from rmqcheck.model import configs
from rmqcheck.model.config import Config
from rmqcheck.outputs import check_folder, check_output, output_folder, write_atomically
from rmqcheck.traces.files import part_name, write_part
from rmqcheck.traces.recorder import Corpus, random_step, run_id, run_records

from .common import (
    Bar,
    Drivers,
    UsageError,
    add_result_options,
    add_source_argument,
    budget_seconds,
    divergence_text,
    out,
    positive,
)

NAME = "conform"
HELP = "compare the model with RocketMQ's own classes, compiled from a source tree"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out", "--record", "--coverage")
INPUTS = ("--rocketmq-src", "--config")
REPLACED = ("--record",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_argument(p)
    p.add_argument("--ops", type=positive, default=40, help="requests per generated sequence at most (default 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=budget_seconds, default=60.0, help="seconds of generation (default 60)")
    p.add_argument("--sequences", type=positive, help="stop after this many sequences (default: the budget decides)")
    p.add_argument("--generator", choices=("random", "hypothesis"), default="random",
                   help="seeded random sequences shrunk by delta debugging (default: the fastest), or Hypothesis "
                        "draws shrunk by Hypothesis")
    p.add_argument("--intended", action="append", metavar="TOGGLE", default=[],
                   help="compare with the model's intended form of this snapshot defect (repeatable): the model "
                        "answers with that toggle off, as a patched tree should (docs/findings/)")
    p.add_argument("--out", default="counterexamples/conform", help="directory for the divergence's scenario file")
    p.add_argument("--coverage", metavar="OUT",
                   help="measure the branch coverage of RocketMQ's loaded classes (JaCoCo) and write it to OUT as "
                        "JSON: per class and method, branches covered and missed, with the lines of the missed ones")
    rec = p.add_argument_group("recording (--record DIR)")
    rec.add_argument("--record", metavar="DIR",
                     help="record walks of the model, every controller and epoch-cache call answered by RocketMQ's "
                          "classes, as trace part files (the recorded controller and epoch fields are the Java's)")
    rec.add_argument("--runs", type=positive, default=100, help="runs to record (default 100)")
    rec.add_argument("--steps", type=positive, default=100, help="transitions per run (default 100)")
    rec.add_argument("--format", choices=("ndjson", "parquet"), default="ndjson")
    rec.add_argument("--runs-per-file", type=positive, default=1000)
    rec.add_argument("--force", action="store_true", help="replace --record DIR when it already holds files")
    rec.add_argument("--config", action="append", metavar="NAME|FILE",
                     help="configuration to cycle through (repeatable; default durable, durable3)")
    add_result_options(p)


def run(args) -> int:
    try:
        conform.intended_form(args.intended)  # refused before any JVM starts
    except ValueError as exc:
        raise UsageError(f"--{exc} (`rmqcheck bugs` lists them)") from None
    if args.intended and args.record:
        raise UsageError("--intended: only when comparing, not with --record")
    if args.record:
        check_folder(args.record, "--record", args.force)  # before the JVMs start
    check_output(args.coverage, "--coverage")
    with tempfile.TemporaryDirectory(prefix="rmqcheck-coverage-") as scratch:
        execs = Path(scratch) if args.coverage else None
        drivers = Drivers(args.rocketmq_src, coverage=execs)
        with drivers:
            out.print(f"RocketMQ's classes loaded: {drivers.loaded()}")
            try:
                code = _record(args, drivers) if args.record else _compare(args, drivers)
            except DriverError as exc:
                raise UsageError(f"the Java driver failed: {exc}") from None
        if execs is not None:  # the JVMs have exited and written their execution data
            _write_coverage(args.coverage, drivers, execs)
    return code


def _write_coverage(path: str, drivers: Drivers, execs: Path) -> None:
    try:
        methods = coverage.measure(drivers.builds)
    except build.BuildError as exc:
        raise UsageError(f"--coverage: {exc}") from None
    write_atomically(path, json.dumps(coverage.report(methods), indent=1) + "\n")
    out.print(f"{coverage.summary(methods)}; per method: {path}")


def _compare(args, drivers: Drivers) -> int:
    form = f"the intended form of {', '.join(args.intended)}" if args.intended else "the snapshot's form"
    out.print(f"conformance: RocketMQ's classes against the model ({form}), seed {args.seed}, budget "
              f"{args.budget:g}s, up to {args.ops} requests a sequence")

    with Bar("conformance", args.budget) as bar:
        def progress(sequences: int, ops: int, seconds: float) -> None:
            bar.update(f"{sequences:,} sequences, {ops:,} requests compared, {ops / max(seconds, 1e-9):,.0f}/s")

        tally = conform.conform(drivers.core, args.seed, args.budget, args.ops, args.sequences, progress,
                                args.generator, ha_driver=drivers.ha, bugs=conform.intended_form(args.intended))
    rate = tally.operations / max(tally.seconds, 1e-9)
    out.print(f"{tally.sequences:,} sequences, {tally.operations:,} requests compared in {tally.seconds:.1f}s "
              f"({rate:,.0f}/s); not compared (the model has none): {', '.join(conform.NOT_COMPARED)}")
    case = f"RocketMQ's classes against the model (seed {args.seed}" + "".join(f", intended {t}" for t in args.intended) + ")"
    if tally.divergence is None:
        out.print("[green]the code and the model agreed on every request[/]")
        args.results.add("conform", case, seconds=tally.seconds,
                         notes=[f"{tally.sequences:,} sequences, {tally.operations:,} requests; {drivers.loaded()}"])
        return 0
    path = conform.write_scenario(tally.divergence, Path(args.out) / f"conform-seed{args.seed}.scn",
                                  f"rmqcheck conform --seed {args.seed}" + "".join(f" --intended {t}" for t in args.intended),
                                  args.intended)
    args.results.add("conform", case, "failed", divergence_text(tally.divergence), invariant="conformance",
                     file=path, seconds=tally.seconds)
    last = tally.divergence.last
    out.print(f"[bold red]divergence after {len(tally.divergence.steps)} requests (shrunk)[/]:")
    for step in tally.divergence.steps:
        out.print(f"  {conform.format_request(step.request)}")
    for key, java, model in last.diffs:
        out.print(f"  {key}: java {java!r}, model {model!r}")
    out.print(f"  scenario: {path}   (replay: rmqcheck replay {path})")
    return 1


def _java_fields(view: lockstep.JavaView):
    """The trace fields RocketMQ's classes decided, for one transition record: the controller's
    state and the acting broker's last epoch entry (None: the field is left out, as the schema has
    it)."""

    def amend(record: dict[str, Any]) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        c = view.controller
        if c is not None:
            fields.update(ctrl_master=c["master"], ctrl_epoch=c["master_epoch"], ctrl_sss=sorted(c["sss"]),
                          ctrl_sss_epoch=c["sss_epoch"])
        node = record.get("node")
        if node is not None and node in view.last_entries:
            top = view.last_entries[node]
            fields.update(last_epoch=top[0] if top else -1, last_epoch_start=top[1] if top else None)
        return fields

    return amend


class _Recording:
    """Counts what a recording compared; the first difference, if any."""

    def __init__(self) -> None:
        self.transitions = self.calls = 0
        self.difference: str | None = None

    def runs(self, drivers: Drivers, corpus: Corpus, first: int, count: int) -> Iterator[dict[str, Any]]:
        for i in range(first, first + count):
            name, cfg = corpus.config(i)
            # the controller's and epoch cache's rules run in the snapshot's form: their calls decide state
            cfg = cfg._replace(bugs=cfg.bugs | lockstep.SNAPSHOT_FORM)
            yield from self.run(drivers, cfg, run_id(corpus.seed, i), f"broker-{name}", Random(f"{corpus.seed}:{i}"),
                                corpus.steps)

    def run(self, drivers: Drivers, cfg: Config, run: str, group: str, rng: Random,
            steps: int) -> Iterator[dict[str, Any]]:
        ls = lockstep.lockstep(drivers.core, cfg, choose=lambda s: random_step(s, cfg, rng)[0], steps=steps,
                               ha_driver=drivers.ha)
        self.transitions += steps
        self.calls += ls.compared
        diff = ls.first_difference or ls.first_form_change
        if diff is not None and self.difference is None:
            self.difference = f"{run} step {diff.index} {lockstep.describe(diff)}: {diff.verdict}"
        views = lockstep.java_views(ls)
        actions = [r.action for r in ls.steps if r.index]
        transitions = zip(actions, ls.states[1:], map(_java_fields, views))
        yield from run_records(cfg, run, group, ls.states[0], transitions)


def _record(args, drivers: Drivers) -> int:
    for name in args.config or ():
        configs.load(name)  # a clear error for an unknown name before any work
    corpus = Corpus(seed=args.seed, runs=args.runs, steps=args.steps, fmt=args.format,
                    runs_per_file=args.runs_per_file, names=tuple(args.config or Corpus().names))
    target = Path(args.record)
    rec, start, events = _Recording(), time.perf_counter(), 0
    with Bar("recording", corpus.runs, timed=False) as bar, output_folder(target) as partial:
        for part in range(-(-corpus.runs // corpus.runs_per_file)):
            first = part * corpus.runs_per_file
            count = min(corpus.runs_per_file, corpus.runs - first)
            events += write_part(partial / part_name(part, corpus.fmt), rec.runs(drivers, corpus, first, count),
                                 corpus.fmt)
            bar.update(f"{rec.calls:,} calls compared", advance=count)
    seconds = time.perf_counter() - start
    out.print(f"recorded {corpus.runs:,} runs ({', '.join(corpus.names)}, intended model; controller and epoch "
              f"cache in the snapshot's form), {rec.transitions:,} transitions and {rec.calls:,} calls into RocketMQ's classes, "
              f"{events:,} records to {target} in {seconds:.1f}s ({rec.transitions / max(seconds, 1e-9):,.0f} "
              f"transitions/s); validate it with: rmqcheck validate {target}")
    case = f"recording {corpus.runs:,} runs (seed {args.seed})"
    if rec.difference is not None:
        out.print(f"[bold red]the code and the model differ[/] (validate reports where): {rec.difference}")
        args.results.add("conform", case, "failed", f"the code and the model differ: {rec.difference}",
                         invariant="conformance", seconds=seconds, notes=[f"rmqcheck validate {target}"])
        return 1
    args.results.add("conform", case, seconds=seconds, notes=[f"{rec.calls:,} calls compared; {target}"])
    return 0
