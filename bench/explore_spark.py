"""Exhaustive exploration on Spark (`make bench-explore-spark`, issue 28), with the machine noted:

1. the per-core rate: std3 to depth SCALE_DEPTH by the local explorer (one process) and by
   `--engine spark` on a cluster of one executor core and of two (local-cluster[N,1,MEM]): new
   states/s over the whole run (fixed costs included: the JVMs' start, about 2 s a level) and on
   the deepest level (the steady rate), the speed-up of two executors over one, and each one's
   rate per core against the local explorer's;
2. the depth std3 reaches within BENCH_SPARK_SECONDS (default 1800) on two executors, level by
   level (the level running when the time ends is cancelled), with the driver's peak memory (its
   JVM's and this Python process's);
3. the depth at which a master change first makes a slave's handshake truncate its log (the
   coverage witness election_with_truncation) and a truncation falls inside an epoch;
4. a projection of std3 to depth 20 on 64 cores, from the growth per level and the per-core rate.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rmqcheck.checkers.search import explore, named
from rmqcheck.checkers.search.distributed import SparkExplorer, stable_python
from rmqcheck.processes import workers
from rmqcheck.traces.spark import session

sys.path.insert(0, str(Path(__file__).parent))
from stateful import machine  # noqa: E402

SECONDS = float(os.environ.get("BENCH_SPARK_SECONDS", "1800"))
SCALE_DEPTH = int(os.environ.get("BENCH_SCALE_DEPTH", "14"))
MEMORY = int(os.environ.get("BENCH_EXECUTOR_MB", "4096"))
WORK = Path(os.environ.get("BENCH_WORK", tempfile.gettempdir())) / "rmqcheck-bench-explore"
STD = named.STANDARD["std3"]


def jvm_memory(spark) -> tuple[int, int]:
    """(current, peak) resident memory of the driver's JVM, in bytes."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return tuple(int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM"))


def local_run(depth: int) -> tuple[tuple[int, ...], int, float, float, float]:
    """The local explorer to `depth`, in a child process so that this one's peak memory stays the
    Spark driver's: (states per depth, states, seconds, states/s over the run, new states/s on the
    deepest level)."""
    with workers(1) as pool:
        return pool.apply(_local_run, (depth,))


def _local_run(depth: int) -> tuple[tuple[int, ...], int, float, float, float]:
    first_seen: dict[int, tuple[float, int]] = {}  # depth expanded -> (seconds, states) when it began

    def progress(p: explore.Progress) -> None:
        first_seen.setdefault(p.depth, (p.seconds, p.states))

    r = explore.Explorer(STD.cfg, STD.bounds._replace(max_depth=depth)).run(progress=progress, progress_every=0.0)
    began, _ = first_seen[depth - 1]
    ended = first_seen.get(depth, (r.seconds, r.states))[0]  # the deepest level is checked, not expanded
    return r.levels, r.states, r.seconds, r.states / r.seconds, r.levels[depth] / (ended - began)


def spark_run(master: str, depth: int | None, budget: float | None, python: str):
    spark = session(master, python, "rmqcheck bench")
    work = WORK / master.replace("[", "-").replace("]", "").replace(",", "-")
    shutil.rmtree(work, ignore_errors=True)
    levels = []
    bounds = STD.bounds._replace(max_depth=depth)

    def progress(p) -> None:
        levels.append((p, jvm_memory(spark)[1]))
        print(f"    depth {p.depth:2d}: {p.states:>11,} states (+{p.new:,}) in {p.seconds:6.1f}s, "
              f"{p.new / max(p.seconds, 1e-9):7,.0f} new states/s; driver JVM peak {levels[-1][1] / 2**20:,.0f} MiB",
              flush=True)

    start = time.perf_counter()
    r = SparkExplorer(spark, STD.cfg, bounds, work).run(budget, progress=progress)
    seconds = time.perf_counter() - start
    witnesses = _first_depths(work)
    spark.stop()
    return r, seconds, levels, witnesses, work


def _first_depths(work: Path) -> dict[str, int]:
    """The depth at which each coverage witness was first reached (the levels' done marks)."""
    first: dict[str, int] = {}
    for done in sorted(work.glob("level-*/DONE")):
        d = json.loads(done.read_text())
        for w in d["reached"]:
            first.setdefault(w, d["depth"])
    return first


def deepest_rate(levels: list) -> float:
    """New states/s of the deepest level that found new states."""
    p = next(p for p, _ in reversed(levels) if p.new)
    return p.new / p.seconds


def main() -> None:
    print(f"rmqcheck Spark exploration bench on {machine()}; std3: {STD.description}", flush=True)
    python = stable_python(WORK / "python")
    print(f"1. rates to depth {SCALE_DEPTH}", flush=True)
    local_levels, local_states, local_seconds, local_rate, local_deepest = local_run(SCALE_DEPTH)
    print(f"  local explorer, one process: {local_states:,} states in {local_seconds:.0f}s, {local_rate:,.0f} "
          f"states/s; the deepest level {local_deepest:,.0f} new states/s", flush=True)
    rates, deepest = {}, {}
    for executors in (1, 2):
        master = f"local-cluster[{executors},1,{MEMORY}]"
        print(f"  {master}:", flush=True)
        r, seconds, levels, _, _ = spark_run(master, SCALE_DEPTH, None, python)
        assert r.levels == local_levels, (r.levels, local_levels)
        rates[executors], deepest[executors] = r.states / seconds, deepest_rate(levels)
        print(f"  {master}: {r.states:,} states in {seconds:.0f}s, {rates[executors]:,.0f} states/s "
              f"({rates[executors] / executors / local_rate:.0%} of the local explorer's rate per core); the deepest "
              f"level {deepest[executors]:,.0f} new states/s ({deepest[executors] / executors / local_deepest:.0%} a "
              f"core)", flush=True)
    print(f"  two executors against one: {rates[2] / rates[1]:.2f}x over the run, {deepest[2] / deepest[1]:.2f}x on "
          f"the deepest level", flush=True)

    print(f"2. std3 on local-cluster[2,1,{MEMORY}] for {SECONDS:.0f}s", flush=True)
    r, seconds, levels, witnesses, work = spark_run(f"local-cluster[2,1,{MEMORY}]", None, SECONDS, python)
    peak_python = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the local explorer ran in a child
    peak_jvm = max((m for _, m in levels), default=0)
    print(f"  depth {r.depth} ({'exhaustive' if r.exhaustive else 'every level to it complete'}), {r.states:,} states, "
          f"{r.transitions:,} transitions in {seconds:.0f}s ({r.states / seconds:,.0f} states/s); driver peak memory: "
          f"JVM {peak_jvm / 2**20:,.0f} MiB, Python {peak_python / 2**20:,.0f} MiB", flush=True)
    print(f"  work directory {work}: {sum(f.stat().st_size for f in work.rglob('*') if f.is_file()) / 2**20:,.0f} MiB",
          flush=True)
    print("3. coverage witnesses first reached at depth: " + (", ".join(f"{w} {d}" for w, d in sorted(
        witnesses.items(), key=lambda kv: kv[1])) or "none"), flush=True)

    news = [p.new for p, _ in levels if p.new]
    growth = (news[-1] / news[-4]) ** (1 / 3) if len(news) >= 4 else float("nan")
    per_core = deepest[2] / 2
    total, last = r.states, news[-1] if news else 0
    for _ in range(r.depth + 1, 21):
        last *= growth
        total += last
    hours = total / (64 * per_core * 0.8) / 3600  # 80% of the per-core rate on 64 cores
    print(f"4. growth per level over the last three: {growth:.2f}x; std3 to depth 20 is about {total:,.0f} states: "
          f"about {hours:,.1f} h on 64 cores at {per_core:,.0f} states/s a core (the deepest level's rate on two "
          f"executors) and 80% efficiency ({total / (per_core * 2) / 3600:,.0f} h on this machine's 2)", flush=True)


if __name__ == "__main__":
    main()
