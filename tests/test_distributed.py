"""Exploration and the long jobs on Spark (issue 28): the same answers as the local engine, on
embedded Spark (local[2]) and on a real multi-process cluster (local-cluster[2,1,1024]: a driver
and two executor JVMs with their own Python workers, talking over loopback, as on a real
cluster); resumable; refusing a resume with other options; unchanged by a task that fails once.
Validation's Spark engine on that cluster too (it shares the session)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import pytest

from rmqcheck.checkers.counterexamples.replay import reproduces
from rmqcheck.checkers.search import distributed, explore, level_tasks, named, scoped
from rmqcheck.checkers.search.distributed import ExploreError, SparkExplorer
from rmqcheck.cli import main
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model import configs
from rmqcheck.traces import files
from rmqcheck.traces.recorder import Corpus, simulate
from rmqcheck.traces.spark import session, validate_spark
from rmqcheck.traces.validate import discover, validate_local

CLUSTER = "local-cluster[2,1,1024]"


@pytest.fixture(scope="module")
def python(spark_python) -> str:
    return spark_python


def spark_on(master: str, python: str):
    return session(master, python, "rmqcheck tests")


def same(local: explore.Result, remote: explore.Result) -> None:
    assert remote.levels == local.levels
    assert (remote.states, remote.transitions, remote.pruned, remote.exhaustive) == \
        (local.states, local.transitions, local.pruned, local.exhaustive)
    assert remote.hits == local.hits  # the same counterexamples: both take each level in its canonical order
    assert remote.coverage.actions == local.coverage.actions
    assert remote.coverage.unreached() == local.coverage.unreached()


def explored(name: str, depth: int, symmetry: bool, master: str, python: str, work: Path):
    std = named.STANDARD[name]
    bounds = std.bounds._replace(max_depth=depth, symmetry=symmetry)
    local = explore.Explorer(std.cfg, bounds).run()
    remote = SparkExplorer(spark_on(master, python), std.cfg, bounds, work).run()
    return local, remote


def test_std2_levels_are_the_local_explorers_on_local_spark(python, tmp_path):
    local, remote = explored("std2", 5, False, "local[2]", python, tmp_path)  # depth 10: -m slow
    same(local, remote)
    assert local.levels[:4] == (1, 5, 16, 43)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["std2", "std3"])
@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize("master", ["local[2]", CLUSTER])
def test_every_standard_configuration_to_depth_10(name, symmetry, master, python, tmp_path):
    same(*explored(name, 10, symmetry, master, python, tmp_path))


# Toggles whose breadth-first hunt finds a counterexample in a small scope (the bug table's
# explore column); the Spark hunt must give the same verdict and the same length.
TOGGLES = ("ack_uses_local_sss_only", "on_become_master_sss_self_only", "confirm_min_over_connected_only",
           "no_confirm_clamp_on_truncate", "restart_accepts_writes_before_role_confirmed",
           "alter_uses_epochs_at_send", "proposal_overwrites_pending_sss", "confirm_skips_unacked_members")


def _first_finding_scope(toggle: str):
    """The toggle's exposing configuration's first scope (scoped.scopes) whose exhaustive
    breadth-first search finds a counterexample, and what the local explorer found there."""
    cfg = configs.exposing(frozenset({toggle}))
    targets = expected_ids(cfg)
    for scope, bounds in scoped.scopes(cfg):
        r = explore.Explorer(scope, bounds, targets).run(120, stop_on=targets)
        if r.hits:
            return scope, bounds, targets, r
    raise AssertionError(f"{toggle}: no scope finds it")


@pytest.mark.slow
@pytest.mark.parametrize("toggle", TOGGLES)
@pytest.mark.parametrize("master", ["local[2]", CLUSTER])
def test_every_toggle_is_found_as_by_the_local_hunt(toggle, master, python, tmp_path):
    check_toggle(toggle, master, python, tmp_path)


def check_toggle(toggle: str, master: str, python: str, work: Path) -> None:
    """The same verdict in the same scope: the same counterexample of every invariant violated
    at the shortest length (the Spark run goes a level further, for the states' invariants)."""
    scope, bounds, targets, local = _first_finding_scope(toggle)
    remote = SparkExplorer(spark_on(master, python), scope, bounds, work, targets).run(stop_on=targets)
    shortest = min(len(h.actions) for h in local.hits.values())
    assert min(len(h.actions) for h in remote.hits.values()) == shortest
    assert {i: h for i, h in remote.hits.items() if len(h.actions) == shortest} == local.hits
    for inv, hit in remote.hits.items():
        assert reproduces(scope, list(hit.actions), inv) is not None


def test_the_spark_hunt_gives_the_local_hunts_answer(python, tmp_path):
    """Issue 43: `hunt --method explore` gave I2 in 4 steps locally and I4 in 5 on Spark (the
    first scope to find won). Both now settle every scope and answer the same counterexample."""
    exposing = configs.exposing(frozenset({"ack_uses_local_sss_only"}))
    cfg = exposing._replace(faults=exposing.faults._replace(crashes=0, consumer_restarts=0), max_messages=1,
                            message_sizes=(1,))  # 3 scopes, not 12
    targets = expected_ids(cfg)
    local, tried = scoped.hunt(cfg, targets, math.inf, states=200_000)
    assert tried[0][2].stopped == "violation"  # locally the first scope finds its own, longer, first
    remote, _ = distributed.hunt(spark_on("local[2]", python), cfg, targets, 600, tmp_path)
    assert remote is not None and remote.shortest
    assert (remote.cfg, remote.bounds, remote.hit) == (local.cfg, local.bounds, local.hit)
    assert (remote.hit.invariant, len(remote.hit.actions)) == ("I2", 4)


# --- resuming, refusing, failing -------------------------------------------------------------------


def test_an_interrupted_run_resumes_to_the_same_answer_and_other_options_are_refused(python, tmp_path):
    std = named.STANDARD["std2"]
    bounds = std.bounds._replace(max_depth=6)
    spark = spark_on("local[2]", python)
    whole = explore.Explorer(std.cfg, bounds).run()  # what an uncut Spark run gives (the std2 test)
    part = SparkExplorer(spark, std.cfg, bounds, tmp_path / "part").run(budget=0)  # one level, then stop
    assert part.stopped == "budget" and not part.exhaustive and len(part.levels) == 2
    assert (tmp_path / "part" / "level-0001" / "DONE").exists()
    resumed = SparkExplorer(spark, std.cfg, bounds, tmp_path / "part").run()
    assert (resumed.levels, resumed.states, resumed.transitions) == (whole.levels, whole.states, whole.transitions)
    with pytest.raises(ExploreError, match="other bounds"):
        SparkExplorer(spark, std.cfg, bounds._replace(max_depth=7), tmp_path / "part").run()
    with pytest.raises(ExploreError, match="other config"):
        SparkExplorer(spark, std.cfg._replace(max_messages=2), bounds, tmp_path / "part").run()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    with pytest.raises(ExploreError, match="not empty"):
        SparkExplorer(spark, std.cfg, bounds, tmp_path / "other").run()


def test_the_level_running_when_the_budget_ends_is_cancelled_and_resumed_whole(python, tmp_path):
    """A level whose budget ends is cancelled: nothing of it is kept, and the next call expands
    it again from its frontier, to the uncut run's answer."""
    std = named.STANDARD["std2"]
    bounds = std.bounds._replace(max_depth=4)
    spark = spark_on("local[2]", python)
    whole = explore.Explorer(std.cfg, bounds).run()  # what an uncut Spark run gives (the std2 test)
    ex = SparkExplorer(spark, std.cfg, bounds, tmp_path / "cut")
    ex.run(budget=0)  # the first level of a call is always completed
    done = ex._done()
    assert [d["depth"] for d in done] == [0, 1]
    with pytest.raises(distributed._BudgetEnded):
        ex._expand_cut_at(done[-1], ex.targets, deadline=0.0)  # the budget ended before it began
    assert [d["depth"] for d in ex._done()] == [0, 1]
    resumed = SparkExplorer(spark, std.cfg, bounds, tmp_path / "cut").run()
    assert (resumed.levels, resumed.states, resumed.transitions) == (whole.levels, whole.states, whole.transitions)


def test_a_worker_that_cannot_write_the_work_directory_is_a_clear_error(python, tmp_path):
    """A worker's failed write (a full disk, a path that is not a folder) reaches the user as
    the file it could not write and why, not as a Java stack trace."""
    spark = spark_on("local[2]", python)
    ex = SparkExplorer(spark, named.STANDARD["std2"].cfg, named.STANDARD["std2"].bounds, tmp_path / "w")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    target = blocked / "00000.pkl"

    def write(batches):
        for _ in batches:
            level_tasks.save_states(target, [])
            yield pa.RecordBatch.from_pylist([{"x": 1}])

    with pytest.raises(ExploreError, match=f"^writing level 3: cannot write {re.escape(str(target))}: "):
        ex._spark("writing level 3", lambda: spark.range(1).mapInArrow(write, "x long").collect())


def test_a_damaged_frontier_file_is_a_clear_error_on_resume(python, tmp_path):
    """A frontier file cut short (a disk that filled outside rmqcheck's writes) stops the resumed
    run naming the file, rather than exploring a partial level."""
    std = named.STANDARD["std2"]
    bounds = std.bounds._replace(max_depth=4)
    spark = spark_on("local[2]", python)
    SparkExplorer(spark, std.cfg, bounds, tmp_path).run(budget=0)  # one level
    (frontier,) = (tmp_path / "level-0001" / "frontier").iterdir()
    frontier.write_bytes(frontier.read_bytes()[:20])
    with pytest.raises(ExploreError, match=f"cannot read {re.escape(str(frontier))}: not a whole file of states"):
        SparkExplorer(spark, std.cfg, bounds, tmp_path).run()


def test_a_damaged_done_mark_is_a_clear_error_on_resume(python, tmp_path):
    std = named.STANDARD["std2"]
    bounds = std.bounds._replace(max_depth=4)
    spark = spark_on("local[2]", python)
    SparkExplorer(spark, std.cfg, bounds, tmp_path).run(budget=0)  # one level
    done = tmp_path / "level-0001" / "DONE"
    done.write_text(done.read_text()[:30])
    with pytest.raises(ExploreError, match=f"^{re.escape(str(done))}: cannot read this run's record"):
        SparkExplorer(spark, std.cfg, bounds, tmp_path).run()


def test_a_full_work_directory_is_a_clear_error(python, tmp_path, monkeypatch):
    import shutil

    std = named.STANDARD["std2"]
    spark = spark_on("local[2]", python)
    monkeypatch.setattr(distributed.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10, 10, 2**20))
    with pytest.raises(ExploreError, match="only 1 MiB free"):
        SparkExplorer(spark, std.cfg, std.bounds, tmp_path / "w").run()


def test_the_explore_command_runs_on_spark_and_writes_replayable_counterexamples(tmp_path, capsys):
    work = tmp_path / "work"
    code = main(["explore", "--config", "std2", "--max-depth", "5", "--engine", "spark", "--master", "local[2]",
                 "--work-dir", str(work), "--out", str(tmp_path / "cx"), "--bug", "ack_uses_local_sss_only"])
    text = capsys.readouterr().out
    assert code == 1 and "depth   1:" in text and "work directory" in text
    files = sorted((tmp_path / "cx").glob("*.json"))
    assert files and main(["replay", "--quiet", str(files[0])]) == 1
    assert json.loads((work / "manifest.json").read_text())["config"]["bugs"] == ["ack_uses_local_sss_only"]
    assert main(["explore", "--config", "std2", "--work-dir", str(work)]) == 2  # --engine spark only
    assert main(["explore", "--config", "classic", "--engine", "spark"]) == 2


# --- the long jobs as Spark tasks ------------------------------------------------------------------


def test_matrix_rows_and_bug_measures_on_spark_are_the_local_ones(tmp_path):
    """A task per row or measure; rows and measures that end by exhausting or finding are the
    same wherever they ran (a time budget cut elsewhere would differ, so these end before it)."""
    from rmqcheck.checkers.search import modes
    from rmqcheck.checkers.tables import matrix, rediscovery

    spark = session("local[2]")
    rows = [c for c in matrix.mode_space() if modes.mode_for(c).name == "classic"][:1]
    local = matrix.run([], rows, matrix.Work(), 120, tmp_path / "local")
    remote = matrix.run([], rows, matrix.Work(), 120, tmp_path / "spark", spark=spark)
    assert [(r.settings, r.states, r.exhaustive) for r in remote] == [(r.settings, r.states, r.exhaustive) for r in local]
    assert [[(c.invariant, c.kind, c.steps) for c in r.cells] for r in remote] == \
        [[(c.invariant, c.kind, c.steps) for c in r.cells] for r in local]
    subject = next(s for s in rediscovery.subjects() if s.toggle == "ack_uses_local_sss_only")._replace(
        methods=("explore", "guided"))
    here = rediscovery.measure([subject], 2, 60)
    there = rediscovery.measure([subject], 2, 60, spark=spark)
    assert [(m.method, [(a.seed, a.found, a.invariant, a.steps) for a in m.attempts]) for m in there] == \
        [(m.method, [(a.seed, a.found, a.invariant, a.steps) for a in m.attempts]) for m in here]


def test_a_swarm_stops_at_the_first_finding_and_a_seed_finds_the_same_anywhere(tmp_path):
    from rmqcheck.checkers.search import swarm

    cfg = configs.exposing(frozenset({"ack_uses_local_sss_only"}))
    targets = expected_ids(cfg)
    winner, ended = swarm.swarm(cfg, targets, "guided", range(4), 60, spark=session("local[2]"))
    assert winner is not None and winner.finding is not None and winner in ended
    alone = swarm.run_seed((cfg, targets, "guided", winner.seed, 60))
    assert alone.finding.counterexample.actions == winner.finding.counterexample.actions
    local_winner, _ = swarm.swarm(cfg, targets, "guided", range(4), 60, jobs=2)
    assert swarm.run_seed((cfg, targets, "guided", local_winner.seed, 60)).finding.counterexample.actions == \
        local_winner.finding.counterexample.actions
    none, runs = swarm.swarm(configs.load("durable")._replace(bugs=frozenset()), {"I1"}, "walk", range(2), 1, jobs=2)
    assert none is None and sorted(r.seed for r in runs) == [0, 1]


def test_the_commands_take_the_spark_engine(tmp_path, capsys):
    assert main(["hunt", "--bug", "ack_uses_local_sss_only", "--method", "guided", "--swarm", "3", "--budget", "30",
                 "--engine", "spark", "--master", "local[2]", "--out", str(tmp_path / "w.json")]) == 1
    text = capsys.readouterr().out
    assert "swarm of 3 seeds (0-2) of guided" in text and "found it first" in text and (tmp_path / "w.json").exists()
    assert main(["hunt", "--method", "explore", "--swarm", "2"]) == 2  # a seeded method only
    assert main(["hunt", "--engine", "spark"]) == 2  # --swarm or --method explore
    assert main(["matrix", "--modes", "classic", "--where", "flush=SYNC", "--where", "brokerRole=SYNC_MASTER",
                 "--engine", "spark", "--master", "local[2]", "--out", str(tmp_path / "m")]) == 0
    assert "Spark local[2]" in capsys.readouterr().out
    assert main(["bugs", "--measure", "--only", "ack_uses_local_sss_only", "--method", "explore", "--budget", "30",
                 "--engine", "spark", "--master", "local[2]", "--json", str(tmp_path / "b.json")]) == 0
    assert json.loads((tmp_path / "b.json").read_text())[0]["found"] == 1
    assert main(["matrix", "--master", "local[2]", "--modes", "dledger"]) == 2  # --master goes with --engine spark


def test_a_work_directory_that_cannot_be_made_is_a_clear_error(tmp_path, capsys):
    a_file = tmp_path / "f"
    a_file.write_text("")
    for work, says in ((a_file, "is a file, not a folder"), (a_file / "below", "not a directory")):
        for argv in (["explore", "--max-depth", "2"], ["hunt", "--method", "explore", "--budget", "2"]):
            assert main([*argv, "--engine", "spark", "--work-dir", str(work)]) == 2
            err = capsys.readouterr().err
            assert f"--work-dir {work}" in err and says in err and "Traceback" not in err


# The tests on the multi-process cluster come last: a Spark session changes master only by
# restarting (about 10 s a restart, 20 s for a multi-process cluster).


def test_a_task_that_fails_once_is_retried_and_changes_nothing(python, tmp_path):
    std = named.STANDARD["std2"]
    bounds = std.bounds._replace(max_depth=2)
    spark = spark_on(CLUSTER, python)  # a cluster attempts a task up to 4 times (spark.task.maxFailures)
    failing = SparkExplorer(spark, std.cfg, bounds, tmp_path / "failing", fail_once=str(tmp_path / "marks")).run()
    # each job's first task failed once: both levels' expansions and both their frontier writes
    marks = {p.name for p in (tmp_path / "marks").iterdir()}
    assert {"0-expand", "0-select", "1-expand", "1-select"} <= marks, marks
    clean = explore.Explorer(std.cfg, bounds).run()  # Spark's runs without failures are the local one's
    assert (failing.levels, failing.states, failing.transitions) == (clean.levels, clean.states, clean.transitions)


def test_std3_levels_are_the_local_explorers_on_a_multi_process_cluster(python, tmp_path):
    """Two executor JVMs, each with its own Python workers: fingerprints must agree across them
    (symmetry on: the canonical key too)."""
    local, remote = explored("std3", 5, True, CLUSTER, python, tmp_path)  # depth 10: -m slow
    same(local, remote)


def test_sleep_sets_on_spark_reach_the_local_explorers_states(python, tmp_path):
    """With sleep sets a state keeps the sleep set of the arrival Spark keeps (the least parent
    and action), not the local explorer's first: the same states per depth and shortest
    counterexamples, and every step of an expanded state taken or asleep."""
    std = named.STANDARD["std3"]
    bounds = std.bounds._replace(max_depth=6, symmetry=True)
    plain = explore.Explorer(std.cfg, bounds).run()
    remote = SparkExplorer(spark_on(CLUSTER, python), std.cfg, bounds._replace(sleep_sets=True), tmp_path).run()
    assert remote.levels == plain.levels and remote.pruned == plain.pruned
    assert remote.slept > 0 and remote.transitions + remote.slept == plain.transitions
    assert {i: len(h.actions) for i, h in remote.hits.items()} == {i: len(h.actions) for i, h in plain.hits.items()}


OPENCHAOS = Path(__file__).resolve().parent / "data" / "openchaos-queue-history"


def test_validation_on_a_multi_process_cluster_gives_the_local_report(python, tmp_path, tmp_path_factory):
    """The Spark engine of `validate` on the same multi-process cluster: the executors' working
    directories differ from ours, so relative input paths must survive."""
    simulate(Corpus(runs=24, steps=60, runs_per_file=8, fmt="parquet", stores=True), tmp_path)
    part = tmp_path / "part-00002.parquet"
    recs = pq.read_table(part).to_pylist()
    recs[3]["seq"] = 99  # a gap: one run stops conforming
    files.write_part(part, recs, files.PARQUET)
    issue_9689 = Path(__file__).parent / "data" / "logs" / "issue-9689"  # and RocketMQ's logs (tests/test_logs.py)
    # The recorded runs (tests/test_real_runs.py), one with a view no order of the code's steps shows.
    cluster_runs = shutil.copytree(Path(__file__).parent / "data" / "cluster-runs",
                                   tmp_path_factory.mktemp("runs") / "cluster-runs")
    changed = cluster_runs / "durable3-seed-11" / "steps.jsonl"
    records = [json.loads(line) for line in changed.read_text().splitlines()]
    records[3]["view"]["brokers"]["2"]["messages"] = []
    changed.write_text("".join(json.dumps(r) + "\n" for r in records))
    inputs = discover([os.path.relpath(tmp_path), os.path.relpath(OPENCHAOS), os.path.relpath(issue_9689),
                       os.path.relpath(cluster_runs)])
    local = validate_local(inputs)
    assert {v.check for v in local.violations} >= {"conformance", "lost_ack", "same_master_epoch_bump",
                                                   "real_run_conformance"}
    assert local.units["real_runs"] == len(list(cluster_runs.glob("*/run.json"))) and 0 < local.units["real_run_steps_explained"] < local.units["real_run_steps"]
    remote = validate_spark(inputs, spark=spark_on(CLUSTER, python))
    assert remote.violations == local.violations and remote.units == local.units
