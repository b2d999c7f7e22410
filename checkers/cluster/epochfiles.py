"""What a power loss leaves of a broker's epoch files (and, `drop_after`, of its mapped files).

RocketMQ rewrites `epochFileCheckpoint` and its `.bak` in place with no fsync
(`CheckpointFile.write`, `MixAll.string2File`), so a version of them is on disk only once the file
system has written it back. ext4's default journal commit (5 s) carries a file rewritten in place
(`auto_da_alloc`): a version survives a power loss once it is `writeback` controller ticks old
(one tick stands for about 5 s). The harness notes each version after every step with the
controller's tick (`note`), and a power loss takes the files back to the last version old enough,
or removes them when none is (`after_power_loss`).
"""

from __future__ import annotations

from pathlib import Path

FILES = ("epochFileCheckpoint", "epochFileCheckpoint.bak")
KEPT, REVERTED, LOST = "kept", "reverted", "lost"

Contents = tuple[bytes | None, ...]


def read(store: Path) -> Contents:
    return tuple((store / name).read_bytes() if (store / name).exists() else None for name in FILES)


def remove(store: Path) -> None:
    """The epoch files deleted (the model's `lose_epoch_file`)."""
    for name in FILES:
        (store / name).unlink(missing_ok=True)


def restore(store: Path, contents: Contents) -> None:
    """The epoch files as `contents` (read's), absent where None: a version the file system wrote back."""
    remove(store)
    for name, content in zip(FILES, contents):
        if content is not None:
            (store / name).write_bytes(content)


NONE: Contents = (None,) * len(FILES)  # no version written back yet

# StoreCheckpoint's file (StorePathConfigHelper.getStoreCheckpoint): five longs, confirmPhyOffset
# the fifth (StoreCheckpoint.flush), big-endian as a ByteBuffer writes them.
CHECKPOINT, CONFIRM_AT = "checkpoint", 32


def set_checkpoint_confirm(store: Path, offset: int) -> None:
    """The checkpoint file's confirmPhyOffset set to `offset` (the model's `revert_checkpoint`)."""
    with open(store / CHECKPOINT, "r+b") as f:
        f.seek(CONFIRM_AT)
        f.write(offset.to_bytes(8, "big", signed=True))


class PageCache:
    """The versions of one broker's epoch files seen so far, each with its controller tick."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.versions: list[tuple[int, Contents]] = []

    def note(self, tick: int) -> None:
        now = read(self.store)
        if not self.versions or self.versions[-1][1] != now:
            self.versions.append((tick, now))

    def after_power_loss(self, tick: int, writeback: int | None) -> str:
        """Leave on disk what the file system had written back by `tick` (None: every version
        was); KEPT, REVERTED or LOST. A version whose main file is the last one's, and only its
        .bak older, is KEPT: CheckpointFile reads the .bak only when the main file is absent or fails
        its check (it never writes an empty list)."""
        self.note(tick)  # a write since the last step is a version too (the youngest)
        if writeback is None:
            return KEPT
        old = [v for t, v in self.versions if t <= tick - writeback]
        survivor = old[-1] if old else NONE
        last = self.versions[-1][1]
        if survivor == last:
            return KEPT
        restore(self.store, survivor)
        self.versions.append((tick, survivor))
        if all(c is None for c in survivor):
            return LOST
        return KEPT if survivor[0] is not None and survivor[0] == last[0] else REVERTED


def drop_after(path: Path, position: int) -> None:
    """Zero a mapped file's bytes from `position` on (what was never flushed)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    with open(path, "r+b") as f:
        for at in range(position, size, 1 << 20):
            f.seek(at)
            f.write(b"\0" * min(1 << 20, size - at))
