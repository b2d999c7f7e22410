"""The scenario files of the other modes (scenarios/classic, dledger, recovery): each reproduces
its violation with its toggle and stops reproducing without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqcheck.checkers.search import modes
from rmqcheck.checkers.counterexamples.files import CounterexampleError

ROOT = Path(__file__).parent.parent / "scenarios"
MODE_NAMES = ("classic", "dledger", "recovery")
SCENARIO_FILES = sorted(p for name in MODE_NAMES for p in (ROOT / name).glob("*.scn"))


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[f"{p.parent.name}/{p.stem}" for p in SCENARIO_FILES])
def test_each_scenario_reproduces_with_its_toggle_and_not_without(path):
    sc = modes.read(path)
    assert sc.mode.name == path.parent.name and sc.config.bugs == {path.stem.split("--")[0]}
    r = modes.replay(sc.mode, sc.config, sc.actions)
    assert r.first(sc.invariant) is not None
    assert r.first(sc.invariant)[0] == len(sc.actions), "the scenario should end at its violation"
    try:
        clean = modes.replay(sc.mode, sc.config._replace(bugs=frozenset()), sc.actions)
    except CounterexampleError:
        return  # without the toggle the run cannot even be taken
    assert clean.first() is None


@pytest.mark.parametrize("name", MODE_NAMES)
def test_every_toggle_has_a_scenario(name):
    assert {p.stem.split("--")[0] for p in (ROOT / name).glob("*.scn")} == modes.MODES[name].toggles


@pytest.mark.parametrize("name", ["dledger", "recovery"])
def test_every_invariant_is_caught_by_some_toggle(name):
    """Classic HA's C1 and C2 fail in the intended model itself (tests/test_classic.py)."""
    caught = {modes.read(p).invariant for p in (ROOT / name).glob("*.scn")}
    assert caught == {inv.id for inv in modes.MODES[name].invariants}
