"""The bug-rediscovery benchmark (checkers/rediscovery.py, `rmqcheck bugs --measure`)."""

from __future__ import annotations

import json

from rmqcheck.checkers import modes, rediscovery
from rmqcheck.checkers.rediscovery import Attempt, Measure, Subject
from rmqcheck.checkers.walk import mode_walk
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
    assert by_name["ack_uses_local_sss_only"].methods == ("stateful", "explore", "walk")
    assert by_name["no_inactive_master_scan"].methods == ("liveness",)
    assert by_name["expand_without_epoch_start_check"].methods == ()
    assert by_name["follower_last_log_term_is_currTerm"].ref == "A4"
    assert by_name["follower_last_log_term_is_currTerm"].methods == ("explore", "walk")
    assert by_name["truncation_matches_epoch_only"].methods == ("stateful", "explore", "walk", "prove")


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


def test_measure_finds_toggles_of_each_kind_and_writes_the_tables(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- bugs:start -->\n<!-- bugs:end -->\n")
    argv = ["bugs", "--measure", "--only", "ack_uses_local_sss_only", "--only", "ack_beyond_master_max",
            "--only", "no_inactive_master_scan", "--budget", "60", "--seeds", "2", "--jobs", "1",
            "--json", str(tmp_path / "b.json"), "--readme", str(readme)]
    assert main(argv) == 0
    rows = json.loads((tmp_path / "b.json").read_text())
    assert {(r["toggle"], r["method"]) for r in rows} == {
        ("ack_uses_local_sss_only", "stateful"), ("ack_uses_local_sss_only", "explore"),
        ("ack_uses_local_sss_only", "walk"), ("ack_beyond_master_max", "explore"), ("ack_beyond_master_max", "walk"),
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


def test_unknown_toggles_exit_2(capsys):
    assert main(["bugs", "--measure", "--only", "no_such_toggle"]) == 2
    assert "no_such_toggle" in capsys.readouterr().err
