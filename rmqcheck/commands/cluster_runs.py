"""What `rmqcheck cluster` and `rmqcheck replay` share about a recorded cluster run: how its
violations are judged (`check_run`), and rerunning one from its violation.json (`replay
run-N/violation.json`). Not a command: no command imports another command's module."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rmqcheck.checkers.cluster import follow
from rmqcheck.checkers.cluster.follow import STORE_CHECKS
from rmqcheck.checkers.cluster.harness import ClusterError
from rmqcheck.checkers.cluster.node import NodeError
from rmqcheck.checkers.cluster.run import CODE_VIOLATIONS, run_once
from rmqcheck.checkers.java.build import BuildError
from rmqcheck.checkers.java.driver import DriverError
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import configs
from rmqcheck.model.config import Config
from rmqcheck.outputs import check_folder, output_folder
from rmqcheck.traces import logs
from rmqcheck.traces.validate import discover, validate_local

from .common import UsageError, out

# What each history or store check stands for in the model's catalogue (invariants/catalogue.py).
# A check not named here (a new one) is held to be promised.
CHECK_INVARIANT = {"lost_ack": "I1", "read_truncated": "I3", "epoch_agreement": "I5", "epoch_file": "I5",
                   "offset_agreement": "I9", "read_failed": "I3", "order": "I1", **logs.INVARIANT}
# Allowed by at-least-once delivery (duplicate), or about availability, not safety: a replica whose
# handshake finds no consistent point retries for ever (consistent_point; validate reports it too).
REPORTED_ONLY = {"duplicate", "consistent_point", *logs.REPORTED}


def check_run(folder: Path, cfg: Config, by_model: bool = True) -> list[tuple[str, str, str, str]]:
    """Every violation `validate` finds in the run, and every invariant the running code broke
    on the way (the run's code-violations.jsonl, named by the invariant: checkers/cluster/views.py),
    with its kind: "reported" (allowed by the delivery guarantee), "expected" (the configuration
    does not promise what it breaks), what the model's path of the same run makes of it
    (`by_model`, checkers/cluster/follow.py: a snapshot defect, named) or "unexplained" (the
    running code broke what the configuration promises, and the model does not show why).
    `replay --cluster` compares with the model's path at every step itself: no `by_model`."""
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
    model = follow.explain(cfg, follow.read_steps(folder), judged) if judged and by_model else {}
    out = []
    for check, by, subject, detail in found:
        if by is None:
            kind = "reported" if check in REPORTED_ONLY else "unexplained"  # a check new to this table
        elif by in model:
            kind, detail = model[by].kind, f"{detail}; model: {model[by].note}"
        else:
            kind = "expected" if follow.invariant_of(by) not in expected_ids(cfg) else "unexplained"
        out.append((check, kind, subject, detail))
    return out


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
            r = run_once(cfg, data["seed"], folder / f"run-{data['seed']}", data["steps"], data["faults"],
                         args.rocketmq_src)
            found = [v for v in check_run(r.folder, cfg) if v[1] != "reported"]
            stopped = follow.follow(cfg, follow.read_steps(r.folder)).stopped
        except (BuildError, DriverError) as exc:
            raise UsageError(f"the cluster could not start: {exc}") from None
        except (ClusterError, NodeError, OSError) as exc:
            raise UsageError(f"the harness failed: {exc}") from None
    before = {(v.get("check"), v.get("subject")) for v in data.get("violations") or [] if isinstance(v, dict)}
    for c, kind, subject, detail in found:
        again = "seen again" if (c, subject) in before else "new in this run"
        out.print(f"{c} ({kind}, {again}) {subject}: {detail}")
    out.print(f"the model follows the rerun to its end ({r.steps} operations)" if stopped is None else
              f"the model cannot follow the rerun: step {stopped.step} ({stopped.op}): {stopped.why}")
    bad = [v for v in found if v[1] == "unexplained"]
    if bad:
        out.print(f"[bold red]{len(bad)} violations the configuration does not explain[/]")
        return 1
    out.print("[green]every violation of the rerun is explained[/]" if found else "[green]no violation this time[/]")
    return 0
