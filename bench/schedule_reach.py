"""How often `rmqcheck cluster`'s seeded schedules reach each historical bug put back into
RocketMQ's tree (checkers/cluster/historical.py), estimated on the model in seconds instead of
hours of cluster runs (docs/cluster.md, Historical bugs put back).

Each seed's run (checkers/cluster/run.py: `schedule`, then the ending that heals, restarts and
reads to the end) is played on the model as the cluster would run it: the client and the nemesis
resolve each operation the same way (a fault at MASTER hits the model's master, a put goes to the
client's route; a power loss takes the epoch files back where the model's file system had not
written them), and traces/real_runs.Following takes it with the code's own steps to quiet in the
follower's fixed order. The run is played twice, with the bug's model toggle on and off, as
`rmqcheck cluster --baseline` runs the unchanged tree with the same seed; a run counts when the
toggle's run breaks an invariant the other keeps. Judged: I1, I2, I3 and I5, which the cluster's
code checks judge whole, and the toggle's own (`catches`), which they may judge only in part
(I4's core) or through `validate` at the end (I8: an acked message never read). The fixed
order is one of the code's interleavings, so this estimates, it does not bound.

Usage: python bench/schedule_reach.py [RUNS] [FAULTS] (defaults 200 and 3, `rmqcheck cluster`'s).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from typing import Any

from rmqcheck.checkers.cluster import historical
from rmqcheck.checkers.cluster.run import FAULTS, _ending, schedule, target
from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.model import configs
from rmqcheck.model.broker import MASTER
from rmqcheck.model.bugs import BY_NAME
from rmqcheck.model.config import Config
from rmqcheck.traces.real_runs import Following, room_for

STEPS = 30  # `rmqcheck cluster`'s default operations a run
JUDGED = frozenset({"I1", "I2", "I3", "I5"})


def record(run: Following, i: int, op: Any, hit: int | None) -> tuple[dict[str, Any], int | None]:
    """Operation `op` as a cluster run would record it, resolved on the model's state as
    run.Client and run.Nemesis resolve it; and the broker the last fault at MASTER hit."""
    s, result = run.state, ""
    if op.f == "put":
        b = run.route()
        master = b is not None and s.broker(b).up and s.broker(b).role == MASTER
        result = f"to broker {b}" if master else "no master"
    elif op.f in ("read", "final_read"):
        result = "- read"  # the count is the code's: nothing to compare it with here
    elif op.f == "route":
        result = f"master {run.master()}"
    elif op.f == "heal":
        result = "healed"
    elif op.f in FAULTS or op.f == "restart":
        b, hit = target(op, run.master, hit)
        if b is None:
            result = "no master"
        elif (op.f == "restart" and s.broker(b).up) or (op.f in ("crash", "power_loss") and not s.broker(b).up):
            result = "nothing to do"
        else:
            result = f"broker {b}"
    rec = {"step": i, "op": op.f, "arg": op.arg, "peer": op.peer, "result": result}
    if op.f == "power_loss":
        rec["epoch_files"] = "reverted"  # to what was written back a tick ago (nothing, where that is all)
    return rec, hit


def play(cfg: Config, seed: int, faults: int, judged: frozenset[str]) -> tuple[frozenset[str], int]:
    """Which of `judged` the seed's run breaks on the model under `cfg`, and how many of its
    operations the model could not take (a second partition while one holds, lost answers on a
    partitioned broker, a restart whose quiet never comes: limits of the model's path, left out)."""
    run = Following(room_for(cfg, [{"op": "put"}] * STEPS))
    hit, dropped = None, 0
    for i, op in enumerate(schedule(seed, cfg.brokers, STEPS, faults, cfg.queues) + _ending(cfg), start=1):
        rec, hit = record(run, i, op, hit)
        nxt = run.after(rec)
        if nxt is None:
            dropped += 1
        else:
            run = nxt
    path = run.followed()
    return frozenset(v.invariant for vs in replay(path.cfg, path.actions, judged).violations for v in vs), dropped


def reaches(cfg: Config, toggle: str, seed: int, faults: int) -> tuple[str | None, int]:
    """The invariant the seed's run breaks with `toggle` on and not with it off (the least, or
    None), and how many operations the toggle's run left out."""
    judged = JUDGED | set(BY_NAME[toggle].catches)
    on, dropped = play(cfg._replace(bugs=cfg.bugs | {toggle}), seed, faults, judged)
    off, _ = play(cfg._replace(bugs=cfg.bugs - {toggle}), seed, faults, judged)
    return min(on - off, default=None), dropped


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    faults = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{runs} seeds of `rmqcheck cluster` runs ({STEPS} operations and the ending, {faults} faults) on the model")
    for name, bug in sorted(historical.BUGS.items()):
        cfg = configs.load(bug.config)
        started = time.perf_counter()
        results = [reaches(cfg, bug.toggle, seed, faults) for seed in range(runs)]
        seconds = time.perf_counter() - started
        hits = [(seed, inv) for seed, (inv, _) in enumerate(results) if inv]
        short = sum(1 for _, dropped in results if dropped)
        first = ", ".join(f"seed {s} ({inv})" for s, inv in hits[:3]) or "none"
        print(f"{bug.ref:11} {name:28} {bug.config:9} judged {','.join(sorted(JUDGED | set(BY_NAME[bug.toggle].catches)))}: "
              f"reached in {len(hits):3} of {runs} runs ({100 * len(hits) / runs:.1f}%), first: {first}; "
              f"{short} runs left operations out; {runs / seconds:.1f} runs/s")


if __name__ == "__main__":
    main()
