"""Z3 proofs of the slave-side truncation (reference §1.4, §2.3 `doTruncate`).

The search proved is `model.epochfile.consistent_point` over `truncation_view`, the code the
model runs, evaluated on Z3 terms through an `ops` object. The properties and premises below
are also written once over `ops`, so the same text is a Z3 formula (for the proofs) and a
Python predicate (to re-check a counterexample on concrete integers in `rmqcheck replay`).

The logs: a replica's byte at offset o is the epoch whose entry covers o (one master per
epoch, so equal epochs mean equal bytes); below its first entry (files deleted, or never
attributed) a byte is unconstrained. An instance is a pair of epoch lists with fixed lengths
and symbolic epochs, start offsets and max offsets; each property is proved for every pair of
lengths up to K by checking that its negation is unsatisfiable.

One module on purpose (over 500 lines): the properties, premises, proofs, wrong variants and the
unbounded attempt are one proof set over one definition and one vocabulary; a counterexample file
rebuilds the logs from exactly these instances.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import z3

from rmqcheck.invariants.catalogue import check_state, check_transition
from rmqcheck.model import epochfile as ef
from rmqcheck.model.config import NO_FAULTS, SYNC_FLUSH, Config
from rmqcheck.model.ha import SEARCH_TOGGLES, truncation_search
from rmqcheck.model.step import NotEnabled, step

from rmqcheck.checkers.counterexamples.files import Counterexample
from rmqcheck.checkers.counterexamples.startstate import Replica, start_state

INF = ef.INF


class Z3Ops:
    @staticmethod
    def ite(c, a, b):
        return z3.If(c, a, b)

    @staticmethod
    def eq(a, b):
        return a == b

    @staticmethod
    def le(a, b):
        return a <= b

    @staticmethod
    def lt(a, b):
        return a < b

    @staticmethod
    def and_(*xs):
        return z3.And(*xs) if xs else z3.BoolVal(True)

    @staticmethod
    def or_(*xs):
        return z3.Or(*xs) if xs else z3.BoolVal(False)

    @staticmethod
    def not_(x):
        return z3.Not(x)


class PyOps(ef.IntOps):
    """The model's integer operations, plus what the properties need."""

    @staticmethod
    def lt(a, b):
        return a < b

    @staticmethod
    def and_(*xs):
        return all(xs)

    @staticmethod
    def or_(*xs):
        return any(xs)

    @staticmethod
    def not_(x):
        return not x


Z3 = Z3Ops()
PY = PyOps()


class Side(NamedTuple):
    entries: tuple[tuple[Any, Any], ...]  # (epoch, start)
    max: Any  # maxPhyOffset


class Instance(NamedTuple):
    local: Side
    master: Side


def symbolic(n_local: int, n_master: int) -> Instance:
    def side(name: str, n: int) -> Side:
        return Side(tuple((z3.Int(f"{name}_e{i}"), z3.Int(f"{name}_s{i}")) for i in range(n)), z3.Int(f"{name}_max"))

    return Instance(side("local", n_local), side("master", n_master))


def concrete(local: Sequence[ef.Entry], local_max: int, master: Sequence[ef.Entry], master_max: int) -> Instance:
    return Instance(Side(tuple(map(tuple, local)), local_max), Side(tuple(map(tuple, master)), master_max))


def point(x: Instance, ops: Any, search: ef.Search = ef.FAITHFUL) -> Any:
    """What doTruncate computes: the model's own code, on `ops`."""
    return ef.truncation_point(x.local.entries, INF, x.local.max, x.master.entries, x.master.max, ops, search)


# --- the spec's vocabulary -------------------------------------------------------------------


def common_pairs(x: Instance, ops: Any) -> Iterator[tuple[int, int, Any]]:
    """(i, j, condition): local entry i and master entry j are the same (epoch, start)."""
    for i, (e, s) in enumerate(x.local.entries):
        for j, (me, ms) in enumerate(x.master.entries):
            yield i, j, ops.and_(ops.eq(e, me), ops.eq(s, ms))


def covered(side: Side, o: Any, ops: Any) -> Any:
    """The replica holds offset o and its epoch list attributes it."""
    if not side.entries:
        return ops.or_()  # false
    return ops.and_(ops.le(side.entries[0][1], o), ops.lt(o, side.max))


def epoch_at(side: Side, o: Any, ops: Any) -> Any:
    epoch = -1
    for e, s in side.entries:
        epoch = ops.ite(ops.le(s, o), e, epoch)
    return epoch


def forced_equal(x: Instance, o: Any, ops: Any) -> Any:
    """Every pair of logs consistent with the lists and the premise agrees at offset o: both
    lists attribute o to the same epoch, or the log-matching premise forces it (a common
    (epoch, start) above o)."""
    by_premise = ops.or_(*(ops.and_(c, ops.lt(o, x.local.entries[i][1])) for i, _, c in common_pairs(x, ops)))
    same_epoch = ops.and_(
        covered(x.local, o, ops),
        covered(x.master, o, ops),
        ops.eq(epoch_at(x.local, o, ops), epoch_at(x.master, o, ops)),
    )
    return ops.or_(by_premise, same_epoch)


# --- premises ----------------------------------------------------------------------------------


def well_formed(x: Instance, ops: Any) -> Any:
    """Strictly increasing epochs and start offsets, offsets in [0, Long.MAX_VALUE)."""
    out = []
    for side in x:
        out += [ops.le(0, side.max), ops.lt(side.max, INF)]
        for k, (e, s) in enumerate(side.entries):
            out += [ops.le(0, e), ops.le(0, s), ops.lt(s, INF)]
            if k:
                pe, ps = side.entries[k - 1]
                out += [ops.lt(pe, e), ops.lt(ps, s)]
    return ops.and_(*out)


def within_log(x: Instance, ops: Any) -> Any:
    """No epoch starts beyond its replica's log end (the quirk rows drop this)."""
    return ops.and_(*(ops.le(s, side.max) for side in x for _, s in side.entries))


def lists_match(x: Instance, ops: Any) -> Any:
    """Log matching on the lists: a common (epoch, start) has the same entries below it on both
    sides (the master of an epoch had one log when elected, and a replica recording that epoch
    copied it). Implies the offset-level premise of `forced_equal`."""
    out = []
    for i, j, c in common_pairs(x, ops):
        if i != j:
            out.append(ops.not_(c))
        else:
            below = [ops.and_(ops.eq(le, me), ops.eq(ls, ms)) for (le, ls), (me, ms) in zip(
                x.local.entries[:i], x.master.entries[:i])]
            out.append(ops.or_(ops.not_(c), ops.and_(*below)))
    return ops.and_(*out)


def realistic(x: Instance, ops: Any, bound: int) -> Any:
    """For counterexamples that replay in the model: both lists attribute every byte (first
    start 0), the master's current epoch is newer than every epoch of the slave, epochs start
    at 1, logs are non-empty and values small."""
    out = [lists_match(x, ops), within_log(x, ops)]
    for side in x:
        out += [ops.lt(0, side.max), ops.le(side.max, bound), ops.eq(side.entries[0][1], 0)]
        out += [ops.le(1, e) for e, _ in side.entries] + [ops.le(e, bound) for e, _ in side.entries]
    # The master was elected after the slave's last epoch (it appended a newer one).
    top = x.master.entries[-1][0]
    out += [ops.lt(e, top) for e, _ in x.local.entries]
    return ops.and_(*out)


# --- properties: each returns the *violation* formula at a result r -------------------------


def bad_range(x: Instance, r: Any, ops: Any) -> Any:
    return ops.and_(ops.not_(ops.eq(r, -1)), ops.or_(ops.lt(r, 0), ops.lt(x.local.max, r), ops.lt(x.master.max, r)))


def bad_minus_one(x: Instance, r: Any, ops: Any) -> Any:
    some = ops.or_(*(c for _, _, c in common_pairs(x, ops)))
    return ops.not_(ops.eq(ops.eq(r, -1), ops.not_(some)))


def bad_safety_at(x: Instance, r: Any, o: Any, ops: Any) -> Any:
    """The slave keeps offset o (below the point and in its log) and the master either does not
    hold it or may hold other bytes there."""
    return ops.and_(
        ops.le(0, o),
        ops.lt(o, r),
        ops.lt(o, x.local.max),
        ops.or_(ops.le(x.master.max, o), ops.not_(forced_equal(x, o, ops))),
    )


def bad_optimality(x: Instance, r: Any, ops: Any) -> Any:
    """A larger cut would be safe for every pair of logs: the first offset cut away (r, or 0
    for -1) is held by both and forced equal."""
    kept = ops.ite(ops.lt(r, 0), 0, r)
    return ops.and_(ops.lt(kept, x.local.max), ops.lt(kept, x.master.max), forced_equal(x, kept, ops))


def bad_resume(x: Instance, r: Any, ops: Any, search: ef.Search = ef.FAITHFUL) -> Any:
    """After `truncateSuffixByOffset(r)` the slave's list is exactly the master's entries that
    start below r, and the next handshake (last end stale per Q1, then set to the new max r)
    finds r again, so replication resumes with no further truncation. An emptied list takes
    the new-replica path (no search), which is a prefix too."""
    loc, mas = x.local.entries, x.master.entries
    out = []
    for c in range(len(loc) + 1):
        kept_here = ops.and_(
            ops.le(0, r),
            ops.lt(loc[c - 1][1], r) if c else ops.and_(),
            ops.le(r, loc[c][1]) if c < len(loc) else ops.and_(),
        )
        same = [ops.and_(ops.eq(le, me), ops.eq(ls, ms)) for (le, ls), (me, ms) in zip(loc[:c], mas)]
        master_below = ops.and_(
            ops.lt(mas[c - 1][1], r) if 0 < c <= len(mas) else ops.and_(),
            ops.le(r, mas[c][1]) if c < len(mas) else ops.and_(),
        )
        prefix = ops.and_(ops.le(c, len(mas)), *same, master_below) if c <= len(mas) else ops.or_()
        if c:
            stale = loc[c][1] if c < len(loc) else INF  # Q1 keeps the first removed start
            again = ef.truncation_point(loc[:c], stale, r, mas, x.master.max, ops, search)
            prefix = ops.and_(prefix, ops.eq(again, r))
        out.append(ops.and_(kept_here, ops.not_(prefix)))
    return ops.or_(*out)


class Property(NamedTuple):
    id: str
    kind: str  # which violation formula: a key of _VIOLATIONS
    statement: str
    premises: tuple[str, ...]
    holds: bool  # expected outcome on the faithful search


PREMISES: dict[str, Callable[[Instance, Any], Any]] = {
    "well-formed": well_formed,
    "within-log": within_log,
    "lists-match": lists_match,
}

PROPERTIES: tuple[Property, ...] = (
    Property(
        "1-range", "range", "the point is -1 or in [0, min(local max, master max)]", ("well-formed", "within-log"), True
    ),
    Property(
        "1q-range-quirk",
        "range",
        "without within-log the point can pass both max offsets (Long.MAX_VALUE when both last "
        "starts are beyond their max: setLastEpochEntryEndOffset is a no-op)",
        ("well-formed",),
        False,
    ),
    Property(
        "2-minus-one", "minus-one", "the point is -1 exactly when no (epoch, start) is on both sides", ("well-formed",), True
    ),
    Property(
        "3-safety",
        "safety",
        "every offset the slave keeps below the point is on the master with the same bytes, for all "
        "logs consistent with the lists and log matching",
        ("well-formed", "within-log"),
        True,
    ),
    Property(
        "3q-safety-quirk",
        "safety",
        "without within-log the slave may keep bytes the master does not hold",
        ("well-formed",),
        False,
    ),
    Property(
        "4-optimality",
        "optimality",
        "the first offset cut away may differ on some consistent logs, so no search over the epoch "
        "lists alone may keep more",
        ("well-formed", "within-log"),
        True,
    ),
    Property(
        "5-resume",
        "resume",
        "after truncateSuffixByOffset the slave's list is the master's entries below the point and "
        "the next handshake finds the same point",
        ("well-formed", "within-log", "lists-match"),
        True,
    ),
)
BY_ID = {p.id: p for p in PROPERTIES}

# The witness offset of the safety property is an extra variable; the others need none.
_WITNESS = z3.Int("o")


_VIOLATIONS: dict[str, Callable[..., Any]] = {
    "range": lambda x, r, ops, o, search: bad_range(x, r, ops),
    "minus-one": lambda x, r, ops, o, search: bad_minus_one(x, r, ops),
    "safety": lambda x, r, ops, o, search: bad_safety_at(x, r, o, ops),
    "optimality": lambda x, r, ops, o, search: bad_optimality(x, r, ops),
    "resume": lambda x, r, ops, o, search: bad_resume(x, r, ops, search),
}


def violation(prop_id: str, x: Instance, r: Any, ops: Any, o: Any = None, search: ef.Search = ef.FAITHFUL) -> Any:
    """The property's violation at result r (safety: at the witness offset o)."""
    return _VIOLATIONS[BY_ID[prop_id].kind](x, r, ops, o, search)


# --- concrete evaluation (replay, differential tests) ------------------------------------------


def concrete_violation(prop_id: str, x: Instance, search: ef.Search = ef.FAITHFUL) -> str | None:
    """The property's violation on concrete lists, described, or None when it holds."""
    r = point(x, PY, search)
    if BY_ID[prop_id].kind == "safety":
        for o in range(0, min(r, x.local.max)):
            if violation(prop_id, x, r, PY, o):
                return f"the slave keeps offset {o} below the point {r}, where the logs may differ"
        return None
    if violation(prop_id, x, r, PY, search=search):
        return f"point {r}: {BY_ID[prop_id].statement} does not hold"
    return None


def concrete_premises(prop_id: str, x: Instance) -> bool:
    return all(PREMISES[p](x, PY) for p in BY_ID[prop_id].premises)


# --- the proofs --------------------------------------------------------------------------------


class Outcome(NamedTuple):
    id: str
    statement: str
    search: ef.Search
    k: int
    expected: str  # "proved" or "counterexample"
    result: str  # "proved", "counterexample" or "unknown"
    seconds: float
    witness: Instance | None = None
    point: int | None = None
    toggle: str | None = None  # the wrong variant refuted, if any

    @property
    def ok(self) -> bool:
        return self.result == self.expected


def _model_value(m: z3.ModelRef, t: Any) -> int:
    return m.eval(t, model_completion=True).as_long()


def _extract(m: z3.ModelRef, x: Instance) -> Instance:
    def side(s: Side) -> Side:
        return Side(tuple((_model_value(m, e), _model_value(m, st)) for e, st in s.entries), _model_value(m, s.max))

    return Instance(side(x.local), side(x.master))


def lengths(k: int) -> list[tuple[int, int]]:
    """Every pair of list lengths up to k, shortest first (so counterexamples are short)."""
    return sorted(((a, b) for a in range(k + 1) for b in range(k + 1)), key=lambda p: (p[0] + p[1], p))


def check(
    prop: Property,
    k: int,
    search: ef.Search = ef.FAITHFUL,
    extra: Callable[[Instance], Any] | None = None,
    min_length: int = 0,
    timeout_ms: int = 60_000,
) -> Outcome:
    """Look for a violation over all list lengths up to k (shortest first). `extra` adds
    premises (used for the variants' replayable counterexamples)."""
    expected = "proved" if prop.holds and search == ef.FAITHFUL else "counterexample"
    started = time.perf_counter()
    # Counterexamples meant to be read and replayed are made as small as Z3 can.
    small = extra is not None or not prop.holds
    solver = z3.Optimize() if small else z3.Solver()
    solver.set("timeout", timeout_ms)
    unknown = False
    for n_local, n_master in lengths(k):
        if min(n_local, n_master) < min_length:
            continue
        x = symbolic(n_local, n_master)
        r = point(x, Z3, search)
        solver.push()
        for name in prop.premises:
            solver.add(PREMISES[name](x, Z3))
        if extra is not None:
            solver.add(extra(x))
        if small:
            values = [v for side in x for entry in side.entries for v in entry]
            solver.minimize(z3.Sum(*values, x.local.max, x.master.max))
        solver.add(violation(prop.id, x, r, Z3, _WITNESS, search))
        verdict = solver.check()
        if verdict == z3.sat:
            m = solver.model()
            witness = _extract(m, x)
            solver.pop()
            return Outcome(prop.id, prop.statement, search, k, expected, "counterexample",
                           time.perf_counter() - started, witness, point(witness, PY, search))
        unknown |= verdict == z3.unknown
        solver.pop()
    return Outcome(prop.id, prop.statement, search, k, expected, "unknown" if unknown else "proved",
                   time.perf_counter() - started)


# --- the wrong variants --------------------------------------------------------------------------


class Variant(NamedTuple):
    toggle: str  # the model's bug toggle that runs this search (model/ha.py SEARCH_TOGGLES)
    breaks: str  # the property id it violates
    why: str

    @property
    def search(self) -> ef.Search:
        return truncation_search(Config(bugs=frozenset({self.toggle})))


VARIANTS: tuple[Variant, ...] = (
    Variant("truncation_ascending_epochs", "4-optimality",
            "ascending iteration (RIP-44 pseudo-code): the lowest common epoch wins, the slave cuts acked data"),
    Variant("truncation_max_end", "3-safety", "max instead of min of the two ends"),
    Variant("truncation_matches_epoch_only", "3-safety", "matching on the epoch without the start offset"),
    Variant("truncation_matches_start_only", "3-safety", "matching on the start offset without the epoch"),
    Variant("truncation_keeps_local_end", "3-safety", "the slave's end only: ignores the epochs only the master has"),
    Variant("truncation_keeps_master_end", "3-safety", "the master's end only: ignores the epochs only the slave has"),
)
assert {v.toggle for v in VARIANTS} == SEARCH_TOGGLES.keys()
VARIANT_BY_TOGGLE = {v.toggle: v for v in VARIANTS}

SCENARIO_BOUND = 12  # offsets and epochs of a variant's counterexample, so its scenario stays short


def refute(v: Variant, k: int) -> Outcome:
    prop = BY_ID[v.breaks]
    out = check(prop, k, v.search, extra=lambda x: realistic(x, Z3, SCENARIO_BOUND), min_length=1)
    return out._replace(id=f"{v.breaks} / {v.toggle}", statement=v.why, toggle=v.toggle)


def run_all(k: int = 8, only: Sequence[str] = ()) -> list[Outcome]:
    out = [check(p, k) for p in PROPERTIES if not only or p.id in only]
    out += [refute(v, k) for v in VARIANTS if not only or v.toggle in only]
    return out


# --- counterexample files -------------------------------------------------------------------------


def _replicas(x: Instance) -> tuple[Replica, ...]:
    return (Replica(1, x.master.entries, x.master.max), Replica(2, x.local.entries, x.local.max))


def divergence_actions(cfg, replicas, limit: int = 40) -> tuple[list[tuple], str | None, str]:
    """Connect slave 2 to master 1, let the master write one message past the slave's log end
    (so bytes kept beyond the master's log meet new ones), and replicate until the logs are
    equal or an invariant fails: (actions, violated invariant or None, its message)."""
    s = start_state(cfg, replicas)
    past = max(r.log for r in replicas) + 1
    acts: list[tuple] = []
    for _ in range(limit):
        m, b = s.broker(1), s.broker(2)
        if acts and b.log.cells == m.log.cells and len(m.log.cells) >= past and b.client.ack is None:
            break
        writes = [("send", 1, 0, 1)] if len(m.log.cells) < past else []
        for a in [("ha_connect", 2)] + writes + [("ha_read_ack", 2), ("ha_transfer", 2), ("ha_slave_ack", 2)]:
            try:
                nxt = step(s, a, cfg)
            except NotEnabled:
                continue
            if nxt == s:
                continue
            acts.append(a)
            vs = check_transition(s, a, nxt, cfg) + check_state(nxt, cfg)
            if vs:
                return acts, vs[0].invariant, vs[0].message
            s = nxt
            break
        else:
            break
    return acts, None, ""


def counterexample(outcome: Outcome, variant: Variant | None = None):
    """A replayable file for an outcome with a witness: the truncation section (checked on
    integers by replay) and, for a variant, the divergent-log scenario in the model."""
    x = outcome.witness
    assert x is not None
    section = {
        "property": variant.breaks if variant else outcome.id,
        "statement": BY_ID[variant.breaks if variant else outcome.id].statement,
        "search": outcome.search._asdict(),
        "local": [list(e) for e in x.local.entries],
        "local_max": x.local.max,
        "master": [list(e) for e in x.master.entries],
        "master_max": x.master.max,
        "point": outcome.point,
        "faithful_point": point(x, PY),
        "k": outcome.k,
    }
    if variant is None:
        return Counterexample(Config(bugs=frozenset()), (), None, method="prove", truncation=section)
    cfg = Config(
        all_ack=True,
        flush=SYNC_FLUSH,
        faults=NO_FAULTS,
        bugs=frozenset({variant.toggle}),
        max_messages=2 * SCENARIO_BOUND + 2,
    )
    replicas = _replicas(x)
    acts, invariant, message = divergence_actions(cfg, replicas)
    return Counterexample(cfg, tuple(acts), invariant, message, method="prove", start=replicas, truncation=section)


def recheck(section: dict, where: str) -> tuple[int, str | None]:
    """Re-run a truncation section on integers: (the point, the violation or None). Raises
    ValueError naming the field when the section is malformed."""
    try:
        search = ef.Search(**section["search"])
        x = concrete(section["local"], section["local_max"], section["master"], section["master_max"])
        prop = section["property"]
        if prop not in BY_ID:
            raise KeyError(prop)
        ef.validated_entries(x.local.entries, "local")
        ef.validated_entries(x.master.entries, "master")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: truncation section: {exc!r}") from None
    return point(x, PY, search), concrete_violation(prop, x, search)


# --- the unbounded attempt: induction over the list lengths -------------------------------------
#
# Lists become Z3 arrays of unbounded length. The search is a fold of `search_step` (the model's
# loop body) over the master entries inside a fold over the local entries, so it suffices to
# show that the two loop invariants below are inductive (base cases are immediate: nothing
# processed, point unchanged), and that the properties follow from the outer invariant at the
# end. Each obligation is one Z3 query with quantifiers; Z3 may answer unknown, and the report
# says so.


def _arrays(name: str):
    return (z3.Array(f"{name}_e", z3.IntSort(), z3.IntSort()), z3.Array(f"{name}_s", z3.IntSort(), z3.IntSort()),
            z3.Int(f"{name}_n"), z3.Int(f"{name}_max"))


def _sorted(e, s, n):
    a, b = z3.Ints("a b")
    return z3.And(n >= 0, z3.ForAll([a, b], z3.Implies(z3.And(0 <= a, a < b, b < n), z3.And(e[a] < e[b], s[a] < s[b]))),
                  z3.ForAll([a], z3.Implies(z3.And(0 <= a, a < n), s[a] >= 0)))


def _end(s, n, mx, i):
    """truncation_view's end of entry i (next start; the last: max when its start is not beyond)."""
    return z3.If(i + 1 < n, s[i + 1], z3.If(s[i] <= mx, mx, INF))


def _hit(le, ls, i, me, ms, j):
    return z3.And(le[i] == me[j], ls[i] == ms[j])


def _min(a, b):
    return z3.If(a <= b, a, b)


def _prove(claim, seconds: float) -> str:
    solver = z3.Solver()
    solver.set("timeout", int(seconds * 1000))
    solver.add(z3.Not(claim))
    verdict = solver.check()
    return "proved" if verdict == z3.unsat else "refuted" if verdict == z3.sat else "unknown"


def unbounded_obligations(search: ef.Search = ef.FAITHFUL) -> list[tuple[str, Any]]:
    le, ls, nl, lmax = _arrays("local")
    me, ms, nm, mmax = _arrays("master")
    i, j, k, i2, o = z3.Ints("i j k i2 o")
    p, p0 = z3.Ints("p p0")
    e, s, end = z3.Ints("e s end")
    wf = z3.And(_sorted(le, ls, nl), _sorted(me, ms, nm), lmax >= 0, mmax >= 0)

    # Inner loop: after master[0..k), the point is min(end, that entry's end) if one of them
    # matched the local entry (at most one does: epochs strictly increase), else p0.
    def inner(k, p):
        some = z3.Exists([j], z3.And(0 <= j, j < k, me[j] == e, ms[j] == s))
        found = z3.And(0 <= j, j < k, me[j] == e, ms[j] == s, p == _min(end, _end(ms, nm, mmax, j)))
        return z3.Or(z3.Exists([j], found), z3.And(z3.Not(some), p == p0))

    stepped = ef.search_step(p, (e, s, end), (me[k], ms[k], _end(ms, nm, mmax, k)), Z3, search)
    inner_step = z3.Implies(z3.And(wf, 0 <= k, k < nm, inner(k, p)), inner(k + 1, stepped))

    # Outer loop: after local[0..k), the point is the value of the highest local entry with a
    # common (epoch, start), else -1.
    def common(i):
        return z3.Exists([j], z3.And(0 <= j, j < nm, _hit(le, ls, i, me, ms, j)))

    def value(i, p):
        return z3.Exists([j], z3.And(0 <= j, j < nm, _hit(le, ls, i, me, ms, j),
                                     p == _min(_end(ls, nl, lmax, i), _end(ms, nm, mmax, j))))

    def outer(k, p):
        none_above = z3.ForAll([i2], z3.Implies(z3.And(i < i2, i2 < k), z3.Not(common(i2))))
        top = z3.And(0 <= i, i < k, value(i, p), none_above)
        none = z3.ForAll([i2], z3.Implies(z3.And(0 <= i2, i2 < k), z3.Not(common(i2))))
        return z3.Or(z3.Exists([i], top), z3.And(none, p == -1))

    # One local entry against the whole master list, by the inner invariant at k = n.
    after = z3.Int("after")
    inner_result = z3.Or(
        z3.Exists([j], z3.And(0 <= j, j < nm, _hit(le, ls, k, me, ms, j),
                              after == _min(_end(ls, nl, lmax, k), _end(ms, nm, mmax, j)))),
        z3.And(z3.Not(common(k)), after == p))
    outer_step = z3.Implies(z3.And(wf, 0 <= k, k < nl, outer(k, p), inner_result), outer(k + 1, after))

    # At the end: the properties, from the outer invariant at k = nl.
    r = z3.Int("r")
    within = z3.And(z3.ForAll([i2], z3.Implies(z3.And(0 <= i2, i2 < nl), ls[i2] <= lmax)),
                    z3.ForAll([i2], z3.Implies(z3.And(0 <= i2, i2 < nm), ms[i2] <= mmax)))
    done = z3.And(wf, within, outer(nl, r))
    range_ok = z3.Implies(done, z3.Or(r == -1, z3.And(0 <= r, r <= lmax, r <= mmax)))
    minus_one = z3.Implies(done, (r == -1) == z3.Not(z3.Exists([i2], z3.And(0 <= i2, i2 < nl, common(i2)))))

    def covers(e_arr, s_arr, n, mx, idx, o):
        return z3.And(0 <= idx, idx < n, s_arr[idx] <= o, o < _end(s_arr, n, mx, idx), o < mx)

    i3, j3 = z3.Ints("i3 j3")
    forced = z3.Or(
        z3.Exists([i3, j3], z3.And(0 <= i3, i3 < nl, 0 <= j3, j3 < nm, _hit(le, ls, i3, me, ms, j3), o < ls[i3])),
        z3.Exists([i3, j3], z3.And(covers(le, ls, nl, lmax, i3, o), covers(me, ms, nm, mmax, j3, o), le[i3] == me[j3])))
    safety = z3.Implies(z3.And(done, 0 <= o, o < r, o < lmax), z3.And(o < mmax, forced))
    kept = z3.If(r < 0, 0, r)
    optimality = z3.Implies(z3.And(done, o == kept, kept < lmax, kept < mmax), z3.Not(forced))
    return [
        ("inner loop invariant is inductive (search_step)", inner_step),
        ("outer loop invariant is inductive", outer_step),
        ("1-range from the outer invariant", range_ok),
        ("2-minus-one from the outer invariant", minus_one),
        ("3-safety from the outer invariant", safety),
        ("4-optimality from the outer invariant", optimality),
    ]


def unbounded_report(seconds: float = 10.0) -> list[str]:
    lines = ["unbounded attempt (lists of any length, induction over the two loops; Z3 with quantifiers):"]
    for name, claim in unbounded_obligations():
        started = time.perf_counter()
        verdict = _prove(claim, seconds)
        lines.append(f"  {name}: {verdict} ({time.perf_counter() - started:.2f}s)")
    lines.append("  5-resume: not attempted unbounded; proved above for the bound K only.")
    return lines
