"""Pictures of a controller-mode counterexample, drawn with matplotlib (Agg, no display):

* a message-sequence diagram: the client, each broker and the controller as lanes, one row per
  action, an arrow from who acts to whom it reaches, faults in red;
* a per-replica timeline: log end, flushed offset and confirmOffset after every step, with the
  last epoch of the replica's epoch file written where it changes.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rmqcheck.model import epochfile as ef  # noqa: E402
from rmqcheck.model.broker import max_phy  # noqa: E402
from rmqcheck.model.config import Config  # noqa: E402
from rmqcheck.model.step import ACTIONS, Action, format_action  # noqa: E402
from rmqcheck.model.world import State  # noqa: E402

CLIENT, CONTROLLER = "client", "controller"
FAULT = "#c0392b"
_TO_CONTROLLER = {"alter_sss", "alter_sss_fail", "sync_replica_info", "register", "heartbeat"}


def _master_of(s: State, slave: int) -> int | None:
    """The broker a slave's HA client talks to, or the one acting as master."""
    b = s.broker(slave)
    if b.client.master is not None:
        return b.client.master
    return b.master_id


def arrow(a: Action, pre: State) -> tuple[str, str]:
    """(from lane, to lane) of an action; equal lanes mean a local event."""
    kind, args = a[0], a[1:]
    broker = f"broker {args[0]}" if args and isinstance(args[0], int) and kind != "partition" else None
    if kind == "send":
        return CLIENT, broker
    if kind in ("consume", "put_complete", "put_timeout"):
        return broker, CLIENT
    if kind in _TO_CONTROLLER:
        return broker, CONTROLLER
    if kind in ("ha_connect", "ha_slave_ack", "ha_transfer", "conn_reset", "sync_consumer_offsets",
                "ha_read_ack", "ha_timeout", "ha_linger", "ha_close_lingering"):
        master = _master_of(pre, args[0])
        other = f"broker {master}" if master is not None else broker
        if kind in ("ha_read_ack", "ha_timeout", "ha_close_lingering"):  # the master's side of the slave's connection
            return other, other
        return (other, broker) if kind in ("ha_transfer", "sync_consumer_offsets") else (broker, other)
    if kind in ("hb_timeout", "admin_elect"):
        return CONTROLLER, broker
    if kind == "consumer_restart":
        return CLIENT, CLIENT
    if broker is not None:
        return broker, broker
    return CONTROLLER, CONTROLLER  # controller_elect, controller_apply, controller_failover, tick, heal, partition


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def sequence_diagram(cfg: Config, actions: tuple[Action, ...], states: list[State], violated_at: int | None) -> bytes:
    lanes = [CLIENT, *(f"broker {i}" for i in range(1, cfg.brokers + 1)), CONTROLLER]
    x = {name: i for i, name in enumerate(lanes)}
    n = len(actions)
    fig, ax = plt.subplots(figsize=(2.2 * len(lanes) + 5, 0.42 * n + 1.4))
    for name, i in x.items():
        ax.plot([i, i], [0.3, n + 0.7], color="#999", lw=1, zorder=0)
        ax.text(i, 0, name, ha="center", va="bottom", fontsize=10, weight="bold")
    for step, a in enumerate(actions, start=1):
        pre = states[step - 1]
        src, dst = arrow(a, pre)
        fault = ACTIONS[a[0]].fault is not None
        colour = FAULT if fault else "#2c3e50"
        y = step
        if a[0] == "partition":
            cut = [f"broker {b}" for b in range(1, cfg.brokers + 1) if a[1] >> (b - 1) & 1]
            for lane in cut:
                ax.plot(x[lane], y, marker="X", color=FAULT, ms=11)
        elif src == dst:
            ax.plot(x[src], y, marker="X" if fault else "o", color=colour, ms=9 if fault else 5)
        else:
            lost = a[0] in ("alter_sss", "sync_replica_info", "register") and a[-1] is True
            ax.annotate("", xy=(x[dst], y), xytext=(x[src], y),
                        arrowprops=dict(arrowstyle="->", color=colour, lw=1.6, ls="--" if lost else "-"))
        label = f"{step}. {format_action(a)}"
        ax.text(len(lanes) - 0.6, y, label, va="center", fontsize=8.5, color=colour,
                weight="bold" if step == violated_at else "normal")
        if step == violated_at:
            ax.axhspan(y - 0.45, y + 0.45, color="#f9e79f", zorder=-1)
    ax.set_xlim(-0.6, len(lanes) + 4.5)
    ax.set_ylim(n + 1, -0.6)
    ax.axis("off")
    return _png(fig)


def timeline(cfg: Config, states: list[State], violated_at: int | None) -> bytes:
    steps = range(len(states))
    fig, axes = plt.subplots(cfg.brokers, 1, figsize=(9, 2.1 * cfg.brokers + 0.4), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0], start=1):
        brokers = [s.broker(i) for s in states]
        ax.step(steps, [max_phy(b) for b in brokers], where="post", label="log end (maxPhyOffset)", lw=2)
        ax.step(steps, [b.log.flushed for b in brokers], where="post", label="flushed", ls="--")
        ax.step(steps, [b.confirm for b in brokers], where="post", label="confirmOffset", ls=":")
        last = None
        for t, b in enumerate(brokers):
            epoch = ef.last_epoch(b.epochs)
            if epoch != last:
                ax.annotate(f"e{epoch}" if epoch >= 0 else "no epoch", (t, max_phy(b)), textcoords="offset points", xytext=(2, 6), fontsize=8)
                last = epoch
            if not b.up:
                ax.axvspan(t - 0.5, t + 0.5, color="#f5b7b1", lw=0)
        if violated_at is not None:
            ax.axvline(violated_at, color=FAULT, lw=1)
        ax.set_ylabel(f"broker {i}")
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper left", fontsize=8, ncol=3)
    axes[-1, 0].set_xlabel("step (red band: broker down; e<N>: last epoch in its epoch file)")
    return _png(fig)
