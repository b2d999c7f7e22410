"""The guarantee matrix (checkers/tables/matrix.py, `rmqcheck matrix`): the documented space, verdicts
that agree with reference/known-bugs.md, a toggle it catches, and the docs/matrix.md block it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqcheck.checkers.tables import matrix
from rmqcheck.checkers.search.explore import Bounds
from rmqcheck.checkers.search.hunting import BUG_TOGGLE, EXPECTED
from ci_results import junit_cases
from rmqcheck.cli import main
from rmqcheck.model.classic import SYNC_MASTER
from rmqcheck.model.config import ASYNC_FLUSH, SYNC_FLUSH, Config
from rmqcheck.report.tables import MATRIX_LEGEND, matrix_markdown

README = Path(__file__).resolve().parents[1] / "docs" / "matrix.md"  # where `make matrix` writes
# A row's work, cut down from the matrix's (matrix.Work()) for the suite: no stateful batch (16 s
# on a durable row here); the racing-clock test below runs one.
SMALL = matrix.Work(states=3_000, batches=0, walk_steps=2_000)


def cells(row: matrix.Row) -> dict[str, matrix.Cell]:
    return {c.invariant: c for c in row.cells}


def test_the_space_is_the_documented_product():
    space = matrix.controller_space()
    labels = {matrix.label(matrix.controller_settings(c)) for c in space}
    # scale x 2/3 brokers x (allAck | inSyncReplicas 1 | 2) x minInSyncReplicas 1/2 x flush x unclean x learner
    assert len(space) == len(labels) == 2 * 2 * 3 * 2 * 2 * 2 * 2
    assert all(c.bugs == frozenset() for c in space)
    assert all(c.bugs for c in matrix.controller_space(snapshot=True))
    learners = [c for c in space if c.async_learners]
    assert len(learners) == 96 and all(c.async_learners == {c.brokers} for c in learners)
    assert {c.scale for c in space} == {"small", "large"} and len(matrix.controller_space(scales=("small",))) == 96


@pytest.mark.heavy
def test_the_defaults_lose_acked_messages_and_the_durable_settings_do_not(tmp_path):
    """known-bugs C4: the defaults allow loss of acked messages after a master crash;
    allAckInSyncStateSet with SYNC_FLUSH and no unclean election does not."""
    defaults = matrix.check_controller(Config(bugs=frozenset()), SMALL, tmp_path)
    i1 = cells(defaults)["I1"]
    assert i1.kind == EXPECTED and not i1.promised and i1.method == "explore" and i1.steps <= 6
    assert main(["replay", i1.path]) == 1
    durable = matrix.check_controller(Config(all_ack=True, flush=SYNC_FLUSH, bugs=frozenset()), SMALL, tmp_path)
    assert all(c.kind is None for c in durable.cells) and durable.states > 1000 and durable.hunt_steps > 0
    assert all(c.promised for c in durable.cells)


class _RacingClock:
    """`time` as a search module reads it, 1,000 s later at every reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1000.0
        return self.now


@pytest.mark.heavy
def test_a_row_is_counted_in_work_so_a_racing_clock_changes_no_cell(tmp_path, monkeypatch, tenth_size_batches):
    """Issue 43: a row's cells depend on its work, not on how fast the machine is. With seconds as
    the budget this run would stop at its first state."""
    from rmqcheck.checkers.search import explore, stateful, walk

    cfg = Config(bugs=frozenset())
    work = matrix.Work(states=3_000, batches=1, walk_steps=2_000)
    plain = matrix.check_controller(cfg, work, tmp_path / "plain")
    for module in (explore, stateful, walk, matrix):
        monkeypatch.setattr(module, "time", _RacingClock())
    raced = matrix.check_controller(cfg, work, tmp_path / "raced")
    assert [(c.invariant, c.kind, c.steps) for c in raced.cells] == [(c.invariant, c.kind, c.steps) for c in plain.cells]
    assert (raced.states, raced.depth, raced.hunt_steps) == (plain.states, plain.depth, plain.hunt_steps)
    assert plain.states >= 3_000 and plain.hunt_steps >= 2_000 and any(c.kind for c in plain.cells)


@pytest.mark.heavy
def test_a_toggle_breaks_a_promised_cell(tmp_path):
    cfg = Config(all_ack=True, flush=SYNC_FLUSH, bugs=frozenset({"ack_uses_local_sss_only"}))
    row = matrix.check_controller(cfg, SMALL, tmp_path)
    broken = [c for c in row.cells if c.kind is not None]
    assert broken and all(c.promised and c.kind == BUG_TOGGLE for c in broken)
    assert "toggle" in matrix_markdown([row])


@pytest.mark.heavy
def test_other_modes_rows_are_explored_exhaustively(tmp_path):
    rows = matrix.mode_space()
    assert {matrix.modes.mode_for(r).name for r in rows} == {"classic", "dledger", "recovery"}
    classic = [r for r in rows if matrix.modes.mode_for(r).name == "classic" and r.role == SYNC_MASTER
               and r.in_sync_replicas == 2]
    held, = (r for r in classic if r.sync_flush)
    row = matrix.check_mode(held, None, tmp_path)  # no time limit: the whole space
    assert row.exhaustive and all(c.kind is None for c in row.cells)
    # Async flush loses C1 at depth 10 (breadth first: its shortest). Its whole space is 56 s of
    # exploration that `rmqcheck matrix` runs; here the depth that shows the loss is enough.
    lossy, = (r for r in classic if not r.sync_flush)
    lost = cells(matrix.check_mode(lossy, None, tmp_path, bounds=Bounds(symmetry=True, max_depth=10)))["C1"]
    assert lost.kind == EXPECTED and lost.steps == 10 and Path(lost.path).exists()


def test_work_scales_and_a_bad_factor_is_one_line_and_exit_2(capsys):
    assert matrix.Work().times(2.5) == matrix.Work(25_000, 3, 25_000)
    assert matrix.Work().times(0.01) == matrix.Work(100, 1, 100)  # at least one batch
    for bad in ("0", "-1", "nan", "inf", "many"):
        with pytest.raises(SystemExit) as exc:
            main(["matrix", "--work", bad])
        assert exc.value.code == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith("rmqcheck matrix: error: argument --work")


def test_where_selects_rows_by_their_shown_settings():
    space = matrix.controller_space()
    rows = matrix.select(space, matrix.controller_settings, {"brokers": "2", "allAck": "yes", "flush": "SYNC",
                                                               "scale": "large"})
    assert len(rows) == 8 and all(c.all_ack and c.flush == SYNC_FLUSH and c.brokers == 2 for c in rows)
    assert matrix.select(space, matrix.controller_settings, {"flush": ASYNC_FLUSH, "nosuch": "1"}) == []


@pytest.mark.heavy
def test_the_command_writes_markdown_json_and_the_readme_block(tmp_path, capsys):
    readme = tmp_path / "matrix.md"
    readme.write_text("before\n<!-- matrix:start -->\nold\n<!-- matrix:end -->\nafter\n")
    args = ["matrix", "--modes", "classic", "--where", "flush=SYNC", "--where", "brokerRole=SYNC_MASTER",
            "--out", str(tmp_path / "cx"), "--json", str(tmp_path / "m.json"), "--markdown", str(tmp_path / "m.md"),
            "--readme", str(readme), "--jobs", "1", "--junit", str(tmp_path / "j.xml")]
    assert main(args) == 0
    assert [o for o, _, _ in junit_cases(tmp_path / "j.xml").values()] == ["passed", "passed"]  # a case a row
    text = readme.read_text()
    assert text.startswith("before\n<!-- matrix:start -->\n**classic**") and text.endswith("<!-- matrix:end -->\nafter\n")
    assert "old" not in text and MATRIX_LEGEND in text
    rows = json.loads((tmp_path / "m.json").read_text())
    assert len(rows) == 2 and all(r["exhaustive"] for r in rows)


def test_bad_matrix_arguments_exit_2_with_a_clear_error(tmp_path, capsys):
    assert main(["matrix", "--where", "brokers"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["matrix", "--where", "brokers=7"]) == 2
    assert "no configuration matches" in capsys.readouterr().err
    no_block = tmp_path / "matrix.md"
    no_block.write_text("nothing to replace\n")
    assert main(["matrix", "--modes", "dledger", "--out", str(tmp_path), "--readme", str(no_block), "--jobs", "1"]) == 2
    assert "no block" in capsys.readouterr().err and no_block.read_text() == "nothing to replace\n"


def test_docs_matrix_carries_the_generated_matrix():
    text = README.read_text()
    block = text.split("<!-- matrix:start -->")[1].split("<!-- matrix:end -->")[0]
    assert MATRIX_LEGEND in block and "Generated by `rmqcheck matrix" in block
    controller = block.split("**controller**")[1].split("\n**")[0]
    assert controller.count("\n| 2 |") == 96 and controller.count("\n| 3 |") == 96
    assert controller.count("| small |") == 96 == controller.count("| large |")
