"""docs/ci.md's GitHub Actions workflow run as its runner would (tests/test_ci_docs.py checks
what it wrote; tests/test_packaging.py uses the fresh environment it installed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import NamedTuple

import yaml

from rmqcheck.checkers.java import build

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
SHORT = {"RMQCHECK_BUDGET": "4",
         "RMQCHECK_OPTIONS": "--modes= --trace-runs 8 --engine local --conform-budget 3 --seed 1"}



def workflows() -> tuple[dict, dict]:
    github, gitlab = (yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S))
    return github, gitlab


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
               PIP_CONSTRAINT=str(ROOT / "constraints.txt"), RMQCHECK_CACHE=str(ROOT / "build"),
               PIP_NO_COMPILE="0")
    # No byte-compiling at install (15 of pip's 32 s): pip reads this variable inverted, "0" is what
    # turns compiling off (with "1", 5,434 .pyc files were written; with "0", only pip's own).
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def run_shell(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


class GithubRun(NamedTuple):
    checkout: Path  # the fork's tree, with the job's outputs in rmqcheck-out/ and its venv
    env: dict
    step_summary: Path


def run_github_workflow(tmp_path: Path, wheel: Path) -> GithubRun:
    """The workflow's shell steps, in order, on a clean checkout of the fork: RocketMQ's tree,
    extracted. A step that fails fails here, naming it."""
    checkout = tmp_path / "rocketmq"
    with tarfile.open(build.locate(None)) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(tmp_path, filter="data")
    (tmp_path / top).rename(checkout)
    github, _ = workflows()
    job = github["jobs"]["rmqcheck"]
    env = environment(tmp_path, job["env"], wheel)
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "step-summary.md")
    for step in job["steps"]:
        if "run" in step:
            r = run_shell(step["run"], checkout, env)
            assert r.returncode == 0, f"step {step['name']!r}: {r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return GithubRun(checkout, env, tmp_path / "step-summary.md")
