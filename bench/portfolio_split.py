"""The portfolio's two splits measured against the bug table: for each controller-mode bug
toggle the stateful hunt can look for (checkers/tables/rediscovery.py subjects), the seconds a
portfolio hunt of its exposing configuration takes to its first violation, with the methods in
turns on one core (jobs 1) and side by side on both (jobs 2), seeds 0 to SEEDS - 1 each, the
budget BUDGET (the bug table's own, 60 s). Prints a row a toggle, then the counts found, the
toggles whose time got worse (by more than NOISE seconds and half again) and the ratio of the
totals. Heavy: one at a time on this machine.

Usage: python bench/portfolio_split.py [--budget 60] [--seeds 2] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from rich.console import Console
from rich.table import Table

from rmqcheck.checkers.search.portfolio import Found, portfolio
from rmqcheck.checkers.tables.rediscovery import subjects
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import configs

NOISE = 2.0  # seconds: below this a difference is the clock and the machine, not the split


class _First(Exception):
    pass


def first_finding(name: str, seed: int, budget: float, jobs: int) -> float | None:
    """Seconds to the portfolio's first violation on the toggle's exposing configuration, or None."""
    cfg = configs.exposing(frozenset({name}))

    def stop(f: Found) -> None:
        raise _First(f.at)

    try:
        portfolio(cfg, expected_ids(cfg), budget, seed=seed, on_found=stop, jobs=jobs)
    except _First as first:
        return first.args[0]
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--only", action="append", metavar="NAME")
    args = p.parse_args()
    names = [s.toggle for s in subjects() if s.mode == "controller" and "stateful" in s.methods
             and (not args.only or s.toggle in args.only)]
    console = Console()
    console.print(f"{platform.machine()}, {os.cpu_count()} cores; {len(names)} toggles, seeds 0-{args.seeds - 1}, "
                  f"budget {args.budget:g}s")
    table = Table(title="seconds to the first violation (median over seeds; - not found by a seed)")
    table.add_column("toggle", no_wrap=True)
    for col in ("in turns (jobs 1)", "side by side (jobs 2)", "verdict"):
        table.add_column(col)
    totals = {1: 0.0, 2: 0.0}
    found = {1: 0, 2: 0}
    worse: list[str] = []
    began = time.perf_counter()
    for name in names:
        times = {jobs: [first_finding(name, seed, args.budget, jobs) for seed in range(args.seeds)] for jobs in (1, 2)}
        cells, med = [], {}
        for jobs in (1, 2):
            ts = times[jobs]
            found[jobs] += sum(t is not None for t in ts)
            totals[jobs] += sum(args.budget if t is None else t for t in ts)
            med[jobs] = statistics.median(args.budget if t is None else t for t in ts)
            cells.append(" ".join("-" if t is None else f"{t:.1f}" for t in ts))
        verdict = "worse" if med[2] > med[1] * 1.5 + NOISE else "better" if med[1] > med[2] * 1.5 + NOISE else "same"
        if verdict == "worse":
            worse.append(name)
        table.add_row(name, *cells, verdict)
        console.print(f"{name}: {cells[0]} | {cells[1]} ({verdict})", highlight=False)
    console.print(table)
    runs = len(names) * args.seeds
    console.print(f"found: in turns {found[1]}/{runs}, side by side {found[2]}/{runs}; total seconds (a miss counts "
                  f"the budget) {totals[1]:.0f} vs {totals[2]:.0f} (ratio {totals[2] / totals[1]:.2f}); worse by more "
                  f"than noise: {', '.join(worse) or 'none'}; {time.perf_counter() - began:.0f}s in all")


if __name__ == "__main__":
    main()
