"""Z3 proofs of the DLedgerCommitLog offset mapping (seed 000; model/dledger.py).

In DLedger mode a message's commit-log offset is the DLedger entry's position plus
BODY_OFFSET (the AppendHook writes it into the message). Positions come from
`MmapFileList.preAppend`, which the model's `entry_position` follows and which is evaluated here
on Z3 terms. Offsets below `dividedCommitlogOffset` are read from the old CommitLog, the rest
from DLedger's files (`DLedgerCommitLog.getMessage`: `offset % mappedFileSize` inside the file).

Each property is one induction step over an arbitrary write position, entry size, file size and
divided offset (unbounded integers): it holds for every log of any length because the step
invariant holds at the divided offset and is preserved. Each property also has a mutant that
must be refuted, so that a proof that cannot fail is noticed.
"""

from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple

import z3

from rmqcheck.model.dledger import BODY_OFFSET, MIN_BLANK_LEN, entry_position

from rmqcheck.checkers.proofs.truncation import Z3Ops


# Wrong forms of preAppend, for the refutations: no room kept for the blank record (a gap too
# short to hold one), and "start again at this file's start" instead of the next file's.
FAITHFUL, NO_BLANK_ROOM, WRAP_IN_FILE = "faithful", "preAppend keeps no room for a blank", "preAppend wraps to this file's start"


class Step(NamedTuple):
    """One append: write position `wrote`, entry size, file size, divided offset."""

    wrote: Any
    size: Any
    file: Any
    divided: Any
    rule: str = FAITHFUL

    @property
    def pos(self) -> Any:
        if self.rule == NO_BLANK_ROOM:
            return entry_position(self.wrote, self.size, self.file, 0, Z3Ops)
        if self.rule == WRAP_IN_FILE:
            room = self.file - self.wrote % self.file
            return z3.If(self.size + MIN_BLANK_LEN > room, self.wrote - self.wrote % self.file, self.wrote)
        return entry_position(self.wrote, self.size, self.file, MIN_BLANK_LEN, Z3Ops)

    @property
    def after(self) -> Any:  # the next write position
        return self.pos + self.size

    @property
    def phys(self) -> Any:  # the message's commit-log offset
        return self.pos + BODY_OFFSET


def step_invariant(x: Step) -> Any:
    """What holds of every write position: at or past the divided offset, and (for the
    faithful rule) with room for a blank record before the file ends."""
    room = [] if x.rule == NO_BLANK_ROOM else [x.wrote % x.file <= x.file - MIN_BLANK_LEN]
    return z3.And(x.wrote >= x.divided, *room)


def premises(x: Step, aligned: bool = True, fits: bool = True) -> Any:
    """DLedger files start at the divided offset, a multiple of the file size (the old CommitLog
    and DLedger use mappedFileSizeCommitLog); an entry has a header and a body and, with a blank
    record's room, fits in a file (preAppend fails otherwise)."""
    parts = [x.file > MIN_BLANK_LEN, x.divided >= 0, x.size > BODY_OFFSET, step_invariant(x)]
    if aligned:
        parts.append(x.divided % x.file == 0)
    if fits:
        parts.append(x.size + MIN_BLANK_LEN <= x.file)
    return z3.And(*parts)


def inductive(x: Step) -> Any:
    return step_invariant(x._replace(wrote=x.after))


def in_one_file(x: Step) -> Any:
    return x.pos % x.file + x.size <= x.file


def gap_is_one_blank(x: Step) -> Any:
    """Between the previous entry and this one there is nothing, or one blank record (magic
    code and size: 8 bytes at least) that runs to the end of the file."""
    gap = x.pos - x.wrote
    return z3.Or(gap == 0, z3.And(x.pos % x.file == 0, gap == x.file - x.wrote % x.file, gap >= MIN_BLANK_LEN))


def monotone(x: Step) -> Any:
    """The next message's offset is past this whole entry (no overlap; strictly increasing)."""
    nxt = x._replace(wrote=x.after, size=z3.Int("next_size"))  # same rule and premises
    return z3.Implies(premises(nxt), nxt.phys >= x.phys + x.size)


def routed_to_dledger(x: Step) -> Any:
    """`getMessage`: offset >= dividedCommitlogOffset reads DLedger's files."""
    return x.phys >= x.divided


def file_local_read(x: Step) -> Any:
    """`offset % mappedFileSize` is the message's place in the DLedger file that holds it: the
    files start at divided, divided + size, ... so the entry is in file k where
    pos - divided = k * size + r, 0 <= r < size, at place r (and the body BODY_OFFSET later)."""
    k, r = z3.Ints("file_index place")
    in_file_k = z3.And(x.pos - x.divided == k * x.file + r, 0 <= r, r < x.file)
    return z3.Implies(z3.And(in_file_k, in_one_file(x)), x.phys % x.file == r + BODY_OFFSET)


class Obligation(NamedTuple):
    id: str
    claim: Callable[[Step], Any]
    mutant: str  # the wrong rule its refutation uses
    aligned: bool = True  # the mutant keeps the divided offset a multiple of the file size
    fits: bool = True  # the mutant keeps entries within a file
    # Proved for these file sizes only (Z3 returns unknown on `%` by a symbolic size here);
    # () means for every file size.
    file_sizes: tuple[int, ...] = ()


OBLIGATIONS: tuple[Obligation, ...] = (
    Obligation("O1 step invariant is inductive", inductive, FAITHFUL, fits=False),
    Obligation("O2 an entry stays in one file", in_one_file, FAITHFUL, fits=False),
    Obligation("O3 a gap is one blank record", gap_is_one_blank, NO_BLANK_ROOM),
    Obligation("O4 offsets increase, no overlap", monotone, WRAP_IN_FILE),
    Obligation("O5 routed past dividedCommitlogOffset", routed_to_dledger, WRAP_IN_FILE, aligned=False),
    Obligation("O6 offset % fileSize is the place in its file", file_local_read, FAITHFUL, aligned=False,
               file_sizes=(1 << 30, 1_000_003, 4096)),  # the 1 GiB default, a prime, a page
)


class Outcome(NamedTuple):
    id: str
    variant: str  # "faithful", or what the refutation changed
    expected: str
    result: str
    seconds: float
    witness: str = ""

    @property
    def ok(self) -> bool:
        return self.result == self.expected


NAMES = ("wrote", "size", "file_size", "divided", "next_size")
REFUTATION_FILE_SIZE = 4096  # one file size is enough for a counterexample, and keeps `%` linear


def _check(claim: Any, premise: Any, seconds: float) -> tuple[str, str]:
    # A fresh context: Z3's search depends on the ids its terms got, so in the shared context the
    # same query took 0.3 s or timed out after 20 s depending on what was built before it.
    ctx = z3.Context()
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", int(seconds * 1000))
    solver.add(premise.translate(ctx), z3.Not(claim).translate(ctx))
    verdict = solver.check()
    if verdict == z3.unsat:
        return "proved", ""
    if verdict == z3.sat:
        m = solver.model()
        values = {d.name(): m[d] for d in m.decls() if d.arity() == 0 and d.name() in NAMES}
        values.setdefault("file_size", REFUTATION_FILE_SIZE)
        return "refuted", ", ".join(f"{n}={values[n]}" for n in NAMES if n in values)
    return "unknown", ""


def _variant(ob: Obligation) -> str:
    changes = [] if ob.mutant == FAITHFUL else [ob.mutant]
    changes += [] if ob.aligned else ["divided not a multiple of the file size"]
    changes += [] if ob.fits else ["entries larger than a file"]
    return "; ".join(changes)


def run(seconds: float = 20.0) -> list[Outcome]:
    """Each obligation on the faithful rule (expected: proved) and on its mutant (expected:
    refuted, with a concrete witness)."""
    outcomes = []
    w, size, f, d = z3.Ints(" ".join(NAMES[:4]))
    for ob in OBLIGATIONS:
        started = time.perf_counter()
        results = [_check(ob.claim(x), premises(x), seconds)[0]
                   for x in [Step(w, size, z3.IntVal(n), d) for n in ob.file_sizes] or [Step(w, size, f, d)]]
        sizes = f" (file sizes {', '.join(f'{n:,}' for n in ob.file_sizes)})" if ob.file_sizes else ""
        result = next((r for r in results if r != "proved"), "proved")
        outcomes.append(Outcome(ob.id, "faithful" + sizes, "proved", result, time.perf_counter() - started))
        x = Step(w, size, z3.IntVal(REFUTATION_FILE_SIZE), d, ob.mutant)
        started = time.perf_counter()
        result, witness = _check(ob.claim(x), premises(x, ob.aligned, ob.fits), seconds)
        outcomes.append(Outcome(ob.id, _variant(ob), "refuted", result, time.perf_counter() - started, witness))
    return outcomes
