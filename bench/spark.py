"""Trace-validation throughput: events/s per check family, local engine vs Spark.

Generates (once, cached under build/) a corpus of BENCH_EVENTS events (default 10^7) with the
recorder, then validates it with the local engine and with Spark on BENCH_MASTER (default
local[2]), twice (the first pass in a fresh JVM includes its warm-up), and prints events/s per
family and the Spark/local ratio. All reports must agree.

    make bench-spark                      # 10^7 events
    BENCH_EVENTS=1000000 .venv/bin/python bench/spark.py
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rmqcheck.traces.recorder import Corpus, simulate
from rmqcheck.traces.spark import session, validate_spark
from rmqcheck.traces.validate import discover, validate_local

EVENTS = int(float(os.environ.get("BENCH_EVENTS", "1e7")))
MASTER = os.environ.get("BENCH_MASTER", "local[2]")
STEPS = 100
ROOT = Path(__file__).resolve().parents[1]
out = Console(highlight=False)


def corpus() -> Path:
    runs = -(-EVENTS // (STEPS + 2))
    d = ROOT / "build" / f"bench-corpus-{runs}"
    done = d / ".complete"
    if not done.exists():
        c = Corpus(seed=1, runs=runs, steps=STEPS, fmt="parquet", runs_per_file=-(-runs // 32))
        t = time.perf_counter()
        n = simulate(c, d, jobs=os.cpu_count() or 1)
        out.print(f"recorded {n:,} events in {time.perf_counter() - t:.0f} s ({os.cpu_count()} processes)")
        done.touch()
    return d


def main() -> int:
    d = corpus()
    inputs = discover([str(d)])
    out.print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    t = time.perf_counter()
    local = validate_local(inputs)
    local_total = time.perf_counter() - t
    spark = session(MASTER)
    passes = []  # a fresh JVM pays for class loading and JIT compilation once, so: two passes
    for _ in range(2):
        t = time.perf_counter()
        remote = validate_spark(inputs, spark=spark)
        passes.append((remote, time.perf_counter() - t))
    spark.stop()
    agree = all(r.violations == local.violations and r.units == local.units for r, _ in passes)
    events = local.units["events"]
    table = Table(title=f"trace validation, {events:,} events in {local.units['runs']:,} runs (Spark master {MASTER})")
    for col in ("family", "local events/s", "spark events/s, 1st pass", "spark events/s, 2nd pass", "spark 2nd / local"):
        table.add_column(col, justify="right")
    rows = [(fam, local.seconds[fam], *(r.seconds[fam] for r, _ in passes)) for fam in ("read", "conformance", "history")]
    rows.append(("total", local_total, *(s for _, s in passes)))
    for fam, a, b1, b2 in rows:
        table.add_row(fam, f"{events / a:,.0f}", f"{events / b1:,.0f}", f"{events / b2:,.0f}", f"{a / b2:.2f}")
    out.print(table)
    out.print(f"engines agree: {agree} ({len(local.violations)} violation records)")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
