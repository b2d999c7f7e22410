"""The invariant catalogue (reference/known-bugs.md §1, I1-I10).

Each invariant is a pure predicate over a state (`check`) or over one step (`check_step`,
given the state before, the action and the state after); it returns a list of violation
messages, empty when it holds. `expected(cfg)` says whether it is expected to hold under a
configuration: a violation where it is not expected is the guarantee the configuration gives
up (for example acked loss under the defaults, C4 / #7017), reported but not a harness failure.

Vocabulary: an *acting master* is a live, unfenced broker in the MASTER role that is not
mid-promotion; it is *confirmed* when the controller also names it master at its epoch.

One module on purpose (over 500 lines): the catalogue is one list whose entries share the
vocabulary above, and `rmqcheck invariants` prints it in this order.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterable, NamedTuple

from rmqcheck.model import commitlog as cl
from rmqcheck.model import controller as ctl
from rmqcheck.model import epochfile as ef
from rmqcheck.model.broker import MASTER, TRANSFER, Broker, get_confirm_offset, max_phy, sync_state_set
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, alive_set, bootstrap_actions, empty_cluster, format_action, step
from rmqcheck.model.world import State

StateCheck = Callable[[State, Config], list[str]]
StepCheck = Callable[[State, Action, State, Config], list[str]]


class Invariant(NamedTuple):
    """One named safety property; each mode has a table of them (this catalogue for controller
    mode, invariants/classic.py and invariants/dledger.py for the others), checked by
    `state_violations`/`step_violations`."""

    id: str
    name: str
    statement: str
    expected: Callable[[Config], bool]
    expected_when: str  # the expectation in words
    check: StateCheck | None = None
    check_step: StepCheck | None = None


class Violation(NamedTuple):
    invariant: str
    message: str


# --- configuration predicates -----------------------------------------------------------------


def durable(cfg: Config) -> bool:
    """allAckInSyncStateSet, SYNC_FLUSH, no unclean election, no epoch-file loss."""
    return cfg.all_ack and cfg.sync_flush and not cfg.unclean and cfg.faults.epoch_file_losses == 0


DURABLE_WHEN = "allAckInSyncStateSet=true, SYNC_FLUSH, enableElectUncleanMaster=false, no epoch-file loss"


def _always(cfg: Config) -> bool:
    return True


# --- helpers ----------------------------------------------------------------------------------


def acting_masters(s: State) -> list[Broker]:
    return [b for b in s.brokers if b.up and b.running and b.role == MASTER and not b.promoting]


def confirmed_master(s: State) -> Broker | None:
    """The acting master the controller also names, at the controller's epoch."""
    applied = s.ctrl.applied
    for b in acting_masters(s):
        if applied.master == b.id and b.master_epoch == applied.master_epoch:
            return b
    return None


def _queue_offsets(b: Broker, s: State) -> dict[int, list[int]]:
    per_queue: dict[int, list[int]] = {}
    for m in cl.messages_in(b.log, b.log.base, max_phy(b), s.msgs):
        per_queue.setdefault(m.queue, []).append(m.queue_offset)
    return per_queue


def _describe(m: cl.Message) -> str:
    return (
        f"msg {m.id} (offset {m.offset}, queue {m.queue}/{m.queue_offset}, "
        f"written by broker {m.writer} in epoch {m.epoch})"
    )


# --- I1 --------------------------------------------------------------------------------------


def i1_acked_durability(s: State, cfg: Config) -> list[str]:
    m = confirmed_master(s)
    if m is None:
        return []
    return [
        f"{_describe(a)} was acked (PUT_OK) but broker {m.id}, master at epoch {m.master_epoch}, does not hold it"
        for a in s.acked()
        if not cl.has_message(m.log, a)
    ]


# --- I2 --------------------------------------------------------------------------------------


def i2_isr_safety(s: State, cfg: Config) -> list[str]:
    out = []
    sss = ctl.committed(s.ctrl).sss
    acked = s.acked()
    for b_id in sorted(sss):
        b = s.broker(b_id)
        for a in acked:
            if not cl.has_message(b.log, a):
                out.append(
                    f"broker {b_id} is in the controller's SyncStateSet {sorted(sss)} but lacks acked {_describe(a)}"
                )
    for m in acting_masters(s):
        if s.ctrl.applied.master != m.id or m.master_epoch != s.ctrl.applied.master_epoch:
            continue
        effective = sync_state_set(m, cfg)
        if not sss <= effective:
            out.append(
                f"master {m.id} acks with SyncStateSet {sorted(effective)} (local {sorted(m.sss)}, "
                f"proposed {sorted(m.remote_sss) if m.synchronizing else '-'}), which misses controller members "
                f"{sorted(sss - effective)}"
            )
    return out


# --- I3 --------------------------------------------------------------------------------------


def i3_no_read_uncommitted(s: State, cfg: Config) -> list[str]:
    m = confirmed_master(s)
    if m is None:
        return []
    out = []
    seen = set()
    for r in s.reads:
        if r.msg in seen:
            continue
        seen.add(r.msg)
        msg = s.msgs[r.msg - 1]
        if not cl.has_message(m.log, msg):
            out.append(
                f"{_describe(msg)} was consumed from broker {r.broker} but master {m.id} "
                f"(epoch {m.master_epoch}) no longer holds it"
            )
    counts = _queue_offsets(m, s)
    for q, co in enumerate(m.consumer_offsets):
        top = max(counts.get(q, [-1])) + 1
        if co > top:
            out.append(f"master {m.id}: committed consumer offset {co} of queue {q} is past its queue end {top}")
    return out


def i3b_consumer_offsets_truncated(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    out = []
    for b0, b1 in zip(pre.brokers, post.brokers):
        if b0.up and b1.up and max_phy(b1) < max_phy(b0):
            for q, co in enumerate(b1.consumer_offsets):
                if co > len(b1.cq[q]):
                    out.append(
                        f"broker {b1.id} truncated its log to {max_phy(b1)} but its committed consumer "
                        f"offset {co} of queue {q} still points past the queue end {len(b1.cq[q])}"
                    )
    return out


# --- I11 -------------------------------------------------------------------------------------


def i11_no_skipped_message(s: State, cfg: Config) -> list[str]:
    m = confirmed_master(s)
    if m is None:
        return []
    read = {r.msg for r in s.reads}
    out = []
    for q, queue in enumerate(m.cq):
        for who, pos in ((f"master {m.id}'s committed offset", m.consumer_offsets[q]), ("the consumer", s.consumer[q])):
            unread = [i for i in queue[: max(pos, 0)] if i not in read]
            if unread:
                msg = s.msgs[unread[0] - 1]
                out.append(f"{who} {pos} in queue {q} is past {_describe(msg)}, which no consumer read")
    return out


# --- I4 --------------------------------------------------------------------------------------


def i4_confirm_sanity(s: State, cfg: Config) -> list[str]:
    out = []
    for b in s.brokers:
        if b.up and b.confirm > max_phy(b):
            out.append(f"broker {b.id}: stored confirmOffset {b.confirm} exceeds maxPhyOffset {max_phy(b)}")
    for m in acting_masters(s):
        c = get_confirm_offset(m, cfg)
        if c < 0 and max_phy(m) > m.log.base:
            out.append(f"master {m.id}: confirmOffset is {c} with data in the log")
        last = dict(m.last_acks)
        for member in sorted(sync_state_set(m, cfg) - {m.id}):
            if member in last and c > last[member]:
                out.append(
                    f"master {m.id}: confirmOffset {c} is beyond SyncStateSet member {member}'s last ack {last[member]}"
                )
    return out


def i4_confirm_monotonic(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    """Not confirmOffset itself: a slave acks a torn tail (batches are not message-aligned),
    cuts it on reconnect (`truncateInvalidMsg`) and acks less, so the real confirmOffset goes
    back to the message boundary below it (docs/findings.md). What must not go back is that
    boundary: the messages consumers may already read."""
    out = []
    before = {b.id: b for b in acting_masters(pre)}
    for b in acting_masters(post):
        old = before.get(b.id)
        if old is not None and old.master_epoch == b.master_epoch:
            c0, c1 = get_confirm_offset(old, cfg), get_confirm_offset(b, cfg)
            # how far dispatch can go below each: it dispatches whole messages
            f0, f1 = cl.message_floor(old.log, c0), cl.message_floor(b.log, c1)
            if f1 < f0:
                out.append(
                    f"master {b.id}: confirmOffset went back from {c0} to {c1} within epoch {b.master_epoch}, "
                    f"past the message boundary {f0}"
                )
    return out


# --- I5 --------------------------------------------------------------------------------------


def _epoch_ranges(b: Broker) -> dict[tuple[int, int], tuple[int, int]]:
    entries = b.epochs.entries
    out = {}
    for i, (e, start) in enumerate(entries):
        end = entries[i + 1][1] if i + 1 < len(entries) else max_phy(b)
        out[(e, start)] = (start, min(end, max_phy(b)))
    return out


def i5_epoch_log_matching(s: State, cfg: Config) -> list[str]:
    out = []
    ranges = [(b, _epoch_ranges(b)) for b in s.brokers]
    for i, (a, ra) in enumerate(ranges):
        for b, rb in ranges[i + 1 :]:
            for key in ra.keys() & rb.keys():
                lo, hi = key[1], min(ra[key][1], rb[key][1])
                if cl.read(a.log, lo, hi - lo) != cl.read(b.log, lo, hi - lo):
                    out.append(
                        f"brokers {a.id} and {b.id} both record epoch {key[0]} from offset {key[1]} "
                        f"but their logs differ in [{lo}, {hi})"
                    )
    for b in s.brokers:
        if not b.up or b.client.state != TRANSFER or b.client.master is None:
            continue
        m = s.broker(b.client.master)
        if not m.up:
            continue
        for o in cl.offsets(b.log, max_phy(m)):
            eb, em = attributed(b.epochs.entries, o), attributed(m.epochs.entries, o)
            if eb is not None and em is not None and eb != em:
                out.append(f"slave {b.id} attributes offset {o} to epoch {eb}, its master {m.id} to epoch {em}")
                break
    return out


def attributed(entries: tuple[ef.Entry, ...], offset: int) -> int | None:
    """The epoch an epoch list attributes an offset to: the last entry starting at or before it
    (what the list means once a stale last end (Q1) is repaired by the next append or reload)."""
    epoch = None
    for e, start in entries:
        if start > offset:
            break
        epoch = e
    return epoch


# --- I6 --------------------------------------------------------------------------------------


def i6_unique_master_per_epoch(s: State, cfg: Config) -> list[str]:
    out = []
    grants = s.ctrl.grants
    for (e0, m0), (e1, m1) in zip(grants, grants[1:]):
        if e1 <= e0:
            out.append(f"the controller handed out masterEpoch {e1} (broker {m1}) after {e0} (broker {m0})")
    by_epoch: dict[int, list[int]] = {}
    for b in s.brokers:
        if b.up and b.role == MASTER:
            by_epoch.setdefault(b.master_epoch, []).append(b.id)
    for epoch, ids in sorted(by_epoch.items()):
        if len(ids) > 1:
            out.append(f"brokers {ids} all act as master with masterEpoch {epoch}")
    return out


# --- I7 --------------------------------------------------------------------------------------


def _truly_alive(s: State, b: int, cfg: Config) -> bool:
    """Alive by the heartbeats that in fact reached the controller (the `reports` ghost), under
    the controller's own rule (`isBrokerActive`): a broker that died less than a heartbeat
    timeout ago still counts, since no controller can know sooner."""
    r = s.reports[b - 1]
    return r is not None and r.last_update + cfg.heartbeat_timeout >= s.now


def i7_election_eligibility(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    """Judged against what the brokers in fact reported, not against the controller's table,
    so an election made on a stale or corrupted view fails it; the first election too."""
    new = post.ctrl.grants[len(pre.ctrl.grants) :]
    applied = pre.ctrl.applied
    out = []
    eligible = [b for b in sorted(applied.sss) if _truly_alive(post, b, cfg)]
    for epoch, w in new:
        if not _truly_alive(post, w, cfg):
            r = post.reports[w - 1]
            last = "never reported" if r is None else f"last reported at t={r.last_update}"
            out.append(
                f"broker {w} was elected (epoch {epoch}) although it {last} (now t={post.now}, "
                f"heartbeat timeout {cfg.heartbeat_timeout})"
            )
        if w in cfg.async_learners:
            out.append(f"async learner {w} was elected master (epoch {epoch})")
        if applied.master_epoch == 0:
            continue  # the first election defines the SyncStateSet; nothing to rank against
        if w not in applied.sss and not cfg.unclean:
            out.append(f"broker {w} was elected (epoch {epoch}) from outside the SyncStateSet {sorted(applied.sss)}")
        mine = post.reports[w - 1]
        if action[0] == "admin_elect" or w == applied.master or mine is None:
            continue
        better = [
            b for b in eligible
            if b != w and (post.reports[b - 1].epoch, post.reports[b - 1].max_offset) > (mine.epoch, mine.max_offset)
        ]
        if better:
            rows = ", ".join(f"broker {b} {_reported(post, b)}" for b in [w] + better)
            out.append(
                f"broker {w} was elected (epoch {epoch}) over eligible brokers {better} whose last heartbeats "
                f"reported a larger (epoch, maxOffset): {rows}"
            )
    return out


def _reported(s: State, b: int) -> str:
    r = s.reports[b - 1]
    return f"(epoch {r.epoch}, maxOffset {r.max_offset})"


def i7b_election_by_controller_view(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    """I7 as the controller saw it: liveness and heartbeat data from its own table. Weaker
    than I7 (a stale table satisfies it), but it separates a wrong election policy from a
    wrong view: I7b fails only when the policy misranks the data it was given."""
    new = post.ctrl.grants[len(pre.ctrl.grants) :]
    applied = pre.ctrl.applied
    if not new or applied.master_epoch == 0:
        return []
    out = []
    # Liveness as the controller saw it when it elected: after any heartbeat the same action
    # sent first (a starting broker heartbeats before it asks to be elected).
    alive = alive_set(post, cfg)
    live = post.ctrl.live
    eligible = frozenset(b for b in applied.sss if b in alive)
    for epoch, w in new:
        if w not in alive:
            out.append(f"broker {w} was elected (epoch {epoch}) although the controller saw it dead")
        if action[0] == "admin_elect" or w == applied.master:
            continue
        info = live[w - 1]
        better = [
            b
            for b in sorted(eligible)
            if b != w
            and info is not None
            and (live[b - 1].epoch, live[b - 1].max_offset) > (info.epoch, info.max_offset)
        ]
        if better:
            out.append(
                f"broker {w} was elected (epoch {epoch}) over eligible brokers {better} with a larger "
                f"(epoch, maxOffset) in the controller's heartbeat view"
            )
    return out


# --- I8 --------------------------------------------------------------------------------------


def i8_queue_offsets(s: State, cfg: Config) -> list[str]:
    out = []
    for b in s.brokers:
        for q, offsets in _queue_offsets(b, s).items():
            if any(y <= x for x, y in zip(offsets, offsets[1:])):
                out.append(f"broker {b.id}: queue {q} offsets in log order are {offsets}, not strictly increasing")
    for m in acting_masters(s):
        for q, offsets in _queue_offsets(m, s).items():
            if m.queue_table[q] <= max(offsets):
                out.append(
                    f"master {m.id} will assign queue offset {m.queue_table[q]} in queue {q}, "
                    f"which its log already holds up to {max(offsets)}"
                )
    return out


# --- I9 --------------------------------------------------------------------------------------


def _boundaries(log: cl.CommitLog, s: State) -> set[int]:
    out = {log.base}
    off = log.base
    while True:
        ok, size = cl.check_message(log, off, s.msgs)
        if not ok:
            return out
        off += size
        out.add(off)


def i9_truncation_safety(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    out = []
    for b0, b1 in zip(pre.brokers, post.brokers):
        if not (b0.up and b1.up) or max_phy(b1) >= max_phy(b0):
            continue
        cut = max_phy(b1)
        bounds = _boundaries(b0.log, pre)
        if cut not in bounds:
            out.append(f"broker {b1.id} truncated its log at {cut}, which is not a message boundary")
        elif action[0] != "ha_connect" and cut < max(bounds):
            # Only the handshake may cut whole valid messages (a divergent suffix); a torn-tail
            # cut must stop at the first invalid message.
            lost = cl.messages_in(b0.log, cut, max(bounds), pre.msgs)
            out.append(f"broker {b1.id} cut valid messages {[m.id for m in lost]} while removing a torn tail")
    return out


# --- I10 -------------------------------------------------------------------------------------


def i10_write_authority(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    if action[0] != "send" or len(post.msgs) == len(pre.msgs):
        return []
    b = pre.broker(action[1])
    if (b.master_epoch, b.id) not in pre.ctrl.grants:
        return [
            f"broker {b.id} accepted msg {post.msgs[-1].id} as master with masterEpoch {b.master_epoch}, "
            f"which the controller never granted it"
        ]
    return []


# --- I12 -------------------------------------------------------------------------------------


def i12_write_availability(pre: State, action: Action, post: State, cfg: Config) -> list[str]:
    """No timing assumption: judged at the step that fails a put, on what the master had read.
    Without it a model in which every allAck put times out passes every safety check."""
    if action[0] != "put_timeout":
        return []
    b = pre.broker(action[1])
    p = next((x for x in b.puts if x.msg == action[2]), None)
    if p is None or p.need_ack != -1:
        return []
    members = sync_state_set(b, cfg)
    acked = {c.slave for c in b.conns if c.ack >= p.next_offset} | {b.id}
    if not members <= acked:
        return []
    return [f"broker {b.id} failed msg {p.msg} (FLUSH_SLAVE_TIMEOUT) though every member of its SyncStateSet "
            f"{sorted(members)} had acked up to its end, offset {p.next_offset}"]


CATALOGUE: tuple[Invariant, ...] = (
    Invariant(
        "I1",
        "acked_durability",
        "Every acked message is in the log of the controller-confirmed master.",
        durable,
        DURABLE_WHEN,
        check=i1_acked_durability,
    ),
    Invariant(
        "I2",
        "isr_safety",
        "Every member of the controller's SyncStateSet holds every acked message, and the confirmed "
        "master acks with a set that covers the controller's.",
        durable,
        DURABLE_WHEN,
        check=i2_isr_safety,
    ),
    Invariant(
        "I3",
        "no_read_uncommitted",
        "Every consumed message stays in the log of the confirmed master, and its committed consumer "
        "offsets do not point past its queue ends.",
        durable,
        DURABLE_WHEN,
        check=i3_no_read_uncommitted,
    ),
    Invariant(
        "I3b",
        "consumer_offsets_follow_truncation",
        "After a commit-log truncation no committed consumer offset points past the queue end.",
        _always,
        "always",
        check_step=i3b_consumer_offsets_truncated,
    ),
    Invariant(
        "I4",
        "confirm_offset_sanity",
        "confirmOffset never exceeds maxPhyOffset, is never -1 on a master holding data, never passes "
        "the last ack of a SyncStateSet member (connected or not), and within one master epoch never "
        "goes back past the start of the message it points into.",
        lambda cfg: cfg.all_ack,
        "allAckInSyncStateSet=true",
        check=i4_confirm_sanity,
        check_step=i4_confirm_monotonic,
    ),
    Invariant(
        "I5",
        "epoch_log_matching",
        "Replicas that record the same (epoch, startOffset) hold the same bytes over that epoch's common "
        "range, and a connected slave attributes every offset to the same epoch as its master.",
        lambda cfg: cfg.sync_flush and cfg.faults.epoch_file_losses == 0,
        "SYNC_FLUSH and no epoch-file loss (under ASYNC_FLUSH a crash can lose commit-log bytes the epoch file still covers)",
        check=i5_epoch_log_matching,
    ),
    Invariant(
        "I6",
        "unique_master_per_epoch",
        "masterEpoch values handed out by the controller strictly increase, and no two brokers act as "
        "master with the same masterEpoch.",
        _always,
        "always",
        check=i6_unique_master_per_epoch,
    ),
    Invariant(
        "I7",
        "election_eligibility",
        "Judged by the heartbeats that in fact reached the controller, not by the controller's table: an "
        "elected master was alive, not an async learner, in the SyncStateSet (after the first election), "
        "and (unless it is the old master or designated by an admin) reported a maximal (epoch, maxOffset) "
        "among the live members of the SyncStateSet.",
        lambda cfg: not cfg.unclean,
        "enableElectUncleanMaster=false",
        check_step=i7_election_eligibility,
    ),
    Invariant(
        "I7b",
        "election_by_controller_view",
        "I7's liveness and ranking as the controller's own heartbeat table shows them: the election "
        "policy picks a live, best-ranked member of what it was given.",
        lambda cfg: not cfg.unclean,
        "enableElectUncleanMaster=false",
        check_step=i7b_election_by_controller_view,
    ),
    Invariant(
        "I8",
        "queue_offset_uniqueness",
        "Queue offsets in every log strictly increase per queue, and a master's next queue offset is "
        "above every one its log holds.",
        _always,
        "always",
        check=i8_queue_offsets,
    ),
    Invariant(
        "I9",
        "truncation_safety",
        "A truncation cuts at a message boundary, and cutting a torn tail never removes a valid message.",
        _always,
        "always",
        check_step=i9_truncation_safety,
    ),
    Invariant(
        "I10",
        "write_authority",
        "A broker accepts a write only as master at a (masterEpoch, broker) the controller granted.",
        _always,
        "always",
        check_step=i10_write_authority,
    ),
    Invariant(
        "I11",
        "no_skipped_message",
        "Seed 003's promise for consumer offsets: they may go back (duplicates) but never forward past "
        "an unread message. Every message the confirmed master's consume queue holds below its "
        "committed offset, or below the consumer's in-memory offset, was read.",
        durable,
        DURABLE_WHEN,
        check=i11_no_skipped_message,
    ),
    Invariant(
        "I12",
        "write_availability",
        "An allAck put is not failed once every member of the master's SyncStateSet has acked past "
        "its end and the master has read those acks (GroupTransferService.doWaitTransfer).",
        _always,
        "always",
        check_step=i12_write_availability,
    ),
)

BY_ID: dict[str, Invariant] = {inv.id: inv for inv in CATALOGUE}


def state_violations(table: Iterable[Invariant], s: Any, cfg: Any, ids: frozenset[str] | None) -> list[Violation]:
    """The state checks of `table` (those in `ids`, or all) on one state."""
    return [
        Violation(inv.id, msg)
        for inv in table
        if inv.check is not None and (ids is None or inv.id in ids)
        for msg in inv.check(s, cfg)
    ]


def step_violations(
    table: Iterable[Invariant], pre: Any, action: Action, post: Any, cfg: Any, ids: frozenset[str] | None
) -> list[Violation]:
    """The transition checks of `table` (those in `ids`, or all) on one step."""
    return [
        Violation(inv.id, msg)
        for inv in table
        if inv.check_step is not None and (ids is None or inv.id in ids)
        for msg in inv.check_step(pre, action, post, cfg)
    ]


def check_state(s: State, cfg: Config, ids: frozenset[str] | None = None) -> list[Violation]:
    return state_violations(CATALOGUE, s, cfg, ids)


def check_transition(
    pre: State, action: Action, post: State, cfg: Config, ids: frozenset[str] | None = None
) -> list[Violation]:
    return step_violations(CATALOGUE, pre, action, post, cfg, ids)


@lru_cache(maxsize=256)
def bootstrap_violations(cfg: Config) -> tuple[Violation, ...]:
    """Every invariant over the bootstrap that builds the initial state (model/step.py): the
    empty cluster, each registration and the first election, each as a step. The states it
    passes through are checked too, all but the last, which is the initial state itself."""
    s = empty_cluster(cfg)
    out = [Violation(v.invariant, f"in the empty cluster: {v.message}") for v in check_state(s, cfg)]
    actions = bootstrap_actions(cfg)
    for i, a in enumerate(actions):
        n = step(s, a, cfg)
        found = check_transition(s, a, n, cfg) + (check_state(n, cfg) if i < len(actions) - 1 else [])
        out += [Violation(v.invariant, f"during the bootstrap, at {format_action(a)}: {v.message}") for v in found]
        s = n
    return tuple(out)


def check_start(s: State, cfg: Config, ids: frozenset[str] | None = None) -> list[Violation]:
    """The checks of a run's first state `s`: those of the bootstrap that built the initial
    state, then those of `s` itself, so no invariant starts being evaluated late."""
    boot = [v for v in bootstrap_violations(cfg) if ids is None or v.invariant in ids]
    return boot + check_state(s, cfg, ids)


def expected_ids(cfg: Config) -> frozenset[str]:
    return frozenset(inv.id for inv in CATALOGUE if inv.expected(cfg))
