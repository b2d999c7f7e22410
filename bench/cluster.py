"""Real-run cluster figures (`make bench`, docs/cluster.md): a 3-broker cluster of RocketMQ's
broker-side code (SYNC_FLUSH, allAckInSyncStateSet, 1 MiB commit-log files) on the shared tree:
start and first settle, puts/s replicated to all three and acked (sent one after another through
the harness, each outcome awaited at the end), each JVM's resident memory, a crash and restart.
Figures as rates and sizes; the machine is printed first."""

from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path

from rmqcheck.checkers.cluster.harness import Cluster, ClusterConfig

PUTS = 2000


def rss_mib(pid: int) -> float:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def main() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    done: dict[str, str] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rmqcheck-bench-cluster-") as tmp, \
            Cluster(ClusterConfig(brokers=3), Path(tmp), on_event=lambda kind, body: done.__setitem__(
                body["msg"], body["status"]) if kind == "put_done" else None) as c:
        up = time.perf_counter()
        c.settle()
        settled = time.perf_counter()
        print(f"cluster started in {up - started:.1f} s, first settle {settled - up:.1f} s")
        master = c.master()
        t = time.perf_counter()
        for i in range(PUTS):
            c.put(master, f"m{i}", 0)
        c._pump(lambda: len(done) >= PUTS, 300, "puts")
        seconds = time.perf_counter() - t
        print(f"{PUTS} puts, outcomes {sorted(set(done.values()))}: {PUTS / seconds:,.0f} puts/s")
        c.settle()
        for b, node in c.nodes.items():
            print(f"broker {b}: {rss_mib(node.proc.pid):.0f} MiB resident")
        print(f"controller: {rss_mib(c.controller.driver.proc.pid):.0f} MiB resident")
        t = time.perf_counter()
        c.crash(master)
        c.restart(master)
        print(f"crash and restart of the master: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
