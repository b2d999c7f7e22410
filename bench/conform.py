"""Conformance throughput (`make bench`), on the shared RocketMQ tree:

* driver: requests/s through each JVM alone (the requests prepared beforehand, batches of a few
  hundred, JSON both ways included);
* comparison: requests/s `rmqcheck conform` generates, answers on both sides and compares, with
  the controller and epoch cache only and with the HA service as well (model and JVMs pipelined);
* lockstep recording and validation: transitions/s `conform --record` writes, and events/s
  `rmqcheck validate` (local engine) checks of what it wrote.

Figures as rates; the machine is printed first."""

from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path

from rmqcheck.checkers.java import build, conform
from rmqcheck.checkers.java.driver import JavaDriver
from rmqcheck.checkers.java.requests import RandomChooser, sequence
from rmqcheck.cli import main
from rmqcheck.traces.validate import discover, validate_local

SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores, {cpu}, CPython {platform.python_version()}"


def driver_rate(driver: JavaDriver, ha: bool) -> float:
    """Requests/s through one JVM, the model's side prepared before the clock starts."""
    from random import Random

    prepared = conform.prepare([sequence(RandomChooser(Random(f"bench:{i}")), 40, ha) for i in range(400)])
    requests = prepared.ha() if ha else prepared.core()
    driver.run(requests[:2000])  # warm-up: class loading and JIT
    start, sent = time.perf_counter(), 0
    while time.perf_counter() - start < SECONDS / 3:
        for i in range(0, len(requests), 500):
            driver.run(requests[i:i + 500])
        sent += len(requests)
    return sent / (time.perf_counter() - start)


def main_bench() -> None:
    print(f"conformance ({machine()}; Java: {build._javac_version()}):", flush=True)
    tree = build.locate(None)
    with JavaDriver(build.build(tree)) as core, JavaDriver(build.build(tree, target=build.HA)) as ha:
        print(f"  driver, controller and epoch cache: {driver_rate(core, False):9,.0f} requests/s", flush=True)
        print(f"  driver, HA service:                 {driver_rate(ha, True):9,.0f} requests/s", flush=True)
        conform.conform(core, seed=99, budget=3, ha_driver=ha)  # warm-up
        for label, ha_driver in (("controller and epoch cache", None), ("with the HA service", ha)):
            tally = conform.conform(core, seed=1, budget=SECONDS, ha_driver=ha_driver)
            assert tally.divergence is None, "the code and the model differ: run rmqcheck conform"
            print(f"  compared, {label + ':':<28} {tally.operations / tally.seconds:9,.0f} requests/s "
                  f"({tally.operations:,} in {tally.seconds:.0f}s)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        runs = max(50, int(SECONDS * 10))
        start = time.perf_counter()
        assert main(["conform", "--record", tmp, "--runs", str(runs), "--steps", "100"]) == 0
        recorded = time.perf_counter() - start
        start = time.perf_counter()
        report = validate_local(discover([tmp]))
        validated = time.perf_counter() - start
        assert not report.failed()
        print(f"  conform --record: {runs * 100 / recorded:9,.0f} transitions/s (JVM start included); "
              f"validate (local): {report.units['events'] / validated:9,.0f} events/s", flush=True)


if __name__ == "__main__":
    main_bench()
