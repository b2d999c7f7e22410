"""The model explains a recorded run of RocketMQ's running code, step by step (traces/real_runs.py,
issue 45 section 2). The runs in tests/data/cluster-runs/durable3-seed-N were recorded by
`rmqcheck cluster --config durable3 --faults 4` on the snapshot tree (their run.json and
steps.jsonl: what could be seen from outside the code after each operation). No JVM runs here.

- seed 11: every step explained; the first only by the search, because the code's master
  proposed {1, 3} from its stale local set while {1, 2} was on its way (the broker's log:
  SyncStateSet [1] -> [1, 2] -> [1, 3] -> [1, 2, 3], controller epoch 4), which the fixed order
  does not take;
- seed 12: every step explained. At step 7 the master's HA links are cut and the code proposes
  each slave's removal twice (AutoSwitchHAConnection's read and write services both call
  removeConnection, AutoSwitchHAConnection.java:275 and :717), ending with SyncStateSet [1] at
  epoch 8. The model took one removal per connection and kept [1, 2] (a model gap, reported as
  the run's conformance violation) until it had the second as a step of its own
  (`ha_second_removal`).

default-seed-41 (`rmqcheck cluster --config default --faults 4`, ASYNC_FLUSH): the master's flush
service leaves m5-m7 unflushed (it waits for 4 dirty pages or 10 s), a power loss takes them, and
the restarted master holds m1-m4. The views say how far each broker flushed, so the model flushes
only where the code did.

isr2-seed-33 (`--config isr2 --faults 4`): the nemesis cuts master 1's controller path alone
(isolate_controller, step 6) while its HA link works, and its AlterSyncStateSet fails. The model
has that fault since it was asked to explain this run (`controller_cut`); at step 14 the nemesis
loses broker 2's answers instead of dropping its RPCs, which reopens its path alone
(`controller_reconnect`).

tests/data/long-runs/durable3-seed-300 (`--config durable3 --steps 300 --faults 30`, its first
177 steps): master 2 is killed and restarted at once, twice (steps 120-124 and 176-177). Each time the code's first
SyncStateSet check ran before its slaves reconnected ([1, 2, 3] -> [2]; the fixed order has it
so), and the second time both slaves' expansions were proposed from [2] before either came back
(broker 2's log: [2] -> [1, 2] -> [2, 3] -> [1, 2, 3]). The breadth-first search does not reach
that order within its bound; the second search, the fixed order with a step held back, does.

priority-last-seed-51 (`--config priority-last --faults 4`): a power loss of broker 1 at step 16
took its epoch files back to an older version (RocketMQ writes them without fsync; the harness's
file system keeps a version once it is a tick old). The model has that fault since it was asked
to explain this run (`revert_epoch_file`, to the version of its last `write_back_epoch_file`).

tests/data/long-runs/durable3-seed-500 (`--config durable3 --steps 300 --faults 30`, the whole
310 steps): master 2 is killed (step 110) right after a put moved its confirmOffset to 22, before
its checkpoint's next flush (once a second), and restarts (step 115) with the 21 the file held.
Recorded since the harness waits for every handshake in flight (step 77); the model drops what a
broker proposes before it runs (step 99, `rule_alter_sss`). From step 206 slave 1's handshake
truncation waits 90 s for a ReputMessageService that spins (apache/rocketmq#9811; its store.log),
so each put step until it catches up is explained by a search, which leaves the master's
dispatch and the put's completion undone: no view shows them. The code does them at once, and
the consumer's read of step 223 finds the message (`Gaps.prompt_rest`)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.cli import main
from rmqcheck.model.step import ACTIONS
from rmqcheck.model.step import step as take_action
from rmqcheck.traces import gaps, real_runs, run_records
from rmqcheck.traces.follower import Follower
from rmqcheck.traces.schema import TraceError
from rmqcheck.traces.validate import discover, validate_local

RUNS = Path(__file__).parent / "data" / "cluster-runs"
EXPLAINED, REMOVED_TWICE, ASYNC = RUNS / "durable3-seed-11", RUNS / "durable3-seed-12", RUNS / "default-seed-41"
CONTROLLER_CUT = RUNS / "isr2-seed-33"
REVERTED = RUNS / "priority-last-seed-51"
HELD_BACK = Path(__file__).parent / "data" / "long-runs" / "durable3-seed-300"  # not in RUNS: a long one
CHECKPOINT_LAG = Path(__file__).parent / "data" / "long-runs" / "durable3-seed-500"


def follow(folder: Path, changed: tuple[int, tuple[str, ...], object] | None = None):
    """The model's path of the recorded run, with one field of one step's record changed."""
    cfg, records = run_records.read_run(folder)
    if changed is not None:
        step, (*keys, last), value = changed
        record = records[step - 1]
        for k in keys:
            record = record[k]
        record[last] = value
    return real_runs.follow(cfg, records, views=True)


def test_every_step_of_a_recorded_run_is_explained_the_first_by_the_search():
    f = follow(EXPLAINED)
    assert f.stopped is None and f.explained == 40 and f.searched >= 1
    first = [a for at, a in zip(f.steps, f.actions) if at == 1]
    alters = [i for i, a in enumerate(first) if a[0] == "alter_sss"]
    assert len(alters) == 3 and first.index(("ha_read_ack", 3)) < alters[0]  # both expansions before either is sent


def test_a_recorded_run_s_fault_budgets_never_bind():
    """While a broker's answers are lost every RPC it sends loses one, many a step: a budget of
    one a step ran out in a long run (durable3 seed 500, step 77) and the model stopped there.
    A loop of the code (seed 12's handshake retrying at step 11, a second removal each turn)
    rests where it turns, not where a budget ends."""
    cfg, records = run_records.read_run(REMOVED_TWICE)
    room = real_runs.room_for(cfg, records)
    assert min(room.faults) == real_runs.UNBOUNDED > 1000 * len(records)
    f = real_runs.follow(cfg, records, views=True)
    assert f.stopped is None
    at_11 = [a for step, a in zip(f.steps, f.actions) if step == 11]
    assert 0 < at_11.count(("ha_second_removal", 1, 2)) <= 2


def test_without_alter_uses_epochs_at_send_the_start_of_the_run_is_not_explained(monkeypatch):
    """The race the search finds is that snapshot defect's (docs/findings/alter_uses_epochs_at_send.md):
    in its intended form the second expansion is fenced, and no order gives SyncStateSet epoch 4.
    Both searched as far (8,000 states; with the defect the order is found by 5,000)."""
    monkeypatch.setattr(gaps, "GAP_STATES", 8_000)
    cfg, records = run_records.read_run(EXPLAINED)
    assert real_runs.follow(cfg, records[:1], views=True).stopped is None
    stopped = real_runs.follow(cfg._replace(bugs=cfg.bugs - {"alter_uses_epochs_at_send"}), records, views=True).stopped
    assert stopped is not None and stopped.step == 1 and "controller syncStateSetEpoch: model 3, code 4" in stopped.why


def test_without_the_search_the_first_step_is_not_explained(monkeypatch):
    """The search is what explains the start: with none, the fixed order gives SyncStateSet epoch 3."""
    monkeypatch.setattr(gaps, "GAP_STATES", 1)
    stopped = follow(EXPLAINED).stopped
    assert stopped is not None and stopped.step == 1 and "controller syncStateSetEpoch: model 3, code 4" in stopped.why


@pytest.mark.heavy
def test_a_restarted_master_s_race_is_explained_by_holding_back_a_step_of_the_fixed_order(monkeypatch):
    f = follow(HELD_BACK)
    assert f.stopped is None and f.explained == 177
    for at, alters in ((124, 3), (177, 4)):
        taken = [a for step, a in zip(f.steps, f.actions) if step == at]
        assert taken.index(("check_sss", 2)) < taken.index(("ha_connect", 1))  # the first check before the reconnects
        assert taken.count(("alter_sss", 2, 0)) == alters
    second = [a for step, a in zip(f.steps, f.actions) if step == 177]
    expansions = [i for i, a in enumerate(second) if a == ("alter_sss", 2, 0)][1:]
    assert second.index(("ha_read_ack", 1)) < expansions[0] and second.index(("ha_read_ack", 3)) < expansions[0]
    monkeypatch.setattr(gaps, "HELD_AT_MOST", 0)  # the fixed order alone
    stopped = follow(HELD_BACK).stopped
    assert stopped is not None and stopped.step == 177
    assert "controller syncStateSetEpoch: model 21, code 22" in stopped.why and "the search stops there" in stopped.why


def follow_first(folder: Path, steps: int) -> real_runs.Followed:
    cfg, records = run_records.read_run(folder)
    return real_runs.follow(cfg, records[:steps], views=True)


@pytest.mark.heavy
def test_a_death_before_the_checkpoint_s_flush_is_followed_as_the_model_s_revert(monkeypatch):
    f = follow(CHECKPOINT_LAG)
    assert f.stopped is None and f.explained == 310
    assert [(step, a) for step, a in zip(f.steps, f.actions) if a[0] == "revert_checkpoint"] == [(115, ("revert_checkpoint", 2))]
    monkeypatch.setitem(ACTIONS, "revert_checkpoint", ACTIONS["revert_checkpoint"]._replace(rule=lambda s, cfg, b: None))
    stopped = follow_first(CHECKPOINT_LAG, 116).stopped
    assert stopped is not None and stopped.step == 115 and "broker 2 confirm: model 22, code 21" in stopped.why


@pytest.mark.heavy
def test_what_a_search_leaves_that_the_code_does_at_once_is_done_before_the_next_read(monkeypatch):
    """Without the prompt steps after a search, the put of step 222 is still pending at 223's read."""
    monkeypatch.setattr(gaps.Gaps, "prompt_rest", lambda self, s, checked, shows: ([], s))
    stopped = follow_first(CHECKPOINT_LAG, 223).stopped
    assert stopped is not None and stopped.step == 223
    assert "the consumer read 1 messages on the code, 0 in the model" in stopped.why


def test_the_prompt_steps_complete_a_put_and_dispatch_it_but_change_nothing_a_view_shows():
    """`Gaps.prompt_rest` from a state where a put's replicas have acked (durable3 seed 11's first
    put): the put completes and the slaves dispatch, since nothing a view shows changes; with a
    record that any change contradicts, it takes nothing."""
    cfg, records = run_records.read_run(EXPLAINED)
    f = real_runs.follow(cfg, records, views=True)
    done = f.actions.index(next(a for a in f.actions if a[0] == "put_complete"))
    follower = Follower(f.cfg, views=True, eager_flush=True)
    for a in f.actions[:done]:
        follower.s = take_action(follower.s, a, f.cfg)
    pending = follower.s
    path, rested = follower.prompt_rest(pending, {}, lambda s: True)
    assert f.actions[done] in path and ("dispatch", 3) in path  # a slave's dispatch of the message too
    assert {a[0] for a in path} <= set(gaps.PROMPT) and not rested.broker(f.actions[done][1]).puts
    assert follower.prompt_rest(rested, {}, lambda s: True) == ([], rested)
    assert follower.prompt_rest(pending, {}, lambda s: s == pending) == ([], pending)


def test_a_view_the_model_cannot_reach_stops_the_run_there_naming_the_field():
    """A broker's recorded view changed (a slave that never got the message): no order of the
    code's own steps shows it, since the master's confirmOffset needs that slave's ack."""
    f = follow(EXPLAINED, (4, ("view", "brokers", "2", "messages"), []))
    assert f.stopped is not None and f.stopped.step == 4 and f.explained == 3
    assert "broker 2 messages: model ['m1'], code []" in f.stopped.why and "states, all of them)" in f.stopped.why


def test_a_power_loss_under_async_flush_is_explained_by_the_recorded_flushes():
    f = follow(ASYNC)
    assert f.stopped is None and f.explained == 39
    assert not any(a[0] == "flush" for at, a in zip(f.steps, f.actions) if 22 <= at <= 25)  # m5-m7 stay unflushed


def test_without_the_flushed_positions_the_async_power_loss_is_not_explained():
    """A record without them (as recorded before) leaves the fixed order flushing at once: the
    model then keeps m5-m7 across the power loss and the restarted master's view differs."""
    cfg, records = run_records.read_run(ASYNC)
    for record in records:
        for broker in record["view"]["brokers"].values():
            if isinstance(broker, dict):
                del broker["flushed"]
    stopped = real_runs.follow(cfg, records, views=True).stopped
    assert stopped is not None and stopped.step == 28 and "broker 1 messages: model ['m1', 'm2', 'm3', 'm4', 'm5'" in stopped.why


def test_a_controller_path_cut_alone_is_followed_as_the_model_s_controller_cut(monkeypatch):
    """Pinned with scenarios/quirks/controller-path-cut-alone.scn. Before the model had the fault,
    the run stopped at step 8: only a partition let an AlterSyncStateSet fail, and it cuts HA
    links too."""
    f = follow(CONTROLLER_CUT)
    assert f.stopped is None and f.explained == 39
    # the AlterSyncStateSet fails twice: each removeConnection of the closed connection proposes it
    assert [a for a in f.actions if a[0] in ("controller_cut", "alter_sss_fail", "controller_reconnect")] == \
        [("controller_cut", 1), ("alter_sss_fail", 1), ("alter_sss_fail", 1), ("controller_cut", 2),
         ("controller_reconnect", 2)]
    monkeypatch.setitem(ACTIONS, "controller_cut", ACTIONS["controller_cut"]._replace(rule=lambda s, cfg, b: None))
    stopped = follow(CONTROLLER_CUT).stopped
    assert stopped.step == 8 and "AlterSyncStateSet was dropped on its way" in stopped.why


def test_a_power_loss_that_reverted_the_epoch_files_is_followed_as_the_model_s_revert():
    """Before the model had the fault, the run stopped at step 16. The file goes back to what it
    was before the last round (step 11): broker 1's epoch 1 from its start. The steps after it
    are explained without the revert too: the restarted broker's changeToMaster rewrites its
    file before any view could tell the versions apart."""
    cfg, records = run_records.read_run(REVERTED)
    f = real_runs.follow(cfg, records, views=True)
    assert f.stopped is None and f.explained == 40
    at = f.actions.index(("revert_epoch_file", 1))
    assert f.steps[at] == 16 and [a for a in f.actions if a[0] == "revert_epoch_file"] == [f.actions[at]]
    s = replay(f.cfg, f.actions[:at + 1], frozenset()).states[-1]
    assert s.broker(1).epochs.disk == ((1, 0),) != replay(f.cfg, f.actions[:at], frozenset()).states[-1].broker(1).epochs.disk
    last_round = max(r["step"] for r in records if r["op"] == "round" and r["step"] < 16)
    before_it = sum(1 for step in f.steps if step < last_round)  # the actions up to the end of step 10
    assert last_round == 11 and replay(f.cfg, f.actions[:before_it], frozenset()).states[-1].broker(1).epochs.disk \
        == s.broker(1).epochs.disk


def test_what_an_operation_would_leave_is_what_following_it_leaves_where_the_fixed_order_explains_it():
    """Following.after (bench/schedule_reach.py plays schedules on the model with it) leaves the
    run it is asked on as it was."""
    cfg, records = run_records.read_run(CONTROLLER_CUT)
    run = real_runs.Following(real_runs.room_for(cfg, records))
    compared = 0
    for record in records:
        searched, state = run.searched, run.state
        would = run.after(record)
        assert run.state is state
        assert run.take(record)
        if run.searched == searched:  # the fixed order explained it
            assert would is not None and would.state == run.state and would.followed().actions == run.followed().actions
            compared += 1
    assert compared >= 30


def test_a_closed_connection_removed_twice_explains_the_master_whose_links_were_cut():
    """Seed 12, step 7: the code proposes [1, 3], [1, 2], [1, 3], [1] and ends at [1], epoch 8.
    With one removal per connection (no `second_removals` budget) the model ends at [1, 2]."""
    f = follow(REMOVED_TWICE)
    assert f.stopped is None and f.explained == 40
    assert any(a[0] == "ha_second_removal" for at, a in zip(f.steps, f.actions) if at == 7)
    cfg, records = run_records.read_run(REMOVED_TWICE)
    room = real_runs.room_for(cfg, records)
    once = real_runs.Following(room._replace(faults=room.faults._replace(second_removals=0)))
    assert all(once.take(record) for record in records[:6]) and not once.take(records[6])
    stopped = once.followed().stopped
    assert stopped.step == 7 and "controller syncStateSet: model [1, 2], code [1]" in stopped.why


def _unreachable_view(tmp_path: Path) -> Path:
    """durable3-seed-11 with a slave's view at step 4 that no order of the code's steps shows
    (as in the test above of a view the model cannot reach)."""
    run = shutil.copytree(EXPLAINED, tmp_path / "runs" / "durable3-seed-11-changed")
    (run / "steps.jsonl").write_text(_damaged(lambda r: r["view"]["brokers"]["2"].update(messages=[])))
    return run


def test_a_step_the_model_cannot_explain_is_the_runs_conformance_violation(tmp_path):
    violations, steps, explained = run_records.judge_run(str(_unreachable_view(tmp_path)))
    assert (steps, explained) == (40, 3)
    (v,) = violations
    assert v.check == "real_run_conformance" and v.run == "durable3-seed-11-changed" and v.subject == "step 4 (put)"
    assert "broker 2 messages: model ['m1'], code []" in v.detail and "explains 3 of 40" in v.detail


def test_validate_counts_the_steps_explained_and_fails_on_the_one_that_is_not(tmp_path, capsys):
    shutil.copytree(REMOVED_TWICE, tmp_path / "runs" / REMOVED_TWICE.name)
    _unreachable_view(tmp_path)
    report = validate_local(discover([str(tmp_path / "runs")]))
    assert (report.units["real_runs"], report.units["real_run_steps"], report.units["real_run_steps_explained"]) == \
        (2, 80, 43)
    assert [v.run for v in report.violations] == ["durable3-seed-11-changed"]
    code = main(["validate", str(tmp_path / "runs"), "--violations", str(tmp_path / "v.ndjson")])
    text = capsys.readouterr().out
    assert code == 1 and "2 recorded cluster runs (43 of 80 steps explained by the model)" in text, text


def _damaged(change) -> str:
    """durable3-seed-11's steps.jsonl with its fourth record changed by `change` (a put)."""
    records = [json.loads(line) for line in (EXPLAINED / "steps.jsonl").read_text().splitlines()]
    change(records[3])
    return "".join(json.dumps(r) + "\n" for r in records)


@pytest.mark.parametrize("change,where", [
    (lambda r: r["view"]["brokers"]["1"].pop("epochs"), "line 4: view of broker 1 must be"),
    (lambda r: r["view"]["controller"].pop("syncStateSetEpoch"), "line 4: view's controller must hold"),
    (lambda r: r["view"]["brokers"].pop("3"), "line 4: view must show brokers 1 to 3"),
    (lambda r: r.update(view=[]), "line 4: view must be an object"),
    (lambda r: r.update(result="to broker x"), "line 4: result 'to broker x' does not name a broker"),
    (lambda r: r.pop("arg"), "line 4: a put needs its queue"),
    (lambda r: r.update(arg="0"), "line 4: arg must be an integer or null"),
    (lambda r: r.update(epoch_files="gone"), "line 4: epoch_files must be kept, reverted or lost, got 'gone'"),
])
def test_a_record_of_the_wrong_shape_is_bad_input_before_the_model_follows_it(tmp_path, change, where):
    run = shutil.copytree(EXPLAINED, tmp_path / "run")
    (run / "steps.jsonl").write_text(_damaged(change))
    with pytest.raises(TraceError) as error:
        run_records.judge_run(str(run))
    assert str(error.value).startswith(str(run / "steps.jsonl")) and where in str(error.value), error.value


def test_a_run_record_written_is_read_back_and_a_trace_error_pickles_whole(tmp_path):
    from rmqcheck.model import configs

    cfg = configs.load("durable3")
    run_records.write_run(tmp_path, cfg, 7, 30, 4)
    (tmp_path / "steps.jsonl").write_text('{"step": 1, "op": "round", "result": "master 1"}\n')
    assert run_records.read_run(tmp_path) == (cfg, [{"step": 1, "op": "round", "result": "master 1", "line": 1}])
    error = pickle.loads(pickle.dumps(TraceError("a/steps.jsonl", "line 3", "bad")))  # a Spark task returns it
    assert (error.path, error.where, error.what) == ("a/steps.jsonl", "line 3", "bad")


@pytest.mark.parametrize("file,text,where", [
    ("run.json", "{not json", "run.json: file: not a run record"),
    ("run.json", json.dumps({"kind": "something else"}), 'its "kind" must be'),
    ("run.json", json.dumps({"kind": run_records.RUN_KIND, "config": {"brokers": "three"}}), "run.json: config: config"),
    ("steps.jsonl", '{"step": 1, "op": "round"}\n{"step": 2, "op"\n', "steps.jsonl: line 2: not JSON"),
    ("steps.jsonl", '{"step": 1, "op": "round"}\n{"op": "put"}\n', "steps.jsonl: line 2: a record needs"),
    ("steps.jsonl", "\n", "steps.jsonl: file: no recorded step"),
])
def test_a_damaged_run_record_is_bad_input_naming_the_file_and_line(tmp_path, capsys, file, text, where):
    run = shutil.copytree(EXPLAINED, tmp_path / "run")
    (run / file).write_text(text)
    code = main(["validate", str(run), "--violations", str(tmp_path / "v.ndjson")])
    err = capsys.readouterr().err
    assert code == 2 and where in err and str(run / file) in err, err
