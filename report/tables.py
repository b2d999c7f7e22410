"""Markdown tables for the docs (docs/matrix.md, docs/bugs.md), and the splice that keeps each
page's copy generated (`make matrix`, `make bugs`).

A generated block sits between `<!-- NAME:start -->` and `<!-- NAME:end -->`; `splice`
replaces what is between them and nothing else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from rmqcheck.outputs import write_atomically
from rmqcheck.checkers.search.hunting import BUG_TOGGLE, EXPECTED, SNAPSHOT_DEFECT, UNEXPLAINED
from rmqcheck.checkers.tables.matrix import Cell, Row
from rmqcheck.checkers.tables.rediscovery import METHODS, Measure, Subject

MATRIX_LEGEND = (
    "`✓` promised and held; `·` not promised, no violation found; `✗n` violated where not promised, "
    "shortest counterexample found `n` steps; `✗n defect` (`✗n toggle`) a promised invariant broken by a "
    "known snapshot defect (a bug toggle turned on); `✗n UNEXPLAINED` a promised invariant broken: a failure. Explored: every state within that "
    "many steps of the small scope was checked; hunted: steps of search of the whole configuration, by the "
    "stateful hunt and then guided walks."
)


def _cell(c: Cell) -> str:
    if c.kind is None:
        return "✓" if c.promised else "·"
    mark = {EXPECTED: "", SNAPSHOT_DEFECT: " defect", BUG_TOGGLE: " toggle", UNEXPLAINED: " UNEXPLAINED"}[c.kind]
    return f"✗{c.steps}{mark}"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v).replace("_FLUSH", "")


def _explored(r: Row) -> str:
    reach = "all" if r.exhaustive else f"depth {r.depth}"
    text = f"{r.states:,} states ({reach})"
    if r.hunt_steps:
        text += f", hunted {r.hunt_steps:,} steps"
    return text


def _table(header: list[str], lines: Iterable[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def matrix_markdown(rows: list[Row], note: str = "") -> str:
    """One table per mode: its switches, what was explored, a cell per invariant."""
    parts = []
    for mode in dict.fromkeys(r.mode for r in rows):
        group = [r for r in rows if r.mode == mode]
        keys = list(group[0].settings)
        invariants = [c.invariant for c in group[0].cells]
        lines = [[_value(r.settings[k]) for k in keys] + [_explored(r)] + [_cell(c) for c in r.cells] for r in group]
        parts.append(f"**{mode}**\n\n" + _table(keys + ["explored"] + invariants, lines))
    text = "\n\n".join(parts) + "\n\n" + MATRIX_LEGEND
    return text + (f" {note}" if note else "")


def _block(path: Path, name: str) -> tuple[str, re.Pattern]:
    source = path.read_text()
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(source):
        raise ValueError(f"{path}: no block {start} ... {end} to replace")
    return source, pattern


def check_block(path: Path, name: str) -> None:
    """Raise ValueError (OSError) now if `splice` would fail later."""
    _block(path, name)


def splice(path: Path, name: str, text: str) -> None:
    """Replace the generated block `name` of the file at `path`."""
    source, pattern = _block(path, name)
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    write_atomically(path, pattern.sub(lambda _: f"{start}\n{text}\n{end}", source, count=1))


def _method_cell(m: Measure | None) -> str:
    if m is None:
        return "n/a"
    runs = f"{m.found}/{len(m.attempts)}" if len(m.attempts) > 1 else ""
    if m.median_seconds is None:
        return f"not found in {m.budget:g}s" + (f" ({runs})" if runs else "")
    return f"{m.median_seconds:.1f}s, {m.invariant}, {m.steps} steps" + (f" ({runs})" if runs else "")


def bugs_markdown(subjects: list[Subject], measures: list[Measure], note: str = "") -> str:
    """One row per toggle, a cell per method; toggles no method found come first."""
    by_key = {(m.toggle, m.mode, m.method): m for m in measures}

    def found(s: Subject) -> bool:
        return any((m := by_key.get((s.toggle, s.mode, k))) and m.median_seconds is not None for k in s.methods)

    ordered = sorted(subjects, key=lambda s: (bool(s.methods) and found(s), not s.methods))
    lines = []
    for s in ordered:
        if not s.methods:
            cells = [s.note] + [""] * (len(METHODS) - 1)
        else:
            cells = [_method_cell(by_key.get((s.toggle, s.mode, k))) if k in s.methods else "-" for k in METHODS]
        status = "no effect expected" if not s.methods else ("found" if found(s) else "**NOT FOUND**")
        lines.append([f"`{s.toggle}`", s.ref, s.mode, status, *cells])
    text = _table(["toggle", "ref", "mode", "status", *METHODS], lines)
    legend = ("Each cell: median time to find over the seeds (a miss counts as never; seeds stop once more "
              "than half missed), the invariant, the shortest counterexample found, and found/run; n/a: not measured. "
              "Exploration, the liveness search and Z3 are deterministic: one run. guided: random walks that keep "
              "every state of a new coarse shape as a restart point (checkers/search/walk.py). prove: Z3 refutes the "
              "consistent-point property the toggle breaks, and the model, started from the witness logs "
              "(constructed, not reached from an empty cluster), replicates them into the invariant shown.")
    return text + "\n\n" + legend + (f" {note}" if note else "")
