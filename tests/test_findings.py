"""docs/findings/: an upstream-ready report for every snapshot defect not already fixed upstream,
each with the sections a maintainer needs and a scenario that replays (issue 44)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import needs_rocketmq
from rmqcheck.checkers.java import build
from rmqcheck.checkers.java import rocketmq_tests as rt
from rmqcheck.cli import main
from rmqcheck.model.bugs import SNAPSHOT

ROOT = Path(__file__).resolve().parents[1]
FINDINGS = ROOT / "docs" / "findings"

# Snapshot defects fixed upstream after the snapshot: no report (docs/findings-upstream.md).
FIXED_UPSTREAM = {
    "same_master_epoch_bump_keeps_connections": "PR #9690",
    "equal_start_epoch_not_recorded": "PR #9942",
    "elect_compares_by_subtraction": "PR #10579",
}
SECTIONS = ("## Summary", "## Affected code", "## Scenario", "## Evidence", "## Impact", "## Proposed fix",
            "## Upstream search")


def test_fixed_upstream_names_snapshot_defects():
    assert set(FIXED_UPSTREAM) <= SNAPSHOT


@pytest.mark.parametrize("name", sorted(SNAPSHOT - set(FIXED_UPSTREAM)))
def test_each_open_finding_has_a_report_with_every_section_and_a_scenario_that_exists(name):
    report = FINDINGS / f"{name}.md"
    assert report.exists(), f"{report.relative_to(ROOT)} missing"
    text = report.read_text()
    assert text.startswith(f"# {name}: ")
    at = [text.find(s) for s in SECTIONS]
    assert -1 not in at and at == sorted(at), f"{name}: sections missing or out of order"
    for scenario in re.findall(r"scenarios/toggles/[\w-]+\.scn", text):
        assert (ROOT / scenario).exists(), f"{name}: {scenario} does not exist"
    assert f"scenarios/toggles/{name}" in text
    index = (FINDINGS / "README.md").read_text()
    assert f"({name}.md)" in index


# --- the patches (issue 44 §3) --------------------------------------------------------------------


def _touched(patch: Path) -> list[str]:
    return build.diff_files(patch.read_text())


@pytest.mark.parametrize("name", sorted(SNAPSHOT - set(FIXED_UPSTREAM)))
def test_each_open_finding_has_a_patch_of_rocketmq_s_main_sources(name):
    patch = FINDINGS / f"{name}.patch"
    assert patch.exists(), f"{patch.relative_to(ROOT)} missing"
    touched = _touched(patch)
    assert touched and all("/src/main/java/org/apache/rocketmq/" in rel for rel in touched), touched


@needs_rocketmq
def test_every_patch_applies_to_the_snapshot_without_fuzz(tmp_path):
    """`patch --dry-run` of each on the snapshot's copies of the files it touches (the tarball is
    read once; `rmqcheck findings --check` builds each patched tree whole)."""
    import shutil
    import subprocess
    import tarfile

    patches = sorted(FINDINGS.glob("*.patch"))
    wanted = {rel for p in patches for rel in _touched(p)}
    base = tmp_path / "base"
    with tarfile.open(build.locate(None)) as tar:
        for member in tar:
            rel = member.name.split("/", 1)[-1]
            if rel in wanted:
                member.name = rel
                tar.extract(member, base, filter="data")
    assert {str(p.relative_to(base)) for p in base.rglob("*.java")} == wanted
    for patch in patches:
        tree = tmp_path / patch.stem
        shutil.copytree(base, tree)
        done = subprocess.run(["patch", "-p1", "--dry-run", "--batch", "--fuzz=0", "-i", str(patch)], cwd=tree,
                              capture_output=True, text=True)
        assert done.returncode == 0 and "(offset" not in done.stdout, f"{patch.name}: {done.stdout}{done.stderr}"


def test_the_findings_command_lists_each_report_with_its_patch_and_scenario(capsys):
    assert main(["findings"]) == 0
    text = capsys.readouterr().out
    for report in FINDINGS.glob("*.md"):
        if report.stem != "README":
            assert report.stem in text
    assert main(["findings", "nope"]) == 2
    assert "nope: no report docs/findings/nope.md" in capsys.readouterr().err


@needs_rocketmq
def test_a_negative_number_of_cluster_runs_is_bad_usage(capsys):
    assert main(["findings", "--check", "--cluster-runs", "-1"]) == 2
    assert "--cluster-runs: -1 is not a number of runs" in capsys.readouterr().err


def test_a_patch_that_does_not_apply_is_a_clear_error_naming_it(tmp_path):
    bad = tmp_path / "bad.patch"
    bad.write_text("--- a/store/src/main/java/X.java\n+++ b/store/src/main/java/X.java\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(build.BuildError, match=r"bad.patch: does not apply to"):
        build.from_diff(bad, build.locate(None))
    assert not any(build.PATCHED.glob("bad-*/.patched"))  # nothing half made is kept
    (tmp_path / "none.patch").write_text("not a diff\n")
    with pytest.raises(build.BuildError, match=r"none.patch: not a unified diff"):
        build.from_diff(tmp_path / "none.patch")


@needs_rocketmq
@pytest.mark.slow
def test_a_patch_is_checked_on_the_model_the_running_code_and_for_rocketmq_s_tests(tmp_path, capsys):
    """`findings --check NAME`: the patch builds; conformance with the intended form agrees on the
    patched tree and differs on the unchanged one; the scenario on the patched code takes every
    step as the model of that code does; RocketMQ's tests of the touched classes pass on the
    patched tree (`--tests quick`: EpochFileCacheTest runs, AutoSwitchHATest is left out)."""
    from ci_results import summary

    name = "confirm_skips_unacked_members"
    assert main(["findings", "--check", name, "--conform-budget", "5", "--tests", "quick", "--cluster-runs", "1",
                 "--summary-json", str(tmp_path / "s.json")]) == 0
    cases = {c["name"]: c for c in summary(tmp_path / "s.json")["cases"]}
    assert [cases[f"{name}/{c}"]["outcome"] for c in ("patch", "model", "running code", "cluster runs")] == \
        ["passed"] * 4
    assert "1 run (seed 0): every violation explained" in cases[f"{name}/cluster runs"]["notes"][0]
    assert "the unchanged tree differs" in cases[f"{name}/model"]["notes"][0]
    assert "steps the same as the model's patched form" in cases[f"{name}/running code"]["notes"][0]
    if not rt.missing_libraries():
        assert cases[f"{name}/RocketMQ's tests"]["outcome"] == "passed"
        said = cases[f"{name}/RocketMQ's tests"]["notes"][0]
        assert "EpochFileCacheTest (7 tests" in said and "skipped: AutoSwitchHATest (--tests quick" in said


# --- RocketMQ's own tests (the third check): reading JUnit 4's output, the verdict --------------------

JUNIT_OK = """JUnit version 4.13.2
.......
Time: 0.712

OK (7 tests)

"""
JUNIT_FAILED = """JUnit version 4.13.2
..E...E.
Time: 3.1
There were 2 failures:
1) testTruncate(org.apache.rocketmq.store.ha.autoswitch.EpochFileCacheTest)
java.lang.AssertionError: expected:<1> but was:<2>
\tat org.junit.Assert.fail(Assert.java:89)
2) test[1](org.apache.rocketmq.store.FooTest)
org.awaitility.core.ConditionTimeoutException: Condition was not fulfilled within 3000 ms
\tat org.awaitility.core.ConditionFactory.until(ConditionFactory.java:1)

FAILURES!!!
Tests run: 9,  Failures: 2

"""


def test_junit_s_summary_is_read_passed_failed_or_none():
    assert rt.parse(JUNIT_OK) == rt.Ran(7, (), "")
    assert rt.parse("JUnit version 4.13.2\n.\nTime: 0.1\n\nOK (1 test)\n").tests == 1
    ran = rt.parse(JUNIT_FAILED)
    assert ran.tests == 9 and ran.failed == ("testTruncate", "test[1]")
    assert ran.first == "java.lang.AssertionError: expected:<1> but was:<2>"
    # A failure before any test (a @BeforeClass) names the class alone.
    ran = rt.parse("There was 1 failure:\n1) org.apache.rocketmq.store.FooTest\njava.lang.Error: boom\n\n"
                   "FAILURES!!!\nTests run: 0,  Failures: 1\n")
    assert ran == rt.Ran(0, ("org.apache.rocketmq.store.FooTest",), "java.lang.Error: boom")
    # No summary: the class did not load, or the JVM died or was ended.
    ran = rt.parse("JUnit version 4.13.2\nCould not find class: org.x.NoTest\n")
    assert ran.tests is None and ran.first == "Could not find class: org.x.NoTest"


def _r(name, status, tests=0, failed=(), why=""):
    return rt.Result(name, status, tests, tuple(failed), 1.0, why)


def test_a_patch_passes_when_every_test_passing_on_the_unchanged_tree_passes_on_it():
    patched = [_r("ATest", rt.PASSED, 7), _r("BTest", rt.FAILED, 9, ["x"], "boom"),
               _r("CTest", rt.NO_COMPILE, why="needs DLedger (Maven only), not on this machine"),
               _r("DTest", rt.NOT_RUN, why="JUnit 5"), _r("ETest", rt.SKIPPED, why="--tests quick: slow")]
    unchanged = {"BTest": _r("BTest", rt.FAILED, 9, ["x"], "boom"), "CTest": _r("CTest", rt.NO_COMPILE, why="same")}
    outcome, said = rt.judge(patched, unchanged)
    assert outcome == rt.PASSED
    assert said.startswith("ATest (7 tests, 1s) passes; ") and "not held against the patch: BTest fails x of 9" in said
    assert "CTest: needs DLedger" in said and "not run: DTest (JUnit 5)" in said and "skipped: ETest" in said


def test_a_test_the_patch_breaks_fails_it_and_is_named():
    # Passes on the unchanged tree only.
    outcome, said = rt.judge([_r("BTest", rt.FAILED, 9, ["x"], "boom")], {"BTest": _r("BTest", rt.PASSED, 9)})
    assert outcome == rt.FAILED and "held against the patch: BTest fails x of 9 (boom), where the unchanged" in said
    # Fails more tests than on the unchanged tree.
    outcome, said = rt.judge([_r("BTest", rt.FAILED, 9, ["x", "y"])], {"BTest": _r("BTest", rt.FAILED, 9, ["x"])})
    assert outcome == rt.FAILED and "BTest fails y, which pass on the unchanged tree" in said
    # Compiles on the unchanged tree only.
    outcome, said = rt.judge([_r("CTest", rt.NO_COMPILE, why="cannot find symbol")],
                             {"CTest": _r("CTest", rt.PASSED, 3)})
    assert outcome == rt.FAILED and "CTest" in said
    # Ended without a summary where the unchanged tree names its failures: held.
    outcome, _ = rt.judge([_r("BTest", rt.FAILED, why="timed out")], {"BTest": _r("BTest", rt.FAILED, 9, ["x"])})
    assert outcome == rt.FAILED
    # The unchanged tree's run gave no summary either: nothing to compare, not held.
    outcome, _ = rt.judge([_r("BTest", rt.FAILED, why="timed out")], {"BTest": _r("BTest", rt.FAILED, why="timed out")})
    assert outcome == rt.PASSED


def test_nothing_that_ran_is_not_run():
    outcome, said = rt.judge([_r("DTest", rt.NOT_RUN, why="JUnit 5"), _r("ETest", rt.SKIPPED, why="slow")], {})
    assert outcome == rt.NOT_RUN and said == "not run: DTest (JUnit 5); skipped: ETest (slow)"


def test_javac_s_first_error_names_the_missing_library_or_our_stand_in():
    stderr = ("/b/src-1/x/r/store/src/test/java/org/apache/rocketmq/store/StoreTestUtil.java:19: error: package "
              "io.openmessaging.storage.dledger.store.file does not exist\nimport io.openmessaging...;\n"
              "/b/x/common/src/main/java/org/apache/rocketmq/common/config/A.java:5: error: package org.rocksdb does "
              "not exist\n")
    said = rt.javac_error(stderr)
    assert said.startswith("2 errors; first org/apache/rocketmq/store/StoreTestUtil.java:19: error: package io.")
    assert said.endswith("needs DLedger (Maven only), rocksdbjni (Maven only), not on this machine")
    stderr = ("/t/broker/src/test/java/org/apache/rocketmq/broker/controller/RTest.java:184: error: cannot find "
              "symbol\n        brokerController.stop();\n                        ^\n  symbol:   method stop()\n"
              "  location: variable brokerController of type BrokerController\n")
    assert rt.javac_error(stderr) == ("1 error; first org/apache/rocketmq/broker/controller/RTest.java:184: error: "
                                      "cannot find symbol (symbol:   method stop()); BrokerController is rmqcheck's "
                                      "stand-in (checkers/java/java/stubs*/), which lacks it")


def test_a_missing_test_library_is_named_with_its_debian_package(tmp_path):
    (tmp_path / "junit4.jar").touch()
    missing = rt.missing_libraries(tmp_path)
    assert "assertj-core.jar (libassertj-core-java)" in missing and not any("junit4" in m for m in missing)


def test_make_jdk_installs_the_test_libraries():
    makefile = (ROOT / "Makefile").read_text()
    jars = re.search(r"^JARS := (.*?)(?<!\\)\n", makefile, re.M | re.S)[1].split()
    packages = re.search(r"^JDK_PACKAGES := (.*?)(?<!\\)\n", makefile, re.M | re.S)[1].split()
    for jar, package in {**rt.TEST_JARS, **rt.JUPITER_JARS}.items():
        assert jar.removesuffix(".jar") in jars and (package in packages or package in build.HA_JARS.values())


def _needs_test_libraries():
    missing = rt.missing_libraries()
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}")


@needs_rocketmq
@_needs_test_libraries()
@pytest.mark.heavy
def test_epoch_file_cache_test_compiles_and_passes_on_the_snapshot():
    """RocketMQ's EpochFileCacheTest, compiled against the HA build with Debian's libraries, run
    in its own JVM: 7 tests pass (under a second; the first build of the classes takes longer)."""
    tarball = build.locate(None)
    if not tarball.is_file():
        pytest.skip(f"{tarball}: needs the snapshot's source tarball")
    rel = "store/src/test/java/org/apache/rocketmq/store/ha/autoswitch/EpochFileCacheTest.java"
    main = "store/src/main/java/org/apache/rocketmq/store/ha/autoswitch/EpochFileCache.java"
    assert rel in rt.tests_of(tarball, [main])
    [result] = rt.run_tests(tarball, [rel])
    assert (result.name, result.status, result.tests, result.failed) == ("EpochFileCacheTest", rt.PASSED, 7, ())


def test_only_a_class_of_jupiter_tests_counts_as_junit_5(tmp_path, monkeypatch):
    """Three store classes are JUnit 4 tests calling JUnit 5's Assertions: they are compiled and run
    (with junit5's api jar, where installed; without it, said so). A class of Jupiter tests is
    left out, said why."""
    for junit_4 in ("import org.junit.Test;\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n",
                    "import static org.junit.jupiter.api.Assertions.*;\n",
                    "import org.junit.jupiter.api.Assertions;\n"):
        assert not rt.JUPITER_TESTS.search(junit_4), junit_4
    for jupiter in ("import org.junit.jupiter.api.Test;\n", "import org.junit.jupiter.api.*;\n",
                    "import org.junit.jupiter.api.RepeatedTest;\n",
                    "import org.junit.jupiter.params.ParameterizedTest;\n"):
        assert rt.JUPITER_TESTS.search(jupiter), jupiter
    folder = tmp_path / "store" / "src" / "test" / "java" / "org" / "x"
    folder.mkdir(parents=True)
    (folder / "ATest.java").write_text("import org.junit.jupiter.api.Test;\nclass ATest { @Test void a() {} }\n")
    (folder / "BTest.java").write_text("import org.junit.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n"
                                       "class BTest { @Test public void b() {} }\n")
    monkeypatch.setattr(rt, "_sources", lambda tree: rt.Sources(tmp_path, tmp_path, "k"))
    monkeypatch.setattr(build, "JAR_DIR", tmp_path / "no-jars")  # junit5 not installed
    a, b = rt.run_tests(tmp_path, ["store/src/test/java/org/x/ATest.java", "store/src/test/java/org/x/BTest.java"])
    assert (a.status, a.why) == (rt.NOT_RUN, "JUnit 5 tests; this runner is JUnit 4's")
    assert b.status == rt.NOT_RUN and b.why.startswith("asserts with JUnit 5: needs junit-jupiter-api.jar (junit5)")


@needs_rocketmq
@_needs_test_libraries()
@pytest.mark.heavy
def test_a_store_test_asserting_with_junit_5_compiles_and_passes_on_the_snapshot():
    """MessageStoreStateMachineTest: org.junit.Test methods, org.junit.jupiter.api.Assertions."""
    tarball = build.locate(None)
    if not tarball.is_file():
        pytest.skip(f"{tarball}: needs the snapshot's source tarball")
    rel = "store/src/test/java/org/apache/rocketmq/store/MessageStoreStateMachineTest.java"
    [result] = rt.run_tests(tarball, [rel])
    assert (result.name, result.status, result.failed) == ("MessageStoreStateMachineTest", rt.PASSED, ())
    assert result.tests >= 5
