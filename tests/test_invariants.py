"""The invariant catalogue: well formed, expectations as documented, and every invariant
catches at least one bug toggle (a checker that cannot fail proves nothing)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rmqcheck.model import configs
from rmqcheck.checkers.search import liveness
from rmqcheck.checkers.counterexamples.files import read
from rmqcheck.checkers.counterexamples.replay import ReplayError, replay
from rmqcheck.checkers.counterexamples.startstate import start_state
from rmqcheck.invariants.catalogue import BY_ID, CATALOGUE, check_start, check_state, check_transition, expected_ids
from rmqcheck.invariants.liveness import LIVENESS_BY_ID
from rmqcheck.model.broker import conn_of, get_confirm_offset
from rmqcheck.model.bugs import TOGGLES
from rmqcheck.model.config import Config
from rmqcheck.model.step import NotEnabled, initial_state, step, successors

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios" / "toggles"


def test_catalogue_is_well_formed():
    ids = [inv.id for inv in CATALOGUE]
    assert len(ids) == len(set(ids))
    assert {f"I{i}" for i in range(1, 11)} <= set(ids)  # I1-I10 of reference/known-bugs.md §1, and I11 (seed 003)
    for inv in CATALOGUE:
        assert inv.statement and inv.expected_when and (inv.check or inv.check_step)


def test_expectations_follow_the_configuration():
    durable = configs.load("durable")
    assert expected_ids(durable) == set(BY_ID)
    default = expected_ids(configs.load("default"))
    assert not {"I1", "I2", "I3", "I4", "I5"} & default and {"I6", "I8", "I9", "I10"} <= default
    assert "I7" not in expected_ids(durable._replace(unclean=True))
    assert "I5" not in expected_ids(durable._replace(faults=durable.faults._replace(epoch_file_losses=1)))


def test_the_initial_state_satisfies_every_invariant():
    for cfg in (Config(), configs.load("durable3")):
        r = replay(cfg, [])
        assert r.violations == [[]]


def _violated(cfg, actions, start=()) -> set[str]:
    """Invariants violated anywhere along `actions`, skipping actions that are not enabled."""
    s = start_state(cfg, start)
    seen = {v.invariant for v in check_start(s, cfg)}
    for a in actions:
        try:
            nxt = step(s, a, cfg)
        except NotEnabled:
            continue
        seen |= {v.invariant for v in check_transition(s, a, nxt, cfg) + check_state(nxt, cfg)}
        s = nxt
    return seen


def _killed() -> dict[str, set[str]]:
    """For each toggle, the invariants its scenarios violate with it and not without it."""
    killed: dict[str, set[str]] = {t.name: set() for t in TOGGLES}
    for path in sorted(SCENARIOS.glob("*.scn")):
        cx = read(path)
        toggle = path.stem.split("--")[0]
        without = cx.config._replace(bugs=cx.config.bugs - {toggle})
        if cx.loop is not None:  # a liveness lasso
            if liveness.recheck(cx.config, cx.actions, cx.loop, cx.invariant) and not liveness.recheck(
                without, cx.actions, cx.loop, cx.invariant
            ):
                killed[toggle].add(cx.invariant)
            continue
        killed[toggle] |= _violated(cx.config, cx.actions, cx.start) - _violated(without, cx.actions, cx.start)
    return killed


def test_every_invariant_catches_at_least_one_toggle():
    caught = set().union(*_killed().values())
    missing = sorted((set(BY_ID) | set(LIVENESS_BY_ID)) - caught)
    assert not missing, f"invariants no toggle scenario violates: {missing}"


def test_each_toggle_declares_the_invariants_its_scenarios_show():
    killed = _killed()
    for t in TOGGLES:
        assert set(t.catches) == killed[t.name], t.name


@pytest.mark.heavy
def test_the_epoch_start_expand_guard_never_decides_in_the_snapshot():
    """The 'slave reached the current epoch's start' expand condition came with the first
    expansion code (#4355), when confirmOffset could lag an epoch's start. With the snapshot's
    confirmOffset rules ack >= confirmOffset already implies it; this measures that on seeded
    random walks of the full snapshot model, which is why the toggle removing it is harmless."""
    for cfg in (configs.load("durable"), configs.load("durable3")):
        rng = random.Random(7)
        s0 = initial_state(cfg)
        reads = 0
        for _ in range(200):
            s = s0
            for _ in range(60):
                options = successors(s, cfg)
                action, nxt = options[rng.randrange(len(options))]
                if action[0] == "ha_read_ack":
                    slave = s.broker(action[1])
                    m = s.broker(slave.client.master)
                    conn, ack = conn_of(m, slave.id), slave.client.ack
                    reads += 1
                    decisive = (
                        conn is not None
                        and not conn.learner
                        and ack >= conn.last_master_max
                        and slave.id not in m.sss
                        and m.epochs.entries
                        and ack >= get_confirm_offset(m, cfg)
                        and ack < m.epochs.entries[-1][1]
                    )
                    assert not decisive, (m.epochs.entries, ack)
                s = nxt
        assert reads > 300


def test_a_scenario_that_does_not_fit_the_model_is_reported():
    cfg = Config()
    try:
        replay(cfg, [("send", 2, 0, 1)])
    except ReplayError as exc:
        assert "step 1: send(broker=2, queue=0, size=1) is not enabled" in str(exc)
    else:
        raise AssertionError("expected ReplayError")
