"""Outputs are whole or absent (rmqcheck/outputs.py): an interrupted verb exits 130 with one line
and leaves no partial file or folder; an output folder that already holds files is refused
without --force; an output path that cannot be written is refused before any work."""

from __future__ import annotations

import re

import pytest
from interrupts import INTERRUPTIBLE

from rmqcheck import outputs
from rmqcheck.checkers.java import build
from rmqcheck.cli import main


def interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def leftovers(root) -> list:
    """Temporary names an interrupted write would leave behind."""
    return [p for p in root.rglob("*") if ".tmp" in p.name or ".partial" in p.name]


# (argv, what the verb calls that the interruption hits, its output under OUT)
VERBS = [
    (["hunt", "--budget", "30", "--out", "OUT/cx.json"], "rmqcheck.commands.hunt.find"),
    (["explore", "--config", "std2", "--out", "OUT"], "rmqcheck.checkers.search.explore.Explorer.run"),
    (["prove", "--out", "OUT"], "rmqcheck.checkers.proofs.truncation.run_all"),
    (["validate", "CORPUS", "--violations", "OUT/v.ndjson", "--quiet"], "rmqcheck.commands.common.validate_local"),
    (["report", "--out", "OUT/r.html"], "rmqcheck.report.html.page"),
    (["matrix", "--modes", "classic", "--jobs", "1", "--out", "OUT", "--json", "OUT/m.json"],
     "rmqcheck.checkers.tables.matrix.run"),
    (["bugs", "--measure", "--only", "ack_beyond_master_max", "--jobs", "1", "--json", "OUT/b.json"],
     "rmqcheck.checkers.tables.rediscovery.measure"),
    (["check", "--out", "OUT", "--modes=", "--conform-budget", "0"], "rmqcheck.commands.check.portfolio"),
    (["simulate", "--runs", "6", "--runs-per-file", "2", "--out", "OUT/corpus"], "rmqcheck.traces.recorder.record"),
]


@pytest.mark.parametrize("argv,target", VERBS, ids=[v[0][0] for v in VERBS])
def test_an_interrupted_verb_exits_130_with_one_line_and_no_partial_output(tmp_path, capsys, monkeypatch, argv,
                                                                          target):
    corpus = tmp_path / "corpus"
    assert main(["simulate", "--runs", "2", "--out", str(corpus)]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    argv = [a.replace("OUT", str(out)).replace("CORPUS", str(corpus)) for a in argv]
    monkeypatch.setattr(target, interrupt)
    assert main(argv) == 130
    assert capsys.readouterr().err == "rmqcheck: interrupted\n"
    assert not out.exists() or not any(out.rglob("*")), list(out.rglob("*"))
    assert not leftovers(tmp_path)


def test_a_simulate_interrupted_between_part_files_leaves_no_corpus(tmp_path, capsys, monkeypatch):
    """It left 880 of 5,000 runs that validate then judged (issue 30)."""
    from rmqcheck.traces import recorder

    written = []
    real = recorder.write_part

    def second_part_interrupted(path, records, fmt):
        if written:
            raise KeyboardInterrupt
        written.append(path)
        return real(path, records, fmt)

    monkeypatch.setattr(recorder, "write_part", second_part_interrupted)
    out = tmp_path / "corpus"
    assert main(["simulate", "--runs", "4", "--runs-per-file", "2", "--out", str(out)]) == 130
    assert written and not out.exists() and not leftovers(tmp_path)


def test_an_output_folder_with_files_is_refused_and_force_replaces_it_whole(tmp_path, capsys):
    """Re-simulating into a corpus left its extra part files for validate to read (issue 30)."""
    out = tmp_path / "corpus"
    assert main(["simulate", "--runs", "6", "--runs-per-file", "2", "--out", str(out)]) == 0
    assert len(list(out.glob("part-*"))) == 3
    assert main(["simulate", "--runs", "2", "--out", str(out)]) == 2
    assert "already holds 3 entries" in capsys.readouterr().err and len(list(out.glob("part-*"))) == 3
    assert main(["simulate", "--runs", "2", "--out", str(out), "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [outputs.MANIFEST, "part-00000.ndjson"]


@pytest.mark.heavy
def test_an_interrupted_file_write_leaves_the_earlier_file(tmp_path, capsys, monkeypatch):
    page = tmp_path / "r.html"
    page.write_text("earlier")
    monkeypatch.setattr(outputs.os, "replace", interrupt)
    assert main(["report", "--out", str(page), "--limit", "1"]) == 130
    assert page.read_text() == "earlier" and not leftovers(tmp_path)


@pytest.mark.heavy
@pytest.mark.parametrize("argv,message", [
    (["simulate", "--runs", "1", "--out", "FILE"], "--out FILE: is a file, not a folder"),
    (["simulate", "--runs", "1", "--out", "FILE/below"], "--out FILE/below: FILE is not a directory"),
    (["validate", "CORPUS", "--violations", "DIR"], "--violations DIR: is a directory"),
    (["validate", "CORPUS", "--violations", "FILE/v.ndjson"], "--violations FILE/v.ndjson: FILE is not a directory"),
    (["report", "--out", "DIR"], "--out DIR: is a directory"),
    (["report", "--out", "FILE/r.html"], "FILE is not a directory"),
    (["matrix", "--modes", "classic", "--json", "DIR"], "--json DIR: is a directory"),
    (["bugs", "--measure", "--only", "ack_beyond_master_max", "--markdown", "FILE/x.md"], "FILE is not a directory"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path, capsys, argv, message):
    corpus = tmp_path / "corpus"
    assert main(["simulate", "--runs", "2", "--out", str(corpus)]) == 0
    (tmp_path / "file").write_text("")
    (tmp_path / "dir").mkdir()
    names = {"FILE": str(tmp_path / "file"), "DIR": str(tmp_path / "dir"), "CORPUS": str(corpus)}
    argv = [a.replace("FILE", names["FILE"]).replace("DIR", names["DIR"]).replace("CORPUS", names["CORPUS"])
            for a in argv]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message.replace("FILE", names["FILE"]).replace("DIR", names["DIR"]) in err and "Traceback" not in err


@pytest.mark.skipif(build.shared_tree() is None, reason="needs ../shared/rocketmq/")
def test_an_interrupted_recording_leaves_no_corpus(tmp_path, capsys, monkeypatch):
    out = tmp_path / "rec"
    monkeypatch.setattr("rmqcheck.checkers.java.lockstep.lockstep", interrupt)
    assert main(["conform", "--record", str(out), "--runs", "2"]) == 130
    assert not out.exists() and not leftovers(tmp_path)
    out.mkdir()
    (out / "old.ndjson").write_text("")
    assert main(["conform", "--record", str(out), "--runs", "2"]) == 2
    assert "--force replaces it" in capsys.readouterr().err


def test_ctrl_c_during_a_run_of_worker_processes_is_one_line_and_no_output(tmp_path):
    """A real SIGINT to `simulate --jobs 2`: the workers leave it to the parent (no traceback from
    each of them), which stops them, removes the partial corpus and exits 130."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    exe = Path(sys.executable).parent / "rmqcheck"
    out = tmp_path / "corpus"
    proc = subprocess.Popen([str(exe), "simulate", "--runs", "100000", "--runs-per-file", "500", "--jobs", "2",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **INTERRUPTIBLE)
    deadline = time.monotonic() + 60
    while not any(tmp_path.glob(".corpus.partial*/part-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "rmqcheck: interrupted\n", err
    assert not out.exists() and not leftovers(tmp_path)


# --- outputs never destroy (issue 40) --------------------------------------------------------------


def device(tmp_path, kind: str):
    """A character device (the null device's numbers) or block device node of our own under
    tmp_path, so a regression replaces it and not the machine's; made as root only."""
    import os
    import stat

    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = tmp_path / f"{kind}dev"
    os.mknod(node, 0o666 | (stat.S_IFCHR if kind == "char" else stat.S_IFBLK), os.makedev(1, 3) if kind == "char"
             else os.makedev(7, 200))
    return node


def corpus(tmp_path):
    c = tmp_path / "corpus"
    assert main(["simulate", "--runs", "2", "--out", str(c)]) == 0
    return c


def test_a_character_device_is_written_through_and_stays_a_device(tmp_path, capsys):
    """As root, `--summary-json /dev/null` had replaced /dev/null with a JSON file."""
    import stat

    node = device(tmp_path, "char")
    assert main(["validate", str(corpus(tmp_path)), "--summary-json", str(node), "--junit", str(node),
                 "--violations", str(tmp_path / "v.ndjson")]) == 0
    assert stat.S_ISCHR(node.stat().st_mode) and not leftovers(tmp_path)


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path, capsys):
    import os
    import stat
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert main(["validate", str(corpus(tmp_path)), "--summary-json", str(fifo),
                 "--violations", str(tmp_path / "v.ndjson")]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and '"command": "validate"' in got[0]


def test_a_symbolic_link_is_followed_and_stays_a_link(tmp_path, capsys):
    target, link = tmp_path / "real.json", tmp_path / "link.json"
    link.symlink_to(target.name)  # dangling: the target is made
    assert main(["validate", str(corpus(tmp_path)), "--summary-json", str(link),
                 "--violations", str(tmp_path / "v.ndjson")]) == 0
    assert link.is_symlink() and '"command": "validate"' in target.read_text()


def test_a_block_device_is_refused_before_the_work(tmp_path, capsys):
    import stat

    node = device(tmp_path, "block")
    assert main(["validate", str(corpus(tmp_path)), "--summary-json", str(node)]) == 2
    assert "is a block device, not a file" in capsys.readouterr().err and stat.S_ISBLK(node.stat().st_mode)


def test_nothing_is_renamed_over_a_path_that_is_not_a_regular_file(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(outputs.OutputError, match="not a regular file"):
        outputs.write_atomically(tmp_path / "dir", "x")
    assert (tmp_path / "dir").is_dir()


@pytest.mark.parametrize("argv,message", [
    (["validate", "X", "--violations", "X"], "--violations X is the input X"),
    (["validate", "X", "--violations", "DOTX"], "--violations DOTX is the input X"),
    (["validate", "CORPUS", "--violations", "A", "--rejected", "A"], "--violations A and --rejected A name the same file"),
    (["validate", "CORPUS", "--junit", "A", "--summary-json", "A"], "--junit A and --summary-json A name the same file"),
    (["hunt", "--budget", "1", "--out", "A", "--summary-json", "A"], "--out A and --summary-json A name the same file"),
    (["report", "--matrix", "M", "--out", "M"], "--out M is the input --matrix M"),
    (["simulate", "--out", "CORPUS", "--force", "--config", "CORPUS/cfg.json"], "--out CORPUS holds the input --config"),
])
def test_an_output_that_is_an_input_or_named_twice_is_refused_before_any_work(tmp_path, capsys, argv, message):
    """`validate X.ndjson --violations X.ndjson` emptied the input trace and exited 0."""
    c = corpus(tmp_path)
    x = tmp_path / "X"
    x.write_bytes((c / "part-00000.ndjson").read_bytes())
    (tmp_path / "M").write_text("[]")
    (c / "cfg.json").write_text("{}")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    names = {"DOTX": f"{tmp_path}/./X", "CORPUS": str(c), "X": str(x), "A": str(tmp_path / "a"),
             "M": str(tmp_path / "M")}
    argv = [names.get(a, a).replace("CORPUS", str(c)) for a in argv]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    message = re.sub(r"\b(DOTX|CORPUS|X|A|M)\b", lambda m: names[m[1]], message)
    assert message in err, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_force_replaces_only_rmqcheck_s_own_output(tmp_path, capsys):
    """`simulate --out DIR --force` deleted everything in DIR, and `--out . --force` the working directory."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    (mine / "sub").mkdir()
    (mine / "sub" / "data").write_text("keep")
    assert main(["simulate", "--runs", "2", "--out", str(mine), "--force"]) == 2
    err = capsys.readouterr().err
    assert "no .rmqcheck-manifest.json; in the way: notes.txt, sub/, sub/data" in err
    assert (mine / "notes.txt").read_text() == "keep"

    out = corpus(tmp_path)
    (out / "added.txt").write_text("keep")
    assert main(["simulate", "--runs", "2", "--out", str(out), "--force"]) == 2
    assert "not in its .rmqcheck-manifest.json: added.txt" in capsys.readouterr().err
    (out / "added.txt").unlink()
    assert main(["simulate", "--runs", "3", "--out", str(out), "--force"]) == 0


def test_the_working_directory_is_never_an_output_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep").write_text("keep")
    for out in (".", str(tmp_path.parent)):
        assert main(["simulate", "--runs", "2", "--out", out, "--force"]) == 2
        assert "is the working directory or holds it" in capsys.readouterr().err
    assert (tmp_path / "keep").read_text() == "keep"


def test_a_folder_nothing_can_be_made_in_is_refused_before_the_work(capsys):
    """`simulate --out /proc/x` ended in a traceback (root may write anywhere but there)."""
    assert main(["simulate", "--runs", "1", "--out", "/proc/rmqcheck-x"]) == 2
    err = capsys.readouterr().err
    assert "--out /proc/rmqcheck-x: /proc is not writable" in err and "Traceback" not in err


CTRL_C_DURING_FORK = """
import os, signal, sys, time
from rmqcheck.processes import workers
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C as a worker forks
try:
    with workers(2) as pool:
        pool.map(abs, range(4))
        time.sleep(5)
    print("lost")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_while_workers_fork_is_not_lost():
    """A Ctrl-C that came while the pool forked its workers was raised in CPython's after-fork
    callbacks, printed as "Exception ignored" and lost: `simulate --jobs 2` then ran on."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CTRL_C_DURING_FORK], capture_output=True, text=True, timeout=60,
                          **INTERRUPTIBLE)
    assert done.stdout.strip() == "interrupted" and "Exception ignored" not in done.stderr, done.stderr[-600:]


def test_a_folder_that_cannot_be_finished_keeps_what_was_written_and_names_it(tmp_path, monkeypatch):
    """A full disk when the manifest is written: the files stay, in the folder the error names."""
    import errno
    from pathlib import Path

    real = Path.write_text

    def full(self, *a, **k):
        if self.name == outputs.MANIFEST:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(outputs.OutputError, match="could not be finished \\(No space left on device\\)") as caught:
        with outputs.output_folder(tmp_path / "out") as folder:
            (folder / "run-0").mkdir()
    kept = Path(str(caught.value).rsplit("what was written is in ", 1)[1])
    assert (kept / "run-0").is_dir() and not (tmp_path / "out").exists()
