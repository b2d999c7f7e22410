"""Fixtures shared by the conformance tests: RocketMQ's classes compiled once from the shared
tree (cached under build/java/ by content) and one driver JVM for the whole session (every
request sequence starts by resetting the controller and the epoch caches it uses)."""

from __future__ import annotations

import pytest

from rmqcheck.checkers.java import build
from rmqcheck.checkers.java.driver import JavaDriver

needs_rocketmq = pytest.mark.skipif(build.shared_tree() is None, reason="needs ../shared/rocketmq/")


@pytest.fixture(scope="session")
def classpath():
    return build.build(build.locate(None))


@pytest.fixture(scope="session")
def driver(classpath):
    with JavaDriver(classpath) as d:
        yield d


@pytest.fixture(scope="session")
def ha_driver():
    """RocketMQ's HA service (AutoSwitchHAService, AutoSwitchHAClient, CommitLog) on a Mockito store."""
    with JavaDriver(build.build(build.locate(None), target=build.HA)) as d:
        yield d


pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs pytest on scenario folders


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """rmqcheck's wheel, built once from this checkout (no build isolation: no download)."""
    import subprocess
    import sys
    from pathlib import Path

    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(dist), str(Path(__file__).resolve().parents[1])], check=True, cwd=dist, capture_output=True)
    built, = dist.glob("rmqcheck-*.whl")
    return built
