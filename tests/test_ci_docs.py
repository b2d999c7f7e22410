"""docs/ci.md's GitHub Actions workflow and GitLab CI job, their shell steps run in order, as the
runner would, on a clean checkout of a RocketMQ tree (the snapshot's, extracted). rmqcheck is the
wheel built from this checkout. The budget and options are the workflow's own variables, set
short. `uses:` steps are the runner's (checkout, Java, Python, upload): the test checks that what
the upload names exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from ci_results import junit_cases, summary
from rmqcheck.checkers.java import build

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
SHORT = {"RMQCHECK_BUDGET": "4",
         "RMQCHECK_OPTIONS": "--modes= --trace-runs 8 --engine local --conform-budget 3 --seed 1"}

pytestmark = pytest.mark.skipif(build.shared_tree() is None, reason="needs ../shared/rocketmq/")


def workflows() -> tuple[dict, dict]:
    github, gitlab = (yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S))
    return github, gitlab


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A clean checkout of the fork: RocketMQ's tree, extracted."""
    tree = tmp_path / "rocketmq"
    with tarfile.open(build.locate(None)) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(tmp_path, filter="data")
    (tmp_path / top).rename(tree)
    return tree


def environment(tmp_path: Path, variables: dict, wheel: Path) -> dict:
    """The runner's environment: the job's variables (budget and options short, rmqcheck the
    wheel); `python` the interpreter setup-python gives; `sudo` a pass-through (the test runs as
    whoever runs the tests)."""
    bin_dir = tmp_path / "runner-bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (bin_dir / "sudo").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "PIP_"))}
    env.update({k: str(v) for k, v in variables.items()}, **SHORT, RMQCHECK_SPEC=str(wheel),
               PATH=f"{bin_dir}:{env['PATH']}", CI="true",
               # pip takes the versions already in its cache; the build cache is this checkout's
               PIP_CONSTRAINT=str(ROOT / "constraints.txt"), RMQCHECK_CACHE=str(ROOT / "build"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def run_shell(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def check_outputs(tree: Path) -> None:
    out = tree / "rmqcheck-out"
    cases = junit_cases(out / "junit.xml")
    assert "conformance/RocketMQ's classes against the model" in cases
    assert cases["conformance/RocketMQ's classes against the model"][0] == "passed"  # the checkout compiled
    s = summary(out / "summary.json")
    assert s["command"] == "check" and s["exit_status"] == 0
    assert (out / "report.html").stat().st_size > 0 and any((out / "counterexamples").iterdir())


def test_the_github_workflow_runs_step_by_step(tmp_path, checkout, wheel):
    github, _ = workflows()
    job = github["jobs"]["rmqcheck"]
    env = environment(tmp_path, job["env"], wheel)
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "step-summary.md")
    uploads = []
    for step in job["steps"]:
        if "uses" in step:
            if step["uses"].startswith("actions/upload-artifact"):
                uploads += step["with"]["path"].split()
            continue
        r = run_shell(step["run"], checkout, env)
        assert r.returncode == 0, f"step {step['name']!r}: {r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    check_outputs(checkout)
    assert uploads and all((checkout / p).exists() for p in uploads)
    assert "### rmqcheck check: passed (exit 0)" in (tmp_path / "step-summary.md").read_text()


def test_the_gitlab_job_runs_step_by_step(tmp_path, checkout, wheel):
    _, gitlab = workflows()
    job = gitlab["rmqcheck"]
    env = environment(tmp_path, job["variables"], wheel)
    # GitLab runs before_script and script as one shell, after_script in another.
    r = run_shell("\n".join(job["before_script"] + job["script"]), checkout, env)
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    r = run_shell("\n".join(job["after_script"]), checkout, env)
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    check_outputs(checkout)
    assert job["artifacts"]["reports"]["junit"] == "rmqcheck-out/junit.xml"
