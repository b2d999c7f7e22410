"""`rmqcheck report`: a self-contained HTML page that a real headless Chromium renders with
every image decoded (the test takes a screenshot), and clear errors for bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rmqcheck.checkers.tables.rediscovery import Attempt, Measure
from rmqcheck.checkers.tables.rediscovery import to_json as bugs_json
from rmqcheck.cli import main
from rmqcheck.report.diagrams import arrow
from rmqcheck.model.config import Config
from rmqcheck.model.step import initial_state

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    path = shutil.which("chromium")
    assert path, "Chromium is missing: `make test` installs Debian's chromium package"
    return path


@pytest.fixture
def page(tmp_path) -> Path:
    matrix = tmp_path / "matrix.json"
    assert main(["matrix", "--modes", "classic", "--where", "brokerRole=ASYNC_MASTER", "--jobs", "1",
                 "--out", str(tmp_path / "cx"), "--json", str(matrix)]) == 0
    bugs = tmp_path / "bugs.json"
    measures = [Measure("ack_uses_local_sss_only", "controller", "explore", 60, (Attempt(0, True, "I2", 4, 0.1),))]
    bugs.write_text(json.dumps(bugs_json(measures)))
    out = tmp_path / "report.html"
    assert main(["report", "--out", str(out), "--matrix", str(matrix), "--bugs", str(bugs),
                 "--counterexamples", str(SCENARIOS / "toggles" / "ack_uses_local_sss_only--I1.scn"),
                 "--counterexamples", str(SCENARIOS / "toggles" / "confirm_min_over_connected_only--I3.scn")]) == 0
    return out


def test_the_report_renders_in_headless_chromium(page, tmp_path):
    html = page.read_text()
    assert "http://" not in html and "https://" not in html  # self-contained
    assert "Guarantee matrix" in html and "ack_uses_local_sss_only" in html and "acked_durability" in html
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    subprocess.run([chromium(), *flags, "--window-size=1400,2000", f"--screenshot={shot}", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    dom = subprocess.run([chromium(), *flags, "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    # two counterexamples, each a sequence diagram and a timeline, every one decoded
    assert 'data-images="4"' in dom and 'data-broken="0"' in dom


def test_arrows_go_from_who_acts_to_whom_it_reaches():
    cfg = Config()
    s = initial_state(cfg)
    assert arrow(("send", 1, 0, 1), s) == ("client", "broker 1")
    assert arrow(("alter_sss", 1, True), s) == ("broker 1", "controller")
    assert arrow(("crash", 2, 0), s) == ("broker 2", "broker 2")
    assert arrow(("controller_elect",), s) == ("controller", "controller")


def test_bad_input_exits_2_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "matrix.json"
    bad.write_text("{not json")
    assert main(["report", "--out", str(tmp_path / "r.html"), "--matrix", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err
    bad.write_text('{"a": 1}')
    assert main(["report", "--out", str(tmp_path / "r.html"), "--matrix", str(bad)]) == 2
    assert "JSON list" in capsys.readouterr().err
    cx = tmp_path / "broken.json"
    cx.write_text('{"schema_version": 1}')
    assert main(["report", "--out", str(tmp_path / "r.html"), "--counterexamples", str(cx)]) == 2
    assert str(cx) in capsys.readouterr().err
    assert main(["report", "--out", str(tmp_path / "r.html"), "--counterexamples", str(tmp_path / "none")]) == 2
    assert not (tmp_path / "r.html").exists()
