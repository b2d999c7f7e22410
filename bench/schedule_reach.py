"""How often `rmqcheck cluster`'s seeded schedules reach each historical bug put back into
RocketMQ's tree (checkers/cluster/historical.py), estimated on the model in seconds instead of
hours of cluster runs (docs/cluster.md, Historical bugs put back).

Each seed's schedule (checkers/cluster/run.py's `schedule`, as `rmqcheck cluster` draws it) is
played on the model as the cluster would run it: its client and nemesis resolve each operation
the same way (a fault at MASTER hits the model's master, a put goes to the client's route), and
traces/real_runs.Following takes it with the code's own steps to quiet in the follower's fixed
order. The bug's model toggle is on; a run counts when its path breaks an invariant that the same
path with the toggle off keeps. The fixed order is one of the code's interleavings, so this
estimates, it does not bound.

Usage: python bench/schedule_reach.py [RUNS] [FAULTS] (defaults 200 and 3, `rmqcheck cluster`'s).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from typing import Any, Iterator

from rmqcheck.checkers.cluster import historical
from rmqcheck.checkers.cluster.run import FAULTS, MASTER, schedule
from rmqcheck.checkers.counterexamples.replay import ReplayError, replay
from rmqcheck.model import configs
from rmqcheck.model.broker import MASTER as MASTER_ROLE
from rmqcheck.model.config import Config
from rmqcheck.traces.real_runs import Following, room_for

STEPS = 30  # `rmqcheck cluster`'s default operations a run
INVARIANTS = frozenset({"I1", "I2", "I3", "I4", "I5"})  # what views.code_violations judges on the code


def records(runs: list[Following], cfg: Config, seed: int, faults: int) -> Iterator[dict[str, Any]]:
    """The seed's operations as a cluster run would record them, each resolved on the model's
    state so far (`runs[-1]`), as run.Client and run.Nemesis resolve them."""
    hit = None  # the broker the last fault at MASTER hit
    for i, op in enumerate(schedule(seed, cfg.brokers, STEPS, faults, cfg.queues), start=1):
        run = runs[-1]
        s, result = run.state, ""
        if op.f == "put":
            b = run.route()
            master = b is not None and s.broker(b).up and s.broker(b).role == MASTER_ROLE
            result = f"to broker {b}" if master else "no master"
        elif op.f == "read":
            result = "- read"  # the count is the code's: nothing to compare it with here
        elif op.f == "route":
            result = f"master {run.master()}"
        elif op.f == "heal":
            result = "healed"
        elif op.f in FAULTS or op.f == "restart":
            b = op.arg
            if b == MASTER and op.f == "restart":
                b = hit
            elif b == MASTER:
                b = hit = run.master()
            if b is None:
                result = "no master"
            elif (op.f == "restart" and s.broker(b).up) or (op.f in ("crash", "power_loss") and not s.broker(b).up):
                result = "nothing to do"
            else:
                result = f"broker {b}"
        yield {"step": i, "op": op.f, "arg": op.arg, "peer": op.peer, "result": result}


def reaches(cfg: Config, toggle: str, seed: int, faults: int) -> str | None:
    """The invariant the seed's run breaks with `toggle` on and keeps with it off, if any."""
    runs = [Following(room_for(cfg, [{"op": "put"}] * STEPS))]
    for record in records(runs, cfg, seed, faults):
        nxt = runs[-1].after(record)
        if nxt is not None:  # an operation the model cannot take is left out (the code did something else)
            runs.append(nxt)
    path = runs[-1].followed()
    broken = {v.invariant for vs in replay(path.cfg, path.actions, INVARIANTS).violations for v in vs}
    if broken:
        try:
            without = replay(path.cfg._replace(bugs=path.cfg.bugs - {toggle}), path.actions, INVARIANTS)
            broken -= {v.invariant for vs in without.violations for v in vs}
        except ReplayError:  # the path needs the toggle: what it breaks is the toggle's
            pass
    return min(broken) if broken else None


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    faults = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{runs} seeds of `rmqcheck cluster` schedules ({STEPS} operations, {faults} faults) on the model")
    for name, bug in sorted(historical.BUGS.items()):
        cfg = configs.load(bug.config)
        cfg = cfg._replace(bugs=cfg.bugs | {bug.toggle})
        started = time.perf_counter()
        hits = [(seed, inv) for seed in range(runs) if (inv := reaches(cfg, bug.toggle, seed, faults))]
        seconds = time.perf_counter() - started
        first = ", ".join(f"seed {s} ({inv})" for s, inv in hits[:3]) or "none"
        print(f"{bug.ref:12} {name:28} {bug.config:9} reached in {len(hits):3} of {runs} runs "
              f"({100 * len(hits) / runs:.1f}%), first: {first}; {runs / seconds:.0f} runs/s")


if __name__ == "__main__":
    main()
