"""`rmqcheck cluster`: seeded fault schedules on a cluster of RocketMQ's own broker-side code
(checkers/cluster/, docs/cluster.md), each run recorded and checked."""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from rich.table import Table

from rmqcheck.checkers.cluster.harness import ClusterError
from rmqcheck.checkers.cluster.node import NodeError
from rmqcheck.checkers.java import build
from rmqcheck.checkers.java.build import BuildError
from rmqcheck.checkers.java.driver import DriverError
from rmqcheck.model import configs
from rmqcheck.outputs import OutputError, check_folder, output_folder

from .cluster_runs import RUN_FILE, check_run, record_run
from .cluster_soak import run_soak
from .common import Bar, UsageError, add_result_options, add_source_argument, budget_seconds, out, positive

NAME = "cluster"
HELP = "seeded fault schedules on a cluster of RocketMQ's own broker-side code, each run recorded and checked"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ("--config", "--rocketmq-src", "--baseline")
REPLACED = ("--out",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="durable3", help=f"named configuration ({', '.join(configs.NAMED)}) or JSON file")
    how_long = p.add_mutually_exclusive_group()
    how_long.add_argument("--runs", type=positive, help="runs (default 3)")
    how_long.add_argument("--budget", type=budget_seconds, help="seconds: runs until the budget ends")
    how_long.add_argument("--soak", type=budget_seconds, metavar="SECONDS",
                          help="one long run instead: steady puts and reads and a fault every few seconds for SECONDS, "
                               "recorded in rotating files and validated at the end (docs/cluster.md; --steps and "
                               "--faults do not apply)")
    p.add_argument("--seed", type=int, default=0, help="the first run's seed; run i has seed + i")
    p.add_argument("--steps", type=positive, default=30, help="operations a run before its ending (default 30)")
    p.add_argument("--faults", type=int, default=3, help="perturbations a run at most (default 3)")
    p.add_argument("--out", default="counterexamples/cluster", help="folder for the runs (replaced whole with --force)")
    p.add_argument("--force", action="store_true", help="replace --out when it holds an earlier run of rmqcheck's")
    p.add_argument("--stop-at-unexplained", action="store_true",
                   help="end at the first run with an unexplained violation (a tree with a bug put back: how long it takes)")
    p.add_argument("--keep-stores", action="store_true",
                   help="keep every run's stores (by default only those of runs with a violation)")
    p.add_argument("--baseline", metavar="PATH", help="a second RocketMQ tree, the unchanged one (with --rocketmq-src a "
                   "changed tree): a run with a violation is run again on it, same seed; a violation that run shows "
                   "too is the baseline's own, not unexplained")
    add_source_argument(p)
    add_result_options(p)


def run(args) -> int:
    cfg = configs.load(args.config)
    if cfg.brokers < 2:
        raise UsageError(f"--config {args.config}: a cluster needs at least 2 brokers")
    check_folder(args.out, "--out", args.force)
    if args.soak:
        if args.baseline or args.stop_at_unexplained:
            raise UsageError("--soak is one run: --baseline and --stop-at-unexplained are for seeded runs")
        return run_soak(args, cfg)
    if args.baseline:  # built now (cached), so a wrong tree is refused before the runs, not at a violation
        try:
            tree = build.locate(args.baseline)
            build.build(tree)
            build.build(tree, target=build.CLUSTER)
        except BuildError as exc:
            raise UsageError(f"--baseline {args.baseline}: {exc}") from None
    runs = args.runs or (None if args.budget else 3)
    unexplained = 0
    table = Table(title=f"rmqcheck cluster: {args.config}, seed {args.seed}")
    for col in ("run", "seed", "steps", "settled", "seconds", "violations"):
        table.add_column(col, overflow="fold")
    started = time.perf_counter()
    failed: tuple[int, Exception] | None = None
    first_unexplained: float | None = None  # seconds into the command
    try:
        with Bar("cluster runs", runs, timed=False) as bar, output_folder(args.out, "rmqcheck cluster") as partial:
            i = 0
            while (runs is None or i < runs) and (not args.budget or time.perf_counter() - started < args.budget):
                seed = args.seed + i
                try:
                    r = record_run(cfg, seed, partial / f"run-{seed}", args.steps, args.faults, args.rocketmq_src)
                    violations = check_run(r.folder, cfg)
                    if any(v[1] == "unexplained" for v in violations):
                        violations = _reclassed(violations, cfg, seed, partial / f"run-{seed}-again", args,
                                                args.rocketmq_src, seen_again=None, not_seen=NOT_REPEATED)
                    if args.baseline and any(v[1] == "unexplained" for v in violations):
                        violations = _reclassed(violations, cfg, seed, partial / f"run-{seed}-baseline", args,
                                                args.baseline, seen_again=BASELINE, not_seen=None)
                except (ClusterError, NodeError, OSError) as exc:  # kept with its logs (a full disk too)
                    failed = (seed, exc)
                    break
                found = [v for v in violations if v[1] != "reported"]
                bad = [v for v in found if v[1] == "unexplained"]
                unexplained += len(bad)
                if not found and not args.keep_stores:
                    shutil.rmtree(r.folder / "stores", ignore_errors=True)
                if found:
                    _write_violation(r, violations, args, cfg)
                table.add_row(str(i + 1), str(seed), str(r.steps), "yes" if r.settled else "no", f"{r.seconds:.1f}",
                              "\n".join(f"{c} ({kind}) {subject}: {detail}" for c, kind, subject, detail in found) or "-")
                _result(args, r, found, bad)
                i += 1
                bar.update(f"{i} runs, {unexplained} unexplained", completed=i)
                if bad and first_unexplained is None:
                    first_unexplained = time.perf_counter() - started
                    if args.stop_at_unexplained:
                        break
    except (BuildError, DriverError) as exc:
        raise UsageError(f"the cluster could not start: {exc}") from None
    except OutputError as exc:  # --out could not be finished (a full disk): say why the run failed too
        if failed is None:
            raise
        raise UsageError(f"run {failed[0]}: the harness failed: {failed[1]}; {exc}") from None
    out.print(table)
    if failed is not None:
        raise UsageError(f"run {failed[0]}: the harness failed: {failed[1]} (the run's files and logs: "
                         f"{Path(args.out) / f'run-{failed[0]}'})")
    seconds = time.perf_counter() - started
    out.print(f"{i} runs in {seconds:.0f} s ({3600 * i / max(seconds, 1e-9):.0f} an hour); written to {args.out}")
    if unexplained:
        out.print(f"[bold red]{unexplained} violations the configuration does not explain[/] "
                  f"(the first after {first_unexplained:.0f} s)")
        return 1
    return 0


# What a rerun of the same seed makes of a violation that looked unexplained.
NOT_REPEATED = "not repeated"  # the same tree's rerun did not show it: a race of the real threads' timing
BASELINE = "baseline"  # the unchanged tree's run shows it too: the snapshot's own, not the change's


def _reclassed(violations, cfg, seed, folder, args, src, seen_again, not_seen):
    """The run's violations after a rerun of the same seed on tree `src` in `folder`: each
    unexplained one that the rerun shows too (the same check on the same subject) is classed
    `seen_again`, and each it does not show `not_seen` (None: left as it was). A seeded run repeats
    step by step as far as the code lets it; a race between RocketMQ's threads may not."""
    record_run(cfg, seed, folder, args.steps, args.faults, src)
    theirs = {(c, subject) for c, kind, subject, _ in check_run(folder, cfg) if kind != "reported"}
    if not args.keep_stores:
        shutil.rmtree(folder / "stores", ignore_errors=True)

    def now(c: str, kind: str, subject: str) -> str:
        if kind != "unexplained":
            return kind
        return (seen_again if (c, subject) in theirs else not_seen) or kind

    return [(c, now(c, kind, subject), subject, detail) for c, kind, subject, detail in violations]


def _write_violation(r, violations, args, cfg) -> None:
    """What reruns the run: its configuration and schedule (the seed), beside the run's files."""
    (r.folder / "violation.json").write_text(json.dumps({
        "kind": RUN_FILE, "config": configs.to_dict(cfg), "seed": r.seed, "steps": args.steps,
        "faults": args.faults, "violations": [dict(zip(("check", "kind", "subject", "detail"), v)) for v in violations],
    }, indent=1) + "\n")


def _result(args, r, found, bad) -> None:
    name = f"run {r.seed}"
    folder = Path(args.out) / r.folder.name  # where it is once the runs are renamed into place
    notes = [f"{c} ({kind}) {subject}: {detail}" for c, kind, subject, detail in found if kind != "unexplained"]
    if not r.settled:
        notes.append("some steps did not settle: the run may not repeat exactly")
    if bad:
        c, _, subject, detail = bad[0]
        args.results.add("cluster", name, "failed", f"{c} violated (unexplained): {subject}: {detail}",
                         invariant=c, file=folder, seconds=r.seconds, notes=notes)
    else:
        args.results.add("cluster", name, seconds=r.seconds, notes=notes)
