"""RocketMQ store artefacts: the `epochFileCheckpoint` files of a replica set.

Layout read: a broker-set directory holding one store directory per replica, each with
`epochFileCheckpoint` (and maybe `epochFileCheckpoint.bak`):

    <set>/<replica>/epochFileCheckpoint

`load_epoch_file` mirrors `EpochFileCache.initCacheFromFile` over `CheckpointFile.read`
(reference §1.5): count line, crc line (0 disables the check), `<epoch>-<startOffset>` lines;
a count or crc mismatch, or a missing or empty main file, falls back to `.bak`; a non-numeric
header or entry fails store start-up (NumberFormatException, no fallback).

Checks across the replicas of one set (`check_set`):
- epoch_file: every replica's file loads, with epochs and start offsets strictly increasing
  (what `appendEntry` maintains); a replica that needed `.bak` is noted in the detail.
- epoch_agreement: the same epoch starts at the same offset on every replica that has it
  (one master per epoch wrote it from one place), and replicas agreeing on an entry agree on
  every entry before it (epoch log matching).
- consistent_point: each replica's truncation point against the replica with the highest
  last epoch (the would-be master), computed by the model's `find_consistent_point`: -1 while
  both have entries means the replica cannot resume replication without losing its whole log.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Iterable

from rmqcheck.model.epochfile import INF, consistent_point_indexed, disagreement, truncation_view

from .history import Violation, shape

FILE = "epochFileCheckpoint"
BAK = FILE + ".bak"
CHECKS: tuple[str, ...] = ("epoch_file", "epoch_agreement", "consistent_point")
# Bytes AutoSwitchHAConnection's writer sends a batch at most (MessageStoreConfig.haTransferBatchSize)
HA_TRANSFER_BATCH = 32 * 1024


class Unreadable(Exception):
    """IOException in CheckpointFile.read: count or crc mismatch (falls back to .bak)."""


class Fatal(Exception):
    """NumberFormatException: the store cannot start (no fallback)."""


def crc(entries: Iterable[tuple[int, int]]) -> int:
    """CheckpointFile's crc: CRC32 of the entry lines, each with its separator, & 0x7FFFFFFF."""
    text = "".join(f"{e}-{s}\n" for e, s in entries)
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def format_epoch_file(entries: Iterable[tuple[int, int]]) -> str:
    entries = list(entries)
    return f"{len(entries)}\n{crc(entries)}\n" + "".join(f"{e}-{s}\n" for e, s in entries)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what BufferedReader.readLine splits on
_JAVA_INT = re.compile(r"[+-]?\d+")
# The common entry line, "epoch-start" with no sign but an optional '+' (split("-") never leaves
# a '-' in a part): parsed at once; any other line takes the general path below.
_PLAIN_ENTRY = re.compile(r"(\+?\d{1,10})-(\+?\d{1,19})")
_INT_MAX, _LONG_MAX = (1 << 31) - 1, (1 << 63) - 1


def _lines(text: str) -> list[str]:
    """The lines readLine returns, in order (no empty line after the last break)."""
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _java_number(text: str | None, bits: int, what: str) -> int:
    """Integer.parseInt (bits 32) or Long.parseLong (bits 64): a NumberFormatException is Fatal."""
    if text is None:
        raise Fatal(f"the {what} is missing")
    # More than 19 digits is beyond a long (and int() refuses 4,300)
    value = int(text) if _JAVA_INT.fullmatch(text) and len(text) <= 21 else None
    if value is None or not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        kind = "an int" if bits == 32 else "a long"
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"
        raise Fatal(f"the {what} {shown!r} is not {kind} (Java's parse{'Int' if bits == 32 else 'Long'} refuses it)")
    return value


def _parse(text: str) -> list[tuple[int, int]]:
    """CheckpointFile.read of EpochEntry lines (reference §1.5), as the Java parses them."""
    lines = _lines(text)
    count = _java_number(lines[0] if lines else None, 32, "count line")
    want_crc = _java_number(lines[1] if len(lines) > 1 else None, 32, "crc line")
    entries = []
    for n, line in enumerate(lines[2:], start=3):
        plain = _PLAIN_ENTRY.fullmatch(line)
        if plain:
            epoch, start = int(plain[1]), int(plain[2])
            if epoch <= _INT_MAX and start <= _LONG_MAX:
                entries.append((epoch, start))
                continue
        parts = line.split("-")
        while parts and parts[-1] == "":  # String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 2:
            continue  # fromLine returns null; the count then mismatches
        entries.append((_java_number(parts[0], 32, f"epoch of line {n}"),
                        _java_number(parts[1], 64, f"start offset of line {n}")))
    if len(entries) != count:
        raise Unreadable(f"count line says {count}, the file has {len(entries)} entries")
    # The crc covers every line after the header as read, each ended by the line separator.
    got_crc = zlib.crc32("".join(line + "\n" for line in lines[2:]).encode()) & 0x7FFFFFFF
    if want_crc != 0 and got_crc != want_crc:
        raise Unreadable(f"crc {want_crc} does not match the entries ({got_crc})")
    return entries


def _read(path: Path) -> str:
    """The file's text; what fails to read is an IOException in the Java (falls back to .bak)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path.name} is not UTF-8 (byte {exc.start}): MalformedInputException") from None
    except OSError as exc:
        raise Unreadable(f"{path.name} cannot be read: {exc.strerror or exc}") from None


def load_epoch_file(store: Path) -> tuple[list[tuple[int, int]], str]:
    """(entries, note) as initCacheFromFile reads them; raises Fatal or Unreadable (both files)."""
    main, bak = store / FILE, store / BAK
    note = ""
    try:
        entries = _parse(_read(main)) if main.exists() else []
        if entries:
            return entries, note
        note = "main file absent or empty, .bak used"
    except Unreadable as exc:
        note = f"main file unusable ({exc}), .bak used"
    if not bak.exists():
        if note.startswith("main file unusable"):
            raise Unreadable(note.replace(", .bak used", "") + "; no .bak")
        return [], "no epoch file"
    return _parse(_read(bak)), note


def _increasing(entries: list[tuple[int, int]]) -> str | None:
    for (e0, s0), (e1, s1) in zip(entries, entries[1:]):
        if e1 <= e0 or s1 <= s0:
            return f"entry {e1}-{s1} does not follow {e0}-{s0} (epochs and starts must strictly increase)"
    return None


def check_set(set_dir: str) -> list[Violation]:
    base = Path(set_dir)
    run = base.name
    out: list[Violation] = []
    good: dict[str, list[tuple[int, int]]] = {}
    for store in sorted(p for p in base.iterdir() if (p / FILE).exists() or (p / BAK).exists()):
        try:
            entries, note = load_epoch_file(store)
        except (Fatal, Unreadable) as exc:
            out.append(Violation("epoch_file", run, f"replica {store.name}", 1, f"store cannot load its epoch file: {exc}"))
            continue
        wrong = _increasing(entries)
        if wrong:
            out.append(Violation("epoch_file", run, f"replica {store.name}", 1, wrong + (f" ({note})" if note else "")))
            continue
        good[store.name] = entries
    names = sorted(good)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            problem = disagreement(good[a], good[b])
            if problem:
                out.append(Violation("epoch_agreement", run, f"replicas {a} {b}", 1, problem))
    if names:
        master = max(names, key=lambda n: (good[n][-1][0] if good[n] else -1, n))
        for n in names:
            if n != master and good[n] and good[master]:
                if _consistent_point(good[n], good[master]) == -1:
                    detail = f"no consistent point with {master}: {_show(good[n])} vs {_show(good[master])}"
                    out.append(Violation("consistent_point", run, f"replica {n}", 1, detail))
    return out


def _consistent_point(local: list[tuple[int, int]], master: list[tuple[int, int]]) -> int:
    """find_consistent_point of two strictly increasing lists (checked by `_increasing`), with
    no max offset known (INF), in linear time (model/epochfile.py consistent_point_indexed)."""
    return consistent_point_indexed(truncation_view(local, INF, INF), truncation_view(master, INF, INF))


def boundary_batch_shape(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> str | None:
    """The disagreement boundary_batch_labelled_next_epoch leaves, if `a` and `b` have its shape
    (docs/findings/boundary_batch_labelled_next_epoch.md): one lacks a single epoch E that the
    other has between two others, E is shorter than a transfer batch, and they agree on every
    other entry both have (either may have later ones). A slave whose first batch of E was the
    one that ends E got it labelled with E's successor, so it recorded the successor only and put
    E's bytes under the epoch before. A shape, not a proof: the model did not follow the run (a
    soak records no steps)."""
    for x, y in ((a, b), (b, a)):
        for i in range(1, len(x) - 1):
            (epoch, start), (_, end) = x[i], x[i + 1]
            after_x, after_y = x[i + 1:], y[i:]
            n = min(len(after_x), len(after_y))
            if end - start <= HA_TRANSFER_BATCH and n and x[:i] == y[:i] and after_x[:n] == after_y[:n]:
                return shape("boundary_batch_labelled_next_epoch", f"one replica lacks epoch {epoch} ({end - start} "
                             f"bytes from {start}, less than a {HA_TRANSFER_BATCH // 1024} KiB transfer batch) and "
                             f"counts its bytes to epoch {x[i - 1][0]}")
    return None


def _show(entries: list[tuple[int, int]]) -> str:
    return ",".join(f"{e}-{s}" for e, s in entries)
