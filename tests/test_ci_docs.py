"""docs/ci.md's GitHub Actions workflow and GitLab CI job. The GitHub workflow's shell steps run
in order, as the runner would, on a clean checkout of a RocketMQ tree (the snapshot's, extracted),
once for the session (conftest.py's `github_run`, which tests/test_packaging.py also uses for the
fresh environment it installs). rmqcheck is the wheel built from this checkout. The budget and
options are the workflow's own variables, set short. `uses:` steps are the runner's (checkout,
Java, Python, upload): the test checks that what the upload names exists. The GitLab job runs
the same commands; a test shows that, so one run checks both."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_results import junit_cases, summary
from ci_workflow import run_shell, workflows
from rmqcheck.checkers.java import build

pytestmark = pytest.mark.skipif(build.shared_tree() is None, reason="needs ../shared/rocketmq/")


def check_outputs(tree: Path) -> None:
    out = tree / "rmqcheck-out"
    cases = junit_cases(out / "junit.xml")
    assert "conformance/RocketMQ's classes against the model" in cases
    assert cases["conformance/RocketMQ's classes against the model"][0] == "passed"  # the checkout compiled
    s = summary(out / "summary.json")
    assert s["command"] == "check" and s["exit_status"] == 0
    assert (out / "report.html").stat().st_size > 0 and any((out / "counterexamples").iterdir())


def test_the_github_workflow_runs_step_by_step(github_run):
    github, _ = workflows()
    uploads = [p for step in github["jobs"]["rmqcheck"]["steps"]
               if step.get("uses", "").startswith("actions/upload-artifact") for p in step["with"]["path"].split()]
    check_outputs(github_run.checkout)
    assert uploads and all((github_run.checkout / p).exists() for p in uploads)
    assert "### rmqcheck check: passed (exit 0)" in github_run.step_summary.read_text()


def commands(lines: list[str]) -> list[str]:
    """Shell commands, one a line, as a runner runs them: whitespace folded; `sudo` dropped (a
    GitLab job runs as root in its image)."""
    return [" ".join(line.split()).replace("sudo ", "") for text in lines for line in text.splitlines() if line.strip()]


def test_the_gitlab_job_runs_what_the_github_workflow_runs(github_run):
    """The two jobs differ only in their YAML: the same commands in the same order and the same
    variables (GitLab's image has no JDK, so its package list adds one). So the GitHub run checks
    both; what is GitLab's own (the package check without sudo, the artifacts) is checked here."""
    github, gitlab = workflows()
    gh, gl = github["jobs"]["rmqcheck"], gitlab["rmqcheck"]
    assert commands(gl["before_script"] + gl["script"] + gl["after_script"]) == \
        commands([step["run"] for step in gh["steps"] if "run" in step])
    packages = gl["variables"].pop("RMQCHECK_DEBIAN_PACKAGES").split()
    assert packages == ["openjdk-17-jdk-headless", *gh["env"].pop("RMQCHECK_DEBIAN_PACKAGES").split()]
    assert gl["variables"] == gh["env"]
    # GitLab runs before_script and script as one shell: its package check, on this machine.
    r = run_shell("\n".join(gl["before_script"][:2]), github_run.checkout,
                  {**github_run.env, "RMQCHECK_DEBIAN_PACKAGES": " ".join(packages)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert gl["artifacts"]["reports"]["junit"] == "rmqcheck-out/junit.xml"
    assert gl["artifacts"]["paths"] == ["rmqcheck-out/"] and gl["artifacts"]["when"] == "always"
