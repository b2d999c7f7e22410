"""docs/findings/: an upstream-ready report for every snapshot defect not already fixed upstream,
each with the sections a maintainer needs and a scenario that replays (issue 44)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import needs_rocketmq
from rmqcheck.checkers.java import build
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
    step as the model of that code does; RocketMQ's tests of the touched classes are named, with
    what running them needs."""
    from ci_results import summary

    name = "confirm_skips_unacked_members"
    assert main(["findings", "--check", name, "--conform-budget", "5", "--summary-json", str(tmp_path / "s.json")]) == 0
    cases = {c["name"]: c for c in summary(tmp_path / "s.json")["cases"]}
    assert [cases[f"{name}/{c}"]["outcome"] for c in ("patch", "model", "running code")] == ["passed"] * 3
    assert cases[f"{name}/RocketMQ's tests"]["outcome"] == "skipped"
    assert "the unchanged tree differs" in cases[f"{name}/model"]["notes"][0]
    assert "steps the same as the model's patched form" in cases[f"{name}/running code"]["notes"][0]
    assert "AutoSwitchHATest" in cases[f"{name}/RocketMQ's tests"]["notes"][0]
