"""RocketMQ's own classes beside the model (checkers/java/): the builds, the drivers, a bounded
conformance run against the shared tree, the pinned scenarios, and every way it must fail
clearly (no javac, a tree without a class or method, a tarball that is not RocketMQ, a driver
that dies, hangs or talks nonsense)."""

from __future__ import annotations

import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from rmqcheck.checkers.java import build, conform
from rmqcheck.checkers.java.driver import DriverError, JavaDriver
from ci_results import junit_cases
from rmqcheck.cli import main

from conftest import needs_rocketmq

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios" / "conform"

pytestmark = needs_rocketmq


def test_the_build_is_cached_by_content(classpath):
    assert build.build(build.locate(None)) == classpath
    assert (classpath.classes / "RmqcheckDriver.class").exists()
    # RocketMQ's classes are compiled from the tree, not taken from anywhere else
    assert (classpath.classes / "org/apache/rocketmq/controller/impl/manager/ReplicasInfoManager.class").exists()


def test_a_bounded_conformance_run_agrees(driver, ha_driver):
    tally = conform.conform(driver, seed=7, budget=600, max_sequences=400, ha_driver=ha_driver)
    assert tally.divergence is None, conform.format_request(tally.divergence.last.request)
    assert tally.operations > 5_000


def test_the_ha_build_loads_the_store_s_classes_on_a_mockito_store(ha_driver):
    with_ha = build.build(build.locate(None), target=build.HA)
    assert (with_ha.classes / "org/apache/rocketmq/store/ha/autoswitch/AutoSwitchHAService.class").exists()
    assert with_ha.main == "RmqcheckHaDriver" and any(j.name == "mockito-core.jar" for j in with_ha.jars)
    state = {"id": 1, "role": "MASTER", "fenced": False, "all_ack": True, "not_catchup": 3, "max": 6,
             "message_starts": [0, 3], "confirm": 0, "sss": [1, 2], "remote": [], "synchronizing": False,
             "conns": [[2, 3]], "now": 0, "caught_up": [], "epochs": [[1, 0]], "last_end": 2**63 - 1}
    (answer,) = ha_driver.run([{"op": "ha_confirm", **state}])
    assert answer == {"ok": True, "compute": 3, "directly": 0, "in_sync": 2, "get": 0}


def test_without_the_ha_jars_conformance_runs_the_rest_and_says_so(monkeypatch, capsys):
    monkeypatch.setitem(build.HA_JARS, "no-such-library.jar", "libno-such-java")
    assert main(["conform", "--sequences", "20"]) == 0
    text = capsys.readouterr().out
    assert "the HA service not loaded: missing Java libraries (no-such-library.jar" in text
    assert "libno-such-java" in text


@pytest.mark.parametrize("scenario", sorted(SCENARIOS.glob("*.scn")), ids=lambda p: p.stem)
def test_pinned_scenarios_agree(driver, ha_driver, scenario):
    """Java behaviours conformance found, each pinned as a scenario both sides replay alike."""
    steps = conform.run_sequence(driver, conform.read_scenario(scenario), stop_at_first=False, ha_driver=ha_driver)
    assert [s.diffs for s in steps if s.diffs] == []


def test_the_checkpoint_cannot_hold_a_negative_epoch(driver):
    """EpochEntrySerializer writes "epoch-start" and splits on '-': a negative value is written
    but not read back, so a restart reads the .bak (here none). RocketMQ never writes one
    (epochs start at 1, offsets at 0); the generator stores non-negative values only."""
    new, append = {"op": "epoch_new", "name": "n"}, {"op": "epoch_append", "name": "n", "epoch": -1, "start": 0}
    answer = driver.run([new, append])[1]
    assert answer["state"]["entries"] == [[-1, 0, 2**63 - 1]] and answer["state"]["disk"] == []


def test_bad_requests_get_an_error_naming_the_problem(driver):
    unknown, missing, garbage = driver.run([{"op": "nope"}, {"op": "heartbeat", "id": 1}, {"no": "op"}])
    assert unknown == {"ok": False, "error": "unknown op nope"}
    assert missing["ok"] is False and '"address"' in missing["error"]
    assert garbage["ok"] is False and "op" in garbage["error"]


def test_conform_command_agrees(tmp_path, capsys):
    assert main(["conform", "--sequences", "50", "--seed", "3", "--out", str(tmp_path),
                 "--junit", str(tmp_path / "j.xml")]) == 0
    assert "agreed on every request" in capsys.readouterr().out
    assert junit_cases(tmp_path / "j.xml") == {"conform/RocketMQ's classes against the model (seed 3)":
                                               ("passed", "", "")}
    assert main(["conform", "--sequences", "30", "--generator", "hypothesis", "--out", str(tmp_path)]) == 0
    assert "agreed on every request" in capsys.readouterr().out


def test_conform_against_an_intended_form_finds_the_snapshot_s_code_differs(tmp_path, capsys):
    """`conform --intended TOGGLE` (issue 44: a patched tree is compared with the model's intended
    form): the unchanged tree is not that form, and conformance says where; a name that is not
    a snapshot defect is refused before any JVM starts."""
    assert main(["conform", "--intended", "confirm_skips_unacked_members", "--seed", "0", "--sequences", "300",
                 "--out", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "the intended form of confirm_skips_unacked_members" in text and "divergence after" in text
    scenario, = tmp_path.glob("*.scn")
    assert "intended confirm_skips_unacked_members" in scenario.read_text()
    assert main(["replay", str(scenario)]) == 1  # the file says which form: its replay differs too
    assert "reproduced: the code and the model differ" in capsys.readouterr().out
    assert main(["conform", "--intended", "nope", "--out", str(tmp_path)]) == 2
    assert "--intended nope: not one of the snapshot's defects" in capsys.readouterr().err


RECORDED_COVERAGE = Path(__file__).parents[1] / "results" / "conform-coverage.json"


def test_conform_measures_branch_coverage_and_keeps_what_is_recorded(tmp_path, capsys):
    """`conform --coverage OUT`: JaCoCo over the drivers (compiled for Java 11); per class and
    method the branches covered and missed, with the lines of the missed ones. The same seeded
    sequences must cover at least what results/conform-coverage.json records, method by method."""
    report = tmp_path / "coverage.json"
    assert main(["conform", "--sequences", "200", "--seed", "0", "--out", str(tmp_path), "--coverage", str(report)]) == 0
    assert "branch coverage: the listed methods" in capsys.readouterr().out
    got = json.loads(report.read_text())
    methods = {f"{cls.split('org/apache/rocketmq/')[1]}.{m['method']}{m['desc']}": m
               for cls, ms in got["classes"].items() for m in ms}
    elect = next(m for k, m in methods.items() if k.startswith("controller/impl/manager/ReplicasInfoManager.electMaster("))
    assert elect["listed"] and elect["branches_covered"] > 0 and all(isinstance(n, int) for n in elect["missed_at_lines"])
    recorded = json.loads(RECORDED_COVERAGE.read_text())
    fell = [f"{k}: {methods[k]['branches_covered'] if k in methods else 'not run'} < {covered}"
            for k, (covered, _) in recorded["methods"].items()
            if k not in methods or methods[k]["branches_covered"] < covered]
    assert not fell, "branch coverage fell below results/conform-coverage.json:\n" + "\n".join(fell)
    assert got["listed_methods"]["branches_covered"] >= recorded["listed_methods"]["branches_covered"]


def test_coverage_without_jacoco_is_one_clear_error(monkeypatch, tmp_path, capsys):
    from rmqcheck.checkers.java import coverage

    monkeypatch.setattr(coverage, "JARS", {**coverage.JARS, "no-such-jacoco.jar": "libjacoco-java"})
    assert main(["conform", "--sequences", "1", "--coverage", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "libjacoco-java" in err and "Traceback" not in err and not (tmp_path / "c.json").exists()


def test_the_agent_jar_s_manifest_lines_are_at_most_72_bytes():
    from rmqcheck.checkers.java import coverage

    text = coverage._manifest({"Class-Path": " ".join(["/usr/share/java/some-long-library-name.jar"] * 5)})
    lines = text.split(b"\r\n")
    assert all(len(line) <= 72 for line in lines) and b"".join(x[1:] if x.startswith(b" ") else x
                                                           for x in lines).count(b"some-long") == 5


# --- failing clearly ----------------------------------------------------------------------------


def test_no_javac_is_one_clear_error(monkeypatch, capsys):
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    assert main(["conform", "--sequences", "1"]) == 2
    err = capsys.readouterr().err
    assert "no javac" in err and "openjdk-17-jdk-headless" in err and "Traceback" not in err


def test_the_tree_comes_from_the_option_then_the_environment_then_the_shared_folder(monkeypatch, tmp_path, capsys):
    tarball = build.locate(None)
    (tmp_path / "from-env").write_bytes(b"")
    monkeypatch.setenv("RMQCHECK_ROCKETMQ_SRC", str(tmp_path / "from-env"))
    assert build.locate(str(tarball)) == tarball
    assert build.locate(None) == tmp_path / "from-env"
    monkeypatch.delenv("RMQCHECK_ROCKETMQ_SRC")
    assert build.locate(None) == tarball
    monkeypatch.setattr(build, "shared_tree", lambda: None)
    assert main(["conform", "--sequences", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "pass --rocketmq-src PATH" in err and "RMQCHECK_ROCKETMQ_SRC" in err


def test_a_path_that_does_not_exist(tmp_path, capsys):
    assert main(["conform", "--rocketmq-src", str(tmp_path / "missing"), "--sequences", "1"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_a_tarball_that_is_not_rocketmq(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "README").write_text("not rocketmq")
    tarball = tmp_path / "other.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tmp_path / "x", arcname="other-1.0")
    assert main(["conform", "--rocketmq-src", str(tarball), "--sequences", "1"]) == 2
    assert "not a RocketMQ source tarball" in capsys.readouterr().err
    (tmp_path / "junk.tar.gz").write_bytes(b"not gzip at all")
    with pytest.raises(build.BuildError, match="not a readable source tarball"):
        build.build(tmp_path / "junk.tar.gz", cache=tmp_path / "cache")


def _tree_without(tmp_path: Path, rel: str, member: str | None) -> Path:
    """A copy of the classes the driver needs, with one class or one method removed."""
    tree = tmp_path / "tree"
    with tarfile.open(build.locate(None)) as tar:
        top = tar.getnames()[0].split("/")[0]
        for rel_needed in build.NEEDED:
            data = tar.extractfile(f"{top}/{rel_needed}").read().decode()
            if rel_needed == rel:
                if member is None:
                    continue
                data = data.replace(f" {member}(", f" renamed_{member}(")
            path = tree / rel_needed
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(data)
    return tree


def test_a_tree_without_a_method_names_it(tmp_path):
    rel = next(r for r in build.NEEDED if r.endswith("ReplicasInfoManager.java"))
    with pytest.raises(build.BuildError, match=r"ReplicasInfoManager\.cleanBrokerData is missing"):
        build.build(_tree_without(tmp_path, rel, "cleanBrokerData"), cache=tmp_path / "cache")


def test_a_tree_without_a_class_names_it(tmp_path, capsys):
    rel = next(r for r in build.NEEDED if r.endswith("EpochFileCache.java"))
    tree = _tree_without(tmp_path, rel, None)
    assert main(["conform", "--rocketmq-src", str(tree), "--sequences", "1"]) == 2
    assert "class EpochFileCache is missing" in capsys.readouterr().err


def _fake_java(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-java"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_hung_driver_is_killed_and_names_the_request(tmp_path):
    d = JavaDriver("unused", timeout=1, java=_fake_java(tmp_path, "sleep 60"))
    with d:
        pid = d.proc.pid
        with pytest.raises(DriverError, match=r'no answer to request 1 \{"op": "ping"\} within 1s; killed it'):
            d.run([{"op": "ping"}])
    assert _gone(pid)


def test_a_driver_that_dies_names_the_request_and_its_stderr(tmp_path):
    fake = _fake_java(tmp_path, 'read line; echo \'{"ok":true}\'; read line; echo "boom" >&2; exit 3')
    with JavaDriver("unused", timeout=5, java=fake) as d:
        with pytest.raises(DriverError, match=r'exited \(status 3\) on request 2 \{"op": "epoch_new".*boom'):
            d.run([{"op": "ping"}, {"op": "epoch_new", "name": "a"}])


def test_a_driver_that_talks_nonsense(tmp_path):
    with JavaDriver("unused", timeout=5, java=_fake_java(tmp_path, "read line; echo garbage; sleep 60")) as d:
        pid = d.proc.pid
        with pytest.raises(DriverError, match="not JSON: 'garbage"):
            d.run([{"op": "ping"}])
    assert _gone(pid)


# --- the default job's conformance stage --------------------------------------------------------


def _stage(tmp_path, src=None, budget=3.0, results=None):
    import argparse

    from rmqcheck.commands import check
    from rmqcheck.report.ci import Results

    args = argparse.Namespace(conform_budget=budget, rocketmq_src=src, seed=0, results=results or Results("check", []))
    return check._check_conformance(args, tmp_path)


def test_the_default_job_runs_a_short_conformance_pass(tmp_path, capsys):
    assert _stage(tmp_path) is False
    line = capsys.readouterr().out
    assert "conformance with RocketMQ's classes (the controller and the epoch cache and the broker's HA service)" in line
    assert "agreed on every request" in line and "branch coverage: the listed methods" in line


def test_without_a_jdk_the_default_job_says_so_in_one_line_and_goes_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    assert _stage(tmp_path) is False
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("conformance skipped: no javac")


def test_the_default_job_fails_on_a_tree_that_differs(tmp_path, capsys):
    from test_java_mutants import patched_tree

    from rmqcheck.report.ci import Results

    results = Results("check", [])
    assert _stage(tmp_path, str(patched_tree("append_accepts_equal_start")), budget=60, results=results) is True
    assert "diverged" in capsys.readouterr().out and list(tmp_path.glob("conform-seed0.scn"))
    case, = results.cases  # for CI: a failed case naming the scenario and its replay command
    assert case.outcome == "failed" and case.replay == f"rmqcheck replay {tmp_path / 'conform-seed0.scn'}"
    assert case.message.startswith("the code and the model differ after ")
