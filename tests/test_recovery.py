"""Store crash recovery (model/recovery.py, invariants/recovery.py): the rules, the scenarios of
every toggle, and exhaustive exploration of small configurations."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqcheck.checkers.search import modes
from rmqcheck.checkers.counterexamples.files import CounterexampleError
from rmqcheck.checkers.search.explore import Bounds, Explorer
from rmqcheck.checkers.search.named import RECOVERY
from rmqcheck.model import recovery as rc
from rmqcheck.model.recovery import BLANK, RecoveryConfig

SCENARIOS = Path(__file__).parent.parent / "scenarios" / "recovery"
INTENDED = RecoveryConfig(bugs=frozenset())
MODE = modes.MODES["recovery"]


def run(cfg: RecoveryConfig, *actions: tuple) -> rc.RState:
    s = rc.initial_state(cfg)
    for a in actions:
        s = rc.step(s, a, cfg)
    return s


# --- rules ---------------------------------------------------------------------------------


def test_a_message_that_does_not_fit_pads_the_file_with_a_blank():
    cfg = INTENDED._replace(message_sizes=(1, 2))
    s = run(cfg, ("put", 0, 1), ("put", 0, 2))
    assert s.cells[1] == BLANK and s.msgs[1].offset == 2
    assert rc.scan(s, 0, cfg).messages == s.msgs


def test_a_torn_tail_is_cut_and_the_consume_queue_follows():
    cfg = INTENDED._replace(message_sizes=(1, 2))
    # m1 and m2 dispatched (kept with meta=1), only the first byte of m2 survives the power loss
    s = run(cfg, ("put", 0, 1), ("put", 0, 2), ("dispatch",), ("dispatch",), ("dispatch",), ("crash", 3, 1), ("restart",))
    assert s.cells == (s.cells[0], BLANK) and s.queues[0].ids == (1,)
    assert MODE.check_state(s, cfg) == []


def test_abnormal_recovery_starts_three_seconds_before_the_checkpoint():
    """m1, m2 at t=1 (file 0), m3 at t=4 (file 1). With the checkpoint at t=4, the margin makes
    recovery start at file 0 (1 <= 4 - 3); without it, at file 1."""
    acts = [("put", 0, 1), ("put", 0, 1), ("tick",), ("tick",), ("tick",), ("put", 0, 1), ("flush_log",),
            ("dispatch",), ("dispatch",), ("dispatch",), ("crash", 0, 0), ("restart",)]  # the index roll flushed the checkpoint
    cfg = INTENDED._replace(max_time=3, bugs=frozenset({"checkpoint_logics_at_dispatch"}))
    assert run(cfg, *acts[:-1]).disk.logics == 4
    assert run(cfg, *acts).queues[0].ids == (1, 2, 3)
    s = run(cfg._replace(margin=4), *acts)
    assert s.queues[0].ids == (1, 2, 3)
    late = run(cfg._replace(margin=0), *acts)
    assert late.queues[0].ids == (3,) and late.queues[0].min == 2  # fillPreBlank: m1, m2 unreachable
    assert {v.invariant for v in MODE.check_state(late, cfg)} == {"R4"}


def test_the_intended_logics_timestamp_covers_only_flushed_entries():
    s = run(INTENDED, ("put", 0, 1), ("dispatch",))
    assert s.ckpt.logics == 0 and s.cq_latest == 1  # the one-second flush would write 0
    s = rc.step(s, ("flush_cq",), INTENDED)
    assert s.disk.logics == 1


def test_index_files_newer_than_the_checkpoint_are_destroyed_after_a_crash():
    cfg = INTENDED._replace(max_time=1)
    s = run(cfg, ("put", 0, 1), ("put", 0, 1), ("tick",), ("put", 0, 1), ("dispatch",), ("dispatch",), ("dispatch",))
    assert s.index == (1, 2, 3) and s.disk.index == 1  # the full file [1, 2] was flushed at the roll
    down = rc.step(s, ("crash", 0, 1), cfg)
    assert rc.load_index(down, False, cfg).index == (1, 2)  # [3] ends at t=2, after indexMsgTimestamp
    assert rc.load_index(down, True, cfg).index == (1, 2, 3)  # a clean exit keeps every file


def test_controller_mode_dispatches_only_confirmed_messages_and_clamps_confirm():
    cfg = INTENDED._replace(controller_mode=True)
    s = run(cfg, ("put", 0, 1), ("put", 0, 1))
    with pytest.raises(rc.NotEnabled):
        rc.step(s, ("dispatch",), cfg)
    s = run(cfg, ("put", 0, 1), ("ack",), ("flush_checkpoint",), ("crash", 0, 0), ("restart",))
    assert s.cells == () and s.confirm == 0  # the checkpoint's 1 is above the recovered end


def test_a_clean_shutdown_with_dispatch_behind_keeps_the_abort_file():
    s = run(INTENDED, ("put", 0, 1), ("shutdown",))
    assert s.abort and not s.up
    s = run(INTENDED, ("put", 0, 1), ("dispatch",), ("shutdown",))
    assert not s.abort


# --- scenarios -----------------------------------------------------------------------------


def test_a_bad_recovery_scenario_names_the_file_and_line(tmp_path):
    p = tmp_path / "bad.scn"
    p.write_text("mode recovery\nexpect R4\ncrash keep=1\n")
    with pytest.raises(CounterexampleError, match=r"bad.scn:3: crash takes keep=<int> meta=<int>"):
        modes.read(p)


# --- exhaustive exploration ----------------------------------------------------------------


@pytest.mark.heavy
@pytest.mark.parametrize(
    "cfg",
    [
        INTENDED._replace(message_sizes=(1, 2), max_time=0, index_safe=True),
        INTENDED._replace(max_time=3),
        RECOVERY["recovery-controller"][0]._replace(bugs=frozenset()),
    ],
    ids=["async-blank-index-safe", "async-3-ticks", "controller"],
)
def test_the_intended_model_holds_every_invariant_exhaustively(cfg):
    r = Explorer(cfg).run(300)
    assert r.exhaustive and r.states > 10_000
    assert not r.hits


def test_the_explorer_finds_the_snapshot_controller_mode_finding():
    cfg = RECOVERY["recovery-controller"][0]
    r = Explorer(cfg, Bounds(), ["R4", "R5"]).run(300)
    assert r.exhaustive and {"R4", "R5"} <= set(r.hits)
    assert len(r.hits["R5"].actions) == 3  # put, clean shutdown, restart


@pytest.mark.heavy
def test_explore_cli_writes_replayable_scenarios(tmp_path, capsys):
    from rmqcheck.cli import main

    assert main(["explore", "--config", "recovery-controller", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "R5 nothing_visible_unconfirmed" in out and "VIOLATED" in out
    for inv in ("R1", "R4", "R5"):
        assert main(["replay", str(tmp_path / f"explore-recovery-controller-{inv}.scn")]) == 1
    assert main(["replay", str(SCENARIOS / "recovery_keeps_dirty_cq.scn")]) == 1
    assert "reproduced: R1 violated at step 4" in capsys.readouterr().out
