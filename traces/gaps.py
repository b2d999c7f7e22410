"""The code's own steps between a recorded run's operations, and the searches that fill a gap
with them (traces/follower.py follows a run; docs/cluster.md says how): the fixed order
(`_own_steps`, `_rest`), the breadth-first search of one gap (`search`), and the fixed order with
a step or two held back (`search_holding_back`)."""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, NamedTuple

from rmqcheck.model import commitlog as cl
from rmqcheck.model.broker import MASTER, SLAVE
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, NotEnabled, step
from rmqcheck.model.world import State, reaches_controller

QUIET_AFTER = 2000  # model steps in one quiet-down at most (a run's whole transfer takes far fewer)
GAP_STATES = 20_000  # states the search of one gap may visit
HELD_AT_MOST = 2  # own steps the second search of a gap may hold back in one schedule
Held = tuple  # (action, how many times the schedule took it before): one own step held back
HELD_OCCURRENCES = 2  # of each own step, only its first ones are held back
# The code's own steps that follow what enables them within milliseconds (`prompt_rest`); a
# flush only where the fixed order flushes (SYNC_FLUSH's, or where the record does not show them).
PROMPT = ("dispatch", "put_complete", "put_timeout", "flush")
# A run's faults, in the harness's terms (harness.py): a broker's RPCs dropped or their answers lost.
DROP, LOSE_ANSWER = "drop", "lose_answer"


class Searched(NamedTuple):
    path: list[tuple[Action, bool]] | None  # each action with whether it is the code's own; None: none found
    state: State | None
    checked: dict[int, int] | None
    visited: int  # states the search visited
    exhausted: bool  # it visited every state it could reach (not stopped by GAP_STATES)


class Stop(Exception):
    pass


def passed(s: State) -> State:
    """What says the fixed order is back at a state it passed: the state but its fault counts.
    The code can loop for ever (a handshake that finds no consistent point retries), and each
    turn of the loop spends a fault (the closed connection's second removal) without changing
    anything else."""
    return s._replace(used=None)


def _as_taken(s: State, a: Action, kill9: bool) -> Action:
    """An operation's action as the search takes it: a kill -9 keeps whatever is in the page
    cache where it comes."""
    return ("crash", a[1], cl.unflushed(s.broker(a[1]).log)) if kill9 else a


def _marked(done: dict[int, int], a: Action, nxt: State) -> dict[int, int]:
    """The masterEpochs whose first SyncStateSet check ran, after `a` (which led to `nxt`)."""
    if a[0] == "check_sss":
        return {**done, a[1]: nxt.broker(a[1]).master_epoch}
    if a[0] in ("crash", "restart"):  # a new process: its first changeToMaster checks again
        return {b: e for b, e in done.items() if b != a[1]}
    return done


class Gaps:
    """The part of `Follower` that fills gaps: what the code does by itself in a model state,
    given the faults in force the model's state does not hold (`silent` HA links, `rpc`
    policies)."""

    cfg: Config
    silent: set[frozenset[int]]
    rpc: dict[int, str]
    eager_flush: bool

    def lost(self, b: int) -> int:
        return 1 if self.rpc.get(b) == LOSE_ANSWER else 0

    def sends_rpcs(self, b: int) -> bool:
        return self.rpc.get(b) != DROP

    def _ha_open(self, s: State, slave: int) -> bool:
        b = s.broker(slave)
        master = b.client.master if b.client.master is not None else b.master_id
        return master is None or frozenset({slave, master}) not in self.silent

    def _rest(self, s: State, checked: dict[int, int], shows: Callable[[State], bool] | None = None
              ) -> tuple[list[Action], State, dict[int, int]]:
        """The fixed order of the code's own steps from `s` until nothing new happens: a step
        back to a state already passed (a slave's periodic ack the master has read already) is
        not taken. Stop when it does not come to rest, or a dropped AlterSyncStateSet waits.
        With `shows`, only the prompt steps, each while the state still shows (`prompt_rest`)."""
        checked, path, seen = dict(checked), [], {passed(s)}
        for _ in range(QUIET_AFTER):
            for a in self._own_steps(s, checked, fixed=True):
                nxt = self._new(s, a, seen) if shows is None or a[0] in PROMPT else None
                if nxt is not None and (shows is None or shows(nxt)):
                    s = nxt
                    path.append(a)
                    seen.add(passed(s))
                    break
            else:
                return path, s, checked
        raise Stop("the model does not come to rest")

    def _own_steps(self, s: State, checked: dict[int, int], fixed: bool = False) -> Iterable[Action]:
        """The code's own steps in `s`, in the fixed order; a master's first SyncStateSet check
        of its epoch is offered once (marked in `checked`). `fixed`: for the quiet that fills a
        gap in that order, where an AlterSyncStateSet the model cannot drop stops the run, and
        a flush is left to the search when the record shows the code's flushes, as is whether a
        dead broker's checkpoint missed its confirmOffset's last move (`revert_checkpoint`). A queued
        AlterSyncStateSet goes first: the code sends it from the thread that proposed it, in
        the listener call (ReplicasManager.doReportSyncStateSetChanged), before that thread
        reads another frame. A broker not running yet sends none: it drops it (no listener yet,
        `rule_alter_sss`), whatever becomes of its RPCs."""
        for b in s.brokers:
            if b.up and b.alters:
                i = b.id
                if not b.running:
                    yield ("alter_sss", i, 0)
                elif self.sends_rpcs(i):
                    yield ("alter_sss", i, self.lost(i))
                elif not reaches_controller(s, i):
                    yield ("alter_sss_fail", i)
                elif fixed:
                    raise Stop(f"broker {i}'s AlterSyncStateSet was dropped on its way, but the model's broker "
                                "reaches the controller")
        # A promotion's end and its check before any HA step: changeToMaster submits the check at
        # once, and the slaves' HA clients reconnect seconds later (so the brokers' logs show).
        for b in s.brokers:
            if b.up and b.promoting:
                yield from (("dispatch", b.id), ("finish_promotion", b.id))
            if b.up and b.role == MASTER and not b.promoting and checked.get(b.id) != b.master_epoch:
                # changeToMaster submits checkSyncStateSetAndDoReport once (ReplicasManager.java:274)
                checked[b.id] = b.master_epoch
                yield ("check_sss", b.id)
        for b in s.brokers:
            if not b.up:
                if not fixed:  # the checkpoint's last flush came before its confirmOffset's last move
                    yield ("revert_checkpoint", b.id)
                continue
            i = b.id
            if b.role == SLAVE and self._ha_open(s, i):
                yield from (("ha_connect", i), ("ha_transfer", i), ("ha_slave_ack", i), ("ha_read_ack", i))
            yield ("ha_timeout", i)  # a connection across the model's partition found dead
            yield from (("ha_second_removal", i, x) for x in sorted(b.closing))
            for p in b.puts:
                yield from (("put_complete", i, p.msg), ("put_timeout", i, p.msg))
            yield ("dispatch", i)
            if self.eager_flush or not fixed:
                yield ("flush", i)

    def search(self, start: State, checked: dict[int, int], script: list[tuple[Action, bool]],
               shows: Callable[[State], bool]) -> Searched:
        """The shortest path from `start` that takes the operation's own actions (`script`, each
        with whether it is a kill -9, whose kept bytes are the page cache where it is taken) in
        their order, interleaved with any of the code's own steps, to a state that shows what
        the record shows (`shows`) and no AlterSyncStateSet the model cannot drop, within
        GAP_STATES states. That state need not be one the fixed order rests in: the code too
        leaves work for later when the harness finds it quiet (a slave's periodic ack, sent
        every 5 s), and what is left the next gap's search may take before its operation. The
        faults in force are the operation's after it (a bound: an HA link the operation cuts is
        cut for the own steps before it too)."""
        queue = deque([(start, 0, checked, [])])
        seen = {(start, 0)}
        while queue and len(seen) < GAP_STATES:
            s, pos, done, path = queue.popleft()
            if pos == len(script) and shows(s) and not self._dropped_alter_waits(s):
                return Searched(path, s, done, len(seen), False)
            moves = [(a, True) for a in self._own_steps(s, dict(done))]
            if pos < len(script):
                moves.append((_as_taken(s, *script[pos]), False))
            for a, own in moves:
                try:
                    nxt = step(s, a, self.cfg)
                except NotEnabled:
                    continue
                key = (nxt, pos + (not own))
                if key in seen:
                    continue
                seen.add(key)
                queue.append((nxt, key[1], _marked(done, a, nxt), path + [(a, own)]))
        return Searched(None, None, None, len(seen), not queue)

    def search_holding_back(self, start: State, checked: dict[int, int], script: list[tuple[Action, bool]],
                            rests: list[bool], shows: Callable[[State], bool]) -> Searched:
        """The second search, for a gap longer than the first reaches (a restarted master's
        slaves reconnecting, each with its transfer and its expansion): the fixed order from
        `start`, the operation's actions where the fixed order took them (`rests[i]`: the own
        steps rest before the i-th), and up to HELD_AT_MOST of the own steps it takes held back
        until nothing else moves, then let go in the order they were held: races the fixed
        order settles one way, as delay-bounded scheduling explores them (two HA connections'
        threads each proposing a SyncStateSet before the other's AlterSyncStateSet came back,
        the proposing thread waiting in its call meanwhile: `blocks`). A step is
        named with how many times the schedule took it before (`Held`). Schedules holding back
        fewer steps go first; the states of all the schedules tried count against GAP_STATES."""
        tried: set[frozenset[Held]] = set()
        queue: deque[frozenset[Held]] = deque([frozenset()])
        visited = 0
        while queue and visited < GAP_STATES:
            held = queue.popleft()
            path, s, done, shown = self._schedule(start, checked, script, rests, held, shows)
            visited += len(path) + 1
            if shown:
                return Searched(path, s, done, visited, False)
            if len(held) < HELD_AT_MOST:
                taken: dict[Action, int] = {}
                for a, own in path:
                    more = held | {(a, taken.get(a, 0))}
                    taken[a] = taken.get(a, 0) + 1
                    if own and taken[a] <= HELD_OCCURRENCES and more not in tried:
                        tried.add(more)
                        queue.append(more)
        return Searched(None, None, None, visited, not queue)

    def _schedule(self, start: State, checked: dict[int, int], script: list[tuple[Action, bool]], rests: list[bool],
                  held: frozenset[Held], shows: Callable[[State], bool]
                  ) -> tuple[list[tuple[Action, bool]], State | None, dict[int, int], bool]:
        """One schedule of `search_holding_back`: the path it takes, where it ends (None when an
        operation's action is not enabled where it comes, or the code's steps do not rest), and
        whether that state shows what the record shows. Once the operation's actions are taken,
        it ends at the first state that does: the code too may leave work for later, as a slave's
        periodic ack (`search`)."""
        s, done, path, seen = start, dict(checked), [], {passed(start)}
        todo = list(zip(script, rests))
        taken: dict[Action, int] = {}
        waiting: list[Held] = []  # held back, in the order they were
        blocks: dict[Held, Action] = {}  # a held AlterSyncStateSet -> the ack read that proposed it
        for _ in range(QUIET_AFTER):
            if not todo and shows(s) and not self._dropped_alter_waits(s):
                return path, s, done, True
            nxt = a = None
            if not todo or todo[0][1]:
                for a in self._own_steps(s, dict(done)):
                    if any(blocks.get(k) == a for k in waiting):
                        continue  # the HA read thread that proposed waits in its AlterSyncStateSet call
                    nxt, key = self._new(s, a, seen), (a, taken.get(a, 0))
                    if nxt is not None and key not in held:
                        break
                    if nxt is not None and key not in waiting:
                        waiting.append(key)
                        if a[0] == "alter_sss" and path and path[-1][0][0] == "ha_read_ack":
                            blocks[key] = path[-1][0]
                    nxt = None
                if nxt is None and waiting:
                    held = held - {waiting.pop(0)}  # nothing else moves: the first held step goes
                    continue
            if nxt is None:
                if not todo:
                    return path, s, done, False
                a = _as_taken(s, *todo.pop(0)[0])
                try:
                    nxt = step(s, a, self.cfg)
                except NotEnabled:
                    return path, None, done, False
                path.append((a, False))
            else:
                path.append((a, True))
                taken[a] = taken.get(a, 0) + 1
            done = _marked(done, a, nxt)
            s = nxt
            seen.add(passed(s))
        return path, None, done, False

    def prompt_rest(self, s: State, checked: dict[int, int], shows: Callable[[State], bool]
                    ) -> tuple[list[Action], State]:
        """The code's prompt steps (PROMPT) a search left undone, taken in the fixed order while
        the state still shows what the record shows. A search stops at the first state that
        does, and no view shows a dispatch or a put's completion; but the code does them within
        milliseconds (ReputMessageService polls every millisecond, GroupTransferService wakes at
        each ack), long before the harness reads its view, so the next operation finds them done
        (durable3 seed 500, from step 222: a slave stuck 90 s in its truncation made every put
        step a search's, and the puts the searches left pending outlived their deadlines). The
        found state holds no dropped AlterSyncStateSet and these steps queue none, so the fixed
        order's Stop for one cannot come."""
        path, s, _ = self._rest(s, checked, shows)
        return path, s

    def _new(self, s: State, a: Action, seen: set[State]) -> State | None:
        """`a` taken in `s`, if enabled and not back to a state already passed."""
        try:
            nxt = step(s, a, self.cfg)
        except NotEnabled:
            return None
        return None if passed(nxt) in seen else nxt

    def _dropped_alter_waits(self, s: State) -> bool:
        """An AlterSyncStateSet waits that the code dropped on its way where the model's broker
        reaches the controller (the model fails one only across a partition or a controller
        cut, which the follower takes for every dropped path: so only if that was not enabled)."""
        return any(b.up and b.alters and not self.sends_rpcs(b.id) and reaches_controller(s, b.id) for b in s.brokers)
