"""The pytest plugin (entry point `pytest11`): every `.scn` scenario file under a scenario folder
is a test item that replays it with `rmqcheck replay` and passes when the outcome is the one the
file states.

Scenario folders: `--rmqcheck-scenarios DIR` (repeatable; DIR is collected too), or the ini
option `rmqcheck_scenarios` (folders collected when pytest's collection reaches them, e.g. by
`testpaths`). Without either the plugin collects nothing. Items carry the `rmqcheck_scenario`
marker, so `-m rmqcheck_scenario` selects them.

What a file states:
* `expect <invariant>`: the replay violates that invariant (exit status 1);
* `expect none` (or no `expect` line): every invariant expected to hold does (exit status 0);
* a `conform` scenario (RocketMQ's classes against the model): the code and the model agree on
  every request. It needs a JDK and a RocketMQ tree (`--rocketmq-src`, $RMQCHECK_ROCKETMQ_SRC or
  ../shared/rocketmq); without them the item is skipped, saying why.

A failure prints the replay's table. Heavy imports wait until a scenario runs, so the plugin
costs nothing in test sessions that do not ask for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

MARKER = "rmqcheck_scenario"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rmqcheck", "rmqcheck scenario files")
    group.addoption("--rmqcheck-scenarios", action="append", default=[], metavar="DIR",
                    help="replay every .scn file under DIR as a test item (repeatable)")
    group.addoption("--rmqcheck-rocketmq-src", metavar="PATH",
                    help="the RocketMQ tree conform scenarios compile (default: $RMQCHECK_ROCKETMQ_SRC, then "
                         "../shared/rocketmq/)")
    parser.addini("rmqcheck_scenarios", type="paths", default=[],
                  help="folders whose .scn files are test items when collection reaches them")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a scenario file replayed by rmqcheck (the rmqcheck plugin)")
    given = [Path(d).resolve() for d in config.getoption("rmqcheck_scenarios")]
    for d in given:
        if not d.is_dir():
            raise pytest.UsageError(f"--rmqcheck-scenarios {d}: not a directory")
        if str(d) not in config.args:
            config.args.append(str(d))
    config.stash[_FOLDERS] = given + [Path(p).resolve() for p in config.getini("rmqcheck_scenarios")]


_FOLDERS = pytest.StashKey[list]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.suffix != ".scn":
        return None
    if any(file_path.resolve().is_relative_to(d) for d in parent.config.stash.get(_FOLDERS, [])):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def collect(self):
        item = ScenarioItem.from_parent(self, name=self.path.stem)
        item.add_marker(MARKER)
        yield item


class ScenarioFailed(Exception):
    def __init__(self, expected: str, got: str, output: str) -> None:
        super().__init__(expected, got, output)
        self.expected, self.got, self.output = expected, got, output


class ScenarioItem(pytest.Item):
    def runtest(self) -> None:
        from rmqcheck.checkers.counterexamples.files import CounterexampleError

        try:
            want = expectation(self.path)
        except CounterexampleError as exc:
            unreadable = str(exc)
        else:
            unreadable = None
        if unreadable:
            pytest.fail(unreadable, pytrace=False)
        status, output = _replay(self.path, self.config.getoption("rmqcheck_rocketmq_src"), want.java)
        if status == 3:
            pytest.skip(output)
        if status != want.status:
            got = {0: "no violation", 1: "the code and the model differ" if want.java else "a violation",
                   2: "an error"}.get(status, f"exit status {status}")
            raise ScenarioFailed(want.text, got, output)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioFailed):
            e = excinfo.value
            return f"{self.path}: expected {e.expected}, got {e.got}\n\n{e.output}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"scenario {self.path.name}"


class Expectation(NamedTuple):
    text: str  # what the file states
    status: int  # the exit status of `rmqcheck replay` that matches it
    java: bool  # a conform scenario: RocketMQ's classes run


def expectation(path: Path) -> Expectation:
    from rmqcheck.checkers.counterexamples.files import read
    from rmqcheck.checkers.java import conform
    from rmqcheck.checkers.search import modes

    if conform.is_scenario(path):
        return Expectation("the code and the model to agree on every request", 0, True)
    invariant = modes.read(path).invariant if modes.is_mode_file(path) else read(path).invariant
    if invariant is None:
        return Expectation("every invariant expected here to hold", 0, False)
    return Expectation(f"{invariant} violated", 1, False)


def _replay(path: Path, src: str | None, needs_java: bool) -> tuple[int, str]:
    """Run `rmqcheck replay`; (exit status, what it printed). Status 3: no JDK or RocketMQ tree
    for a conform scenario (the item is skipped)."""
    import contextlib
    import io

    from rmqcheck import cli
    from rmqcheck.commands import common

    if needs_java:
        from rmqcheck.checkers.java import build

        try:
            build.build(build.locate(src))
        except build.BuildError as exc:
            return 3, f"conform scenario: RocketMQ's classes cannot be built here: {exc}"
    # --expect-fixed: exit 1 only when the violation the file states reproduces (not also when a
    # file claiming one no longer does), so the status alone tells the expectation met.
    argv = ["replay", str(path), "--expect-fixed", *(["--rocketmq-src", src] if src else [])]
    stderr = io.StringIO()
    with common.out.capture() as captured, contextlib.redirect_stderr(stderr):
        status = cli.main(argv)
    return status, captured.get() + stderr.getvalue()
