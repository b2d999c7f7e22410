"""The bug-rediscovery benchmark (checkers/tables/rediscovery.py, `rmqcheck bugs --measure`)."""

from __future__ import annotations

import json

import pytest

from rmqcheck.checkers.search import modes
from rmqcheck.checkers.tables import rediscovery
from rmqcheck.checkers.tables.rediscovery import Attempt, Measure, Subject
from rmqcheck.model import configs
from rmqcheck.checkers.counterexamples.replay import run_lenient
from rmqcheck.checkers.search.hunting import SNAPSHOT_DEFECT, guided_each
from rmqcheck.checkers.search.walk import mode_guided, mode_walk
from rmqcheck.invariants.catalogue import expected_ids
from ci_results import summary
from rmqcheck.cli import main
from rmqcheck.model.bugs import TOGGLES
from rmqcheck.report.tables import bugs_markdown


def test_every_toggle_of_every_mode_is_a_subject():
    subjects = rediscovery.subjects()
    names = {(s.mode, s.toggle) for s in subjects}
    assert {("controller", t.name) for t in TOGGLES} <= names
    for mode in modes.MODES.values():
        assert {(mode.name, t) for t in mode.toggles} <= names
    by_name = {s.toggle: s for s in subjects}
    assert by_name["ack_uses_local_sss_only"].methods == ("stateful", "explore", "walk", "guided")
    assert by_name["no_inactive_master_scan"].methods == ("liveness",)
    assert by_name["expand_without_epoch_start_check"].methods == ()
    assert by_name["follower_last_log_term_is_currTerm"].ref == "A4"
    assert by_name["follower_last_log_term_is_currTerm"].methods == ("explore", "walk", "guided")
    assert by_name["truncation_matches_epoch_only"].methods == ("stateful", "explore", "walk", "guided", "prove")


def miss(seed: int) -> Attempt:
    return Attempt(seed, False, None, None, 9.0)


def hit(seed: int, seconds: float, steps: int = 5) -> Attempt:
    return Attempt(seed, True, "I1", steps, seconds)


def test_the_median_counts_a_miss_as_never():
    m = Measure("t", "controller", "walk", 9, (hit(0, 1), miss(1), hit(2, 3, 4), miss(3), hit(4, 2)))
    assert m.median_seconds == 3 and m.found == 3 and m.steps == 4 and m.invariant == "I1"
    assert Measure("t", "controller", "walk", 9, (hit(0, 1), miss(1), miss(2), miss(3))).median_seconds is None


def test_seeds_stop_once_more_than_half_missed(monkeypatch):
    calls = []

    def attempt(name, method, seed, budget):
        calls.append(seed)
        return miss(seed)

    monkeypatch.setattr(rediscovery, "_controller_attempt", attempt)
    m = rediscovery.measure_one(Subject("x", "controller", "A1", ("walk",)), "walk", 5, 1)
    assert calls == [0, 1, 2] and m.median_seconds is None


def test_not_found_toggles_are_listed_first():
    subjects = [Subject("found_one", "controller", "A1", ("explore",)), Subject("missed_one", "controller", "A2", ("explore",))]
    measures = [Measure("found_one", "controller", "explore", 9, (hit(0, 1),)),
                Measure("missed_one", "controller", "explore", 9, (miss(0),))]
    lines = bugs_markdown(subjects, measures).splitlines()
    assert "missed_one" in lines[2] and "**NOT FOUND**" in lines[2] and "found_one" in lines[3]


@pytest.mark.heavy
def test_measure_finds_toggles_of_each_kind_and_writes_the_tables(tmp_path, capsys, monkeypatch):
    """One seed; the lasso search bounded to depth 12, where it finds L1 in about 2 s (32 s with
    the table's own bounds, which `make bugs` uses)."""
    monkeypatch.setattr(rediscovery, "LIVENESS_BOUNDS", rediscovery.LIVENESS_BOUNDS._replace(max_depth=12))
    readme = tmp_path / "bugs.md"
    readme.write_text("<!-- bugs:start -->\n<!-- bugs:end -->\n")
    argv = ["bugs", "--measure", "--only", "ack_uses_local_sss_only", "--only", "ack_beyond_master_max",
            "--only", "no_inactive_master_scan", "--budget", "60", "--seeds", "1", "--jobs", "1",
            "--json", str(tmp_path / "b.json"), "--readme", str(readme), "--summary-json", str(tmp_path / "s.json")]
    assert main(argv) == 0
    cases = {c["name"]: c for c in summary(tmp_path / "s.json")["cases"]}  # a case a toggle
    assert set(cases) == {"ack_uses_local_sss_only", "ack_beyond_master_max", "no_inactive_master_scan"}
    assert all(c["outcome"] == "passed" and c["notes"] for c in cases.values())
    rows = json.loads((tmp_path / "b.json").read_text())
    assert {(r["toggle"], r["method"]) for r in rows} == {
        ("ack_uses_local_sss_only", "stateful"), ("ack_uses_local_sss_only", "explore"),
        ("ack_uses_local_sss_only", "walk"), ("ack_uses_local_sss_only", "guided"),
        ("ack_beyond_master_max", "explore"), ("ack_beyond_master_max", "walk"), ("ack_beyond_master_max", "guided"),
        ("no_inactive_master_scan", "liveness")}
    assert all(r["median_seconds"] is not None for r in rows)
    assert {r["invariant"] for r in rows if r["toggle"] == "no_inactive_master_scan"} == {"L1"}
    assert "`ack_beyond_master_max`" in readme.read_text()


def test_z3_refutes_a_truncation_toggle_the_searches_miss():
    """The Z3 witness logs, replicated in the model from a constructed start, break I5."""
    subject = next(s for s in rediscovery.subjects() if s.toggle == "truncation_matches_epoch_only")
    m = rediscovery.measure_one(subject, "prove", 5, 60)
    assert len(m.attempts) == 1 and m.found == 1 and m.invariant == "I5"


def test_a_mode_walk_finds_what_exploration_of_the_scenario_configuration_misses():
    mode = modes.MODES["dledger"]
    cfg = modes.read(rediscovery.SCENARIOS / "dledger" / "master_before_caught_up.scn").config
    w = mode_walk(mode, cfg, seed=0, depth=rediscovery.WALK_DEPTH, budget=60)
    assert w is not None and w.invariant == "D7" and len(w.shrunk) < len(w.actions)
    assert modes.replay(mode, cfg, w.shrunk).first("D7") is not None


@pytest.mark.heavy
def test_a_guided_walk_finds_a_toggle_behind_a_long_prefix():
    """received_epoch_survives_truncation needs a truncation, then a failover, then a rejoin:
    plain walks of 60 steps missed it on every seed in 60 s; guided walks keep the states on
    the way as restart points (seed 0 finds it after 9,285 steps)."""
    name = "received_epoch_survives_truncation"
    cfg = configs.exposing(frozenset({name}))
    finding, _ = next(guided_each(cfg, expected_ids(cfg), steps=30_000, seed=0))
    cx = finding.counterexample
    assert cx.invariant == "I5" and cx.method == "guided" and finding.kind == SNAPSHOT_DEFECT
    assert len(cx.actions) < finding.raw_steps
    assert run_lenient(cfg, list(cx.actions), "I5") is not None
    assert run_lenient(cfg._replace(bugs=cfg.bugs - {name}), list(cx.actions), "I5") is None


def test_a_guided_walk_of_another_mode_finds_its_toggle():
    mode = modes.MODES["classic"]
    cfg = modes.read(rediscovery.SCENARIOS / "classic" / "ack_beyond_master_max.scn").config
    w = mode_guided(mode, cfg, seed=0, budget=60)
    assert w is not None and modes.replay(mode, cfg, w.shrunk).first(w.invariant) is not None


@pytest.mark.heavy
def test_update_remeasures_some_toggles_and_methods_and_keeps_the_rest(tmp_path, capsys):
    earlier = [Measure("no_inactive_master_scan", "controller", "liveness", 300, (hit(0, 8.0, 12),)),
               Measure("ack_beyond_master_max", "classic", "explore", 300, (miss(0),)),
               Measure("ack_beyond_master_max", "classic", "walk", 300, (miss(0),))]
    update = tmp_path / "b.json"
    update.write_text(json.dumps(rediscovery.to_json(earlier)))
    argv = ["bugs", "--measure", "--only", "ack_beyond_master_max", "--only", "ack_check_skips_first_report",
            "--method", "walk", "--method", "guided", "--budget", "30", "--seeds", "1", "--jobs", "1", "--update", str(update)]
    assert main(argv) == 0
    rows = {(r["toggle"], r["method"]): r for r in json.loads(update.read_text())}
    assert set(rows) == {("no_inactive_master_scan", "liveness"), ("ack_beyond_master_max", "explore"),
                         ("ack_beyond_master_max", "walk"), ("ack_beyond_master_max", "guided"),
                         ("ack_check_skips_first_report", "walk"), ("ack_check_skips_first_report", "guided")}
    assert rows["no_inactive_master_scan", "liveness"]["budget"] == 300
    assert rows["ack_beyond_master_max", "explore"]["found"] == 0  # not re-measured
    assert rows["ack_beyond_master_max", "walk"]["found"] == 1 and rows["ack_beyond_master_max", "walk"]["budget"] == 30
    out = capsys.readouterr().out
    assert "other budgets: ack_beyond_master_max explore (300s), no_inactive_master_scan liveness (300s)" in out


def test_a_bad_update_file_exits_2_naming_the_record(tmp_path, capsys):
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps([{"toggle": "ack_beyond_master_max"}]))
    assert main(["bugs", "--measure", "--only", "ack_beyond_master_max", "--update", str(bad)]) == 2
    assert f"--update {bad}: record 1" in capsys.readouterr().err
    assert main(["bugs", "--measure", "--update", str(bad)]) == 2
    assert "--only" in capsys.readouterr().err


def test_unknown_toggles_exit_2(capsys):
    assert main(["bugs", "--measure", "--only", "no_such_toggle"]) == 2
    assert "no_such_toggle" in capsys.readouterr().err
