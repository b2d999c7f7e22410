"""EpochFile: which master term wrote which byte range of the commit log.

Mirrors `store/.../ha/autoswitch/EpochFileCache.java` (reference §1.2-1.5). An entry is
(epoch, startOffset); every non-last entry ends where the next one starts, so the only end
that needs storing is the last entry's (`last_end`, in memory only: ends are never
persisted). `disk` is what `epochFileCheckpoint` holds, which differs from `entries` only
through quirk Q2.

Quirks, each behind a switch (faithful = the snapshot, intended = what the code means):
* Q1: after a suffix truncation the "reset last end to INF" acts on a copy, so the new last
  entry keeps its stale end (the start of the first removed entry).
* Q2: an empty entry list is never written, so the file keeps the previous list.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple, Sequence

INF = 2**63 - 1  # Long.MAX_VALUE, EpochEntry's default endOffset

Entry = tuple[int, int]  # (epoch, start offset)


class EpochFile(NamedTuple):
    entries: tuple[Entry, ...] = ()
    last_end: int = INF
    disk: tuple[Entry, ...] = ()


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
    """`nextEntry(epoch)`: the entry with the smallest epoch >= epoch + 1 (TreeMap ceiling)."""
    for i, (e, s) in enumerate(ef.entries):
        if e >= epoch + 1:
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
            return EpochFile(entries, INF, _flush(entries, ef.disk, faithful_q2)), True
        if last_e >= epoch or last_s >= start:
            return ef, False
    entries = ef.entries + ((epoch, start),)
    return EpochFile(entries, INF, _flush(entries, ef.disk, faithful_q2)), True


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
    return EpochFile(entries, last_end, _flush(entries, ef.disk, faithful_q2))


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
    return EpochFile(entries, last_end, _flush(entries, ef.disk, faithful_q2))


def reload(ef: EpochFile) -> EpochFile:
    """`initCacheFromFile` after a restart: ends are recomputed, so the last one is INF."""
    return EpochFile(ef.disk, INF, ef.disk)


def lose_file(ef: EpochFile) -> EpochFile:
    """The checkpoint and its .bak are gone: the next start reads an empty list."""
    return ef._replace(disk=())


# --- the consistent point (reference §1.4) -------------------------------------------------


class IntOps:
    """Operations `consistent_point` needs, on Python integers. Issue 3 supplies Z3 ones."""

    @staticmethod
    def ite(cond: Any, then: Any, other: Any) -> Any:
        return then if cond else other

    @staticmethod
    def eq(a: Any, b: Any) -> Any:
        return a == b

    @staticmethod
    def and_(a: Any, b: Any) -> Any:
        return a and b

    @staticmethod
    def min(a: Any, b: Any) -> Any:
        return a if a <= b else b


INT_OPS = IntOps()


def consistent_point(
    local: Sequence[tuple[Any, Any, Any]],
    master: Sequence[tuple[Any, Any, Any]],
    ops: Any = INT_OPS,
    highest_first: bool = True,
) -> Any:
    """`EpochFileCache.findConsistentPoint`, called as local.findConsistentPoint(master).

    Walk the *local* epochs from the highest down; the first epoch the master also has with
    the same start offset decides, and the point is the smaller of the two ends. Epochs only
    the master has are ignored. -1 when nothing matches. Entries are (epoch, start, end).

    Written as a fold (a later match overrides an earlier one) so the same definition runs
    on integers and on symbolic terms. `highest_first=False` is the design-text pitfall
    (ascending iteration, reference §6.1): the lowest common epoch wins.
    """
    order = local if highest_first else tuple(reversed(local))
    point = -1
    for e, s, end in order:
        for me, ms, mend in master:
            point = ops.ite(ops.and_(ops.eq(e, me), ops.eq(s, ms)), ops.min(end, mend), point)
    return point


def _validated(entries: Sequence[Any], name: str) -> tuple[Entry, ...]:
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


def find_consistent_point(
    local: Sequence[Entry], local_max_offset: int, master: Sequence[Entry], master_max_offset: int
) -> int:
    """What `AutoSwitchHAClient.doTruncate` computes: build both caches, set each last end to
    its max offset (only if start <= max, as setLastEpochEntryEndOffset does), then
    local.findConsistentPoint(master). -1 when there is no consistent point.

    `local` and `master` are (epoch, start_offset) pairs in ascending epoch order; a list whose
    epochs or start offsets do not strictly increase raises ValueError naming the entry.
    """
    loc = _validated(local, "local")
    mas = _validated(master, "master")
    local_max_offset = operator.index(local_max_offset)
    master_max_offset = operator.index(master_max_offset)
    l_ef = set_last_end(EpochFile(loc), local_max_offset)
    m_ef = set_last_end(EpochFile(mas), master_max_offset)
    return consistent_point(with_ends(l_ef), with_ends(m_ef))
