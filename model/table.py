"""A transition table (h11 style) for the modes beside controller mode: each action kind names
its rule and the arguments it can take; `step` and `successors` read the table."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .step import NotEnabled


class Toggle(NamedTuple):
    """A bug toggle of one of these modes: what it stands for and whether the snapshot has it."""

    name: str
    source: str
    summary: str
    in_snapshot: bool


def check_toggles(bugs: frozenset[str], known: frozenset[str], mode: str) -> None:
    unknown = sorted(bugs - known)
    if unknown:
        raise ValueError(f"unknown {mode} toggle(s) {unknown}; known: {sorted(known)}")


class Rule(NamedTuple):
    apply: Callable[..., Any]  # (state, cfg, *args) -> next state, or raises NotEnabled
    args: Callable[[Any, Any], list[tuple]]  # (state, cfg) -> the argument tuples to try
    fault: bool = False


def step(rules: dict[str, Rule], s: Any, action: tuple, cfg: Any) -> Any:
    """Apply one action; NotEnabled unless its arguments are ones the table tries in `s` (a node
    id of -1 would otherwise index the node list from the end)."""
    rule = rules.get(action[0])
    if rule is None or tuple(action[1:]) not in rule.args(s, cfg):
        raise NotEnabled
    return rule.apply(s, cfg, *action[1:])


def successors(rules: dict[str, Rule], s: Any, cfg: Any) -> list[tuple[tuple, Any]]:
    out = []
    for kind, rule in rules.items():
        for args in rule.args(s, cfg):
            try:
                out.append(((kind, *args), rule.apply(s, cfg, *args)))
            except NotEnabled:
                pass
    return out
