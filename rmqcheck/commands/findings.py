"""`rmqcheck findings`: the snapshot's defects rmqcheck found, each with its report and patch
(docs/findings/NAME.md and NAME.patch); `--check` shows that each patch works:

- the patch applies to the tree and its changed classes compile;
- model: `conform --intended NAME` on the patched tree agrees with the model's intended form
  (and, run on the unchanged tree, shows whether conformance reaches the change at all);
- running code: `replay scenarios/toggles/NAME.scn --cluster --snapshot --intended NAME` on the
  patched tree, and `--snapshot` on the unchanged one: the patched code takes each step as the
  model of it does (every snapshot defect on but this one), where the unchanged code does, and
  breaks an invariant only where that model does;
- cluster runs: `rmqcheck cluster` of the scenario's configuration on the patched tree,
  `--cluster-runs` seeded runs with the unchanged tree as `--baseline`: no violation that the
  model does not explain and the unchanged code does not show with the same seed;
- RocketMQ's own tests: the JUnit 4 test classes of the touched classes' packages, compiled and
  run on the patched tree (and, for a class that does not pass there, on the unchanged tree);
  the patch passes when every test that runs on the unchanged tree passes on the patched one
  (checkers/java/rocketmq_tests.py). `--tests quick` leaves out the slow classes.

Each check that runs rmqcheck runs it as a maintainer would, as a command, printed."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from rmqcheck.checkers.java import build, rocketmq_tests

from .common import Table, UsageError, add_result_options, add_source_argument, budget_seconds, out

NAME = "findings"
HELP = "the findings with their reports and patches; --check tests each patch"
OUTPUTS = ()
INPUTS = ("--rocketmq-src",)

FINDINGS = build.REPO / "docs" / "findings"
SCENARIOS = build.REPO / "scenarios" / "toggles"
PASSED, FAILED, SHOWS_NOTHING, NOT_RUN = "passed", "failed", "shows nothing", "not run"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help="these findings only (default: every one with a patch)")
    p.add_argument("--check", action="store_true", help="test each patch: it applies and compiles, conformance "
                   "with the intended form, the finding's scenario on the running code, RocketMQ's tests")
    p.add_argument("--tests", choices=("quick", "all"), default="all",
                   help="with --check: RocketMQ's test classes to run: all (default), or quick: without the slow "
                        f"ones ({', '.join(rocketmq_tests.SLOW)}: a minute or more each)")
    p.add_argument("--cluster-runs", type=int, default=2, metavar="N",
                   help="with --check: seeded `rmqcheck cluster` runs on each patched tree (default 2; 0: none)")
    p.add_argument("--conform-budget", type=budget_seconds, default=20.0,
                   help="with --check: seconds of conformance on each tree (default 20)")
    add_source_argument(p)
    add_result_options(p)


class Finding(NamedTuple):
    name: str
    report: Path
    patch: Path | None


def _findings(names: list[str]) -> list[Finding]:
    if not FINDINGS.is_dir():
        raise UsageError(f"{FINDINGS}: no findings folder (the reports and patches are in a checkout's docs/findings/)")
    known = {p.stem: Finding(p.stem, p, p.with_suffix(".patch") if p.with_suffix(".patch").exists() else None)
             for p in sorted(FINDINGS.glob("*.md")) if p.stem != "README"}
    for name in names:
        if name not in known:
            raise UsageError(f"{name}: no report docs/findings/{name}.md (findings with one: {', '.join(known)})")
    return [known[n] for n in names] if names else list(known.values())


def run(args) -> int:
    findings = _findings(args.names)
    if not args.check:
        table = Table(title="rmqcheck findings: reports and patches (docs/findings/)")
        for col in ("finding", "report", "patch", "scenario"):
            table.add_column(col, overflow="fold")
        for f in findings:
            scn = SCENARIOS / f"{f.name}.scn"
            table.add_row(f.name, str(f.report.relative_to(build.REPO)),
                          str(f.patch.relative_to(build.REPO)) if f.patch else "-",
                          str(scn.relative_to(build.REPO)) if scn.exists() else "-")
        out.print(table)
        return 0
    try:
        tarball = build.locate(args.rocketmq_src)
    except build.BuildError as exc:
        raise UsageError(str(exc)) from None
    if not tarball.is_file():
        raise UsageError(f"--rocketmq-src {tarball}: --check patches a copy of a source tarball's tree, not a checkout")
    table = Table(title=f"rmqcheck findings --check: each patch against {tarball.name}", show_lines=True)
    if args.cluster_runs < 0:
        raise UsageError(f"--cluster-runs: {args.cluster_runs} is not a number of runs")
    for col in ("finding", "patch", "model (conform)", "running code (replay --cluster)", "cluster runs",
                "RocketMQ's tests"):
        table.add_column(col, overflow="fold")
    failed = 0
    for f in findings:
        if f.patch is None:
            table.add_row(f.name, "no patch", "", "", "", "")
            continue
        verdicts = _check(f, tarball, args.conform_budget, args.tests == "quick", args.cluster_runs)
        for check, (outcome, said) in zip(("patch", "model", "running code", "cluster runs", "RocketMQ's tests"),
                                          verdicts):
            args.results.add("findings", f"{f.name}/{check}", "failed" if outcome == FAILED else
                             "skipped" if outcome == NOT_RUN else "passed", said if outcome == FAILED else "",
                             notes=[said])
        failed += any(outcome == FAILED for outcome, _ in verdicts)
        table.add_row(f.name, *(f"{outcome}: {said}" for outcome, said in verdicts))
    out.print(table)
    out.print(f"{failed} of {sum(f.patch is not None for f in findings)} patches failed a check" if failed
              else "[green]every patch passed every check that ran[/]")
    return 1 if failed else 0


def _check(f: Finding, tarball: Path, conform_budget: float, quick: bool, runs: int) -> list[tuple[str, str]]:
    started = time.perf_counter()
    try:
        tree = build.from_diff(f.patch, tarball)
        builds = [(target, build.build(tree, target=target)) for target in (build.HA, build.CLUSTER)]
    except build.BuildError as exc:
        said = str(exc).splitlines()[0]
        return [(FAILED, said)] + [(NOT_RUN, "the patch did not build")] * 4
    changed = build.changed_files(tree)
    built = {c for target, b in builds for c in build.compiled(changed, target, b.classes)}
    compiled = [c for c in changed if c in built]
    unused = [Path(c).stem for c in changed if c not in compiled]
    patch = (PASSED, f"applies; {', '.join(Path(c).stem for c in compiled) or 'nothing'} compiled"
             + (f"; not {', '.join(unused)}: replaced by a stand-in of rmqcheck's (checkers/java/java/stubs-*/) or "
                "not loaded by the conformance and cluster builds, so neither built nor run" if unused else ""))
    out.print(f"{f.name}: patched tree {tree} ({time.perf_counter() - started:.0f}s)")
    return [patch, _model(f, tree, tarball, conform_budget), _running_code(f, tree, tarball),
            _cluster_runs(f, tree, tarball, runs), _junit(f, tree, tarball, changed, quick)]


def _rmqcheck(*argv: str) -> tuple[int, str]:
    """One rmqcheck command, as a maintainer runs it: its exit status and output."""
    out.print("  $ rmqcheck " + " ".join(argv))
    done = subprocess.run([sys.executable, "-m", "rmqcheck", *argv], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise _CommandFailed(lines[-1] if lines else f"exit {done.returncode}")
    return done.returncode, done.stdout


class _CommandFailed(Exception):
    pass


def _model(f: Finding, tree: Path, tarball: Path, budget: float) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="rmqcheck-findings-") as scratch:
        common = ("conform", "--intended", f.name, "--seed", "0", "--budget", f"{budget:g}", "--out", scratch)
        try:
            patched, _ = _rmqcheck(*common, "--rocketmq-src", str(tree))
            unchanged, _ = _rmqcheck(*common, "--rocketmq-src", str(tarball))
        except _CommandFailed as exc:
            return FAILED, f"conform could not run: {exc}"
    if patched:
        return FAILED, "the patched tree differs from the intended form"
    if not unchanged:
        return SHOWS_NOTHING, "agrees; so does the unchanged tree: conformance does not reach the change"
    return PASSED, "agrees; the unchanged tree differs"


class _Replayed(NamedTuple):
    breaks: bool  # an invariant broken on the code
    broken: str  # which, as replay says it
    steps: int
    differing: frozenset[tuple[int, str]]  # (step, "field: model X, code Y")


def _on_cluster(scenario: Path, form: tuple[str, ...], src: Path, keep: Path) -> _Replayed:
    code, said = _rmqcheck("replay", str(scenario), *form, "--cluster", "--quiet", "--keep", str(keep),
                           "--rocketmq-src", str(src))
    rows = [json.loads(line) for line in (keep / "steps.jsonl").read_text().splitlines() if line.strip()]
    broken = re.search(r"reproduced on RocketMQ's code: (I\w+)", said)
    return _Replayed(bool(code), broken[1] if broken else "an invariant", len(rows) - 1,
                     frozenset((r["index"], d) for r in rows for d in r["differences"]))


def _running_code(f: Finding, tree: Path, tarball: Path) -> tuple[str, str]:
    """The finding's scenario on the patched code, beside the model of that code (every snapshot
    defect on but this one), and on the unchanged code beside the snapshot's model. A step may
    differ from the model only where it differs on the unchanged code too (the harness's, not
    the patch's); the patched code must break an invariant exactly when its model does (another
    defect may still break one on the path). Where the snapshot's model cannot take the steps
    (another defect changes the path), the scenario's own model drives both runs and only the
    code's verdicts are judged: the patched code must hold where the unchanged code breaks."""
    scenario = SCENARIOS / f"{f.name}.scn"
    if not scenario.exists():
        return NOT_RUN, f"no scenario {scenario.relative_to(build.REPO)}"
    patched_form, unchanged_form, why = ("--snapshot", "--intended", f.name), ("--snapshot",), ""
    with tempfile.TemporaryDirectory(prefix="rmqcheck-findings-") as scratch:
        try:
            try:
                model_breaks: bool | None = bool(
                    _rmqcheck("replay", str(scenario), *patched_form, "--expect-fixed", "--quiet")[0])
                _rmqcheck("replay", str(scenario), *unchanged_form, "--quiet")
            except _CommandFailed as exc:
                if "is not enabled" not in str(exc):
                    raise
                model_breaks, patched_form, unchanged_form = None, (), ()
                why = re.search(r"step \d+: .*", str(exc))[0]
            patched = _on_cluster(scenario, patched_form, tree, Path(scratch) / "patched")
            unchanged = _on_cluster(scenario, unchanged_form, tarball, Path(scratch) / "unchanged")
        except (_CommandFailed, OSError, ValueError) as exc:
            return FAILED, f"replay could not run: {exc}"
    own = sorted(patched.differing - unchanged.differing)
    same = patched.steps - len({i for i, _ in patched.differing if i > 0})  # row 0 is the start
    compared = f"{same} of {patched.steps} steps the same as the model's " + ("patched form" if why == "" else
                                                                             "form in the scenario")
    if why:
        compared = f"the snapshot's model cannot take the steps ({why}), so only the code's verdicts are judged; " \
                   f"{compared}"
        own = []  # a model with this defect on: the patched code is meant to part from it
    if patched.differing and not own and not why:
        compared += f" ({len({i for i, _ in patched.differing})} differ on the unchanged code too)"
    if own:
        where = f"step {own[0][0]}" if own[0][0] else "the start (registrations, the first election)"
        return FAILED, f"{compared}; {where} differs only on the patched code: {own[0][1]}"
    if model_breaks is not None and patched.breaks != model_breaks:
        return FAILED, f"{compared}, but the code {'breaks' if patched.breaks else 'holds'} where that model " \
                       f"{'holds' if patched.breaks else 'breaks'}"
    if patched.breaks:
        if model_breaks:
            return PASSED, f"{compared}; both still break {patched.broken} on this path (another snapshot defect)"
        return FAILED, f"{compared}; the patched code still breaks {patched.broken}"
    if not unchanged.breaks:
        return SHOWS_NOTHING, f"{compared}; held, but the unchanged code holds too"
    return PASSED, f"{compared}; held, where the unchanged code breaks {unchanged.broken}"


def _cluster_runs(f: Finding, tree: Path, tarball: Path, runs: int) -> tuple[str, str]:
    """Seeded cluster runs of the scenario's configuration (toggles off: the cluster's own
    explanation takes the snapshot's) on the patched tree, each with a violation run again on
    the unchanged tree: exit 1 is a violation the model does not explain and the unchanged code
    does not show."""
    scenario = SCENARIOS / f"{f.name}.scn"
    if runs == 0 or not scenario.exists():
        return NOT_RUN, "--cluster-runs 0" if runs == 0 else f"no scenario {scenario.relative_to(build.REPO)}"
    from rmqcheck.checkers.counterexamples.files import CounterexampleError, read
    from rmqcheck.model import configs

    try:
        cfg = read(scenario).config._replace(bugs=frozenset())
    except CounterexampleError as exc:
        return FAILED, f"{scenario}: {exc}"
    if cfg.brokers < 2:
        return NOT_RUN, "a cluster needs at least 2 brokers"
    with tempfile.TemporaryDirectory(prefix="rmqcheck-findings-") as scratch:
        (Path(scratch) / "config.json").write_text(json.dumps(configs.to_dict(cfg)))
        try:
            code, said = _rmqcheck("cluster", "--config", str(Path(scratch) / "config.json"), "--runs", str(runs),
                                   "--out", str(Path(scratch) / "runs"), "--rocketmq-src", str(tree),
                                   "--baseline", str(tarball))
        except _CommandFailed as exc:
            return FAILED, f"cluster could not run: {exc}"
    seeds = f"{runs} run{'s' * (runs > 1)} (seed{f's 0-{runs - 1}' if runs > 1 else ' 0'})"
    if code:
        seen = re.search(r"(\w+) \(unexplained\)", said)
        return FAILED, f"{seeds}: {seen[1] if seen else 'a violation'} neither explained by the model nor shown by " \
                       "the unchanged code with the same seed"
    return PASSED, f"{seeds}: every violation explained, none the patched code's own"


def _junit(f: Finding, tree: Path, tarball: Path, changed: list[str], quick: bool) -> tuple[str, str]:
    started = time.perf_counter()
    out.print(f"  RocketMQ's tests of {f.name}'s packages" + (" (--tests quick)" if quick else ""))
    try:
        outcome, said = rocketmq_tests.check(tree, tarball, changed, quick, say=out.print)
    except build.BuildError as exc:
        return FAILED, f"could not run: {str(exc).splitlines()[0]}"
    out.print(f"  RocketMQ's tests: {outcome} ({time.perf_counter() - started:.0f}s)")
    return outcome, said
