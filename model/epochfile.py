"""EpochFile: which master term wrote which byte range of the commit log.

Mirrors `store/.../ha/autoswitch/EpochFileCache.java` (reference §1.2-1.5). An entry is
(epoch, startOffset); every non-last entry ends where the next one starts, so the only end
that needs storing is the last entry's (`last_end`, in memory only: ends are never
persisted). `disk` is what `epochFileCheckpoint` holds, which differs from `entries` only
through quirk Q2. `synced` is the version the file system has written back: RocketMQ rewrites
the file with no fsync (CheckpointFile.write -> MixAll.string2File), so a power loss can take
`disk` back to it (`revert`).

Quirks, each behind a switch (faithful = the snapshot, intended = what the code means):
* Q1: after a suffix truncation the "reset last end to INF" acts on a copy, so the new last
  entry keeps its stale end (the start of the first removed entry).
* Q2: an empty entry list is never written, so the file keeps the previous list.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple, Sequence

from .javaint import int32

INF = 2**63 - 1  # Long.MAX_VALUE, EpochEntry's default endOffset

Entry = tuple[int, int]  # (epoch, start offset)


class EpochFile(NamedTuple):
    entries: tuple[Entry, ...] = ()
    last_end: int = INF
    disk: tuple[Entry, ...] = ()
    synced: tuple[Entry, ...] = ()


EMPTY = EpochFile()


# --- reads ---------------------------------------------------------------------------------


def last_epoch(ef: EpochFile) -> int:
    """`lastEpoch()`: -1 when empty."""
    return ef.entries[-1][0] if ef.entries else -1


def end_of(ef: EpochFile, i: int) -> int:
    return ef.entries[i + 1][1] if i + 1 < len(ef.entries) else ef.last_end


def with_ends(ef: EpochFile) -> tuple[tuple[int, int, int], ...]:
    """`getAllEntries()`: (epoch, start, end) copies."""
    return tuple((e, s, end_of(ef, i)) for i, (e, s) in enumerate(ef.entries))


def get_entry(ef: EpochFile, epoch: int) -> tuple[int, int, int] | None:
    """`getEntry(epoch)`."""
    for i, (e, s) in enumerate(ef.entries):
        if e == epoch:
            return (e, s, end_of(ef, i))
    return None


def find_by_offset(ef: EpochFile, offset: int) -> tuple[int, int, int] | None:
    """`findEpochEntryByOffset`: the first entry with start <= offset < end (half-open)."""
    for i, (e, s) in enumerate(ef.entries):
        if s <= offset < end_of(ef, i):
            return (e, s, end_of(ef, i))
    return None


def next_entry(ef: EpochFile, epoch: int) -> tuple[int, int, int] | None:
    """`nextEntry(epoch)`: the entry with the smallest epoch >= epoch + 1 (TreeMap ceiling).
    `epoch + 1` is int arithmetic: nextEntry(Integer.MAX_VALUE) is the first entry (found by
    `rmqcheck conform`; no real epoch gets there)."""
    after = int32(epoch + 1)
    for i, (e, s) in enumerate(ef.entries):
        if e >= after:
            return (e, s, end_of(ef, i))
    return None


# --- writes (each one flushes to `disk`, reference §1.5) -----------------------------------


def _flush(entries: tuple[Entry, ...], old_disk: tuple[Entry, ...], faithful_q2: bool):
    # Q2: CheckpointFile.write returns early on an empty list, so the file keeps the old one.
    if not entries and faithful_q2:
        return old_disk
    return entries


def append_entry(
    ef: EpochFile, epoch: int, start: int, faithful_q2: bool = True, replace_empty: bool = False
) -> tuple[EpochFile, bool]:
    """`appendEntry`: rejected (False, no change) unless both epoch and start strictly grow.

    Why: the file must stay ordered on both keys, or findEpochEntryByOffset and the
    consistent-point search lose their meaning. Consequence in the snapshot: an epoch in which
    no byte was written cannot be followed by one with the same start (reference §7.3), and
    the newer epoch goes unrecorded. `replace_empty` is the intended form: a newer epoch
    supersedes a last epoch that holds no bytes.
    """
    if ef.entries:
        last_e, last_s = ef.entries[-1]
        if replace_empty and last_s == start and last_e < epoch:
            entries = ef.entries[:-1] + ((epoch, start),)
            return ef._replace(entries=entries, last_end=INF, disk=_flush(entries, ef.disk, faithful_q2)), True
        if last_e >= epoch or last_s >= start:
            return ef, False
    entries = ef.entries + ((epoch, start),)
    return ef._replace(entries=entries, last_end=INF, disk=_flush(entries, ef.disk, faithful_q2)), True


def set_last_end(ef: EpochFile, end: int) -> EpochFile:
    """`setLastEpochEntryEndOffset`: only if last.start <= end; never persisted."""
    if ef.entries and ef.entries[-1][1] <= end:
        return ef._replace(last_end=end)
    return ef


def _truncate_suffix(ef: EpochFile, keep: int, faithful_q1: bool, faithful_q2: bool) -> EpochFile:
    """`doTruncateSuffix`: keep the first `keep` entries."""
    entries = ef.entries[:keep]
    if keep == len(ef.entries):
        last_end = ef.last_end
    elif faithful_q1 and entries:
        last_end = ef.entries[keep][1]  # Q1: the stale end survives (the reset hits a copy)
    else:
        last_end = INF
    return ef._replace(entries=entries, last_end=last_end, disk=_flush(entries, ef.disk, faithful_q2))


def truncate_suffix_by_epoch(
    ef: EpochFile, epoch: int, faithful_q1: bool = True, faithful_q2: bool = True
) -> EpochFile:
    """`truncateSuffixByEpoch`: remove entries with epoch >= `epoch`."""
    keep = sum(1 for e, _ in ef.entries if e < epoch)
    return _truncate_suffix(ef, keep, faithful_q1, faithful_q2)


def truncate_suffix_by_offset(
    ef: EpochFile, offset: int, faithful_q1: bool = True, faithful_q2: bool = True
) -> EpochFile:
    """`truncateSuffixByOffset`: remove entries with start >= `offset` (inclusive)."""
    keep = sum(1 for _, s in ef.entries if s < offset)
    return _truncate_suffix(ef, keep, faithful_q1, faithful_q2)


def truncate_prefix_by_offset(ef: EpochFile, offset: int, faithful_q2: bool = True) -> EpochFile:
    """`truncatePrefixByOffset`: remove entries with end <= `offset` (inclusive). With a
    stale last end (Q1) this can delete the current epoch (reference §1.3 (b))."""
    drop = sum(1 for i in range(len(ef.entries)) if end_of(ef, i) <= offset)
    entries = ef.entries[drop:]
    last_end = ef.last_end if entries else INF
    return ef._replace(entries=entries, last_end=last_end, disk=_flush(entries, ef.disk, faithful_q2))


def reload(ef: EpochFile) -> EpochFile:
    """`initCacheFromFile` after a restart: ends are recomputed, so the last one is INF."""
    return ef._replace(entries=ef.disk, last_end=INF)


def lose_file(ef: EpochFile) -> EpochFile:
    """The checkpoint and its .bak are gone: the next start reads an empty list."""
    return ef._replace(disk=())


def write_back(ef: EpochFile) -> EpochFile:
    """The file system writes the file's current version to the device (ext4 commits its
    journal every 5 s)."""
    return ef._replace(synced=ef.disk)


def revert(ef: EpochFile) -> EpochFile:
    """A power loss: the file is what the file system last wrote back."""
    return ef._replace(disk=ef.synced)


# --- the consistent point (reference §1.4) -------------------------------------------------
#
# Written once over an `ops` object so the same code runs on Python integers (the model) and
# on Z3 terms (checkers/proofs/truncation.py proves its properties on exactly this code).


class IntOps:
    """The operations the consistent-point search needs, on Python integers."""

    @staticmethod
    def ite(cond: Any, then: Any, other: Any) -> Any:
        return then if cond else other

    @staticmethod
    def eq(a: Any, b: Any) -> Any:
        return a == b

    @staticmethod
    def le(a: Any, b: Any) -> Any:
        return a <= b

    @staticmethod
    def and_(a: Any, b: Any) -> Any:
        return a and b


INT_OPS = IntOps()


class Search(NamedTuple):
    """How the consistent point is searched. `FAITHFUL` is the code; every other value is a
    plausible wrong variant (the pitfall toggles of model/bugs.py; issue 3 refutes each).

    highest_first: the highest matching local epoch wins (False: the lowest, as the RIP-44
        design pseudo-code's ascending iterator reads, reference §6.1).
    match: "both" (epoch and start offset), "epoch" or "start" alone.
    end: "min" of the two ends, "max", "local" (ignores where the master's epoch ended, that
        is the epochs only the master has) or "master" (ignores the epochs only the slave has).
    """

    highest_first: bool = True
    match: str = "both"
    end: str = "min"


FAITHFUL = Search()


def truncation_view(
    entries: Sequence[tuple[Any, Any]], last_end: Any, max_offset: Any, ops: Any = INT_OPS
) -> tuple[tuple[Any, Any, Any], ...]:
    """The (epoch, start, end) entries doTruncate searches: every end is the next start, and
    the last end is `setLastEpochEntryEndOffset(max_offset)` applied to `last_end` (a no-op
    when the last start is beyond the max offset, which leaves INF or a stale Q1 end)."""
    out = [(e, s, entries[i + 1][1]) for i, (e, s) in enumerate(entries[:-1])]
    if entries:
        e, s = entries[-1]
        out.append((e, s, ops.ite(ops.le(s, max_offset), max_offset, last_end)))
    return tuple(out)


def truncation_point(
    local: Sequence[tuple[Any, Any]],
    local_last_end: Any,
    local_max: Any,
    master: Sequence[tuple[Any, Any]],
    master_max: Any,
    ops: Any = INT_OPS,
    search: Search = FAITHFUL,
) -> Any:
    """The point `doTruncate` computes from the two entry lists: both views, then
    local.findConsistentPoint(master). The master's cache is built fresh (last end INF); the
    local one keeps its in-memory last end, which Q1 can leave stale."""
    return consistent_point(
        truncation_view(local, local_last_end, local_max, ops),
        truncation_view(master, INF, master_max, ops),
        ops,
        search,
    )


def consistent_point(
    local: Sequence[tuple[Any, Any, Any]],
    master: Sequence[tuple[Any, Any, Any]],
    ops: Any = INT_OPS,
    search: Search = FAITHFUL,
) -> Any:
    """`EpochFileCache.findConsistentPoint`, called as local.findConsistentPoint(master).

    Walk the *local* epochs from the highest down; the first epoch the master also has with
    the same start offset decides, and the point is the smaller of the two ends. Epochs only
    the master has are ignored. -1 when nothing matches. Entries are (epoch, start, end).

    Written as a fold over the local entries in ascending order in which a later match
    overrides an earlier one, which is the same as the first match walking down.
    """
    order = local if search.highest_first else tuple(reversed(local))
    point = -1
    for entry in order:
        for master_entry in master:
            point = search_step(point, entry, master_entry, ops, search)
    return point


def search_step(point: Any, entry: Any, master_entry: Any, ops: Any = INT_OPS, search: Search = FAITHFUL) -> Any:
    """One comparison of the search: a local entry against a master entry (the loop body,
    named so the unbounded proof can reason about one step)."""
    (e, s, end), (me, ms, mend) = entry, master_entry
    if search.match == "both":
        hit = ops.and_(ops.eq(e, me), ops.eq(s, ms))
    else:
        hit = ops.eq(e, me) if search.match == "epoch" else ops.eq(s, ms)
    return ops.ite(hit, _combine(end, mend, search.end, ops), point)


def _combine(local_end: Any, master_end: Any, how: str, ops: Any) -> Any:
    if how == "local":
        return local_end
    if how == "master":
        return master_end
    smaller = ops.le(local_end, master_end)
    return ops.ite(smaller, local_end, master_end) if how == "min" else ops.ite(smaller, master_end, local_end)


def validated_entries(entries: Sequence[Any], name: str) -> tuple[Entry, ...]:
    out: list[Entry] = []
    for i, item in enumerate(entries):
        try:
            epoch, start = item
            if isinstance(epoch, bool) or isinstance(start, bool):
                raise TypeError
            pair = (operator.index(epoch), operator.index(start))
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{i}] = {item!r} is not an (epoch, start_offset) pair of integers") from None
        if out and pair[0] <= out[-1][0]:
            raise ValueError(
                f"{name}[{i}] = {pair}: epoch {pair[0]} is not greater than the previous epoch {out[-1][0]}"
            )
        if out and pair[1] <= out[-1][1]:
            raise ValueError(
                f"{name}[{i}] = {pair}: start offset {pair[1]} is not greater than "
                f"the previous start offset {out[-1][1]}"
            )
        out.append(pair)
    return tuple(out)


def consistent_point_indexed(
    local: Sequence[tuple[int, int, int]], master: Sequence[tuple[int, int, int]], search: Search = FAITHFUL
) -> int:
    """`consistent_point` on integers in linear time, for long epoch files (validation of a
    recorded store set). The same answer: the fold's last hit is the highest (or, walking up,
    the lowest) local entry that matches some master entry, against the last master entry it
    matches; so index the master's entries by what a match compares and walk the local ones
    once. A Hypothesis test (tests/test_epochfile.py) holds the two forms equal."""
    def key(e: int, s: int) -> Any:
        return (e, s) if search.match == "both" else e if search.match == "epoch" else s

    last = {key(e, s): end for e, s, end in master}  # a later master entry overrides, as in the fold
    order = reversed(local) if search.highest_first else local
    for e, s, end in order:
        master_end = last.get(key(e, s))
        if master_end is not None:
            return _combine(end, master_end, search.end, INT_OPS)
    return -1


def find_consistent_point(
    local: Sequence[Entry],
    local_max_offset: int,
    master: Sequence[Entry],
    master_max_offset: int,
    search: Search = FAITHFUL,
    indexed: bool = False,
) -> int:
    """What `AutoSwitchHAClient.doTruncate` computes: build both caches, set each last end to
    its max offset (only if start <= max, as setLastEpochEntryEndOffset does), then
    local.findConsistentPoint(master). -1 when there is no consistent point.

    `local` and `master` are (epoch, start_offset) pairs in ascending epoch order; a list whose
    epochs or start offsets do not strictly increase raises ValueError naming the entry.
    `search` selects a wrong variant (see `Search`); the default is the code. `indexed` computes
    the same point in linear time (`consistent_point_indexed`) instead of with the proofs' fold.
    """
    loc = validated_entries(local, "local")
    mas = validated_entries(master, "master")
    local_max_offset = operator.index(local_max_offset)
    master_max_offset = operator.index(master_max_offset)
    if indexed:
        return consistent_point_indexed(truncation_view(loc, INF, local_max_offset),
                                        truncation_view(mas, INF, master_max_offset), search)
    return truncation_point(loc, INF, local_max_offset, mas, master_max_offset, INT_OPS, search)


def disagreement(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> str | None:
    """Why two replicas' (epoch, start) entries disagree, or None: the same epoch must start at
    the same offset on both (one master wrote it from one place), and entries they share must
    have the same entries before them (epoch log matching; `validate`'s epoch_agreement)."""
    starts_b = dict(b)
    for e, s in a:
        if e in starts_b and starts_b[e] != s:
            return f"epoch {e} starts at {s} on one and {starts_b[e]} on the other"
    at_b = {x: i for i, x in enumerate(b)}
    last = next(((i, at_b[x]) for i, x in zip(range(len(a) - 1, -1, -1), reversed(a)) if x in at_b), None)
    if last is not None and a[: last[0] + 1] != b[: last[1] + 1]:  # both lists strictly increase
        return f"both have {a[last[0]][0]}-{a[last[0]][1]} but not the same entries before it"
    return None
