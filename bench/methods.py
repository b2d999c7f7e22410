"""Every bug toggle hunted by each method (`make hunt-methods`): found or not, invariant, seconds,
counterexample length. One process; prints a table and writes JSON lines to BENCH_OUT.

    BENCH_BUDGET=300 python bench/methods.py [toggle ...]
"""

from __future__ import annotations

import json
import os
import sys
import time

from rmqcheck.checkers import configs, explore
from rmqcheck.checkers.hunting import find
from rmqcheck.checkers.walk import walk
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model.bugs import TOGGLES

BUDGET = float(os.environ.get("BENCH_BUDGET", "300"))
OUT = os.environ.get("BENCH_OUT", "counterexamples/methods.jsonl")
METHODS = os.environ.get("BENCH_METHODS", "stateful,explore,walk").split(",")


def run(method: str, name: str) -> dict:
    cfg = configs.exposing(frozenset({name}))
    targets = expected_ids(cfg)
    start = time.perf_counter()
    if method == "stateful":
        finding, _ = find(cfg, targets, BUDGET, 0)
        hit = None if finding is None else (finding.counterexample.invariant, len(finding.counterexample.actions))
    elif method == "explore":
        found, _ = explore.hunt(cfg, targets, BUDGET)
        hit = None if found is None else (found.hit.invariant, len(found.hit.actions))
    else:
        r = walk(cfg, 0, 60, BUDGET, targets)
        hit = None if r.hit is None else (r.hit.invariant, len(r.hit.shrunk))
    seconds = time.perf_counter() - start
    return {"toggle": name, "method": method, "found": hit is not None, "invariant": hit and hit[0],
            "steps": hit and hit[1], "seconds": round(seconds, 2), "budget": BUDGET}


if __name__ == "__main__":
    names = sys.argv[1:] or [t.name for t in TOGGLES]
    os.makedirs(os.path.dirname(OUT) or ".", exist_ok=True)
    with open(OUT, "a") as f:
        for name in names:
            for method in METHODS:
                row = run(method, name)
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(f"{name:45s} {method:9s} {row['invariant'] or '-':4s} {row['steps'] or '-':>4} steps "
                      f"{row['seconds']:7.1f}s", flush=True)
