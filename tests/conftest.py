"""Fixtures shared by the conformance tests: RocketMQ's classes compiled once from the shared
tree (cached under build/java/ by content) and one driver JVM for the whole session (every
request sequence starts by resetting the controller and the epoch caches it uses)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rmqcheck.checkers.java import build
from rmqcheck.checkers.java.driver import JavaDriver

# Spark's JVMs with C1 alone and the serial collector, as rmqcheck's drivers (build.QUICK_JIT):
# docs/performance.md, twelfth session.
os.environ.setdefault("RMQCHECK_SPARK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

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


# `make test-fast` (the edit-run loop) leaves out what starts a JVM or Spark, builds or installs
# rmqcheck, or takes more than a couple of seconds: marked `heavy` here by module and fixture,
# elsewhere by hand (@pytest.mark.heavy). `make test` runs everything.
HEAVY_MODULES = {"test_distributed", "test_java_record", "test_java_mutants", "test_java_driver",
                 "test_java_lockstep", "test_ci_docs", "test_packaging", "test_conform_logic", "test_pytest_plugin",
                 "test_report", "test_fuzz"}
HEAVY_FIXTURES = {"driver", "ha_driver", "classpath", "spark", "wheel", "github_run", "fresh_venv"}


def pytest_itemcollected(item):
    module = getattr(getattr(item, "module", None), "__name__", "")
    if module in HEAVY_MODULES or HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())) \
            or getattr(item, "path", None) is not None and item.path.parent.name == "conform":
        item.add_marker(pytest.mark.heavy)


# The order in which `make test`'s two workers take the modules (pytest-xdist --dist loadfile with
# --no-loadscope-reorder hands them out in collection order): the longest first, so neither
# worker is left alone with a long one at the end (SPARK_MODULES are one unit, "spark"). Seconds:
# the tests' own times in a warm run on both cores, 2026-11-27 (docs/performance.md); a stale
# figure costs balance, never a result. The modules not named follow in their own order, and
# test_packaging comes last: it uses the CI workflow run that test_ci_docs makes, and would
# otherwise wait about 40 s for it on the other worker.
MODULE_SECONDS = {"spark": 280, "test_explore": 113, "test_cluster": 104, "test_real_runs": 92, "test_footprint": 92, "test_fuzz": 75,
                  "test_ci_docs": 71, "test_proofs": 45, "test_java_mutants": 44, "test_cli": 43, "test_java_driver": 39,
                  "test_reach": 38, "test_rediscovery": 32, "test_recovery": 25, "test_dledger": 24,
                  "test_matrix": 20, "test_classic": 18, "test_ci": 18, "test_stateful": 18}
LAST = "test_packaging"


# Modules whose tests share one Spark JVM: one worker takes them all, in this order, so the JVM
# starts and its query machinery warms up once for local[2] and once for the multi-process
# cluster (8 s and 15-20 s each on an idle machine): test_distributed's tests on the cluster come
# last, and a session changes master only by restarting.
SPARK_MODULES = ("tests/test_traces.py", "tests/test_distributed.py")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with SPARK_MODULES one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneSparkJvm(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return "spark" if module in SPARK_MODULES else module

    return OneSparkJvm(config, log)


def pytest_collection_modifyitems(items):
    def cost(item):
        name = getattr(getattr(item, "module", None), "__name__", "")
        spark = f"tests/{name}.py"
        if spark in SPARK_MODULES:
            return (False, -MODULE_SECONDS["spark"], SPARK_MODULES.index(spark))
        return (name == LAST, -MODULE_SECONDS.get(name, 0), 0)
    items.sort(key=cost)  # stable: a module's tests keep their order


pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs pytest on scenario folders


def once(tmp_path_factory, name: str, make):
    """`make(folder)` run once for the whole test run, its JSON-able result shared: by every
    pytest-xdist worker (`make test` runs two), under a lock in the folder they share."""
    import fcntl
    import json
    import os

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(make(folder)))
        return json.loads(done.read_text())


@pytest.fixture(scope="session")
def spark_python() -> str:
    """The interpreter Spark's Python workers run (fingerprints agree across processes): the one
    the commands' Spark engine runs (build/spark), so that a command run in a test goes on with
    the test's session, which a session asked for with another interpreter would restart."""
    from rmqcheck.checkers.search import distributed

    return distributed.stable_python(Path(__file__).resolve().parents[1] / "build" / "spark")


@pytest.fixture
def tenth_size_batches(monkeypatch):
    """Stateful hunt batches a tenth of their size (40 runs, not 400): for tests of how a hunt
    counts its batches, not of what a batch finds."""
    from rmqcheck.checkers.search import stateful

    monkeypatch.setattr(stateful, "DEEPENING", tuple((runs // 10, steps) for runs, steps in stateful.DEEPENING))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """rmqcheck's wheel, built once from this checkout (no build isolation: no download)."""
    import subprocess
    import sys
    from pathlib import Path

    def make(dist):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                        str(dist), str(Path(__file__).resolve().parents[1])], check=True, cwd=dist, capture_output=True)
        built, = dist.glob("rmqcheck-*.whl")
        return str(built)

    return Path(once(tmp_path_factory, "wheel", make))


@pytest.fixture(scope="session")
def github_run(tmp_path_factory, wheel):
    """docs/ci.md's GitHub workflow, run once on a clean checkout of the fork (tests/ci_workflow.py)."""
    from ci_workflow import GithubRun, run_github_workflow

    def make(folder):
        run = run_github_workflow(folder, wheel)
        return [str(run.checkout), run.env, str(run.step_summary)]

    checkout, env, step_summary = once(tmp_path_factory, "github-run", make)
    return GithubRun(Path(checkout), env, Path(step_summary))


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory, wheel, request):
    """A new virtual environment with the wheel installed by pip from its own ranges (the
    constraints only keep pip to the versions in its cache): the workflow's, when it runs here."""
    import subprocess
    import sys

    if build.shared_tree() is not None:
        return request.getfixturevalue("github_run").checkout / ".rmqcheck-venv"

    def make(folder):
        venv = folder / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c",
                        str(Path(__file__).resolve().parents[1] / "constraints.txt"), str(wheel)],
                       check=True, capture_output=True)
        return str(venv)

    return Path(once(tmp_path_factory, "fresh-venv", make))
