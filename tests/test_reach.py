"""Blind spots of the checkers (issue 27), each shown closed: a one-line mutation of the model
that the checkers now catch, and that the check as it was before could not."""

from __future__ import annotations

from pathlib import Path

from rmqcheck.checkers.counterexamples.files import read
from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.model import controller as ctl

REACH = Path(__file__).parent / "data" / "reach"


def frozen_heartbeat_view(c, broker, now, epoch, max_offset, confirm_offset, priority=ctl.INT_MAX):
    """Mutation: after a broker's first heartbeat the controller refreshes only its timestamp,
    so elections rank brokers by data they have long since passed."""
    old = c.live[broker - 1]
    if old is None:
        return FAITHFUL_HEARTBEAT(c, broker, now, epoch, max_offset, confirm_offset, priority)
    return c._replace(live=c.live[: broker - 1] + (old._replace(last_update=now),) + c.live[broker:])


FAITHFUL_HEARTBEAT = ctl.on_broker_heartbeat


def test_i7_judges_elections_by_what_the_brokers_reported(monkeypatch):
    cx = read(REACH / "i7-frozen-heartbeat-view.scn")
    ids = frozenset({"I7", "I7b"})
    assert replay(cx.config, cx.actions, ids).first() is None  # the faithful model elects well
    monkeypatch.setattr(ctl, "on_broker_heartbeat", frozen_heartbeat_view)
    run = replay(cx.config, cx.actions, ids)
    step, violation = run.first("I7")
    assert step == len(cx.actions) and "reported a larger (epoch, maxOffset)" in violation.message
    assert run.first("I7b") is None  # judged by the controller's own stale table, it looks fine


def test_every_checker_evaluates_the_invariants_from_the_empty_cluster():
    """An async learner registering first is elected during the bootstrap, before the initial
    state: each checker must see it (it used to start judging only after the bootstrap)."""
    from rmqcheck.checkers.search import walk
    from rmqcheck.checkers.search.explore import Bounds, Explorer
    from rmqcheck.checkers.search.hunting import find
    from rmqcheck.model import configs

    snapshot = configs.load("learner-first")
    intended = snapshot._replace(bugs=frozenset())
    assert walk.guided(snapshot, budget=5).hit.invariant == "I7"
    assert walk.walk(snapshot, budget=5, max_walks=1).hit.actions == ()
    hit = Explorer(snapshot, Bounds(max_depth=0)).run(stop_on=["I7"]).hits["I7"]
    assert hit.actions == () and "during the bootstrap, at register(broker=1" in hit.message
    finding, _ = find(snapshot, {"I7"}, 20)
    assert finding.counterexample.actions == () and finding.counterexample.depends_on == ("learner_requests_election",)
    assert replay(snapshot, ()).first("I7")[0] == 0
    # Intended: the learner waits, broker 2 wins, and the learner joins as its slave.
    assert replay(intended, ()).first() is None
    s = replay(intended, ()).states[0]
    assert (s.ctrl.applied.master, s.broker(1).role, s.broker(1).master_id) == (2, "SLAVE", 2)


def test_election_priorities_reach_the_controller_and_split_symmetry():
    from rmqcheck.model import configs
    from rmqcheck.model.abstraction import symmetries
    from rmqcheck.model.configs import ConfigError, from_dict

    cfg = configs.load("priority-last")
    s = replay(cfg, ()).states[0]
    assert [info.priority for info in s.ctrl.live] == [3, 1, 2] == [r.priority for r in s.reports]
    assert symmetries(cfg) == [(1, 2, 3)]
    assert len(symmetries(cfg._replace(priorities=(5, 1, 1)))) == 2
    for bad in ([1, 2], [2**31, 1, 1]):
        try:
            from_dict({"brokers": 3, "priorities": bad}, "t.json")
        except ConfigError as exc:
            assert "priorities must give one Java int per broker" in str(exc)
        else:
            raise AssertionError(bad)
