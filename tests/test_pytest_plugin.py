"""The pytest plugin (rmqcheck/pytest_plugin.py): each .scn file under --rmqcheck-scenarios DIR
is a test item that passes when the replay's outcome is the file's stated expectation, and prints
the replay table when it is not. This repository's scenarios/ run through it in `make test`
(pyproject.toml: testpaths and rmqcheck_scenarios)."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import needs_rocketmq

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
TOGGLE = SCENARIOS / "toggles" / "ack_uses_local_sss_only.scn"  # expect I4
HOLDS = SCENARIOS / "quirks" / "torn-tail-ack-moves-confirm-back.scn"  # expect none
MODE = SCENARIOS / "classic" / "ack_beyond_master_max.scn"  # mode classic, expect C3


def folder(pytester, **files: str) -> Path:
    d = pytester.path / "scns"
    d.mkdir()
    for name, text in files.items():
        (d / f"{name}.scn").write_text(text)
    return d


def test_scenarios_pass_when_the_outcome_is_the_stated_one(pytester):
    d = folder(pytester, toggle=TOGGLE.read_text(), holds=HOLDS.read_text(), mode=MODE.read_text())
    result = pytester.runpytest_subprocess("--rmqcheck-scenarios", str(d), "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*scns/toggle.scn::toggle PASSED*"])


def test_a_scenario_whose_outcome_differs_fails_with_the_replay_table(pytester):
    wrong = TOGGLE.read_text().replace("expect I4", "expect I1")
    held = HOLDS.read_text().replace("toggles none", "toggles ack_uses_local_sss_only")
    d = folder(pytester, wrong=wrong, mode=MODE.read_text().replace("toggles ack_beyond_master_max", "toggles none"),
               held=held, broken="config all_ack=maybe\nexpect I1\n")
    result = pytester.runpytest_subprocess("--rmqcheck-scenarios", str(d), "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3, passed=1)  # `held` still holds: the toggle needs a lost response
    result.stdout.fnmatch_lines(["*broken.scn: config: field 'all_ack' must be bool, got 'maybe'",
                                 "*mode.scn: expected C3 violated, got no violation*",
                                 "*wrong.scn: expected I1 violated, got no violation*",
                                 "*replay *wrong.scn*", "*not reproduced: I1 holds throughout*"])
    assert "Traceback" not in result.stdout.str() and "During handling" not in result.stdout.str()


def test_the_plugin_is_inert_unless_asked(pytester):
    d = folder(pytester, toggle=TOGGLE.read_text())
    pytester.makepyfile(test_plain="def test_plain(): pass")
    result = pytester.runpytest_subprocess(str(d), str(pytester.path / "test_plain.py"), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # the .scn is not collected


def test_a_folder_that_is_not_one_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess("--rmqcheck-scenarios", str(pytester.path / "nowhere"))
    assert result.ret == 4  # pytest's usage error
    result.stderr.fnmatch_lines(["*--rmqcheck-scenarios*nowhere: not a directory*"])


@needs_rocketmq
def test_a_conform_scenario_passes_when_the_code_and_the_model_agree(pytester):
    """One scenario a driver (the controller's classes, the HA service's): `make test` itself runs
    every file of scenarios/conform/ through the plugin."""
    d = pytester.path / "conform"
    d.mkdir()
    for name in ("apply_broker_id_same_check_code.scn", "expand_on_empty_epoch_cache.scn"):
        shutil.copy(SCENARIOS / "conform" / name, d)
    result = pytester.runpytest_subprocess("--rmqcheck-scenarios", str(d), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
