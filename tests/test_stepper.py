"""Counterexamples to step through in a browser (issue 46 §3): `replay FILE --html OUT` and the
report's page per counterexample. The data the page embeds is the replay's, step for step; a
real headless Chromium steps the page with the arrow keys and the buttons to the violation, and
what it drew there is checked against the replay's state (a screenshot is kept); bad input is one
clear line and exit 2 with nothing written."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_report import CHROMIUM_FLAGS, chromium

from conftest import needs_rocketmq
from rmqcheck.checkers.counterexamples.describe import changes
from rmqcheck.checkers.counterexamples.files import read
from rmqcheck.checkers.counterexamples.replay import replay
from rmqcheck.checkers.cluster.replay import Row
from rmqcheck.checkers.cluster.stepping import DRIVEN
from rmqcheck.checkers.java.lockstep import Checked, StepReport
from rmqcheck.cli import main
from rmqcheck.report import stepper
from rmqcheck.report.stepper_page import SCRIPT

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
DEFAULTS = SCENARIOS / "expected" / "defaults-lose-acked-messages.scn"
# Three brokers, HA connections, offsets near 2^63: the violation (I5) at step 23.
LARGE = SCENARIOS / "toggles" / "slave_serves_ha_connections.scn"


def embedded(page: Path) -> dict:
    text = page.read_text()
    found = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', text, re.S)
    assert found, "the page embeds no replay data"
    return json.loads(found.group(1))


def test_the_page_embeds_every_step_of_the_replay(tmp_path):
    out = tmp_path / "defaults.html"
    assert main(["replay", str(DEFAULTS), "--html", str(out), "--quiet"]) == 1  # reproduced, as without --html
    d = embedded(out)
    cx = read(DEFAULTS)
    r = replay(cx.config, cx.actions)
    assert d["schema"] == stepper.SCHEMA and d["file"] == DEFAULTS.name and d["invariant"] == "I1"
    assert d["hit"] == {"step": 5, "invariant": "I1", "name": "acked_durability"} and d["snapshot"]
    assert len(d["steps"]) == len(cx.actions) + 1
    for i, step in enumerate(d["steps"]):
        s = r.states[i]
        assert step["changes"] == (changes(r.states[i - 1], s) if i else "")  # the replay table's own words
        assert [v["id"] for v in step["violations"]] == [v.invariant for v in r.violations[i]]
        for b, drawn in zip(s.brokers, step["state"]["brokers"]):
            assert len(drawn["cells"]) == len(b.log.cells) and drawn["sss"] == sorted(b.sss)
        assert step["state"]["ctrl"]["master"] == s.ctrl.applied.master
    sent, crashed, promoted = (d["steps"][i] for i in (1, 2, 5))
    assert sent["changed"] == ["b1.cells", "b1.end", "m1"]
    assert [c[:2] for c in sent["state"]["brokers"][0]["cells"]] == [[1, 0], [1, 1]]  # (message, part) a cell
    assert sent["state"]["messages"][0] | {"status": "PUT_OK", "heldBy": [1]} == sent["state"]["messages"][0]
    assert crashed["state"]["brokers"][0]["role"] == "down" and "b1.up" in crashed["changed"]
    assert promoted["state"]["brokers"][0]["role"] == "MASTER" and promoted["state"]["messages"][0]["heldBy"] == []
    assert d["java"] is None and d["cluster"] is None


def test_offsets_near_2_63_are_drawn_as_cell_positions_and_said_in_full():
    cx = read(LARGE)
    r = replay(cx.config, cx.actions)
    d = stepper.data(LARGE.name, cx, r)
    last = d["steps"][-1]["state"]
    b1 = r.states[-1].broker(1)
    drawn = last["brokers"][0]
    assert drawn["end"] == str(b1.log.base + b1.log.unit * len(b1.log.cells)) and int(drawn["end"]) > 2**62
    assert drawn["confirm"] == {"at": (b1.confirm - b1.log.base) // b1.log.unit, "offset": str(b1.confirm)}
    assert all(0 <= m["at"] < 16 for m in last["messages"])
    assert d["hit"]["step"] == 23 and d["hit"]["invariant"] == "I5"
    # the page's JSON holds no number JavaScript would round
    page = stepper.page(d)
    assert not re.search(r"[:\[,]\d{16,}", page) and "http://" not in page and "https://" not in page


def test_java_and_cluster_verdicts_are_kept_by_step():
    cx = read(DEFAULTS)
    r = replay(cx.config, cx.actions)
    call = Checked("electMaster", {}, {"code": 0}, {"code": 2004}, [("code", 0, 2004)])
    java = stepper.java_steps([StepReport(0, None, [], ""), StepReport(4, cx.actions[3], [call], "")])
    assert java[4][0]["verdict"].startswith("DIFFERS")
    assert java[4][0]["diffs"] == ["electMaster: code: java 0, model 2004"] and java[0][0]["verdict"] == "model-only"
    code = {"brokers": {1: "down"}, "controller": {}}
    rows = [Row(0, "start", DRIVEN, "started", (), True, code),
            Row(2, "crash", DRIVEN, "killed", ("broker 1: model down, code up",), False, code)]
    cluster = stepper.cluster_steps(rows, r.states, cx.config)
    assert cluster[2]["model"]["brokers"][1] == "down" and cluster[2]["code"] == code  # the model's side, in its terms
    assert cluster[2]["differences"] == ["broker 1: model down, code up"] and not cluster[2]["settled"]
    d = json.loads(json.dumps(stepper.data("x.scn", cx, r, java=java, cluster=cluster)))
    assert set(d["java"]) == {"0", "4"} and set(d["cluster"]) == {"0", "2"}


def test_the_script_is_small_and_the_page_fetches_nothing():
    assert len(SCRIPT.splitlines()) < 300
    cx = read(DEFAULTS)
    page = stepper.page(stepper.data("x", cx, replay(cx.config, cx.actions)))
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "fetch(" not in page and "import(" not in page
    assert page.count("<script") == 2 and "<link" not in page


@pytest.mark.parametrize("case", ["not a counterexample", "another mode", "a folder", "below a file"])
def test_bad_input_is_one_line_exit_2_and_nothing_written(case, tmp_path, capsys):
    out = tmp_path / "page.html"
    out.write_text("the page before")
    target, file = out, str(DEFAULTS)
    if case == "not a counterexample":
        file = str(Path(__file__).resolve().parents[1] / "README.md")
    elif case == "another mode":
        file = str(next((SCENARIOS / "classic").glob("*.scn")))
    elif case == "a folder":
        target = tmp_path / "folder"
        target.mkdir()
    else:
        target = out / "page.html"
    assert main(["replay", file, "--html", str(target)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("rmqcheck: error: ") and "\n" not in err, err
    assert (file if case in ("not a counterexample", "another mode") else str(target)) in err
    assert captured.out == "" and out.read_text() == "the page before"
    assert not list(tmp_path.glob(".*tmp*")) and (case != "a folder" or not any(target.iterdir()))


def test_the_report_links_a_page_per_counterexample_and_keeps_others_files(tmp_path, capsys):
    report = tmp_path / "report.html"
    scn = SCENARIOS / "toggles" / "ack_uses_local_sss_only--I1.scn"
    (tmp_path / "report-steps").mkdir()
    (tmp_path / "report-steps" / "mine.txt").write_text("not rmqcheck's")
    assert main(["report", "--out", str(report), "--counterexamples", str(scn)]) == 2
    assert "report-steps" in capsys.readouterr().err and not report.exists()
    (tmp_path / "report-steps" / "mine.txt").unlink()
    assert main(["report", "--out", str(report), "--counterexamples", str(scn)]) == 0
    assert 'href="report-steps/ack_uses_local_sss_only--I1.html"' in report.read_text()
    assert embedded(tmp_path / "report-steps" / "ack_uses_local_sss_only--I1.html")["invariant"] == "I1"


# --- the page in a real browser ----------------------------------------------------------------


class Node:
    def __init__(self, tag: str, attrs: dict) -> None:
        self.tag, self.attrs, self.children = tag, attrs, []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def all(self, cls: str | None = None, **attrs) -> list["Node"]:
        found = []
        for c in self.children:
            if isinstance(c, Node):
                if (cls is None or cls in c.classes) and all(c.attrs.get(k) == v for k, v in attrs.items()):
                    found.append(c)
                found += c.all(cls, **attrs)
        return found

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class Dom(HTMLParser):
    """Chromium's --dump-dom as a tree (the standard library has no HTML tree builder)."""

    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self, text: str) -> None:
        super().__init__()
        self.root = Node("#document", {})
        self.stack = [self.root]
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        while len(self.stack) > 1 and self.stack.pop().tag != tag:
            pass

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def browse(page: Path, fragment: str, tmp_path: Path, *extra: str) -> str:
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    return subprocess.run([chromium(), *flags, *extra, f"{page.as_uri()}#{fragment}"], check=True,
                          capture_output=True, text=True, timeout=120).stdout


@pytest.mark.heavy
@pytest.mark.parametrize("scenario, fragment, trail", [
    (DEFAULTS, "do=RRRRRRpLnn", "1,2,3,4,5,5,4,3,4,5"),  # arrow keys past the end, then both buttons
    # from step 1 (the hook) through every step and past the end, back and forth
    (LARGE, "step=1&do=" + "R" * 23 + "pLnn", ",".join(map(str, [*range(2, 24), 23, 22, 21, 22, 23]))),
], ids=["defaults", "large"])
def test_keys_and_buttons_step_to_the_violation_and_it_is_drawn_as_the_replay_has_it(scenario, fragment, trail,
                                                                                    tmp_path):
    page = tmp_path / "page.html"
    assert main(["replay", str(scenario), "--html", str(page), "--quiet"]) == 1
    cx = read(scenario)
    r = replay(cx.config, cx.actions)
    at = stepper.first_hit(cx, r.violations)[0]
    dom = Dom(browse(page, fragment, tmp_path, "--dump-dom"))
    body = next(n for n in dom.root.all() if n.tag == "body")
    assert body.attrs["data-trail"] == trail and body.attrs["data-step"] == str(at)
    s, drawn = r.states[at], embedded(page)["steps"][at]
    for b in s.brokers:
        panel = body.all("broker", **{"data-b": str(b.id)})[0]
        log = panel.all("log")[0]
        assert len(log.all("cell")) == len(b.log.cells), f"broker {b.id}"
        assert panel.all("role")[0].text() == (b.role if b.up else "down")
        sss = panel.all("f", **{"data-k": f"b{b.id}.sss b{b.id}.sssEpoch b{b.id}.proposing b{b.id}.queuedAlters"})[0]
        assert [c.text() for c in sss.all("chip")][: len(b.sss)] == [f"b{i}" for i in sorted(b.sss)]
    ctrl = body.all("ctrl")[0]
    assert [c.text() for c in ctrl.all("f", **{"data-k": "ctrl.sss ctrl.sssEpoch"})[0].all("chip")] == \
        [f"b{i}" for i in sorted(s.ctrl.applied.sss)]
    assert ctrl.all("f", **{"data-k": "ctrl.master"})[0].all("chip")[0].text() == f"b{s.ctrl.applied.master}"
    hit = body.all("hit", **{"data-invariant": cx.invariant})
    assert len(hit) == 1 and hit[0].text().startswith(f"breaks here: {cx.invariant}")
    assert len(body.all("msg")) == len(s.msgs) + sum(1 for x in s.sends if x.msg is None)
    highlighted = {k for n in body.all("chg") for k in n.attrs["data-k"].split()}
    assert drawn["changed"] and set(drawn["changed"]) <= highlighted
    assert body.attrs["data-unshown"] == ""  # every step passed highlighted all it changed
    if scenario == LARGE:  # a picture of the violation, kept as the test's artefact
        shot = tmp_path / "violation.png"
        browse(page, f"step={at}", tmp_path, "--window-size=1400,1500", f"--screenshot={shot}")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
        print(f"screenshot of step {at}: {shot}")


@needs_rocketmq
@pytest.mark.slow
def test_with_cluster_the_page_shows_the_running_code_beside_the_model(tmp_path, capsys):
    """A replay on RocketMQ's running code (15-30 s): each step's page holds the cluster's view
    beside the model's, and the browser draws it."""
    scenario = SCENARIOS / "coverage" / "crash-keeps-a-torn-tail.scn"
    page = tmp_path / "page.html"
    assert main(["replay", str(scenario), "--cluster", "--html", str(page), "--quiet"]) == 0
    d = embedded(page)
    assert set(d["cluster"]) == {str(i) for i in range(len(d["steps"]))}
    after_restart = d["cluster"]["6"]  # recovered: the torn m3 cut on both sides
    sides = [after_restart[side]["brokers"]["1"]["messages"] for side in ("code", "model")]
    assert sides == [["m1", "m2"], ["m1", "m2"]]
    dom = Dom(browse(page, "step=6", tmp_path, "--dump-dom"))
    table = next(n for n in dom.root.all("cluster"))
    assert "the same" in table.text() and "m2" in table.text()
