"""docs/findings/: an upstream-ready report for every snapshot defect not already fixed upstream,
each with the sections a maintainer needs and a scenario that replays (issue 44)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
