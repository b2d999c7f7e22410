"""Writing outputs so that no reader ever sees half of one, and nothing but rmqcheck's own output
is ever replaced.

- A file is written under a temporary name beside it and renamed, but only over a regular file
  or nothing: a symbolic link is followed (its target is written), a character device or a FIFO
  is written through (`--summary-json /dev/stdout` works and `/dev/null` stays a device), and any
  other kind of file (a block device, a socket) is refused.
- A folder of part files is filled under a temporary name and renamed when complete, with a
  manifest (MANIFEST) naming every file in it. `--force` replaces a folder only when everything
  in it is named by its manifest: what rmqcheck wrote there and nothing else.
- An output that is also an input, or two outputs on one path, are refused before any work
  (`check_roles`).

An interrupted or failed write leaves nothing behind but what was there before. Used by every
floor that writes (commands, report, checkers, traces); the model never writes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

# In every output folder rmqcheck fills: which command wrote it and every file it holds.
MANIFEST = ".rmqcheck-manifest.json"
SHOWN = 10  # entries named when a folder is in the way


class OutputError(ValueError):
    """An output that cannot be written: names the option and the path."""


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file, a folder, a character device or a FIFO is."""
    for test, name in ((stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None


def _special(path: Path) -> bool:
    """Written through, never replaced: a character device, a FIFO, or a path through /dev or /proc
    (`/dev/stdout` leads to whatever the shell redirected it to, a file of the user's included)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or str(path).startswith(("/dev/", "/proc/"))


def check_output(path: str | Path | None, option: str) -> Path | None:
    """Refuse, before any work, a file path that cannot be written."""
    if path is None:
        return None
    p = Path(path)
    try:
        mode = p.stat().st_mode  # follows a symbolic link: its target is what is written
    except (FileNotFoundError, NotADirectoryError):  # the latter: a path below a file (named below)
        mode = None
    except OSError as exc:  # a link loop
        raise OutputError(f"{option} {path}: cannot be written: {exc.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"{option} {path}: is a directory")
    if mode is not None and _kind(mode):
        raise OutputError(f"{option} {path}: is {_kind(mode)}, not a file; rmqcheck writes only files, character "
                          "devices and FIFOs")
    if mode is None or stat.S_ISREG(mode):  # a file is renamed into place: its folder must take it
        parent = _existing_parent(Path(os.path.realpath(p)), option)
        if not os.access(parent, os.W_OK):
            raise OutputError(f"{option} {path}: not writable")
    if mode is not None and not os.access(p, os.W_OK):
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
    """Write `data` (text as UTF-8) to `path`: through it when it is a character device or a FIFO,
    else to a temporary name beside the file a symbolic link leads to, renamed over it."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if _special(path):
        with open(path, "ab") as f:  # appending: a redirected stdout's file keeps what it holds
            f.write(raw)
        return path
    real = Path(os.path.realpath(path))  # the link's target, so the link stays a link
    if real.exists() and not real.is_file():
        raise OutputError(f"{path}: not a regular file; not replaced")
    real.parent.mkdir(parents=True, exist_ok=True)
    tmp = real.with_name(f".{real.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(raw)
        os.replace(tmp, real)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def check_roles(outputs: Iterable[tuple[str, str | Path | None]], inputs: Iterable[tuple[str, str | Path | None]],
                containers: Iterable[str] = (), read_whole: Iterable[str] = ()) -> None:
    """Refuse, before any work, an output that is also an input or that another output names
    too (a character device such as /dev/null may take several). Each is (option, path);
    `containers` are output options whose folder is replaced whole, so an input anywhere under
    one is refused as well; `read_whole` are input options whose every file is read (validate's
    folders), so an output anywhere under one is refused too. Paths are compared as the files
    they lead to (links followed), and named as given."""
    def shown(p, real: str) -> str:
        return f"{p}" if os.path.abspath(p) == real else f"{p} (that is {real})"

    outs = [(option, p, os.path.realpath(p)) for option, p in outputs if p is not None]
    containers, read_whole = set(containers), set(read_whole)
    named: dict[str, tuple[str, str | Path]] = {}
    for option, p, real in outs:
        if real in named and not _special(Path(real)):
            first, given = named[real]
            raise OutputError(f"{first} {given} and {option} {p} name the same file ({real}); give each its own")
        named[real] = (option, p)
    for option, p, real in outs:  # a file written into a folder that is replaced whole would go with it
        for folder_option, folder, folder_real in outs:
            if folder_option in containers and Path(folder_real) in Path(real).parents:
                raise OutputError(f"{option} {p} lies inside {folder_option} {folder}, which is replaced whole; "
                                  "write it elsewhere")
    for option, p in inputs:
        real = os.path.realpath(p)
        which = "the input" if option == "input" else f"the input {option}"
        for out_option, o, o_real in outs:
            if real == o_real or (out_option in containers and Path(o_real) in Path(real).parents):
                raise OutputError(f"{out_option} {shown(o, o_real)} {'is' if real == o_real else 'holds'} {which} {p}: "
                                  "writing it would destroy the input; choose another output path")
            if option in read_whole and Path(real) in Path(o_real).parents:
                raise OutputError(f"{out_option} {shown(o, o_real)} lies inside {which} {p}, every file of which is "
                                  "read: choose an output path outside it")


def writable_folder(path: str | Path, option: str) -> Path:
    """Refuse, before any work, a folder that is a file, lies below one, or cannot be written
    (a work folder: what it holds is kept)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{option} {path}: is a file, not a folder")
    parent = p if p.is_dir() else _existing_parent(p, option)
    try:  # os.access says yes to root even where nothing can be made (/proc, a read-only mount)
        Path(tempfile.mkdtemp(prefix=".rmqcheck-probe-", dir=parent)).rmdir()
    except OSError as exc:
        raise OutputError(f"{option} {path}: {parent} is not writable ({exc.strerror})") from None
    return p


def check_folder(out: str | Path, option: str, force: bool) -> Path:
    """Refuse, before any work, an output folder that is a file, lies below one, cannot be
    written, holds the working directory, or already holds files: unless `force` and its
    manifest names every one of them (rmqcheck's own output, replaced whole)."""
    p = writable_folder(out, option)
    real = Path(os.path.realpath(p))
    if real == Path.cwd().resolve() or real in Path.cwd().resolve().parents:
        raise OutputError(f"{option} {out}: is the working directory or holds it; name a folder for the output")
    if not (p.is_dir() and any(p.iterdir())):
        return p
    held = _entries(p)
    if not force:
        raise OutputError(f"{option} {out}: already holds {sum(e.name != MANIFEST for e in p.iterdir())} entries (an earlier "
                          "output?); --force replaces it when rmqcheck wrote everything in it")
    owned = _manifest(p)
    if owned is None:
        raise OutputError(f"{option} {out}: --force replaces only rmqcheck's own output, and this folder has no "
                          f"{MANIFEST}; in the way: {_listed(held)}")
    stray = [e for e in held if e != MANIFEST and e not in owned]
    if stray:
        raise OutputError(f"{option} {out}: --force replaces only what rmqcheck wrote there, and these are not in its "
                          f"{MANIFEST}: {_listed(stray)}")
    return p


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def _entries(folder: Path) -> list[str]:
    """Every file and folder under `folder`, relative, a folder with a trailing slash."""
    return sorted(str(e.relative_to(folder)) + ("/" if e.is_dir() else "") for e in folder.rglob("*"))


def _manifest(folder: Path) -> set[str] | None:
    try:
        entries = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {e for e in entries if isinstance(e, str)} if isinstance(entries, list) else None


@contextmanager
def output_folder(out: str | Path, written_by: str = "rmqcheck") -> Iterator[Path]:
    """A temporary folder beside `out` to fill; when the block completes, a manifest of what it
    holds is added and it is renamed to `out` (replacing the earlier output, which check_folder
    has let through); removed when it does not complete (an exception, Ctrl-C)."""
    out = Path(os.path.realpath(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial{os.getpid()}")
    old = out.with_name(f".{out.name}.old{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    finished = False
    try:
        yield tmp
        try:
            (tmp / MANIFEST).write_text(json.dumps({"written_by": written_by, "entries": _entries(tmp)}, indent=1) + "\n")
        except OSError as exc:  # a full disk: what was written stays, named
            finished = True
            raise OutputError(f"{out}: could not be finished ({exc.strerror or exc}); what was written is in {tmp}") \
                from None
        if out.exists():
            os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            if old.exists():  # the earlier output stays where it was
                os.replace(old, out)
            raise
    finally:
        if not finished:
            shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
