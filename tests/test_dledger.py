"""DLedger mode (model/dledger.py, invariants/dledger.py): rules, scenarios per toggle, the
explorer on a small configuration, and the offset-mapping proofs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqcheck.checkers.proofs import dledger_offsets as dledger_proofs
from rmqcheck.checkers.search import explore, named
from rmqcheck.checkers.search import modes
from rmqcheck.checkers.counterexamples.files import CounterexampleError
from rmqcheck.cli import main
from rmqcheck.model import dledger as dl
from rmqcheck.model.step import NotEnabled

SCENARIOS = Path(__file__).parent.parent / "scenarios" / "dledger"
MODE = modes.MODES["dledger"]
INTENDED = dl.DLedgerConfig(bugs=frozenset())


def run(cfg: dl.DLedgerConfig, *actions: tuple) -> dl.DState:
    s = dl.initial_state(cfg)
    for a in actions:
        s = dl.step(s, a, cfg)
    return s


ELECT_0 = (("timeout", 0), ("vote", 0, 1), ("vote", 0, 1), ("elected", 0))


def test_a_higher_vote_term_is_adopted_and_rejected_first():
    s = run(INTENDED, ("timeout", 0), ("vote", 0, 1))
    assert s.members[1].term == 1 and s.members[1].voted == dl.NONE and s.members[0].votes == 1
    s = dl.step(s, ("vote", 0, 1), INTENDED)
    assert s.members[1].voted == 0 and s.members[0].votes == 0b11


def test_the_ledger_check_comes_before_the_term_check():
    s = run(INTENDED, *ELECT_0, ("heartbeat", 0, 1), ("push", 0, 1))
    assert s.members[1].log == s.members[0].log
    s = dl.step(s, ("timeout", 2), INTENDED)  # empty log, term 1 == voter's term
    with pytest.raises(NotEnabled):
        dl.step(s, ("vote", 2, 1), INTENDED)


def test_elected_needs_a_quorum_and_appends_the_noop():
    s = run(INTENDED, ("timeout", 0))
    with pytest.raises(NotEnabled):
        dl.step(s, ("elected", 0), INTENDED)
    s = run(INTENDED, *ELECT_0)
    assert s.members[0].role == dl.LEADER and s.members[0].log == (dl.Entry(1, 0, -1),)
    assert run(INTENDED._replace(noop_on_election=False), *ELECT_0).members[0].log == ()


def test_commit_counts_only_current_term_entries_unless_the_snapshot_toggle():
    """Figure 8's guard: a follower's match on an entry of an earlier term does not count."""
    cfg = INTENDED._replace(noop_on_election=False)
    leader = dl.Member(0, term=3, role=dl.LEADER, log=(dl.Entry(1, 1, 0),), end_term=1,
                       match=(dl.COMPARE,) * 3, marks=(-1,) * 3)
    assert dl._mark(leader, 2, 0, cfg).marks == (-1, -1, -1)
    snapshot = cfg._replace(bugs=dl.SNAPSHOT)
    marked = dl._mark(leader, 2, 0, snapshot)
    assert marked.marks == (-1, -1, 0) and dl.quorum_index(marked, snapshot) == 0


def test_update_committed_clamps_to_the_ledger_end():
    m = dl.Member(1, log=(dl.Entry(1, 0, -1),))
    assert dl.update_committed(m, 4, INTENDED).committed == 0
    assert dl.update_committed(m, 4, INTENDED._replace(bugs=frozenset({"follower_commit_unclamped"}))).committed == 4
    assert dl.update_committed(m._replace(committed=0), -1, INTENDED).committed == 0


def test_become_master_waits_for_commit_and_dispatch():
    s = run(INTENDED, *ELECT_0)
    with pytest.raises(NotEnabled):
        dl.step(s, ("become_master", 0), INTENDED)
    s = run(INTENDED, *ELECT_0, ("heartbeat", 0, 1), ("push", 0, 1), ("commit", 0), ("dispatch", 0), ("become_master", 0))
    assert s.members[0].master and s.members[0].qnext == 0


def test_symmetric_key_identifies_renamed_states():
    a = run(INTENDED, *ELECT_0)
    b = run(INTENDED, ("timeout", 2), ("vote", 2, 1), ("vote", 2, 1), ("elected", 2))
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    assert dl.symmetric_key(a, perms) == dl.symmetric_key(b, perms)
    assert hash(a) != hash(b)


def test_scenario_text_round_trips():
    sc = modes.read(SCENARIOS / "replica_counted_in_leader_term.scn")
    again = modes.parse(modes.format_scenario(sc), "round trip")
    assert (again.config, again.actions, again.invariant) == (sc.config, sc.actions, sc.invariant)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("config nodes=3\n", "first directive must be 'mode"),
        ("mode dledger\nexpect D9\n", "expect takes one of"),
        ("mode dledger\nconfig nodes=three\nexpect none\n", "config nodes='three'"),
        ("mode dledger\ntoggles no_such\nexpect none\n", "unknown dledger toggle"),
        ("mode dledger\nexpect none\nvote candidate=0\n", "vote takes candidate=<int> voter=<int>"),
        ("mode dledger\nexpect none\nfly node=1\n", "unknown directive or action 'fly'"),
        ("mode dledger\ntimeout node=0\n", "no 'expect' line"),
        ("mode dledger\nconfig nodes=9\nexpect none\n", "nodes must be between 2 and 5"),
    ],
)
def test_bad_scenarios_name_the_file_and_line(text, needle):
    with pytest.raises(CounterexampleError, match="bad.scn") as exc:
        modes.parse(text, "bad.scn")
    assert needle in str(exc.value)


def test_replay_cli_exit_codes(tmp_path, capsys):
    assert main(["replay", str(SCENARIOS / "dispatch_uncommitted.scn")]) == 1
    assert "reproduced: D6 violated at step 5" in capsys.readouterr().out
    clean = tmp_path / "clean.scn"
    clean.write_text("mode dledger\nexpect none\ntimeout node=0\nvote candidate=0 voter=1\n")
    assert main(["replay", str(clean)]) == 0
    broken = tmp_path / "broken.scn"
    broken.write_text("mode dledger\nexpect none\nelected node=0\n")
    assert main(["replay", str(broken)]) == 2
    assert "step 1: elected node=0 is not enabled" in capsys.readouterr().err


@pytest.mark.heavy
def test_the_small_intended_configuration_is_exhaustive_and_safe():
    cfg, _ = named.DLEDGER["dledger"]
    r = explore.Explorer(cfg, explore.Bounds(symmetry=True)).run()
    assert r.exhaustive and not r.hits
    assert r.states > 10_000


# A15 needs two terms and two messages; two members keep that space small (1,303 states
# against 158,058 with three, which takes two minutes).
@pytest.mark.parametrize("toggle, invariant, sizes", [
    ("dispatch_uncommitted", "D6", {}), ("follower_commit_unclamped", "D5", {}),
    ("master_before_caught_up", "D7", {"nodes": 2, "max_messages": 2, "max_term": 2}),
    ("vote_ignores_voted_for", "D1", {})])
def test_the_explorer_finds_the_shallow_toggles(toggle, invariant, sizes):
    cfg, _ = named.DLEDGER["dledger"]
    cfg = cfg._replace(bugs=frozenset({toggle}), **sizes)
    r = explore.Explorer(cfg, explore.Bounds(symmetry=True)).run(120, stop_on=[invariant])
    assert invariant in r.hits
    replayed = modes.replay(MODE, cfg, r.hits[invariant].actions)
    assert replayed.first(invariant) is not None


@pytest.mark.heavy
def test_explore_cli_writes_a_replayable_scenario(tmp_path, capsys):
    # to depth 6 (the violation takes 4 steps; the whole space, 88,146 states, is explored without
    # the toggle by test_the_small_intended_configuration_is_exhaustive_and_safe)
    assert main(["explore", "--config", "dledger", "--bug", "dispatch_uncommitted", "--max-depth", "6",
                 "--out", str(tmp_path)]) == 1
    written = tmp_path / "explore-dledger-D6.scn"
    assert written.exists()
    assert main(["replay", str(written)]) == 1
    assert main(["explore", "--config", "dledger", "--bug", "no_such"]) == 2


@pytest.mark.heavy
def test_offset_mapping_proofs_and_their_refutations():
    outcomes = dledger_proofs.run()
    assert all(o.ok for o in outcomes), [o for o in outcomes if not o.ok]
    assert {o.expected for o in outcomes} == {"proved", "refuted"}
    assert all(o.witness for o in outcomes if o.expected == "refuted")


def test_physical_offsets_follow_pre_append():
    # files of 128 bytes from offset 256, entries of 48 + 20 bytes: after one entry a file has
    # 60 bytes left, less than an entry and a blank record's room, so each starts a new file
    offs = dl.physical_offsets(256, [20, 20, 20], 128)
    assert offs == [256 + 48, 384 + 48, 512 + 48]
    assert dl.physical_offsets(0, [10, 10], 256) == [48, 58 + 48]  # room enough: back to back
    assert all(b > a for a, b in zip(offs, offs[1:]))
