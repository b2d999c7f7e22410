"""Liveness by strongly connected components of the explored space (networkx).

An obligation (invariants/liveness.py) is violated when some reachable cycle keeps it open in
every state and is fair: every fair action instance enabled in all of the cycle's states is
taken on it. For weak fairness it suffices to test whole SCCs of the sub-graph where the
obligation is open: if an action enabled throughout an SCC has no edge inside it, no cycle
within it is fair either. A violation is reported as a lasso: a shortest path to the SCC, then
a closed walk inside it that takes every action fairness requires.

Symmetry reduction is unsound for liveness (TLC #59), so this runs with it off; bounds cut
edges, never add them, so a lasso found is real, while "holds" is within the bounds only.
"""

from __future__ import annotations

from typing import NamedTuple

import networkx as nx

from rmqcheck.invariants.liveness import LIVENESS_BY_ID, fair, open_obligations
from rmqcheck.model.abstraction import timeless
from rmqcheck.model.config import Config
from rmqcheck.model.step import Action, NotEnabled, step

from rmqcheck.checkers.search.explore import Bounds, Explorer, Result, bounded_successors
from rmqcheck.checkers.counterexamples.startstate import start_state


class Lasso(NamedTuple):
    property: str
    obligation: tuple
    prefix: tuple[Action, ...]
    cycle: tuple[Action, ...]
    scc_size: int


class LivenessResult(NamedTuple):
    explored: Result
    lassos: dict[str, Lasso]  # first violation per property id
    checked: int  # obligations (property, arguments) analysed


# Of a time budget, the share exploration may use: the SCC analysis after it takes about 4% of
# the exploration's time on 1.7 million states, so a cut exploration still ends within budget.
EXPLORE_SHARE = 0.85


def check(cfg: Config, bounds: Bounds = Bounds(), budget: float | None = None) -> LivenessResult:
    if bounds.symmetry:
        raise ValueError("liveness needs the explored space without symmetry reduction")
    ex = Explorer(cfg, bounds, invariants=())
    result = ex.run(budget and budget * EXPLORE_SHARE, label=lambda s: open_obligations(s, cfg))
    g = result.graph
    out: dict[str, Lasso] = {}
    obligations = sorted({o for label in g.labels for o in label}, key=repr)
    fair_enabled: dict[int, set[Action]] = {}
    for u, _, a in g.edges:
        if fair(a):
            fair_enabled.setdefault(u, set()).add(a)
    # One pass over the edges, not one per obligation: the edges each obligation stays open on.
    open_on: dict[tuple, list] = {}
    for edge in g.edges:
        u, v, _ = edge
        if g.expanded[u] and g.expanded[v]:
            for ob in g.labels[u] & g.labels[v]:
                open_on.setdefault(ob, []).append(edge)
    for ob in obligations:
        if ob[0] in out or ob not in open_on:
            continue
        sub = nx.MultiDiGraph()
        sub.add_edges_from((u, v, {"action": a}) for u, v, a in open_on[ob])
        for comp in sorted(nx.strongly_connected_components(sub), key=min):
            inside = sub.subgraph(comp)
            if inside.number_of_edges() == 0:
                continue  # a single state without a self-loop is not a cycle
            taken = {d["action"] for _, _, d in inside.edges(data=True)}
            owed = set.intersection(*(fair_enabled.get(v, set()) for v in comp))
            if owed <= taken:
                entry = min(comp)
                cycle = _fair_cycle(inside, entry, owed)
                out[ob[0]] = Lasso(ob[0], ob[1:], ex.path(entry), cycle, len(comp))
                break
    return LivenessResult(result, out, len(obligations))


def _fair_cycle(g: nx.MultiDiGraph, entry: int, owed: set[Action]) -> tuple[Action, ...]:
    """A closed walk from `entry` that takes one edge of every owed action."""

    def walk(a: int, b: int) -> list[Action]:
        nodes = nx.shortest_path(g, a, b)
        return [next(iter(g.get_edge_data(x, y).values()))["action"] for x, y in zip(nodes, nodes[1:])]

    steps: list[Action] = []
    at = entry
    for action in sorted(owed, key=repr):
        u, v = next((u, v) for u, v, d in g.edges(data=True) if d["action"] == action)
        steps += walk(at, u) + [action]
        at = v
    if at != entry or not steps:
        if not steps:  # nothing owed: any edge out of entry, then back
            v, data = next(iter(g[entry].items()))
            steps.append(next(iter(data.values()))["action"])
            at = v
        steps += walk(at, entry)
    return tuple(steps)


def recheck(cfg: Config, actions: tuple[Action, ...], loop: int, prop: str) -> str | None:
    """Replay a lasso: the state after `actions[:loop]` must come back (same timeless view)
    after the rest, one obligation of `prop` must stay open along the loop, and the loop must
    be fair under the explorer's timely heartbeats. Returns a description of the violation, or None if it does not reproduce."""
    s = start_state(cfg, ())
    states = [s]
    for a in actions:
        try:
            s = step(s, a, cfg)
        except NotEnabled:
            return None
        states.append(s)
    loop_states = states[loop:-1]
    if not loop_states or timeless(states[loop], cfg, ghost=False) != timeless(states[-1], cfg, ghost=False):
        return None
    opened = set.intersection(*(set(LIVENESS_BY_ID[prop].open(x, cfg)) for x in loop_states))
    if not opened:
        return None
    owed = set.intersection(*({a for a, _ in bounded_successors(x, cfg, Bounds()) if fair(a)} for x in loop_states))
    if not owed <= set(actions[loop:]):
        return None
    return f"{prop} obligation {sorted(opened)[0]} stays open on a fair cycle of {len(actions) - loop} steps"
