"""What following a soak on the model would cost (`make bench`): the rate at which
traces/real_runs.follow explains a recorded run of N puts to one master (durable3, a round every
ten puts, the controller's state in each record, no broker views), for growing N.

The model is exact per message (a commit log is a tuple of cells, the state holds every message
and send), so each step copies state that grows with the messages held: the cost of a put grows
with N and a run's with N squared. The figures are printed with the machine and extrapolated to
the puts of a 30-minute soak (docs/traces.md, Recorded cluster runs). Config.validate caps a
model run at 10,000 messages.

Usage: python bench/follow_scaling.py [N ...] (default 250 500 1000 2000)."""

from __future__ import annotations

import sys
import time
from typing import Any

from rmqcheck.model.configs import load
from rmqcheck.traces.real_runs import follow

from stateful import machine  # noqa: E402  (bench/ is on sys.path when run as a script)

SOAK_PUTS = 3_900_000  # puts of the 30-minute soak (docs/cluster.md)
CONTROLLER = {"exists": True, "master": 1, "master_address": "127.0.0.1:30001", "master_epoch": 1, "sss": [1, 2, 3],
              "sss_epoch": 4, "brokers": {str(b): f"127.0.0.1:3000{b}" for b in (1, 2, 3)}, "next_id": 4}


def records(puts: int) -> list[dict[str, Any]]:
    """A first round that elects broker 1, then `puts` puts to it, a round after every tenth."""
    round_ = {"op": "round", "arg": None, "result": "master 1"}
    put = {"op": "put", "arg": 0, "result": "to broker 1"}
    ops = [round_] + [op for k in range(puts) for op in ((put, round_) if k % 10 == 9 else (put,))]
    return [{"step": i, **op, "controller": CONTROLLER} for i, op in enumerate(ops, start=1)]


def main(sizes: list[int]) -> int:
    print(machine())
    cfg = load("durable3")
    last = None
    for n in sizes:
        started = time.perf_counter()
        followed = follow(cfg, records(n))
        seconds = time.perf_counter() - started
        if followed.stopped is not None:
            print(f"{n} puts: not followed: {followed.stopped}")
            return 1
        print(f"{n:>6} puts: {seconds:7.2f} s, {n / seconds:6.0f} puts/s"
              + (f", {seconds / last[1]:.1f}x the time of {last[0]}" if last else ""))
        last = (n, seconds)
    if last:
        years = last[1] * (SOAK_PUTS / last[0]) ** 2 / (365 * 86400)
        print(f"at this growth (time ~ N^2), a soak's {SOAK_PUTS:,} puts would take about {years:,.1f} years")
    return 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [250, 500, 1000, 2000]))
