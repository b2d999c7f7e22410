"""Coverage: "sometimes" witnesses, situations a run of the checkers is expected to reach.

A witness that is never reached is reported loudly: the model cannot reach that part of the
space under the bounds used, and every "holds" verdict there is silent about it
(reference/anchors.md lesson 14). Each witness is a predicate over one transition.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from rmqcheck.model.broker import max_phy
from rmqcheck.model.commitlog import CommitLog, Messages, check_message, message_floor
from rmqcheck.model.commitlog import max_phy as max_phy_of
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action
from rmqcheck.model.world import State


class Witness(NamedTuple):
    name: str
    description: str
    applies: Callable[[Config], bool]
    not_applicable: str  # why, when `applies` is false
    seen: Callable[[State, Action, State], bool]


def _truncated(pre: State, a: Action, post: State) -> int | None:
    """The offset a handshake cut a slave's log at, or None."""
    if a[0] != "ha_connect":
        return None
    cut = max_phy(post.broker(a[1]))
    return cut if cut < max_phy(pre.broker(a[1])) else None


def _new_grants(pre: State, post: State) -> tuple[tuple[int, int], ...]:
    return post.ctrl.grants[len(pre.ctrl.grants) :]


def election_with_truncation(pre: State, a: Action, post: State) -> bool:
    return _truncated(pre, a, post) is not None


def unclean_election(pre: State, a: Action, post: State) -> bool:
    sss = pre.ctrl.applied.sss
    return pre.ctrl.applied.master_epoch > 0 and any(w not in sss for _, w in _new_grants(pre, post))


def epoch_change_without_master_change(pre: State, a: Action, post: State) -> bool:
    grants = post.ctrl.grants
    return bool(_new_grants(pre, post)) and len(grants) >= 2 and grants[-1][1] == grants[-2][1]


def truncation_inside_epoch(pre: State, a: Action, post: State) -> bool:
    cut = _truncated(pre, a, post)
    if cut is None:
        return False
    b = pre.broker(a[1])
    ends = [start for _, start in b.epochs.entries[1:]] + [max_phy(b)]
    return any(start < cut < end for (_, start), end in zip(b.epochs.entries, ends))


def lone_master_crash(pre: State, a: Action, post: State) -> bool:
    applied = pre.ctrl.applied
    return a[0] == "crash" and applied.master == a[1] and applied.sss == frozenset((a[1],))


def place(log: CommitLog, offset: int) -> str:
    """Where an offset a broker keeps falls in its log: "unset" (-1), on a message "boundary",
    "inside" a message, or "past" the end. The invariants read offsets that land inside
    messages (a partial batch acknowledged, a torn tail recovered), which whole-message runs
    never show."""
    if offset < 0:
        return "unset"
    if offset > max_phy_of(log):
        return "past"
    return "inside" if message_floor(log, offset) != offset else "boundary"


def torn_tail(log: CommitLog, msgs: Messages) -> bool:
    """The log ends inside a message (a partial HA batch, or what a crash kept)."""
    end = max_phy_of(log)
    if end == log.base:
        return False
    start = message_floor(log, end - log.unit)
    return not check_message(log, start, msgs)[0]


def shape(s: State) -> tuple:
    """Per broker: where its confirm, flushed and dispatch offsets fall, and a torn tail."""
    return tuple((place(b.log, b.confirm), place(b.log, b.log.flushed), place(b.log, b.reput), torn_tail(b.log, s.msgs))
                 for b in s.brokers)


def confirm_inside_message(pre: State, a: Action, post: State) -> bool:
    return any(place(b.log, b.confirm) == "inside" for b in post.brokers)


def tail_torn(pre: State, a: Action, post: State) -> bool:
    return any(torn_tail(b.log, post.msgs) for b in post.brokers)


def restart_with_confirm_inside_message(pre: State, a: Action, post: State) -> bool:
    return a[0] == "restart" and place(pre.broker(a[1]).log, pre.broker(a[1]).confirm) == "inside"


def _multi_cell(cfg: Config) -> bool:
    return max(cfg.message_sizes) > 1


def _always(cfg: Config) -> bool:
    return True


WITNESSES: tuple[Witness, ...] = (
    Witness(
        "election_with_truncation",
        "after a master change, a slave's handshake truncates its log (doTruncate)",
        lambda cfg: cfg.brokers >= 2,
        "one broker",
        election_with_truncation,
    ),
    Witness(
        "unclean_election",
        "the controller elects a broker outside the SyncStateSet",
        lambda cfg: cfg.unclean,
        "enableElectUncleanMaster=false",
        unclean_election,
    ),
    Witness(
        "epoch_change_without_master_change",
        "the controller hands the same master a new masterEpoch (#9689's trigger)",
        _always,
        "",
        epoch_change_without_master_change,
    ),
    Witness(
        "truncation_inside_epoch",
        "a handshake truncation point lies strictly inside an epoch of the slave's epoch file",
        lambda cfg: cfg.brokers >= 2,
        "one broker",
        truncation_inside_epoch,
    ),
    Witness(
        "lone_master_crash",
        "the master crashes while the controller's SyncStateSet is {master}",
        lambda cfg: cfg.faults.crashes > 0,
        "no crash in the fault budget",
        lone_master_crash,
    ),
    Witness(
        "confirm_inside_message",
        "a broker's confirmOffset lies inside a message (a partial batch acknowledged)",
        _multi_cell,
        "every message is one cell",
        confirm_inside_message,
    ),
    Witness(
        "torn_tail",
        "a broker's log ends inside a message (a partial HA batch, or a crash's torn write)",
        _multi_cell,
        "every message is one cell",
        tail_torn,
    ),
    Witness(
        "restart_with_confirm_inside_message",
        "a broker restarts with its saved confirmOffset inside a message (issue 43's unreached precondition)",
        lambda cfg: _multi_cell(cfg) and cfg.faults.crashes > 0,
        "every message is one cell, or no crash in the fault budget",
        restart_with_confirm_inside_message,
    ),
)


class Coverage:
    """Per-action counts and the applicable witnesses seen so far."""

    def __init__(self, cfg: Config):
        self.actions: dict[str, int] = {}
        self.pending = [w for w in WITNESSES if w.applies(cfg)]
        self.cfg = cfg

    def record(self, pre: State, a: Action, post: State) -> None:
        self.actions[a[0]] = self.actions.get(a[0], 0) + 1
        if self.pending:
            self.pending = [w for w in self.pending if not w.seen(pre, a, post)]

    def report(self) -> list[tuple[str, str, str]]:
        """(witness, status, description) with status "reached", "NOT REACHED" or "n/a: why"."""
        out = []
        for w in WITNESSES:
            if not w.applies(self.cfg):
                status = f"n/a: {w.not_applicable}"
            else:
                status = "NOT REACHED" if w in self.pending else "reached"
            out.append((w.name, status, w.description))
        return out

    def unreached(self) -> list[str]:
        return [w.name for w in self.pending]


class ActionCounts:
    """Coverage for a model without witnesses: transitions per action kind."""

    def __init__(self) -> None:
        self.actions: dict[str, int] = {}

    def record(self, pre, a, post) -> None:
        self.actions[a[0]] = self.actions.get(a[0], 0) + 1

    def report(self) -> list[tuple[str, str, str]]:
        return []
