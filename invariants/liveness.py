"""Liveness properties (reference/known-bugs.md I12), checked on small explored spaces.

Each property names, for a state, the obligations still open in it (`open`). A violation is a
fair cycle along which one obligation stays open for ever: a lasso (checkers/search/liveness.py).
Fairness is weak fairness on every protocol and healing action (`fair`): an action instance
that stays enabled is eventually taken. Faults, sends and consumes are never owed, nor is a
restart: a crashed broker may stay down, which is the case L1 is about.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from rmqcheck.model.broker import max_phy
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, Action
from rmqcheck.model.world import State, reachable, reaches_controller

_NOT_OWED = {"send", "consume", "restart"}


def fair(a: Action) -> bool:
    kind = ACTIONS[a[0]]
    if kind.fault is not None or a[0] in _NOT_OWED:
        return False
    # `lost=1` is the lost-response fault on an otherwise ordinary RPC
    return not ("lost" in kind.args and a[1 + kind.args.index("lost")])


class Liveness(NamedTuple):
    id: str
    name: str
    statement: str
    expected: Callable[[Config], bool]
    expected_when: str
    open: Callable[[State, Config], frozenset]  # obligations open in a state


def _eligible(s: State, cfg: Config) -> set[int]:
    applied = s.ctrl.applied
    pool = applied.broker_ids if cfg.unclean else applied.sss
    return {b for b in pool if s.broker(b).up and reaches_controller(s, b) and b not in cfg.async_learners}


def master_elected(s: State, cfg: Config) -> frozenset:
    """Open while the controller names no master that is up and reachable, although an
    eligible broker is."""
    m = s.ctrl.applied.master
    if m is not None and s.broker(m).up and reaches_controller(s, m):
        return frozenset()
    return frozenset({("elect",)}) if _eligible(s, cfg) else frozenset()


def replication_resumes(s: State, cfg: Config) -> frozenset:
    """Open for each (master, member): the controller's master is up and running, and a
    SyncStateSet member that is up and reachable from it holds less of the log."""
    applied = s.ctrl.applied
    m_id = applied.master
    if m_id is None:
        return frozenset()
    m = s.broker(m_id)
    if not (m.up and m.running):
        return frozenset()
    return frozenset(
        ("replicate", m_id, x)
        for x in applied.sss
        if x != m_id and s.broker(x).up and reachable(s, m_id, x) and max_phy(s.broker(x)) < max_phy(m)
    )


def sync_state_set_shrinks(s: State, cfg: Config) -> frozenset:
    """Open for each (master, member): the controller's master is up, running and reaches the
    controller, and a member of the controller's SyncStateSet is down."""
    applied = s.ctrl.applied
    m_id = applied.master
    if m_id is None:
        return frozenset()
    m = s.broker(m_id)
    if not (m.up and m.running and reaches_controller(s, m_id)):
        return frozenset()
    return frozenset(("shrink", m_id, x) for x in applied.sss if x != m_id and not s.broker(x).up)


LIVENESS: tuple[Liveness, ...] = (
    Liveness(
        "L1",
        "master_eventually_elected",
        "If the master is dead or cut off and an eligible replica stays alive and reachable, the "
        "controller eventually names a live master.",
        lambda cfg: True,
        "always",
        master_elected,
    ),
    Liveness(
        "L2",
        "replication_eventually_resumes",
        "A SyncStateSet member that stays alive and connected to a live master eventually holds "
        "the master's whole log.",
        lambda cfg: True,
        "always",
        replication_resumes,
    ),
    Liveness(
        "L3",
        "dead_member_eventually_removed",
        "A SyncStateSet member that stays down is eventually removed from the controller's "
        "SyncStateSet while its master stays up and reaches the controller (otherwise allAck writes "
        "time out for ever, #7219).",
        lambda cfg: True,
        "always",
        sync_state_set_shrinks,
    ),
)

LIVENESS_BY_ID: dict[str, Liveness] = {p.id: p for p in LIVENESS}


def open_obligations(s: State, cfg: Config) -> frozenset:
    return frozenset((p.id,) + o for p in LIVENESS for o in p.open(s, cfg))
