"""Classic master/slave HA (model/classic.py, invariants/classic.py), explored exhaustively."""

from __future__ import annotations


import pytest

from rmqcheck.checkers.search.explore import Explorer
from rmqcheck.model.classic import (
    ASYNC_MASTER,
    FLUSH_SLAVE_TIMEOUT,
    PUT_OK,
    SNAPSHOT,
    ClassicConfig,
    NotEnabled,
    initial_state,
    step,
    successors,
    validate,
)

# SYNC_MASTER, inSyncReplicas 2, SYNC_FLUSH, everything in one commit-log file.
SAFE = ClassicConfig(slaves=2, sync_flush=True, max_messages=2, file_size=8, resets=1, bugs=frozenset())
# ASYNC_FLUSH: a crashed master loses its unflushed tail, which a slave may keep.
TAIL_LOSS = ClassicConfig(max_messages=2, file_size=8, bugs=frozenset())


def run(cfg, actions):
    s = initial_state(cfg)
    for a in actions:
        s = step(s, a, cfg)
    return s


def test_a_sync_put_waits_for_the_slave_ack_and_then_is_on_both():
    s = run(SAFE, [("send", 1), ("connect", 1), ("read_report", 1)])
    assert ("put_ok", 1) not in [a for a, _ in successors(s, SAFE)]
    s = run(SAFE, [("send", 1), ("connect", 1), ("read_report", 1), ("transfer", 1), ("read_report", 1), ("put_ok", 1)])
    assert s.status == (PUT_OK,) and s.node(1).log.cells == s.master.log.cells


def test_a_put_may_time_out_and_stays_in_the_master_log():
    s = run(SAFE, [("send", 1), ("put_timeout", 1)])
    assert s.status == (FLUSH_SLAVE_TIMEOUT,) and len(s.master.log.cells) == 1


def test_async_master_and_in_sync_replicas_1_ack_at_once():
    for cfg in (SAFE._replace(role=ASYNC_MASTER), SAFE._replace(in_sync_replicas=1)):
        assert run(cfg, [("send", 1)]).status == (PUT_OK,)


def test_an_empty_slave_starts_at_the_masters_last_file():
    cfg = SAFE._replace(file_size=2, message_sizes=(1,), max_messages=3)
    s = run(cfg, [("send", 1)] * 3 + [("connect", 1), ("read_report", 1), ("transfer", 1)])
    assert s.node(1).log.cells[:2] == (0, 0) and s.node(1).log.cells[2:] == s.master.log.cells[2:]


def test_the_slave_closes_when_the_offset_is_not_its_max():
    cfg = TAIL_LOSS
    s = run(cfg, [("send", 1), ("connect", 1), ("read_report", 1), ("transfer", 1), ("crash", 0), ("restart", 0)])
    assert not s.node(1).connected and len(s.node(1).log.cells) == 1 and s.master.log.cells == ()


def test_disabled_actions_raise():
    with pytest.raises(NotEnabled):
        step(initial_state(SAFE), ("read_report", 1), SAFE)
    with pytest.raises(NotEnabled):
        step(initial_state(SAFE), ("explode",), SAFE)


def test_validate_names_the_field():
    with pytest.raises(ValueError, match="role"):
        validate(SAFE._replace(role="MASTER"))
    with pytest.raises(ValueError, match="unknown classic toggle"):
        validate(SAFE._replace(bugs=frozenset({"nope"})))


@pytest.mark.heavy
def test_the_safe_configuration_holds_exhaustively_with_and_without_the_snapshot_defect():
    for bugs in (frozenset(), SNAPSHOT):
        r = Explorer(SAFE._replace(bugs=bugs)).run()
        assert r.exhaustive and r.hits == {} and r.states > 20_000


@pytest.mark.parametrize("toggle", ["ack_beyond_master_max", "ack_check_skips_first_report"])
def test_an_ack_beyond_the_master_max_is_caught_only_with_its_toggle(toggle):
    intended = Explorer(TAIL_LOSS, invariants=["C3"]).run()
    assert intended.exhaustive and "C3" not in intended.hits
    r = Explorer(TAIL_LOSS._replace(bugs=frozenset({toggle})), invariants=["C3"]).run()
    hit = r.hits["C3"]
    # the shortest: replicate m1, the master loses it, restarts, and the slave reconnects
    assert hit.actions[-2:] == (("connect", 1), ("read_report", 1)) and ("crash", 0) in hit.actions
    assert "ack 1 > master max offset 0" in hit.message


def test_in_sync_replicas_1_makes_sync_master_ack_alone():
    r = Explorer(SAFE._replace(in_sync_replicas=1), invariants=["C2"]).run()
    assert r.hits["C2"].actions == (("send", 1),)


def test_classic_ha_without_truncation_acks_over_a_divergent_tail():
    """Not a toggle: with ASYNC_FLUSH a slave that kept a tail the master lost, of the same
    length as what the master writes next, acks the new message (offsets agree, bytes do not)."""
    r = Explorer(TAIL_LOSS, invariants=["C1"]).run()
    acts = r.hits["C1"].actions
    s = run(TAIL_LOSS, acts)
    assert s.node(1).log.cells != s.master.log.cells and s.status[-1] == PUT_OK


@pytest.mark.heavy
def test_an_empty_slave_acks_puts_from_earlier_files_it_never_receives():
    """Not a toggle: the 'request 0 means the last file' rule under SYNC_FLUSH."""
    cfg = SAFE._replace(slaves=1, file_size=4, message_sizes=(1, 2), max_messages=3)
    r = Explorer(cfg, invariants=["C1"]).run()
    s = run(cfg, r.hits["C1"].actions)
    assert s.node(1).log.cells[0] == 0  # a hole where the acked message should be


@pytest.mark.heavy
def test_rmqcheck_explore_prints_classic_verdicts(capsys, tmp_path):
    from rmqcheck.cli import main

    assert main(["explore", "--config", "classic"]) == 0
    text = capsys.readouterr().out
    assert "22,666 distinct states" in text and "exhaustive" in text and "C3 ack_within_master_log" in text
    argv = ["explore", "--config", "classic-async-flush", "--bug", "ack_check_skips_first_report", "--out", str(tmp_path)]
    assert main(argv) == 1
    assert "slave 1 ack 1 > master max offset 0" in capsys.readouterr().out.replace("\n", " ")
    assert main(["replay", str(tmp_path / "explore-classic-async-flush-C3.scn")]) == 1
    assert main(["explore", "--config", "classic", "--bug", "nope"]) == 2
    assert "unknown classic toggle" in capsys.readouterr().err


def classic_machine(cfg: ClassicConfig, ids: frozenset[str]):
    """A Hypothesis stateful machine over the classic model: each step one enabled action."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

    from rmqcheck.checkers.search.modes import MODES

    check_state, check_transition = MODES["classic"].check_state, MODES["classic"].check_transition

    class Classic(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.s = initial_state(cfg)

        @precondition(lambda self: successors(self.s, cfg))
        @rule(data=st.data())
        def act(self, data):
            a, n = data.draw(st.sampled_from(successors(self.s, cfg)), label="action")
            bad = check_transition(self.s, a, n, cfg, ids) + check_state(n, cfg, ids)
            assert not bad, f"{a}: {bad}"
            self.s = n

    return Classic


def _run_machine(cfg, ids, examples):
    """Derandomized: Hypothesis draws from a fixed seed, so the outcome is the same every run.
    Generation only: what is checked is that a violation is found, not how far it shrinks (the
    shrinking took four fifths of the time)."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        classic_machine(cfg, ids),
        settings=settings(
            max_examples=examples,
            stateful_step_count=20,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.explicit, Phase.generate],
        ),
    )


@pytest.mark.heavy
def test_hypothesis_finds_the_inflated_ack_and_passes_without_it():
    _run_machine(SAFE, frozenset({"C1", "C2", "C3"}), 200)
    with pytest.raises(AssertionError, match="C3"):
        _run_machine(TAIL_LOSS._replace(max_messages=1, bugs=frozenset({"ack_beyond_master_max"})), frozenset({"C3"}), 2000)
