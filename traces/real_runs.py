"""A recorded run of RocketMQ's running code, explained by the model (issue 45, section 2): trace
validation as etcd's raft and CCF do it against their specifications.

`rmqcheck cluster` records each operation of a run as it resolved it and what could be seen from
outside the code after it (`steps.jsonl`): the client's result, the controller's master, epoch and
SyncStateSet, and each broker's view in `replay --cluster`'s terms (`view`: role, masterEpoch,
the messages its commit log holds, confirmOffset and epoch entries counted in messages, a master's
SyncStateSet). `run.json` beside it names the configuration.

`follow` turns that record into a path of the model. Each operation becomes the model actions it
stands for. What the code does by itself between operations (HA frames and acks, an
AlterSyncStateSet the HA service asks for, dispatch, flush, the end of a promotion, a put
completing or timing out) the record does not show; it is filled in one fixed order, to quiet,
as the harness waits until the cluster is quiet. When the state reached does not show what the
record shows, a breadth-first search from the end of the step before (at most GAP_STATES states:
the bounded search per gap) takes the operation's own actions in their order, interleaved with
any of the code's own steps, to a state that does. Where that search stops at its bound, a
second one (`gaps.py` `search_holding_back`) tries the fixed order with one or two of the code's
own steps held back until nothing else moves, as delay-bounded scheduling does: the long gaps of
a restarted master, whose slaves' expansions race.

The path follows the run while the two agree: the broker that took each put was a master in the
model too, the consumer read as many messages, and after each operation the controller (and, with
`views`, every broker) shows the same. A put, read or route the model contradicts stops it at
once; any other step that neither the fixed order nor the search explains stops it too, saying
why and which fields differ. traces/run_records.py's `judge_run` reports that as a conformance
violation with the share of the run's steps explained. The steps after it are not judged: the
model's state there is unknown. One path is kept, never more: a later step that only another
order of an earlier gap explains is not explained (a bound, said in docs/cluster.md).
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from rmqcheck.model.config import NO_FAULTS, Config
from rmqcheck.model.step import Action
from rmqcheck.model.world import State

from .follower import Follower, Stop

UNBOUNDED = 1 << 31  # a fault budget no recorded run reaches


class NotFollowed(NamedTuple):
    step: int  # the recorded step (steps.jsonl's numbering)
    op: str
    why: str


class Followed(NamedTuple):
    cfg: Config  # the run's configuration with room for every put and fault of the record
    actions: list[Action]
    steps: list[int]  # the recorded step each action stands for
    stopped: NotFollowed | None  # where the model could not follow (None: the whole run)
    explained: int  # recorded steps the path explains (all of them when not stopped)
    searched: int  # of those, the steps a search explained (the fixed order did not)


def room_for(cfg: Config, records: list[dict[str, Any]]) -> Config:
    """`cfg` with room for every put of the record and fault budgets that never bind (the
    model's bounds are the explorer's; a recorded run is not bounded by them). Not one a step:
    while a broker's answers are lost every RPC it sends loses one, many a step, and a closed
    connection's second removal comes at each turn of a handshake that retries."""
    puts = sum(1 for r in records if r.get("op") == "put")
    return cfg._replace(max_messages=max(cfg.max_messages, puts + 1),
                        faults=NO_FAULTS._replace(**{f: UNBOUNDED for f in NO_FAULTS._fields}))


def _shows_flushed(records: list[dict[str, Any]]) -> bool:
    """Whether the record's views say how far each broker flushed (runs recorded since they do)."""
    view = records[0].get("view") if records else None
    return bool(view) and any(isinstance(b, dict) and "flushed" in b for b in view.get("brokers", {}).values())


def follow(cfg: Config, records: list[dict[str, Any]], views: bool = False) -> Followed:
    """The model's path of a recorded run (module docstring); with `views`, judged against every
    broker's recorded view too."""
    run = Following(room_for(cfg, records), views, eager_flush=cfg.sync_flush or not (views and _shows_flushed(records)))
    for record in records:
        if not run.take(record):
            break
    return run.followed()


class Following:
    """`follow`, one recorded step at a time (`take`); `after` says what an operation would
    leave from here, for a run whose operations are chosen as it goes, or played on the model
    alone (bench/schedule_reach.py). `cfg` has room for the run (`room_for`)."""

    def __init__(self, cfg: Config, views: bool = True, eager_flush: bool = True) -> None:
        self.f = f = Follower(cfg, views, eager_flush)
        self.stopped: NotFollowed | None = None
        self.explained = self.searched = 0
        self.before = (f.s, dict(f.checked), 0)  # the first step's search may reorder the start's quiet too
        try:
            f.quiet()
        except Stop as exc:
            self.stopped = NotFollowed(0, "start", str(exc))

    def take(self, record: dict[str, Any]) -> bool:
        """Follow the next recorded step; False once the model cannot (`stopped` says where)."""
        if self.stopped is not None:
            return False
        f, op = self.f, record["op"]
        f.at = record["step"]
        try:
            if op == "round" and self.explained:  # outside the gap's search: it marks where the step before ended
                f.write_back()
                self.before = (f.s, dict(f.checked), len(f.actions))
            f.apply(record)
            self.searched += f.end_step(record, self.before)
            self.explained += 1
            if self.explained == 1:  # the first step's search may reorder the start: write back after it
                f.write_back()
            self.before = (f.s, dict(f.checked), len(f.actions))
        except Stop as exc:
            self.stopped = NotFollowed(f.at, op, str(exc))
        return self.stopped is None

    def after(self, record: dict[str, Any]) -> Following | None:
        """A copy that has taken `record` in the fixed order alone, judged against nothing (it
        has no view: it has not run); None when the model cannot take it."""
        if self.stopped is not None:
            return None
        other = copy.copy(self)
        other.f = f = self.f.fork()
        f.at = record["step"]
        try:
            if record["op"] == "round" and self.explained:  # as `take` writes back
                f.write_back()
            f.apply(record)
            f.quiet()
        except Stop:
            return None
        if not self.explained:
            f.write_back()
        other.explained += 1
        other.before = (f.s, dict(f.checked), len(f.actions))
        return other

    @property
    def state(self) -> State:
        return self.f.s

    def master(self) -> int | None:
        return self.f.master()

    def route(self) -> int | None:
        """The broker the client's next put goes to (run.Client's route)."""
        return self.f.route if self.f.route is not None else self.f.master()

    def followed(self) -> Followed:
        f = self.f
        return Followed(f.cfg, f.actions, f.steps, self.stopped, self.explained, self.searched)
