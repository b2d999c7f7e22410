"""Human-readable summaries of states and of what one step changed (for replay tables)."""

from __future__ import annotations

from rmqcheck.model.broker import Broker, max_phy
from rmqcheck.model.world import State


def _sset(s: frozenset[int]) -> str:
    return "{" + ",".join(map(str, sorted(s))) + "}"


def broker_line(b: Broker) -> str:
    if not b.up:
        return f"b{b.id} down log={max_phy(b)} epochs={list(b.epochs.disk)}"
    role = b.role + (f"(promoting {b.promoting})" if b.promoting else "")
    return (
        f"b{b.id} {role} epoch={b.master_epoch} log={max_phy(b)} flushed={b.log.flushed} confirm={b.confirm} "
        f"reput={b.reput} epochs={list(b.epochs.entries)} sss={_sset(b.sss)}@{b.sss_epoch}"
        + (f" proposing={_sset(b.remote_sss)}" if b.synchronizing else "")
        + (f" ha={b.client.state}->{b.client.master}" if b.client.master else "")
    )


def state_lines(s: State) -> list[str]:
    c = s.ctrl.applied
    lines = [
        f"controller master={c.master} epoch={c.master_epoch} sss={_sset(c.sss)}@{c.sss_epoch} now={s.now}"
        + (f" cut={_sset(s.cut)}" if s.cut else "")
        + (f" off-controller={_sset(s.off_controller)}" if s.off_controller else "")
    ]
    lines += [broker_line(b) for b in s.brokers]
    return lines


def _broker_changes(a: Broker, b: Broker) -> list[str]:
    out = []
    if a.up != b.up:
        return [f"b{b.id} {'up' if b.up else 'down'} (log {max_phy(a)}->{max_phy(b)})"]
    if not b.up:
        if a.epochs.disk == b.epochs.disk:
            return []
        return [f"b{b.id} epoch file lost" if not b.epochs.disk else f"b{b.id} epoch file back to {list(b.epochs.disk)}"]
    if (a.role, a.promoting, a.running) != (b.role, b.promoting, b.running):
        role = b.role + (f"(promoting {b.promoting})" if b.promoting else "") + ("" if b.running else ",fenced")
        out.append(f"b{b.id} {role}")
    if a.master_epoch != b.master_epoch:
        out.append(f"b{b.id} masterEpoch {a.master_epoch}->{b.master_epoch}")
    if max_phy(a) != max_phy(b):
        out.append(f"b{b.id} log {max_phy(a)}->{max_phy(b)}")
    if a.epochs.entries != b.epochs.entries:
        out.append(f"b{b.id} epochs {list(b.epochs.entries)}")
    if a.confirm != b.confirm:
        out.append(f"b{b.id} confirm {a.confirm}->{b.confirm}")
    if a.reput != b.reput:
        out.append(f"b{b.id} dispatched {a.reput}->{b.reput}")
    if (a.sss, a.sss_epoch) != (b.sss, b.sss_epoch):
        out.append(f"b{b.id} sss {_sset(b.sss)}@{b.sss_epoch}")
    if (a.synchronizing, a.remote_sss) != (b.synchronizing, b.remote_sss):
        out.append(f"b{b.id} proposing {_sset(b.remote_sss)}" if b.synchronizing else f"b{b.id} synchronized")
    if b.client.ack is not None and a.client.ack != b.client.ack:
        out.append(f"b{b.id} acks {b.client.ack}")
    if a.client.state != b.client.state:
        out.append(f"b{b.id} ha {b.client.state}" + (f"->{b.client.master}" if b.client.master else ""))
    if len(a.alters) < len(b.alters):
        out.append(f"b{b.id} queues alter {_sset(b.alters[-1][0])}")
    if a.consumer_offsets != b.consumer_offsets:
        out.append(f"b{b.id} consumer offsets {list(b.consumer_offsets)}")
    return out


def changes(pre: State, post: State) -> str:
    out: list[str] = []
    c0, c1 = pre.ctrl.applied, post.ctrl.applied
    if (c0.master, c0.master_epoch) != (c1.master, c1.master_epoch):
        out.append(f"controller master {c1.master} epoch {c1.master_epoch}")
    if (c0.sss, c0.sss_epoch) != (c1.sss, c1.sss_epoch):
        out.append(f"controller sss {_sset(c1.sss)}@{c1.sss_epoch}")
    if pre.ctrl.pending != post.ctrl.pending:
        out.append(f"controller unapplied {len(post.ctrl.pending)}")
    if pre.cut != post.cut:
        out.append(f"partition {_sset(post.cut)}" if post.cut else "healed")
    if pre.off_controller != post.off_controller:
        cut = post.off_controller
        out.append(f"controller paths cut {_sset(cut)}" if cut else "controller paths healed")
    if pre.now != post.now:
        out.append(f"now={post.now}")
    for a, b in zip(pre.brokers, post.brokers):
        out += _broker_changes(a, b)
    for old, new in zip(pre.sends, post.sends):
        if old.status != new.status:
            out.append(f"msg {new.msg} {new.status}")
    for r in post.sends[len(pre.sends) :]:
        out.append(f"msg {r.msg} {r.status}" if r.msg else f"send refused: {r.status}")
    for r in post.reads[len(pre.reads) :]:
        out.append(f"consumed msg {r.msg} (queue {r.queue}/{r.queue_offset}) from b{r.broker}")
    return "; ".join(out)
