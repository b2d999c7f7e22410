"""rmqcheck as a library people install: the built wheel, installed into a fresh virtual
environment, runs `rmqcheck hunt` and `rmqcheck replay` from another directory; the ranges of
pyproject.toml and the pins of the constraints files agree (`make lower-bounds` installs the lower
bounds and runs the suite on them)."""

from __future__ import annotations

import re
import subprocess
import tomllib
import zipfile
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_installs_into_a_fresh_environment_and_runs_from_elsewhere(tmp_path, wheel, fresh_venv):
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("rmqcheck/model/step.py", "rmqcheck/invariants/catalogue.py", "rmqcheck/report/summary.schema.json",
                   "rmqcheck/checkers/java/java/driver/Wire.java", "rmqcheck/traces/log4j2.properties"):
        assert needed in names, needed
    assert any(n.startswith("rmqcheck/checkers/java/java/stubs-store/") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata

    py, exe = fresh_venv / "bin" / "python", fresh_venv / "bin" / "rmqcheck"
    subprocess.run([str(py), "-m", "pip", "check"], check=True, capture_output=True)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run([str(py), "-c", "import rmqcheck.model.step as m; print(m.__file__)"], cwd=elsewhere,
                           check=True, capture_output=True, text=True).stdout.strip()
    assert where.startswith(str(site)), where
    hunt = subprocess.run([str(exe), "hunt", "--bug", "ack_uses_local_sss_only", "--method", "guided", "--budget", "30",
                           "--out", "cx.json", "--summary-json", "s.json"], cwd=elsewhere, capture_output=True,
                          text=True)
    assert hunt.returncode == 1, hunt.stdout + hunt.stderr
    assert (elsewhere / "cx.json").exists() and (elsewhere / "s.json").exists()
    replay = subprocess.run([str(exe), "replay", "cx.json"], cwd=elsewhere, capture_output=True, text=True)
    assert replay.returncode == 1 and "reproduced:" in replay.stdout, replay.stdout + replay.stderr
    plugin = subprocess.run([str(py), "-c", "from importlib.metadata import entry_points; "
                             "print([e.value for e in entry_points(group='pytest11') if e.name == 'rmqcheck'])"],
                            cwd=elsewhere, check=True, capture_output=True, text=True).stdout
    assert "rmqcheck.pytest_plugin" in plugin


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.lower()] = version
    return pins


def test_every_range_has_a_lower_bound_pinned_in_constraints_lower_and_constraints_satisfies_them():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    lower, pinned = _pins(ROOT / "constraints-lower.txt"), _pins(ROOT / "constraints.txt")
    assert project["license"] == "Apache-2.0"  # an SPDX expression, not the deprecated table
    seen = set()
    for req in requirements:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)(?:,<([0-9.]+))?", req)
        assert m, f"{req}: a range with a lower bound (and at most an upper one) expected"
        name, low, high = m.group(1).lower(), m.group(2), m.group(3)
        seen.add(name)
        assert name in lower and Version(lower[name]) == Version(low), f"constraints-lower.txt must pin {name}=={low}"
        version = Version(pinned[name])
        assert version >= Version(low), f"constraints.txt's {name} is below {low}"
        assert high is None or version < Version(high), f"constraints.txt's {name} is not below {high}"
    assert set(lower) == seen
