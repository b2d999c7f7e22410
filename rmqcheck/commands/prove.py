"""`rmqcheck prove`: the Z3 proofs."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.table import Table

from rmqcheck.checkers.counterexamples.files import write

from .common import UsageError, add_result_options, out, positive

NAME = "prove"
HELP = "Z3 proofs of the truncation search, and counterexamples to its wrong variants"
# Paths by role (cli.py refuses an output that is an input too, or named twice).
OUTPUTS = ("--out",)
INPUTS = ()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", type=positive, default=8, help="longest epoch list on each side (default 8)")
    p.add_argument("--only", action="append", metavar="ID", help="one property id or variant toggle (repeatable)")
    p.add_argument("--out", default="counterexamples/prove", help="directory for counterexample files")
    add_result_options(p)


def run(args) -> int:
    from rmqcheck.checkers.proofs import truncation as proofs

    known = [p.id for p in proofs.PROPERTIES] + [v.toggle for v in proofs.VARIANTS]
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        raise UsageError(f"--only: unknown property or variant {unknown}; known: {', '.join(known)}")
    started = time.perf_counter()
    outcomes = proofs.run_all(args.k, args.only or ())
    table = Table(title=f"rmqcheck prove: model/epochfile.py's consistent-point search, lists of 0..{args.k} entries")
    for col in ("property", "search", "premises", "K", "expected", "result", "time"):
        table.add_column(col, overflow="fold")
    out_dir = Path(args.out)
    files = []
    for o in outcomes:
        variant = proofs.VARIANT_BY_TOGGLE.get(o.toggle)
        prop = proofs.BY_ID[variant.breaks if variant else o.id]
        colour = "green" if o.ok else "bold red"
        table.add_row(
            o.id,
            variant.why if variant else "faithful",
            ", ".join(prop.premises) + (", realistic" if variant else ""),
            str(o.k),
            o.expected,
            f"[{colour}]{o.result}[/]",
            f"{o.seconds:.2f}s",
        )
        path = None
        if o.witness is not None:
            path = write(proofs.counterexample(o, variant), out_dir / f"{o.id.replace(' / ', '--')}.json")
            files.append((o, path))
        _proof_case(args.results, "truncation search", o, f"{o.result}, {o.expected} expected", path)
    out.print(table)
    for o, path in files:
        w = o.witness
        out.print(
            f"{o.id}: local {list(w.local.entries)} max {w.local.max}, master {list(w.master.entries)} "
            f"max {w.master.max} -> point {o.point}   (rmqcheck replay {path})"
        )
    if not args.only:
        for line in proofs.unbounded_report():
            out.print(line)
        bad_offsets = _prove_dledger_offsets(args.results)
    else:
        bad_offsets = []
    bad = [o for o in outcomes if not o.ok] + bad_offsets
    out.print(
        f"{len(outcomes)} checks in {time.perf_counter() - started:.1f}s; bounded: every pair of lists of up to "
        f"{args.k} entries, offsets unbounded integers below Long.MAX_VALUE."
    )
    if bad:
        out.print(f"[bold red]{len(bad)} result(s) differ from what is expected: {', '.join(o.id for o in bad)}[/]")
        return 1
    return 0


def _proof_case(results, suite: str, o, what: str, path=None) -> None:
    """A proof (or a refutation of a wrong variant) is a case: failed when Z3's answer is not the
    expected one."""
    if o.ok:
        results.add(suite, o.id, seconds=o.seconds, notes=[what], file=path)
    else:
        results.add(suite, o.id, "failed", f"{o.id}: {what}", invariant=o.id, file=path, seconds=o.seconds)


def _prove_dledger_offsets(results) -> list:
    """The DLedgerCommitLog offset mapping: each obligation proved, each mutant refuted."""
    from rmqcheck.checkers.proofs import dledger_offsets as dledger_proofs

    table = Table(title="rmqcheck prove: DLedgerCommitLog offset mapping (preAppend, BODY_OFFSET, divided offset)")
    for col in ("obligation", "rule", "expected", "result", "time", "witness"):
        table.add_column(col, overflow="fold")
    outcomes = dledger_proofs.run()
    for o in outcomes:
        colour = "green" if o.ok else "bold red"
        table.add_row(o.id, o.variant, o.expected, f"[{colour}]{o.result}[/]", f"{o.seconds:.2f}s", o.witness)
        _proof_case(results, "DLedger offset mapping", o, f"{o.result}, {o.expected} expected; {o.witness or ''}")
    out.print(table)
    return [o for o in outcomes if not o.ok]
