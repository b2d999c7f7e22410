"""Writing outputs so that no reader ever sees half of one: a file is written under a temporary
name beside it and renamed; a folder of part files is filled under a temporary name and renamed
when complete. An interrupted or failed write leaves nothing behind but what was there before.
Used by every floor that writes (commands, report, checkers, traces); the model never writes."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class OutputError(ValueError):
    """An output that cannot be written: names the option and the path."""


def check_output(path: str | Path | None, option: str) -> Path | None:
    """Refuse, before any work, a file path that cannot be written."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{option} {path}: is a directory")
    if not os.access(_existing_parent(p, option), os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputError(f"{option} {path}: not writable")
    return p


def _existing_parent(p: Path, option: str) -> Path:
    """The nearest folder above `p` that exists (mkdir creates the rest); OutputError when that is a file."""
    parent = p.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{option} {p}: {parent} is not a directory")
    return parent


def write_atomically(path: str | Path, data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to a temporary name beside `path`, then rename it to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def check_folder(out: str | Path, option: str, force: bool) -> Path:
    """Refuse, before any work, an output folder that is a file, lies below one, cannot be
    written, or already holds files (unless `force`: it is then replaced whole)."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{option} {out}: is a file, not a folder")
    if p.is_dir() and any(p.iterdir()) and not force:
        held = sum(1 for _ in p.iterdir())
        raise OutputError(f"{option} {out}: already holds {held} entries (an earlier output?); --force replaces it")
    parent = _existing_parent(p, option)
    if not os.access(parent, os.W_OK):
        raise OutputError(f"{option} {out}: {parent} is not writable")
    return p


@contextmanager
def output_folder(out: str | Path) -> Iterator[Path]:
    """A temporary folder beside `out` to fill; renamed to `out` (replacing it) when the block
    completes, removed when it does not (an exception, Ctrl-C)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
