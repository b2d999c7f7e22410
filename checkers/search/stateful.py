"""Hypothesis stateful checking of the model (`RuleBasedStateMachine`).

Every action kind of the model is a rule (those of BUDGETED_RULES only where budgeted); a rule's
precondition is that the model enables at least one action of that kind, and its argument picks
one of them (shrinking towards the first). Every catalogue invariant is a Hypothesis invariant,
checked after every step; a transition invariant sees the last step. `machine_for(cfg, targets)`
builds a machine class bound to one configuration and a set of invariants to enforce, so one
definition serves every configuration and bug toggle.
"""

from __future__ import annotations

import math
import time
from typing import Iterable

from hypothesis import HealthCheck, Phase, seed as hypothesis_seed, settings, strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, invariant, precondition, rule

from rmqcheck.invariants.catalogue import BY_ID, CATALOGUE, Violation, check_start
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, Action, initial_state, successors
from rmqcheck.model.world import State


class InvariantViolated(AssertionError):
    """Raised inside the machine; carries what a counterexample file needs."""

    def __init__(self, violation: Violation, actions: list[Action]):
        super().__init__(f"{violation.invariant}: {violation.message}")
        self.violation = violation
        self.actions = list(actions)


class OutOfTime(KeyboardInterrupt):
    """Raised by a machine's step once its deadline has passed. Hypothesis takes any other
    exception for a failure and replays it; an interruption it lets through at once, ending the
    batch (run_once catches it, so it never reaches the command line's Ctrl-C handler)."""


class Stats:
    """Counts across all machines of one run (for `make bench` and hunt reports)."""

    def __init__(self) -> None:
        self.steps = 0
        self.examples = 0


class ReplicationMachine(RuleBasedStateMachine):
    cfg: Config = Config()
    targets: frozenset[str] = frozenset(BY_ID)
    stats: Stats = Stats()
    deadline: float | None = None  # time.perf_counter() after which no further step is taken
    found: InvariantViolated | None = None  # the first violation of this class's run

    def __init__(self) -> None:
        super().__init__()
        self.state: State = initial_state(self.cfg)
        self.actions: list[Action] = []
        self.last: tuple[State, Action, State] | None = None
        self._refresh()
        type(self).stats.examples += 1

    def _refresh(self) -> None:
        by_kind: dict[str, list[tuple[Action, State]]] = {}
        for action, nxt in successors(self.state, self.cfg):
            by_kind.setdefault(action[0], []).append((action, nxt))
        self.by_kind = by_kind

    def take(self, kind: str, pick: int) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise OutOfTime
        options = self.by_kind[kind]
        action, nxt = options[pick % len(options)]
        self.last = (self.state, action, nxt)
        self.state = nxt
        self.actions.append(action)
        type(self).stats.steps += 1
        self._refresh()

    def fail(self, violation: Violation) -> None:
        found = InvariantViolated(violation, self.actions)
        if type(self).found is None:  # kept: Hypothesis replays a failure, and the deadline may cut the replay
            type(self).found = found
        raise found


def _rule_for(kind: str):
    @precondition(lambda self: kind in self.by_kind)
    @rule(pick=st.integers(min_value=0, max_value=63))
    def take_action(self, pick):
        self.take(kind, pick)

    take_action.__name__ = kind
    return take_action


def _invariant_for(inv_id: str):
    inv = BY_ID[inv_id]

    @invariant()
    def holds(self):
        if inv_id not in self.targets:
            return
        messages = []
        if self.last is None:  # the first state: the bootstrap that built it too
            messages += [v.message for v in check_start(self.state, self.cfg, frozenset({inv_id}))]
        elif inv.check is not None:
            messages += inv.check(self.state, self.cfg)
        if inv.check_step is not None and self.last is not None:
            messages += inv.check_step(*self.last, self.cfg)
        if messages:
            self.fail(Violation(inv_id, messages[0]))

    holds.__name__ = f"invariant_{inv_id}"
    return holds


# Fault kinds added after the hunts' seeds and batch counts were measured (tests/test_hunt_slow.py)
# get a rule only where the configuration budgets them: a rule that is never enabled still
# changes Hypothesis's choice among rules, so every measured hunt would draw differently (with
# the controller cuts' two rules, no_confirm_clamp_on_truncate was not found in its 16 batches).
BUDGETED_RULES = {"controller_cut": "controller_cuts", "controller_reconnect": "controller_cuts",
                  "write_back_epoch_file": "epoch_file_reverts", "revert_epoch_file": "epoch_file_reverts",
                  "ha_second_removal": "second_removals",
                  "flush_checkpoint": "checkpoint_reverts", "revert_checkpoint": "checkpoint_reverts"}

for _kind in ACTIONS:
    if _kind not in BUDGETED_RULES:
        setattr(ReplicationMachine, _kind, _rule_for(_kind))
for _inv in CATALOGUE:
    setattr(ReplicationMachine, f"invariant_{_inv.id}", _invariant_for(_inv.id))


def machine_for(cfg: Config, targets: Iterable[str], stats: Stats | None = None,
                deadline: float | None = None) -> type[ReplicationMachine]:
    """A machine class bound to a configuration and the invariants it enforces."""
    rules = {kind: _rule_for(kind) for kind, budget in BUDGETED_RULES.items() if getattr(cfg.faults, budget)}
    return type(
        "ReplicationMachine",
        (ReplicationMachine,),
        {"cfg": cfg, "targets": frozenset(targets), "stats": stats or Stats(), "deadline": deadline, "found": None,
         **rules},
    )


# Profiles: `quick` for the test suite, `deep` for hunts (`make hunt`, `rmqcheck hunt`).
PROFILES = {
    "quick": dict(max_examples=60, stateful_step_count=40),
    "deep": dict(max_examples=200, stateful_step_count=80),
}

# Hunts deepen iteratively: batch i runs DEEPENING[i % 3] (examples, steps), so a violation
# reachable in a short run is found in one, and counterexamples start short.
DEEPENING = ((400, 25), (200, 50), (100, 100))


def hypothesis_settings(profile: str = "deep", **overrides) -> settings:
    opts = {**PROFILES[profile], **overrides}
    return settings(
        deadline=None,
        database=None,  # determinism: a run depends on its seed only
        suppress_health_check=list(HealthCheck),
        # Generation only: a long stateful run makes Hypothesis's shrinker slow (minutes, see
        # hypothesis#2523), and delta debugging over the concrete actions
        # (checkers/counterexamples/replay.py) shrinks the same run to a 1-minimal one in milliseconds.
        phases=[Phase.generate],
        report_multiple_bugs=False,
        print_blob=False,
        **opts,
    )


def run_once(
    cfg: Config, targets: Iterable[str], seed: int, profile: str = "deep", stats: Stats | None = None,
    deadline: float | None = None, **overrides
) -> InvariantViolated | None:
    """One Hypothesis run with a fixed seed: the first violation it meets, or None (also when
    `deadline`, a time.perf_counter() value, passes first)."""
    machine = machine_for(cfg, targets, stats, deadline)
    test = hypothesis_seed(seed)(get_state_machine_test(machine, settings=hypothesis_settings(profile, **overrides)))
    try:
        test()
    except InvariantViolated as exc:
        return exc
    except OutOfTime:
        return machine.found
    except Flaky:
        # The deadline cut a test case Hypothesis was replaying or shrinking, which then drew
        # less than before. Nothing else in the machine depends on time: another Flaky is ours.
        if deadline is None or time.perf_counter() <= deadline:
            raise
        return machine.found
    return None


class HuntResult:
    def __init__(
        self, violation: InvariantViolated | None, seed: int | None, seconds: float, stats: Stats, batches: int
    ) -> None:
        self.violation = violation
        self.seed = seed  # the seed of the batch that failed
        self.seconds = seconds
        self.stats = stats
        self.batches = batches


def hunt(
    cfg: Config, targets: Iterable[str], budget: float, seed: int = 0, profile: str = "deep", on_batch=None,
    deadline: float | None = None, max_batches: int | None = None,
) -> HuntResult:
    """Run seeded Hypothesis batches (seed, seed+1, ...) of growing run length until one fails
    or the budget is spent. No batch starts after the budget; the one running when it ends goes
    on until `deadline` (a time.perf_counter() value; default the budget's end) and is cut there,
    so a portfolio's short slice may finish its batch in the time the portfolio has left but
    never runs past it. With `max_batches` the budget is that many whole batches and the clock
    is not looked at: the same hunt on any machine under any load."""
    targets = frozenset(targets)
    stats = Stats()
    start = time.perf_counter()
    if max_batches is not None:
        budget, deadline = math.inf, None
    else:
        deadline = start + budget if deadline is None else deadline
    batch = 0
    while True:
        batch_seed = seed + batch
        examples, steps = DEEPENING[batch % len(DEEPENING)]
        found = run_once(cfg, targets, batch_seed, profile, stats, deadline, max_examples=examples,
                         stateful_step_count=steps)
        batch += 1
        elapsed = time.perf_counter() - start
        if on_batch is not None:
            on_batch(batch, stats, elapsed)
        if found is not None:
            return HuntResult(found, batch_seed, elapsed, stats, batch)
        if elapsed >= budget or batch == max_batches:
            return HuntResult(None, None, elapsed, stats, batch)
