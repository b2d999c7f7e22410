"""Two forms of the portfolio measured against the bug table: for each controller-mode bug
toggle the stateful hunt can look for (checkers/tables/rediscovery.py subjects), the seconds a
portfolio hunt of its exposing configuration takes to its first violation in each form, seeds 0
to SEEDS - 1, the budget BUDGET (the bug table's own, 60 s). `--compare split` (the default): the
methods in turns on one core (jobs 1) against side by side on both (jobs 2); `--compare
stratified`: side by side, the guided turns all plain against every second one stratified
(portfolio.STRATIFIED_EVERY). Prints a row a toggle, then the counts found, the toggles whose
time got worse (by more than NOISE seconds and half again) and the ratio of the totals
(SAME_UNTIL says what is not run twice). Heavy: one at a time on this machine.

Usage: python bench/portfolio_split.py [--compare split|stratified] [--budget 60] [--seeds 2] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from rich.console import Console
from rich.table import Table

from rmqcheck.checkers.search import portfolio as portfolios
from rmqcheck.checkers.search.portfolio import Found, portfolio
from rmqcheck.checkers.tables.rediscovery import subjects
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import configs

NOISE = 2.0  # seconds: below this a difference is the clock and the machine, not the form
# Each comparison's two forms: (name, jobs, portfolio.STRATIFIED_EVERY).
FORMS = {
    "split": (("in turns (jobs 1)", 1, portfolios.STRATIFIED_EVERY),
              ("side by side (jobs 2)", 2, portfolios.STRATIFIED_EVERY)),
    "stratified": (("guided plain", 2, 0), ("every 2nd guided turn stratified", 2, 2)),
}
# Until this share of the budget the two forms run the same code with the same seeds: the guided
# walks' first turn (a quarter, with the portfolio's 4 rounds) is plain in both. A toggle every
# seed of the second form finds before then is not run in the first (its cells say "=").
SAME_UNTIL = {"split": 0.0, "stratified": 0.25}


class _First(Exception):
    pass


def first_finding(name: str, seed: int, budget: float, jobs: int, stratified_every: int) -> float | None:
    """Seconds to the portfolio's first violation on the toggle's exposing configuration, or None."""
    cfg = configs.exposing(frozenset({name}))

    def stop(f: Found) -> None:
        raise _First(f.at)

    kept = portfolios.STRATIFIED_EVERY
    portfolios.STRATIFIED_EVERY = stratified_every  # the method processes are forked: they see it
    try:
        portfolio(cfg, expected_ids(cfg), budget, seed=seed, on_found=stop, jobs=jobs)
    except _First as first:
        return first.args[0]
    finally:
        portfolios.STRATIFIED_EVERY = kept
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--compare", choices=sorted(FORMS), default="split")
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
    forms = FORMS[args.compare]
    for form in forms:
        table.add_column(form[0])
    table.add_column("verdict")
    totals = [0.0, 0.0]
    found = [0, 0]
    worse: list[str] = []
    began = time.perf_counter()
    for name in names:
        times = {}
        for k in (1, 0):
            _, jobs, every = forms[k]
            if k == 0 and all(t is not None and t < SAME_UNTIL[args.compare] * args.budget for t in times[1]):
                times[0] = times[1]
                continue
            times[k] = [first_finding(name, seed, args.budget, jobs, every) for seed in range(args.seeds)]
        cells, med = [], []
        for k in (0, 1):
            ts = times[k]
            found[k] += sum(t is not None for t in ts)
            totals[k] += sum(args.budget if t is None else t for t in ts)
            med.append(statistics.median(args.budget if t is None else t for t in ts))
            cells.append("=" if k == 0 and ts is times[1] else " ".join("-" if t is None else f"{t:.1f}" for t in ts))
        verdict = "worse" if med[1] > med[0] * 1.5 + NOISE else "better" if med[0] > med[1] * 1.5 + NOISE else "same"
        if verdict == "worse":
            worse.append(name)
        table.add_row(name, *cells, verdict)
        console.print(f"{name}: {cells[0]} | {cells[1]} ({verdict})", highlight=False)
    console.print(table)
    runs = len(names) * args.seeds
    console.print(f"found: {forms[0][0]} {found[0]}/{runs}, {forms[1][0]} {found[1]}/{runs}; total seconds (a "
                  f"miss counts the budget) {totals[0]:.0f} vs {totals[1]:.0f} (ratio {totals[1] / totals[0]:.2f}); "
                  f"worse by more than noise: {', '.join(worse) or 'none'}; {time.perf_counter() - began:.0f}s in all")


if __name__ == "__main__":
    main()
