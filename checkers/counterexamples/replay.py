"""Deterministic replay of an action list against the model, with the invariants checked after
every step; delta-debugging on top of it; and attribution of a counterexample to the snapshot
defects it needs."""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Sequence

from rmqcheck.invariants.catalogue import Violation, check_start, check_state, check_transition
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, NotEnabled, format_action, step
from rmqcheck.model.world import State

from rmqcheck.checkers.counterexamples.startstate import Replica, start_state


class ReplayError(Exception):
    """The action list does not fit the model (an action is not enabled where it is used)."""


class Replay(NamedTuple):
    states: list[State]  # states[0] is the initial state; states[i] follows actions[i - 1]
    violations: list[list[Violation]]  # violations[i] are those seen after actions[i - 1]

    def first(self, invariant: str | None = None) -> tuple[int, Violation] | None:
        """(1-based step, violation) of the first violation, optionally of one invariant."""
        for i, vs in enumerate(self.violations):
            for v in vs:
                if invariant is None or v.invariant == invariant:
                    return i, v
        return None


def replay(
    cfg: Config,
    actions: Sequence[Action],
    ids: frozenset[str] | None = None,
    stop_at_violation: str | None = None,
    start: Sequence[Replica] = (),
) -> Replay:
    """Run `actions` from the initial state (or the constructed `start`). Raises ReplayError
    naming the first action that is not enabled. With `stop_at_violation`, stop after the
    first violation of that invariant."""
    s = start_state(cfg, start)
    states, violations = [s], [check_start(s, cfg, ids)]
    for i, a in enumerate(actions, start=1):
        try:
            nxt = step(s, a, cfg)
        except NotEnabled:
            raise ReplayError(f"step {i}: {format_action(a)} is not enabled") from None
        vs = check_transition(s, a, nxt, cfg, ids) + check_state(nxt, cfg, ids)
        s = nxt
        states.append(s)
        violations.append(vs)
        if stop_at_violation is not None and any(v.invariant == stop_at_violation for v in vs):
            break
    return Replay(states, violations)


def reproduces(cfg: Config, actions: Sequence[Action], invariant: str, start: Sequence[Replica] = ()) -> int | None:
    """The step at which `actions` violates `invariant`, or None (not enabled counts as no)."""
    try:
        r = replay(cfg, actions, frozenset({invariant}), stop_at_violation=invariant, start=start)
    except ReplayError:
        return None
    hit = r.first(invariant)
    return hit[0] if hit else None


def run_lenient(
    cfg: Config, actions: Sequence[Action], invariant: str, start: Sequence[Replica] = ()
) -> list[Action] | None:
    """Replay skipping actions that are not enabled; the actions that ran, up to the first
    violation of `invariant`, or None if it is not violated."""
    ids = frozenset({invariant})
    s = start_state(cfg, start)
    if check_start(s, cfg, ids):
        return []
    ran: list[Action] = []
    for a in actions:
        try:
            nxt = step(s, a, cfg)
        except NotEnabled:
            continue
        ran.append(a)
        if check_transition(s, a, nxt, cfg, ids) or check_state(nxt, cfg, ids):
            return ran
        s = nxt
    return None


def ddmin(actions: Sequence[Action], run: Callable[[list[Action]], list[Action] | None]) -> list[Action]:
    """Delta debugging (Zeller) of an action list: drop chunks while `run` still fails, keeping
    what actually ran (so actions a removal disabled go too); ends 1-minimal."""
    current = run(list(actions))
    if current is None:
        return list(actions)
    n = 2
    while len(current) >= 2:
        chunk = max(1, len(current) // n)
        reduced = False
        for start in range(0, len(current), chunk):
            ran = run(current[:start] + current[start + chunk :])
            if ran is not None and len(ran) < len(current):
                current, reduced = ran, True
                n = max(n - 1, 2)
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(current), n * 2)
    return current


def shrink(cfg: Config, actions: Sequence[Action], invariant: str) -> list[Action]:
    return ddmin(actions, lambda acts: run_lenient(cfg, acts, invariant))


def toggle_dependencies(cfg: Config, actions: Sequence[Action], invariant: str) -> list[str]:
    """The active toggles this counterexample needs: those whose intended form, applied alone,
    makes the same actions stop violating `invariant`."""
    return [
        name
        for name in sorted(cfg.bugs)
        if reproduces(cfg._replace(bugs=cfg.bugs - {name}), actions, invariant) is None
    ]


def describe_steps(cfg: Config, actions: Iterable[Action]) -> list[str]:
    return [format_action(a) for a in actions]
