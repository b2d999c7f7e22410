"""`rmqcheck replay`: re-run a counterexample or scenario file deterministically, step by step."""

from __future__ import annotations

import argparse
import sys

from rich.table import Table

from rmqcheck.checkers.counterexamples.describe import changes, state_lines
from rmqcheck.checkers.counterexamples.files import Counterexample, CounterexampleError, read
from rmqcheck.checkers.counterexamples.replay import ReplayError, replay
from rmqcheck.checkers.java import conform
from rmqcheck.checkers.search import liveness, modes
from rmqcheck.invariants.catalogue import BY_ID, expected_ids
from rmqcheck.invariants.liveness import LIVENESS_BY_ID
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.step import format_action

from pathlib import Path

from rmqcheck.outputs import check_folder, check_output, output_folder
from rmqcheck.report import stepper

from . import cluster_runs
from .common import Drivers, UsageError, add_source_argument, out, write_text

NAME = "replay"
HELP = "re-run a counterexample or scenario file deterministically"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--keep", "--html")
INPUTS = ("file",)
REPLACED = ("--keep",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file")
    p.add_argument("--quiet", action="store_true", help="print only the verdict")
    p.add_argument("--java", action="store_true",
                   help="also replay every call the steps make into the controller, the epoch cache and the HA "
                        "service on RocketMQ's own classes")
    p.add_argument("--snapshot", action="store_true",
                   help="turn every defect the snapshot has on as well (run the actions as the code is)")
    p.add_argument("--intended", action="append", metavar="TOGGLE", default=[],
                   help="turn this defect off (repeatable): with --snapshot, the model of a tree whose patch fixes "
                        "it (docs/findings/)")
    p.add_argument("--expect-fixed", action="store_true",
                   help="the file's violation should be gone (a fixed bug's regression check): exit 0 when it is not "
                        "reproduced, 1 when it still is. Without it, a file that claims a violation and does not "
                        "reproduce it exits 1 too")
    p.add_argument("--cluster", action="store_true",
                   help="also run the steps on a cluster of RocketMQ's broker-side code (docs/cluster.md), comparing "
                        "both sides after each step; the exit status is then the cluster's: 1 when a violation is "
                        "seen on the running code, 0 when it held")
    p.add_argument("--keep", metavar="DIR", help="with --cluster: keep the stores, epoch files, logs and history here")
    p.add_argument("--force", action="store_true", help="replace --keep when it holds an earlier run of rmqcheck's")
    p.add_argument("--html", metavar="OUT",
                   help="also write a page to step through in a browser: one self-contained HTML file drawing every "
                        "step's state (docs/report.md); with --java or --cluster, their verdicts per step too")
    add_source_argument(p)


def run(args) -> int:
    if args.html:
        _check_html(args)
    if cluster_runs.is_run_file(args.file):  # a `rmqcheck cluster` run's violation.json: run it again
        return cluster_runs.rerun(args)
    if args.keep and not args.cluster:
        raise UsageError("--keep: only with --cluster")
    if args.cluster:
        if conform.is_scenario(args.file) or modes.is_mode_file(args.file):
            raise UsageError("--cluster: only controller-mode counterexamples and scenarios run on the cluster")
        cx = read(args.file)
        if cx.start or (cx.truncation is not None and not cx.actions):
            raise UsageError("--cluster: this file starts from constructed logs (or is a truncation search alone); "
                             "a cluster runs steps from the empty cluster")
        if args.keep:
            check_folder(args.keep, "--keep", args.force)
    if args.intended and (conform.is_scenario(args.file) or modes.is_mode_file(args.file)):
        raise UsageError("--intended: only for controller-mode counterexamples and scenarios (a conform scenario "
                         "names its intended form in its own `intended` lines)")
    if conform.is_scenario(args.file):
        return _replay_conform(args)
    if modes.is_mode_file(args.file):
        if args.java:
            out.print("--java: this mode's steps call no class conformance loads (controller mode only)")
        return _replay_mode(args.file, args.expect_fixed)
    cx: Counterexample = read(args.file)
    for note in cx.notes:
        print(f"rmqcheck: warning: {note}", file=sys.stderr)
    if args.snapshot:
        cx = cx._replace(config=cx.config._replace(bugs=cx.config.bugs | SNAPSHOT))
    for toggle in args.intended:
        if toggle not in cx.config.bugs:
            raise UsageError(f"--intended {toggle}: not on in this file's model"
                             + ("" if args.snapshot else " (with --snapshot, every snapshot defect is)"))
    cx = cx._replace(config=cx.config._replace(bugs=cx.config.bugs - frozenset(args.intended)))
    if args.html and not cx.actions and cx.truncation is not None:
        raise UsageError(f"--html: {args.file} is a truncation search alone, with no steps to draw")
    truncation_hit = _replay_truncation(cx, args.file) if cx.truncation is not None else True
    if cx.truncation is not None and not cx.actions:
        return 1 if truncation_hit else not_reproduced(args.expect_fixed)
    try:
        r = replay(cx.config, cx.actions, start=cx.start)
    except ReplayError as exc:
        raise CounterexampleError(f"{args.file}: {exc}") from None
    expected = expected_ids(cx.config)
    table = Table(title=f"replay {args.file}", show_lines=False)
    for col, kw in (
        ("step", {"justify": "right"}),
        ("action", {}),
        ("what changed", {"overflow": "fold"}),
        ("violations", {"overflow": "fold"}),
    ):
        table.add_column(col, **kw)
    first_hit = stepper.first_hit(cx, r.violations)
    # Row 0: what the start, and the bootstrap that built it, already violate.
    for i in range(len(cx.actions) + 1):
        marks = [f"{v.invariant}{'' if v.invariant in expected else ' (not expected to hold here)'}: {v.message}"
                 for v in r.violations[i]]
        if i == 0:
            if marks:
                table.add_row("0", "(the start and its bootstrap)", "", "\n".join(marks))
            continue
        step_no = f"{i} (loop)" if cx.loop is not None and i == cx.loop + 1 else str(i)
        a = cx.actions[i - 1]
        table.add_row(step_no, format_action(a), changes(r.states[i - 1], r.states[i]), "\n".join(marks))
    if not args.quiet:
        out.print(
            f"configuration: toggles {sorted(cx.config.bugs) or 'none'}"
            + (" (the snapshot)" if cx.config.bugs == SNAPSHOT else "")
        )
        if cx.start:
            out.print("  start: constructed from the replicas' logs (not reached from the empty cluster)")
        for line in state_lines(r.states[0]):
            out.print(f"  start: {line}")
        out.print(table)
        for line in state_lines(r.states[-1]):
            out.print(f"  end:   {line}")
    status = _verdict(cx, first_hit, truncation_hit, args.expect_fixed)
    seen: dict = {}  # what --java and --cluster found, for the page
    if args.java and cx.actions:
        status = max(status, _replay_java(args, cx, r.states[0], seen))
    if args.cluster:
        status = _replay_cluster(args, cx, r.states, seen)
    if args.html:
        page = stepper.page(stepper.data(Path(args.file).name, cx, r, **seen))
        write_text(args.html, page, "--html")
        out.print(f"wrote {args.html}: {len(r.states) - 1} steps to step through in a browser")
    return status


def _check_html(args) -> None:
    """Refuse, before any work, a --html that cannot be written or a file with no model steps to draw."""
    check_output(args.html, "--html")
    what = ("a `rmqcheck cluster` run's violation file" if cluster_runs.is_run_file(args.file) else
            "a conformance scenario" if conform.is_scenario(args.file) else
            "a classic, DLedger or recovery scenario" if modes.is_mode_file(args.file) else None)
    if what:
        raise UsageError(f"--html: {args.file} is {what}; only controller-mode counterexamples and scenarios are "
                         "drawn step by step")


def _replay_cluster(args, cx: Counterexample, states, seen: dict) -> int:
    """The steps on RocketMQ's running code (checkers/cluster/replay.py): a row a step, then the
    verdict from what the code did: an acknowledged message missing from the master, or a check
    of the recorded history and epoch files that stands for the file's invariant."""
    import tempfile

    from rmqcheck.checkers.cluster import replay as on_cluster
    from rmqcheck.checkers.cluster.harness import ClusterError
    from rmqcheck.checkers.cluster.node import NodeError
    from rmqcheck.checkers.java.build import BuildError
    from rmqcheck.checkers.java.driver import DriverError

    from .cluster_runs import CHECK_INVARIANT, check_run

    if cx.config.brokers < 2:
        raise UsageError("--cluster: a cluster needs at least 2 brokers")
    table = Table(title=f"replay {args.file} --cluster: RocketMQ's running code against the model")
    for col in ("step", "action", "on the cluster", "verdict"):
        table.add_column(col, overflow="fold")
    with tempfile.TemporaryDirectory(prefix="rmqcheck-replay-") as scratch, \
            output_folder(args.keep or str(Path(scratch) / "run"), "rmqcheck replay --cluster") as folder:
        failed = None
        try:
            outcome = on_cluster.run(cx.config, list(cx.actions), states, folder, args.rocketmq_src)
            found = [v for v in check_run(folder, cx.config, by_model=False) if v[1] != "reported"]
        except (BuildError, DriverError) as exc:
            raise UsageError(f"--cluster: the cluster could not start: {exc}") from None
        except Exception as exc:  # the run's files are kept (--keep), logs and thread dumps with them
            failed = exc
    if isinstance(failed, (ClusterError, NodeError, OSError)):  # OSError: the run's disk is full, say
        said = str(failed).replace(str(folder), str(args.keep)) if args.keep else str(failed)  # the kept name
        raise UsageError(f"--cluster: the harness failed: {said}"
                         + (f" (its files: {args.keep})" if args.keep else " (--keep DIR keeps its files)"))
    if failed is not None:
        raise failed
    for row in outcome.rows:
        verdict = "; ".join(row.differences) if row.differences else "same"
        if row.kind != on_cluster.DRIVEN:
            verdict = f"{row.kind}: {row.did}" + ("" if verdict == "same" else f"; {verdict}")
        elif row.differences:
            verdict = f"different: {verdict}"
        table.add_row(str(row.index), row.action, row.did if row.kind == on_cluster.DRIVEN else "",
                      verdict + ("" if row.settled else " (not quiet: may not repeat)"))
    if not args.quiet:
        out.print(table)
    seen["cluster"] = stepper.cluster_steps(outcome.rows, states, cx.config)
    steps = outcome.rows[1:]
    same = sum(1 for row in steps if not row.differences)
    own = sum(1 for row in steps if row.kind == on_cluster.OWN)
    undrivable = sum(1 for row in steps if row.kind == on_cluster.NOT_DRIVABLE)
    out.print(f"--cluster: {len(steps)} steps: {same} the same on both sides, {len(steps) - same} different; "
              f"{own} done by the code on its own, {undrivable} not drivable"
              + (f"; files kept in {args.keep}" if args.keep else ""))
    # Reproduced: the file's own invariant broken on the code; for a file that names none, any the
    # configuration promises. Whatever else broke is said, not counted (another finding's, often).
    promised = expected_ids(cx.config)
    own = (lambda inv: inv == cx.invariant) if cx.invariant else (lambda inv: inv in promised)
    judged = [c for c, kind, _, _ in found
              if own(CHECK_INVARIANT.get(c)) or (not cx.invariant and kind == "unexplained")]
    seen = [s for s in outcome.seen if own(s[1])]
    for step, invariant, what in outcome.seen:
        if not own(invariant):
            out.print(f"--cluster: also broken on the code: {invariant} {BY_ID[invariant].name}: {what} (after step {step})")
    if seen:
        step, invariant, what = seen[0]
        out.print(f"[bold red]reproduced on RocketMQ's code: {invariant} {BY_ID[invariant].name}: {what} "
                  f"(after step {step})[/]")
        return 1
    if judged:
        out.print("[bold red]reproduced on RocketMQ's code: "
                  + "; ".join(f"{c} ({kind}) {subject}: {detail}" for c, kind, subject, detail in found) + "[/]")
        return 1
    for c, kind, subject, detail in found:
        out.print(f"--cluster: {c} ({kind}) {subject}: {detail}")
    out.print(f"[green]held on RocketMQ's code: {cx.invariant or 'no promised invariant'} not broken there[/]")
    return 0


def not_reproduced(expect_fixed: bool, what: str = "") -> int:
    """A file that claims a violation and does not reproduce it: a finding of its own (exit 1),
    unless --expect-fixed says that is the point (a fixed bug's regression check, exit 0)."""
    what = f": {what}" if what else ""
    if expect_fixed:
        out.print(f"[green]not reproduced{what} (fixed, as --expect-fixed expects)[/]")
        return 0
    out.print(f"[bold red]not reproduced{what}[/]; the file claims this violation, so it no longer means what it "
              "says (--expect-fixed when a fix removed it)")
    return 1


def _verdict(cx: Counterexample, first_hit: tuple[int, str] | None, truncation_hit: bool, expect_fixed: bool) -> int:
    if cx.loop is not None:
        found = liveness.recheck(cx.config, cx.actions, cx.loop, cx.invariant)
        if found is None:
            return not_reproduced(expect_fixed, f"no fair cycle keeps {cx.invariant} open from step {cx.loop + 1}")
        out.print(f"[bold red]reproduced: {cx.invariant} {LIVENESS_BY_ID[cx.invariant].name} violated: {found}[/]")
        return 1
    if cx.invariant is not None:
        if first_hit is not None and truncation_hit:
            out.print(
                f"[bold red]reproduced: {cx.invariant} {BY_ID[cx.invariant].name} violated at step {first_hit[0]}[/]"
            )
            return 1
        return not_reproduced(expect_fixed, f"{cx.invariant} holds throughout")
    if first_hit is not None:
        out.print(f"[bold red]{first_hit[1]} violated at step {first_hit[0]}[/]")
        return 1
    out.print("[green]every invariant expected to hold did hold[/]")
    return 0


def _replay_truncation(cx: Counterexample, where: str) -> bool:
    """Re-check a `rmqcheck prove` truncation section on integers; True when it reproduces."""
    from rmqcheck.checkers.proofs import truncation as proofs

    sec = cx.truncation
    try:
        got, broken = proofs.recheck(sec, where)
    except ValueError as exc:
        raise CounterexampleError(str(exc)) from None
    out.print(
        f"truncation: local {sec['local']} max {sec['local_max']}, master {sec['master']} max {sec['master_max']}, "
        f"search {sec['search']}"
    )
    out.print(f"  point {got} (recorded {sec['point']}; the faithful search gives {sec['faithful_point']})")
    if got == sec["point"] and broken is not None:
        out.print(f"  [bold red]property {sec['property']} violated on integers[/]: {broken}")
        return True
    out.print(f"  [green]property {sec['property']} holds on these lists now[/]")
    return False


def _replay_mode(path: str, expect_fixed: bool) -> int:
    """A classic-HA, DLedger or recovery scenario: every step with what it changed and the violations."""
    sc = modes.read(path)
    try:
        r = modes.replay(sc.mode, sc.config, sc.actions)
    except CounterexampleError as exc:
        raise CounterexampleError(f"{path}: {exc}") from None
    out.print(f"{sc.mode.name} mode ({sc.mode.source}); toggles {sorted(sc.config.bugs) or 'none'}")
    table = Table(title=f"replay {path}")
    table.add_column("step", justify="right")
    for col in ("action", "what changed", "violations"):
        table.add_column(col, overflow="fold")
    for i, a in enumerate(sc.actions, start=1):
        marks = "\n".join(f"{v.invariant}: {v.message}" for v in r.violations[i])
        table.add_row(str(i), modes.format_action(sc.mode, a), modes.changes(r.states[i - 1], r.states[i]), marks)
    out.print(table)
    hit = r.first(sc.invariant)
    if sc.invariant is not None:
        if hit is None:
            return not_reproduced(expect_fixed, f"{sc.invariant} holds throughout")
        out.print(f"[bold red]reproduced: {sc.invariant} violated at step {hit[0]}: {hit[1].message}[/]")
        return 1
    if r.first() is not None:
        out.print(f"[bold red]{r.first()[1].invariant} violated at step {r.first()[0]}[/]")
        return 1
    out.print("[green]every invariant held[/]")
    return 0


def _replay_conform(args) -> int:
    """A `conform` scenario: every request on RocketMQ's classes and on the model, side by side."""
    try:
        requests = conform.read_scenario(args.file)
        bugs = conform.scenario_bugs(args.file)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CounterexampleError(str(exc)) from None
    with Drivers(args.rocketmq_src, ha=any(conform.is_ha(r) for r in requests)) as drivers:
        steps = conform.run_sequence(drivers.core, requests, stop_at_first=False, ha_driver=drivers.ha, bugs=bugs)
    table = Table(title=f"replay {args.file}: RocketMQ's classes | the model")
    for col in ("#", "request", "java", "model", "verdict"):
        table.add_column(col, overflow="fold")
    for row in conform.side_by_side(steps):
        table.add_row(str(row[0]), *row[1:])
    if not args.quiet:
        out.print(table)
    differing = [i for i, s in enumerate(steps, start=1) if s.diffs]
    if differing:
        first = steps[differing[0] - 1]
        out.print(f"[bold red]reproduced: the code and the model differ at request {differing[0]}[/]: "
                  + "; ".join(f"{k}: java {j!r}, model {m!r}" for k, j, m in first.diffs))
        return 1
    out.print("[green]not reproduced: the code and the model agree on every request[/]")
    return 0


def _replay_java(args, cx: Counterexample, start, seen: dict) -> int:
    """Every controller and epoch-cache call of the steps, on RocketMQ's classes and on the
    model's snapshot rules; 1 if the code answered differently."""
    from rmqcheck.checkers.java import lockstep

    with Drivers(args.rocketmq_src) as drivers:
        out.print(f"--java: RocketMQ's classes loaded: {drivers.loaded()}")
        try:
            ls = lockstep.lockstep(drivers.core, cx.config, cx.actions, start if cx.start else None,
                                   ha_driver=drivers.ha)
        except lockstep.LockstepError as exc:
            out.print(f"--java: {exc}")
            seen["java_note"] = f"replay --java: {exc}"
            return 0
    seen["java"] = stepper.java_steps(ls.steps)
    table = Table(title=f"replay {args.file} --java: the steps' calls into RocketMQ's classes")
    for col in ("step", "action", "calls (RocketMQ's method)", "against the code", "the rest of the step (model-only)"):
        table.add_column(col, overflow="fold")
    for s in ls.steps:
        methods = ", ".join(sorted({c.method for c in s.calls}))
        table.add_row(str(s.index) if s.index else "", lockstep.describe(s), methods, s.verdict, s.model_only)
    if not args.quiet:
        out.print(table)
    tally = lockstep.tally(ls)
    out.print(f"--java: {ls.compared} calls compared; {tally}")
    diff = ls.first_difference
    if diff is not None:
        call = next(c for c in diff.calls if c.diffs)
        out.print(f"[bold red]RocketMQ's code differs at step {diff.index} ({call.method}, request "
                  f"{conform.format_request(call.request)})[/]: "
                  + "; ".join(f"{k}: java {j!r}, model {m!r}" for k, j, m in call.diffs))
        return 1
    return 0
