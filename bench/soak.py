"""A soak's figures (`make soak`, docs/cluster.md, README): `rmqcheck cluster --soak SECONDS`
(default 1800) on the shared tree, then its folder validated by each engine, each timed in its own
process: events recorded and validated a second, the driver's memory (soak.json), where the
load's time went, and whether both engines gave the same report. `--validate-only DIR` validates a
soak already recorded. Figures as rates and sizes; the machine is printed first."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RMQCHECK = [sys.executable, "-m", "rmqcheck"]


def timed(args: list[str]) -> tuple[int, float]:
    started = time.perf_counter()
    code = subprocess.run(RMQCHECK + args, stdout=subprocess.DEVNULL).returncode
    return code, time.perf_counter() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=1800.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="counterexamples/soak", help="the soak's folder (replaced)")
    p.add_argument("--validate-only", metavar="DIR", help="a soak's folder already recorded")
    args = p.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    if args.validate_only:
        folder = Path(args.validate_only)
    else:
        code, seconds = timed(["cluster", "--soak", str(args.seconds), "--seed", str(args.seed), "--out", args.out,
                               "--force", "--keep-stores"])
        print(f"rmqcheck cluster --soak {args.seconds:g}: exit {code} in {seconds:.0f} s")
        folder = Path(args.out) / f"soak-{args.seed}"
    record = json.loads((folder / "soak.json").read_text())
    events, load = record["events"], record["seconds"]
    print(f"recorded: {events:,} events in {load:.0f} s of load ({events / load:,.0f}/s), {record['parts']} parts; "
          f"{record['sends']:,} puts: {record['statuses']}; {record['reads']:,} messages read")
    print(f"faults: {record['faults']}; broker troubles: {len(record['troubles'])}")
    print("time spent: " + ", ".join(f"{k} {v:.0f} s" for k, v in record["time_spent"].items()))
    print("driver memory (MB): " + ", ".join(f"{k} {v:.0f}" for k, v in record["rss_mb"].items() if v is not None))
    with tempfile.TemporaryDirectory(prefix="rmqcheck-bench-soak-") as tmp:
        found = {}
        for engine in ("local", "spark"):
            violations = Path(tmp) / f"{engine}.ndjson"
            code, seconds = timed(["validate", str(folder), "--engine", engine, "--violations", str(violations),
                                   "--quiet"])
            found[engine] = sorted(violations.read_text().splitlines()) if violations.exists() else []
            print(f"validate --engine {engine}: exit {code}, {len(found[engine]):,} violations, {seconds:.0f} s "
                  f"({events / seconds:,.0f} events/s, with the process's start)")
        print("both engines give the same violations" if found["local"] == found["spark"]
              else "THE ENGINES DISAGREE")
        return 0 if found["local"] == found["spark"] else 1


if __name__ == "__main__":
    sys.exit(main())
