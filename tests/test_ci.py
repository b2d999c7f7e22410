"""Results a CI system reads (report/ci.py): --junit, --summary-json and $GITHUB_STEP_SUMMARY of
every judging command, and the refusals of their bad uses. The heavier commands' files are
checked where those commands are tested already (check: test_cli.py, matrix: test_matrix.py,
bugs --measure: test_rediscovery.py, validate: test_traces.py, conform: test_java_driver.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ci_results import junit_cases, summary
from rmqcheck.cli import main
from rmqcheck.report import ci


def test_a_failing_hunt_is_a_failed_case_naming_the_invariant_the_file_and_the_replay(tmp_path, capsys,
                                                                                          monkeypatch):
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    cx = tmp_path / "cx.json"
    argv = ["hunt", "--bug", "ack_uses_local_sss_only", "--method", "guided", "--budget", "20", "--out", str(cx),
            "--junit", str(tmp_path / "out" / "junit.xml"), "--summary-json", str(tmp_path / "out" / "s.json")]
    assert main(argv) == 1
    (outcome, message, text), = junit_cases(tmp_path / "out" / "junit.xml").values()
    s = summary(tmp_path / "out" / "s.json")
    case, = s["cases"]
    assert outcome == "failed" and message.startswith(f"{case['invariant']} ")
    assert f"invariant: {case['invariant']}" in text and f"rmqcheck replay {cx}" in text
    assert s["exit_status"] == 1 and s["verdict"] == "violated" and s["argv"] == argv
    assert case["file"] == str(cx) and case["replay"] == f"rmqcheck replay {cx}"
    assert s["counts"] == {"passed": 0, "failed": 1, "skipped": 0, "error": 0}
    md = step_summary.read_text()
    assert md.startswith("earlier step\n### rmqcheck hunt: violated (exit 1)") and str(cx) in md
    capsys.readouterr()
    assert main(["replay", str(cx), "--quiet"]) == 1  # the replay command named reproduces it


@pytest.mark.heavy
def test_a_clean_hunt_is_a_passed_case(tmp_path, capsys):
    assert main(["hunt", "--intended", "--budget", "2", "--junit", str(tmp_path / "j.xml"),
                 "--summary-json", str(tmp_path / "s.json")]) == 0
    assert list(junit_cases(tmp_path / "j.xml").values()) == [("passed", "", "")]
    assert summary(tmp_path / "s.json")["verdict"] == "passed"


def test_prove_is_a_case_per_proof_and_an_unknown_one_is_refused(tmp_path, capsys):
    assert main(["prove", "--only", "1-range", "--only", "3-safety", "--k", "3", "--out", str(tmp_path),
                 "--junit", str(tmp_path / "j.xml")]) == 0
    assert junit_cases(tmp_path / "j.xml") == {"truncation search/1-range": ("passed", "", ""),
                                                "truncation search/3-safety": ("passed", "", "")}
    assert main(["prove", "--only", "P1"]) == 2  # proving nothing is not a pass
    assert "unknown property or variant ['P1']" in capsys.readouterr().err


@pytest.mark.heavy
def test_explore_is_a_case_per_invariant_and_a_promised_violation_fails(tmp_path, capsys):
    """recovery-controller keeps the snapshot's recovery defects on: R1, R4 and R5 break."""
    argv = ["explore", "--config", "recovery-controller", "--out", str(tmp_path), "--summary-json",
            str(tmp_path / "s.json")]
    assert main(argv) == 1
    s = summary(tmp_path / "s.json")
    failed = [c for c in s["cases"] if c["outcome"] == "failed"]
    assert [c["invariant"] for c in failed] == ["R1", "R4", "R5"]
    assert all(c["file"].endswith(".scn") and c["replay"] == f"rmqcheck replay {c['file']}" for c in failed)
    assert {c["suite"] for c in s["cases"]} == {"explore recovery-controller"} and len(s["cases"]) > 1


def test_a_usage_error_is_an_error_case_and_exit_2(tmp_path, capsys):
    assert main(["hunt", "--bug", "no_such_toggle", "--summary-json", str(tmp_path / "s.json"),
                 "--junit", str(tmp_path / "j.xml")]) == 2
    s = summary(tmp_path / "s.json")
    assert s["verdict"] == "error" and s["cases"][0]["outcome"] == "error"
    assert "no_such_toggle" in s["cases"][0]["message"]
    (outcome, message, _), = junit_cases(tmp_path / "j.xml").values()
    assert outcome == "error" and "unknown bug toggle" in message


@pytest.mark.parametrize("where,message", [
    ("dir", "is a directory"),
    ("below-a-file", "is not a directory"),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys, where, message):
    (tmp_path / "a-file").write_text("")
    target = {"dir": tmp_path, "below-a-file": tmp_path / "a-file" / "j.xml"}[where]
    for option in ("--junit", "--summary-json"):
        assert main(["hunt", "--budget", "600", option, str(target)]) == 2
        err = capsys.readouterr().err
        assert f"{option} {target}: " in err and message in err and "Traceback" not in err


def test_only_judging_commands_take_the_options(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["replay", "x.json", "--junit", "j.xml"])
    assert exc.value.code == 2


def test_the_schema_refuses_what_it_does_not_describe(tmp_path, capsys):
    """The schema check can fail: a summary missing a field, or with an unknown outcome."""
    results = ci.Results("hunt", ["hunt"])
    results.add("hunt", "x", "failed", "I1 violated", invariant="I1", file="cx.json")
    good = results.summary(1)
    validator = jsonschema.Draft202012Validator(json.loads(ci.SCHEMA.read_text()))
    validator.validate(good)
    for bad in ({k: v for k, v in good.items() if k != "verdict"},
                {**good, "cases": [{**good["cases"][0], "outcome": "flaky"}]},
                {**good, "schema_version": 2}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)
    with pytest.raises(ValueError):
        results.add("hunt", "y", "flaky")


def test_long_messages_are_clipped_saying_how_long_they_were():
    results = ci.Results("validate", [])
    case = results.add("validate", "x", "failed", "v" * 50_000)
    assert len(case.message) < 2100 and case.message.endswith("(50,000 characters in all)")


def test_junit_escapes_what_xml_cannot_hold_raw(tmp_path):
    results = ci.Results("hunt", [])
    results.add("hunt", "<&\">", "failed", "a < b & c > \"d\"\nsecond line", invariant="I1")
    path = tmp_path / "j.xml"
    ci.write_all(results, 1, path, None)
    (outcome, message, text), = junit_cases(path).values()
    assert outcome == "failed" and message == 'a < b & c > "d"' and "second line" in text


def _rmqcheck(*argv: str, env: dict, terminal: bool) -> bytes:
    """What `rmqcheck argv` writes, run on a pseudo-terminal or into a pipe (as in CI logs)."""
    exe = str(Path(sys.executable).parent / "rmqcheck")
    if not terminal:
        r = subprocess.run([exe, *argv], env=env, capture_output=True, timeout=120)
        return r.stdout + r.stderr
    master, slave = os.openpty()
    proc = subprocess.Popen([exe, *argv], env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        data += chunk
    proc.wait(timeout=120)
    os.close(master)
    return data


@pytest.mark.heavy
def test_one_progress_bar_with_rate_and_eta_on_a_terminal_and_none_in_ci_logs():
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "GITLAB_CI")}
    on_terminal = _rmqcheck("hunt", "--intended", "--budget", "3", env=env, terminal=True)
    assert b"ETA" in on_terminal and b"steps/s" in on_terminal
    for piped, ci in ((True, "true"), (True, None)):
        e = {**env, "CI": ci} if ci else env
        text = _rmqcheck("hunt", "--intended", "--budget", "1", env=e, terminal=not piped)
        assert b"\x1b" not in text and b"ETA" not in text and b"no violation found" in text
    # A CI runner with a terminal: colours, but no bar redrawing lines.
    text = _rmqcheck("hunt", "--intended", "--budget", "1", env={**env, "CI": "true"}, terminal=True)
    assert b"ETA" not in text and b"\x1b[2K" not in text and b"no violation found" in text


def test_an_interrupted_run_exits_130_and_still_writes_what_it_judged(tmp_path, capsys, monkeypatch):
    from rmqcheck.commands import hunt

    def interrupted(args):
        args.results.add("hunt", "half done", "passed")
        raise KeyboardInterrupt

    monkeypatch.setattr(hunt, "run", interrupted)
    assert main(["hunt", "--summary-json", str(tmp_path / "s.json")]) == 130
    assert "interrupted" in capsys.readouterr().err
    s = summary(tmp_path / "s.json")
    assert s["verdict"] == "interrupted" and s["cases"][0]["name"] == "half done"
