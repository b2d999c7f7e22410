"""Z3 proofs of the truncation search (checkers/proofs/truncation.py): every property, every wrong variant,
the unbounded attempt, and that the proofs fail when the model's function is broken."""

from __future__ import annotations

import json
import random

import pytest
import z3

from rmqcheck import cli
from rmqcheck.checkers.proofs import truncation as proofs
from rmqcheck.checkers.counterexamples.files import read, write
from rmqcheck.checkers.counterexamples.replay import reproduces, run_lenient
from rmqcheck.model import epochfile as ef

K_FAST = 4  # the suite's bound per property; `rmqcheck prove` (tested below) at K = 5 (its default 8: make bench)


@pytest.mark.parametrize("prop", proofs.PROPERTIES, ids=lambda p: p.id)
def test_property_on_the_faithful_search(prop):
    outcome = proofs.check(prop, K_FAST)
    assert outcome.result == outcome.expected, outcome
    if outcome.witness is not None:  # a quirk row: the witness really breaks it on integers
        assert proofs.concrete_premises(prop.id, outcome.witness)
        assert proofs.concrete_violation(prop.id, outcome.witness) is not None


def test_the_range_quirk_reaches_long_max_value():
    outcome = proofs.check(proofs.BY_ID["1q-range-quirk"], K_FAST)
    assert outcome.point == ef.INF


@pytest.mark.parametrize("variant", proofs.VARIANTS, ids=lambda v: v.toggle)
def test_variant_counterexample_replays_on_integers_and_in_the_model(variant, tmp_path):
    outcome = proofs.refute(variant, 8)
    assert outcome.result == "counterexample"
    x = outcome.witness
    # On integers: the model's function with the variant gives the point and breaks the
    # property, while the faithful search on the same lists does not.
    local, master = x.local, x.master
    got = ef.find_consistent_point(local.entries, local.max, master.entries, master.max, variant.search)
    assert got == outcome.point
    assert proofs.concrete_violation(variant.breaks, x, variant.search) is not None
    assert proofs.concrete_violation(variant.breaks, x) is None
    assert all(p(x, proofs.PY) for p in proofs.PREMISES.values())
    # In the model: the divergent-log scenario violates an invariant with the toggle only.
    cx = read(write(proofs.counterexample(outcome, variant), tmp_path / "cx.json"))
    assert cx.invariant is not None and cx.start
    assert reproduces(cx.config, cx.actions, cx.invariant, cx.start) is not None
    faithful = cx.config._replace(bugs=frozenset())
    assert run_lenient(faithful, cx.actions, cx.invariant, cx.start) is None
    assert cli.main(["replay", "--quiet", str(tmp_path / "cx.json")]) == 1


def test_breaking_min_into_max_in_the_model_fails_the_safety_proof(monkeypatch):
    smaller_is_larger = ef._combine

    def broken(local_end, master_end, how, ops):
        return smaller_is_larger(local_end, master_end, "max" if how == "min" else how, ops)

    monkeypatch.setattr(ef, "_combine", broken)
    outcome = proofs.check(proofs.BY_ID["3-safety"], 2)
    assert outcome.result == "counterexample"
    assert proofs._prove(proofs.unbounded_obligations()[0][1], 5.0) != "proved"


def test_breaking_the_match_in_the_model_fails_the_proofs(monkeypatch):
    real = ef.search_step

    def epoch_only(point, entry, master_entry, ops=ef.INT_OPS, search=ef.FAITHFUL):
        return real(point, entry, master_entry, ops, search._replace(match="epoch"))

    monkeypatch.setattr(ef, "search_step", epoch_only)
    assert proofs.check(proofs.BY_ID["3-safety"], 3).result == "counterexample"
    inner = proofs.unbounded_obligations()[0][1]
    assert proofs._prove(inner, 5.0) != "proved"


def _array(values):
    a = z3.K(z3.IntSort(), z3.IntVal(0))
    for i, v in enumerate(values):
        a = z3.Store(a, i, v)
    return a


def test_unbounded_obligations_are_proved_and_not_vacuous():
    for name, claim in proofs.unbounded_obligations():
        assert proofs._prove(claim, 10.0) == "proved", name
    # Each obligation is an implication; its premise must hold somewhere, or "proved" says
    # nothing: here, on a local list (1,0),(2,5) and a master list (1,0),(2,5),(3,7).
    le, ls, nl, lmax = proofs._arrays("local")
    me, ms, nm, mmax = proofs._arrays("master")
    lists = [nl == 2, nm == 3, le == _array([1, 2]), ls == _array([0, 5]), me == _array([1, 2, 3]),
             ms == _array([0, 5, 7]), lmax == 9, mmax == 9]
    for name, claim in proofs.unbounded_obligations():
        s = z3.Solver()
        s.set("timeout", 10_000)
        s.add(claim.arg(0), *lists)
        assert s.check() == z3.sat, name


@pytest.mark.heavy
def test_an_off_by_one_spec_is_not_proved_unbounded():
    """The final obligations can fail: claiming the offset at the point itself is safe is false.
    (A false quantified claim may come back unknown rather than refuted; either way not proved.)"""
    claim = proofs.unbounded_obligations()[4][1]  # safety: o < r
    o, r = z3.Int("o"), z3.Int("r")
    widened = z3.substitute(claim, (o < r, o <= r))
    assert proofs._prove(widened, 2.0) != "proved"  # refuted, or unknown when the time is up


def _random_instance(rng: random.Random):
    def side():
        n = rng.randrange(0, 5)
        epochs = sorted(rng.sample(range(1, 9), n))
        starts = sorted(rng.sample(range(0, 12), n))
        return list(zip(epochs, starts)), rng.randrange(0, 14)

    (lo, lm), (mo, mm) = side(), side()
    return proofs.concrete(lo, lm, mo, mm)


def _as_z3(x):
    def side(s):
        return proofs.Side(tuple((z3.IntVal(e), z3.IntVal(st)) for e, st in s.entries), z3.IntVal(s.max))

    return proofs.Instance(side(x.local), side(x.master))


@pytest.mark.heavy
def test_z3_and_integer_readings_of_the_same_text_agree():
    """Differential: the point and each property's violation evaluated by Z3 on constants equal
    the Python evaluation (so the replay check means what the proof means)."""
    rng = random.Random(3)
    for _ in range(150):
        x = _random_instance(rng)
        for search in (ef.FAITHFUL, ef.Search(end="max"), ef.Search(highest_first=False)):
            r = proofs.point(x, proofs.PY, search)
            xz = _as_z3(x)
            rz = proofs.point(xz, proofs.Z3, search)
            assert z3.simplify(z3.IntVal(0) + rz).as_long() == r
            o = min(max(r, 0), 20) - 1  # the last offset below the point, where safety is tested
            for prop in proofs.PROPERTIES:
                py = proofs.violation(prop.id, x, r, proofs.PY, o, search)
                zz = proofs.violation(prop.id, xz, rz, proofs.Z3, z3.IntVal(o), search)
                assert z3.is_true(z3.simplify(zz)) == bool(py), (prop.id, x, search)


@pytest.mark.heavy
def test_prove_command_exits_0_and_writes_replayable_files(tmp_path, capsys):
    # K = 5 writes the same files as the default 8 in half the time (bench/prove.py runs K = 8)
    assert cli.main(["prove", "--k", "5", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "K" in text and "unbounded attempt" in text
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == len(proofs.VARIANTS) + 2  # the variants and the two quirk rows
    for f in files:
        assert cli.main(["replay", "--quiet", str(f)]) == 1, f


def test_a_damaged_truncation_section_is_bad_input(tmp_path, capsys):
    assert cli.main(["prove", "--only", "1q-range-quirk", "--out", str(tmp_path)]) == 0
    path = next(tmp_path.glob("*.json"))
    data = json.loads(path.read_text())
    data["truncation"]["local"] = [[2, 0], [1, 5]]
    path.write_text(json.dumps(data))
    assert cli.main(["replay", str(path)]) == 2
    assert "truncation section" in capsys.readouterr().err
