"""What `rmqcheck cluster` and `rmqcheck replay` share about a recorded cluster run: recording
one (`record_run`), how its violations are judged (`check_run`, each explained by the model's path
of the same run: `explain`), and rerunning one from its violation.json (`replay
run-N/violation.json`). Not a command: no command imports another command's module.

`explain` judges a violation the running code showed the way `check` judges its own
(checkers/search/hunting.py): not promised by the configuration (expected); broken by the model's
path of the same run too (traces/real_runs.py follows the record), and gone when one snapshot
defect takes its intended form (that defect, named); otherwise unexplained: the running code did
what the model's path of its own schedule does not."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from rmqcheck.checkers.cluster.harness import ClusterError
from rmqcheck.checkers.cluster.node import NodeError
from rmqcheck.checkers.cluster.run import CODE_VIOLATIONS, RunResult, run_once
from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.checkers.java.build import BuildError
from rmqcheck.checkers.java.driver import DriverError
from rmqcheck.checkers.search.hunting import SNAPSHOT_DEFECT, UNEXPLAINED, classify
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import configs
from rmqcheck.model.bugs import SNAPSHOT
from rmqcheck.model.config import Config
from rmqcheck.model.epochfile import disagreement
from rmqcheck.model.world import State
from rmqcheck.outputs import check_folder, output_folder
from rmqcheck.traces import logs, run_records, stores
from rmqcheck.traces.history import SHAPE
from rmqcheck.traces.real_runs import Followed, follow
from rmqcheck.traces.run_records import read_steps
from rmqcheck.traces.validate import discover, validate_local

from .common import UsageError, out

# What each history or store check stands for in the model's catalogue (invariants/catalogue.py).
# A check not named here (a new one) is held to be promised.
CHECK_INVARIANT = {"lost_ack": "I1", "read_truncated": "I3", "epoch_agreement": "I5", "epoch_file": "I5",
                   "offset_agreement": "I9", "read_failed": "I3", "order": "I1", **logs.INVARIANT}
# Allowed by at-least-once delivery (duplicate), or about availability, not safety: a replica whose
# handshake finds no consistent point retries for ever (consistent_point; validate reports it too).
# A step of the run the model cannot explain (real_run_conformance) is about the model, not the
# code's guarantees: shown with the run, and failing `rmqcheck validate` of the run's folder.
REPORTED_ONLY = {"duplicate", "consistent_point", *logs.REPORTED, *run_records.CHECKS}


def record_run(cfg: Config, seed: int, folder: Path, steps: int, faults: int, src: str | None) -> RunResult:
    """One seeded run on the cluster (checkers/cluster/run.py), with the run.json that lets
    `rmqcheck validate` follow its record on the model (traces/real_runs.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    run_records.write_run(folder, cfg, seed, steps, faults)
    return run_once(cfg, seed, folder, steps, faults, src)


def check_run(folder: Path, cfg: Config, by_model: bool = True,
              shapes: bool = False) -> list[tuple[str, str, str, str]]:
    """Every violation `validate` finds in the run, and every invariant the running code broke
    on the way (the run's code-violations.jsonl, named by the invariant: checkers/cluster/views.py),
    with its kind: "reported" (allowed by the delivery guarantee), "expected" (the configuration
    does not promise what it breaks), what the model's path of the same run makes of it
    (`by_model`, `explain` below: a snapshot defect, named) or "unexplained" (the
    running code broke what the configuration promises, and the model does not show why).
    `replay --cluster` compares with the model's path at every step itself: no `by_model`. A
    soak has no steps for the model to follow: with `shapes`, its violations are matched against
    the shape a known finding leaves instead (`_shaped`: a snapshot defect by its shape, said so)."""
    report = validate_local(discover([str(folder)]))
    found = []  # (check, what the model judges it by, subject, detail)
    for v in report.violations:
        if v.check in REPORTED_ONLY:
            found.append((v.check, None, v.subject, v.detail))
        else:
            judged_by = v.check if v.check in STORE_CHECKS else CHECK_INVARIANT.get(v.check)
            found.append((v.check, judged_by, v.subject, v.detail))
    path = folder / CODE_VIOLATIONS
    for line in path.read_text().splitlines() if path.exists() else ():
        seen = json.loads(line)
        found.append((seen["invariant"], seen["invariant"], seen["what"], f"on the running code, step {seen['step']}"))
    judged = {by for _, by, _, _ in found if by is not None}
    model = explain(cfg, read_steps(folder), judged) if judged and by_model else {}
    out = []
    for check, by, subject, detail in found:
        if by is None:
            kind = "reported" if check in REPORTED_ONLY else "unexplained"  # a check new to this table
        elif by in model:
            kind, detail = model[by].kind, f"{detail}; model: {model[by].note}"
        elif invariant_of(by) not in expected_ids(cfg):
            kind = "expected"
        elif shapes and (shaped := _shaped(folder, check, subject, detail)):
            kind, detail = SNAPSHOT_DEFECT, shaped
        else:
            kind = "unexplained"
        out.append((check, kind, subject, detail))
    return out


def _shaped(folder: Path, check: str, subject: str, detail: str) -> str | None:
    """The violation's detail saying it has the shape a known finding leaves, if it has: said by
    the check itself (traces/history.py `shape`), or for an epoch_agreement of the run's stores,
    matched here; None otherwise."""
    if SHAPE.search(detail):
        return detail
    if check != "epoch_agreement" or not subject.startswith("replicas "):
        return None
    try:  # the soak's stores, with RocketMQ's default transfer batch
        a, b = (stores.load_epoch_file(folder / "stores" / name)[0] for name in subject.split()[1:])
    except (stores.Fatal, stores.Unreadable, ValueError):
        return None
    found = stores.boundary_batch_shape(a, b)
    return f"{detail}; {found}" if found else None


RUN_FILE = "rmqcheck cluster run"  # violation.json's kind: `rmqcheck replay` reruns it


def is_run_file(path: str) -> bool:
    """A violation.json that `rmqcheck cluster` wrote."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError, RecursionError):  # not one: the counterexample reader says what is wrong
        return False
    return isinstance(data, dict) and data.get("kind") == RUN_FILE


def rerun(args) -> int:
    """`rmqcheck replay run-N/violation.json`: the run again on the cluster (same configuration,
    seed and schedule), each violation explained by the model's path of the rerun; exit 1 when
    one is unexplained (or the model cannot follow it), 0 otherwise, 2 for a bad file."""
    data = json.loads(Path(args.file).read_text())
    cfg = configs.from_dict(data.get("config"), f"{args.file}: config")
    for key, least in (("seed", None), ("steps", 1), ("faults", 0)):
        v = data.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or (least is not None and v < least):
            at_least = "" if least is None else f" of at least {least}"
            raise UsageError(f"{args.file}: {key} must be an integer{at_least}, got {v!r}")
    if args.keep:
        check_folder(args.keep, "--keep", args.force)
    with tempfile.TemporaryDirectory(prefix="rmqcheck-rerun-") as scratch, \
            output_folder(args.keep or str(Path(scratch) / "run"), "rmqcheck replay") as folder:
        try:
            r = record_run(cfg, data["seed"], folder / f"run-{data['seed']}", data["steps"], data["faults"],
                           args.rocketmq_src)
            found = [v for v in check_run(r.folder, cfg) if v[1] != "reported"]
            followed = follow(cfg, read_steps(r.folder), views=True)
        except (BuildError, DriverError) as exc:
            raise UsageError(f"the cluster could not start: {exc}") from None
        except (ClusterError, NodeError, OSError) as exc:
            raise UsageError(f"the harness failed: {exc}") from None
    before = {(v.get("check"), v.get("subject")) for v in data.get("violations") or [] if isinstance(v, dict)}
    for c, kind, subject, detail in found:
        again = "seen again" if (c, subject) in before else "new in this run"
        out.print(f"{c} ({kind}, {again}) {subject}: {detail}")
    stopped = followed.stopped
    out.print(f"the model follows the rerun to its end ({followed.explained} steps, every broker's view the same)"
              if stopped is None else f"the model cannot follow the rerun: step {stopped.step} ({stopped.op}): "
                                      f"{stopped.why} ({followed.explained} steps explained before it)")
    bad = [v for v in found if v[1] == "unexplained"]
    if bad:
        out.print(f"[bold red]{len(bad)} violations the configuration does not explain[/]")
        return 1
    out.print("[green]every violation of the rerun is explained[/]" if found else "[green]no violation this time[/]")
    return 0


class Explanation(NamedTuple):
    kind: str  # hunting's: expected, snapshot defect, bug toggle, unexplained
    note: str


def _epoch_files_disagree(s: State) -> bool:
    """`validate`'s epoch_agreement (traces/stores.py) over the model's epoch files."""
    files = [list(b.epochs.disk) for b in s.brokers]
    return any(disagreement(a, b) for i, a in enumerate(files) for b in files[i + 1:])


# `validate`'s checks of the stores that the model's state can be judged by directly, with the
# invariant whose promise they stand for (the rest are judged by that invariant).
STORE_CHECKS = {"epoch_agreement": ("I5", _epoch_files_disagree)}


def invariant_of(judged_by: str) -> str:
    """The catalogue invariant whose promise a store check or an invariant stands for."""
    return STORE_CHECKS[judged_by][0] if judged_by in STORE_CHECKS else judged_by


def _breaks(cfg: Config, records: list[dict[str, Any]], wanted: frozenset[str],
            views: bool = True) -> tuple[Followed, dict[str, int]]:
    """The model's path of the run under `cfg`, and the recorded step at which it first breaks
    each of `wanted` (only those it breaks): an invariant of the catalogue, or a store check.
    `views`: judged against every broker's recorded view too, not only the controller's."""
    followed = follow(cfg, records, views=views)
    r = replay(followed.cfg, followed.actions, wanted - STORE_CHECKS.keys())  # every action was enabled where it stands
    first: dict[str, int] = {}
    for i, (s, vs) in enumerate(zip(r.states, r.violations)):
        at = followed.steps[i - 1] if i else 0
        for v in vs:
            first.setdefault(v.invariant, at)
        for check in wanted & STORE_CHECKS.keys():
            if check not in first and STORE_CHECKS[check][1](s):
                first[check] = at
    return followed, first


def explain(cfg: Config, records: list[dict[str, Any]], invariants: Iterable[str]) -> dict[str, Explanation]:
    """Each invariant (or store check: STORE_CHECKS) the running code broke in the recorded run,
    explained (module docstring)."""
    wanted = frozenset(invariants)
    followed, broken = _breaks(cfg, records, wanted)
    out: dict[str, Explanation] = {}
    todo = set()
    for inv in wanted:
        expected_kind, why = classify(cfg, invariant_of(inv), ())
        if expected_kind != UNEXPLAINED:
            out[inv] = Explanation(expected_kind, why)
        elif inv in broken:
            todo.add(inv)
        elif followed.stopped is not None:
            s = followed.stopped
            out[inv] = Explanation(UNEXPLAINED, f"the model cannot follow the run: step {s.step} ({s.op}): {s.why}")
        else:
            out[inv] = Explanation(UNEXPLAINED, f"the model's path of the same schedule ({len(followed.actions)} "
                                                f"steps) keeps {inv}")
    if todo:
        removed: dict[str, list[str]] = {inv: [] for inv in todo}
        for name in sorted(cfg.bugs):
            for inv in _kept(cfg._replace(bugs=cfg.bugs - {name}), records, broken, todo):
                removed[inv].append(name)
        several = _kept(cfg._replace(bugs=cfg.bugs - SNAPSHOT), records, broken, todo) if cfg.bugs & SNAPSHOT else set()
        for inv in todo:
            kind, why = classify(cfg, invariant_of(inv), removed[inv],
                                 needs_several=not removed[inv] and inv in several)
            where = f"the model's path of the same schedule breaks it too (at step {broken[inv]})"
            out[inv] = Explanation(kind, f"{where}; {why}")
    # Epoch files a power loss took (the model keeps them): said with every unexplained one.
    lost = "".join(f"; the power loss of step {r['step']} {r['epoch_files']} the epoch files (RocketMQ writes them "
                   "without fsync)" for r in records if r.get("epoch_files") in ("lost", "reverted"))
    return {inv: e._replace(note=e.note + lost) if e.kind == UNEXPLAINED else e for inv, e in out.items()}


def _kept(cfg: Config, records: list[dict[str, Any]], broken: dict[str, int], todo: set[str]) -> set[str]:
    """Those of `todo` that the model's path of the run under `cfg` (a defect in its intended
    form) keeps, up to where the snapshot's path broke each at least: a path that parts from
    the record only later still shows that the intended form does not break it there."""
    # Against the controller's view only: a defect's own mark on a broker's view (the epoch entry
    # equal_start_epoch_not_recorded leaves out) would part its intended form from the record at once.
    intended, still = _breaks(cfg, records, frozenset(todo), views=False)
    reached = intended.stopped.step if intended.stopped else float("inf")
    return {inv for inv in todo if inv not in still and reached >= broken[inv]}
