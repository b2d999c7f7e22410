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
