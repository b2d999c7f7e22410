"""Throughput of the stateful checker (`make bench`).

Hypothesis steps/s and examples/s on the intended baseline under the durable configuration
(no violation, so every example runs to its full length), with every invariant checked after
every step; and, for comparison, the model's own transition rate (successor enumeration plus
invariants, no Hypothesis). One process, so one core.
"""

from __future__ import annotations

import os
import platform
import random
import time

from rmqcheck.model import configs
from rmqcheck.checkers.search.stateful import Stats, run_once
from rmqcheck.invariants.catalogue import check_state, check_transition, expected_ids
from rmqcheck.model.step import initial_state, successors

SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def hypothesis_rate(cfg_name: str) -> None:
    cfg = configs.with_bugs(configs.load(cfg_name), frozenset(), snapshot=False)
    stats = Stats()
    start = time.perf_counter()
    seed = 0
    while time.perf_counter() - start < SECONDS:
        found = run_once(cfg, expected_ids(cfg), seed, "deep", stats)
        assert found is None, f"the intended baseline violated {found}"
        seed += 1
    elapsed = time.perf_counter() - start
    print(
        f"  stateful ({cfg_name}, intended): {stats.steps / elapsed:8,.0f} steps/s  "
        f"{stats.examples / elapsed:6,.1f} examples/s  ({stats.examples} examples, {stats.steps} steps, {elapsed:.0f}s)"
    )


def model_rate(cfg_name: str) -> None:
    cfg = configs.with_bugs(configs.load(cfg_name), frozenset(), snapshot=False)
    rng = random.Random(0)
    s0 = initial_state(cfg)
    steps = transitions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECONDS / 3:
        s = s0
        for _ in range(80):
            succ = successors(s, cfg)
            transitions += len(succ)
            action, nxt = rng.choice(succ)
            check_transition(s, action, nxt, cfg)
            check_state(nxt, cfg)
            s = nxt
            steps += 1
    elapsed = time.perf_counter() - start
    print(
        f"  random walk ({cfg_name}, intended): {steps / elapsed:8,.0f} steps/s with invariants, "
        f"{transitions / elapsed:,.0f} successor states/s"
    )


if __name__ == "__main__":
    print(f"rmqcheck bench on {machine()}")
    for name in ("durable", "durable3"):
        hypothesis_rate(name)
        model_rate(name)
