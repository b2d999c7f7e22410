"""DefaultElectPolicy: which candidate an election picks (reference §3.5).

Mirrors `controller/.../elect/impl/DefaultElectPolicy.java`: the SyncStateSet first, then
(unclean) every replica; among the live candidates the old master, an admin's choice, or the
first of a TreeSet ordered by the heartbeat data (epoch, maxOffset, electionPriority).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .javaint import int32

if TYPE_CHECKING:
    from .controller import LiveInfo

# How DefaultElectPolicy orders candidates: its comparator as written (CAST), the intended
# exact comparison (EXACT), or no order at all (ANY, the pitfall elect_ignores_epoch_and_offset).
CAST, EXACT, ANY = "cast", "exact", "any"


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def compare_candidates(x: LiveInfo, y: LiveInfo, order: str = CAST) -> int:
    """DefaultElectPolicy's comparator, compare(o1=x, o2=y): epoch descending, then maxOffset
    descending, then electionPriority ascending.

    The code (CAST) subtracts (DefaultElectPolicy.java:39-46): `o2.getEpoch() - o1.getEpoch()`
    and the priorities in int arithmetic, and `(int) (o2.getMaxOffset() - o1.getMaxOffset())`,
    which keeps the low 32 bits of a long: replicas more than 2 GiB (and less than 4 GiB) apart
    compare the wrong way round, exactly 2 GiB apart each is "less" than the other, 4 GiB apart
    they compare equal (the TreeSet then drops one), and a negative priority against the default
    Integer.MAX_VALUE wraps (`elect_compares_by_subtraction`). EXACT compares the values
    (Integer.compare, Long.compare)."""
    if order == EXACT:
        return _sign(y.epoch - x.epoch) or _sign(y.max_offset - x.max_offset) or _sign(x.priority - y.priority)
    if x.epoch != y.epoch:
        return int32(y.epoch - x.epoch)
    if x.max_offset != y.max_offset:
        return int32(y.max_offset - x.max_offset)
    return int32(x.priority - y.priority)


def tree_set_first(items: list[tuple[int, LiveInfo]], order: str = CAST) -> int:
    """`TreeSet.first()` after adding `items` in order (HashSet order: ascending small ids), as
    java.util.TreeMap does it: walk down from the root comparing with each node, drop an element
    that compares equal to one in the tree (so exact ties keep the first inserted, the smallest
    id), attach it as a leaf, and rebalance (red-black `fixAfterInsertion`). With the code's
    comparator, which is not transitive for large offsets, the tree's shape decides which
    comparisons are made, so only this walk gives the code's answer."""
    # A node: [item, left, right, parent, red]
    root = None
    for item in items:
        if root is None:
            root = [item, None, None, None, False]
            continue
        node, parent, cmp = root, None, 0
        while node is not None:
            parent, cmp = node, compare_candidates(item[1], node[0][1], order)
            if cmp == 0:
                break
            node = node[1] if cmp < 0 else node[2]
        if cmp == 0:
            continue
        new = [item, None, None, parent, True]
        parent[1 if cmp < 0 else 2] = new
        root = _fix_after_insertion(root, new)
    node = root
    while node[1] is not None:
        node = node[1]
    return node[0][0]


def _fix_after_insertion(root: list, x: list) -> list:
    """TreeMap.fixAfterInsertion; returns the (possibly new) root."""

    def red(n):
        return n is not None and n[4]

    def rotate(p, left):  # rotateLeft(p) when left, else rotateRight(p)
        nonlocal root
        near, far = (2, 1) if left else (1, 2)
        r = p[near]
        p[near] = r[far]
        if r[far] is not None:
            r[far][3] = p
        r[3] = p[3]
        if p[3] is None:
            root = r
        elif p[3][far] is p:
            p[3][far] = r
        else:
            p[3][near] = r
        r[far] = p
        p[3] = r

    while x is not None and x is not root and red(x[3]):
        parent, grand = x[3], x[3][3]
        on_left = grand is not None and parent is grand[1]
        uncle = None if grand is None else grand[2 if on_left else 1]
        if red(uncle):
            parent[4], uncle[4], grand[4] = False, False, True
            x = grand
        else:
            if x is parent[2 if on_left else 1]:
                x = parent
                rotate(x, on_left)
            x[3][4] = False
            if x[3][3] is not None:
                x[3][3][4] = True
                rotate(x[3][3], not on_left)
    root[4] = False
    return root


def try_elect(
    brokers: frozenset[int],
    old_master: int | None,
    prefer: int | None,
    valid: frozenset[int],
    live: tuple[LiveInfo | None, ...],
    order: str = CAST,
) -> int | None:
    """`DefaultElectPolicy.tryElect`: alive candidates only; the old master wins if valid and
    not overridden; an admin preference is taken or nothing; then the best by heartbeat data."""
    candidates = frozenset(b for b in brokers if b in valid)
    if not candidates:
        return None
    if old_master in candidates and (prefer is None or prefer == old_master):
        return old_master
    if prefer is not None:
        return prefer if prefer in candidates else None
    if order != ANY:
        return tree_set_first([(b, live[b - 1]) for b in sorted(candidates)], order)
    return min(candidates)  # HashSet iteration order for small ids


def elect_policy(
    sss: frozenset[int],
    all_brokers: frozenset[int] | None,
    old_master: int | None,
    prefer: int | None,
    valid: frozenset[int],
    live: tuple[LiveInfo | None, ...],
    order: str = CAST,
) -> int | None:
    """`DefaultElectPolicy.elect`: the SyncStateSet first, then (unclean) every replica."""
    new = try_elect(sss, old_master, prefer, valid, live, order)
    if new is None and all_brokers is not None:
        new = try_elect(all_brokers, old_master, prefer, valid, live, order)
    return new
