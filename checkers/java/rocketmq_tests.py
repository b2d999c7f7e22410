"""RocketMQ's own JUnit tests of the classes a patch touches, run on the patched tree and, for a
class that does not pass there, on the unchanged tree (`rmqcheck findings --check`, its third check).

Which: the tree's *Test.java in the packages of the changed main classes (AutoSwitchHATest tests
AutoSwitchHAService, AutoSwitchHAClient and AutoSwitchHAConnection together).

How: each class is compiled (javac 17, for Java 11, as build.py's HA target) against the main
classes of build.py's target for its module (store: HA; broker: CLUSTER, whose stand-ins of
stubs-broker/ replace BrokerController and its neighbours), with Debian's JUnit 4.13, Hamcrest,
AssertJ 3.14, Mockito 2.23, commons-io, JUnit 5's assertions where junit5 is installed (three
store classes are JUnit 4 tests that call them), and our stand-in for Awaitility 4
(java/test-stubs/: Debian packages none). The snapshot's pom wants mockito-core 3, assertj-core 3.22 and
awaitility 4: the tests that compile with Debian's older ones run; for the others the first
javac error is reported with the library it names (DLedger, rocksdbjni, OpenTelemetry: Maven
only). javac's -sourcepath is the test stand-ins, the target's stand-ins, the module's
src/test/java and the tree's main sources, so a main class the build did not compile is compiled
from the tree. Compiled tests are kept under build/java/tests-<module>-<key>/<Class>/ (the key:
the main build's, which hashes the tree, the test sources, our stand-ins and javac's version).
A class whose tests are JUnit 5's (Jupiter's @Test) is not compiled: this runner is JUnit 4's
JUnitCore (the snapshot's store, broker and controller tests have none).

Each class runs in its own JVM (JUnitCore), in its own process group, ended by its group on a
timeout or Ctrl-C, with a scratch folder (deleted after) as its working directory, java.io.tmpdir
and user.home: the tests write their stores there.

Verdict (`judge`): a patch passes when every test that runs on the unchanged tree passes on the
patched tree too. A class that fails (or does not compile) on the unchanged tree as well is
reported, not held against the patch, unless the patched tree fails tests the unchanged does not.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

from . import build

# What the tests compile and run against besides the main build's jars: Debian's jar, its package.
TEST_JARS = {
    "junit4.jar": "junit4",
    "hamcrest.jar": "libhamcrest-java",
    "assertj-core.jar": "libassertj-core-java",
    "commons-io.jar": "libcommons-io-java",
    "mockito-core.jar": "libmockito-java",
    "byte-buddy.jar": "libbyte-buddy-java",
    "byte-buddy-agent.jar": "libbyte-buddy-java",
    "objenesis.jar": "libobjenesis-java",
}
# JUnit 5's assertions and what they throw: MessageStoreStateMachineTest, ReputMessageServiceTest and
# IndexServiceTest are JUnit 4 tests that call them. On the class path when present; without them
# only the classes that mention JUnit 5 are not run.
JUPITER_JARS = {
    "junit-jupiter-api.jar": "junit5",
    "opentest4j.jar": "libopentest4j-java",
    "apiguardian-api.jar": "libapiguardian-java",
}
# The main build each module's tests compile against.
TARGETS = {"store": build.HA, "broker": build.CLUSTER}
# Classes `--tests quick` leaves out: seconds a run took on 2 cores (2026-11-27, the unchanged snapshot).
SLOW = {"AutoSwitchHATest": 160, "HATest": 68, "MappedFileQueueTest": 68}
TIMEOUT = 600.0  # seconds a class may run
# Packages javac may miss, and where they come from (the first that an error names is reported).
NOT_HERE = {
    "org.junit.jupiter": "JUnit 5's engine or params (only junit5's api jar is on the class path)",
    "org.rocksdb": "rocksdbjni (Maven only)",
    "io.openmessaging.storage.dledger": "DLedger (Maven only)",
    "io.opentelemetry": "OpenTelemetry (Maven only)",
    "com.alibaba.fastjson": "fastjson (Maven only; rmqcheck's stand-in covers only what the build needs)",
    "apache.rocketmq.v2": "rocketmq-proto (Maven only)",
    "io.grpc": "gRPC (Maven only)",
    "com.google.protobuf": "protobuf-java",
    "org.awaitility": "Awaitility 4 (beyond rmqcheck's stand-in, java/test-stubs/)",
}
STAND_INS = ("stubs", "stubs-store", "stubs-broker")
# A class of JUnit 5 tests: any non-static import from JUnit 5 but its assertions and assumptions,
# which JUnit 4 tests call too.
JUPITER_TESTS = re.compile(r"^\s*import\s+org\.junit\.jupiter\.(?!api\.(?:Assertions|Assumptions)\b)", re.M)
PASSED, FAILED, NO_COMPILE, NOT_RUN, SKIPPED = "passed", "failed", "did not compile", "not run", "skipped"


class Result(NamedTuple):
    """One test class on one tree."""
    name: str  # the class's simple name
    status: str  # PASSED, FAILED, NO_COMPILE, NOT_RUN or SKIPPED
    tests: int = 0
    failed: tuple[str, ...] = ()  # the failing tests' names (a class-level failure: the class's)
    seconds: float = 0.0
    why: str = ""  # FAILED: the first failure; NO_COMPILE: javac's first error and the library it names


class Ran(NamedTuple):
    """What JUnitCore printed: the tests run and those that failed; tests None when it printed no
    summary (the class did not load, the JVM died or was ended)."""
    tests: int | None
    failed: tuple[str, ...]
    first: str  # the first failure's message line, or the output's last line


def tests_of(tarball: Path, changed: list[str]) -> list[str]:
    """The tree's test classes in the packages of the changed main classes, by path in the tree."""
    packages = {str(Path(rel.replace("/src/main/java/", "/src/test/java/", 1)).parent)
                for rel in changed if "/src/main/java/" in rel}
    with tarfile.open(tarball) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    return sorted(rel for rel in names if rel.endswith("Test.java") and str(Path(rel).parent) in packages)


def missing_libraries(jar_dir: Path | None = None) -> list[str]:
    """The test libraries not on this machine, each with its Debian package."""
    return _absent(TEST_JARS, jar_dir)


def _absent(jars: dict[str, str], jar_dir: Path | None = None) -> list[str]:
    return [f"{jar} ({pkg})" for jar, pkg in jars.items() if not ((jar_dir or build.JAR_DIR) / jar).exists()]


# --- reading JUnit 4's output ---------------------------------------------------------------------------


def parse(text: str) -> Ran:
    """JUnitCore's summary: "OK (N tests)", or "Tests run: N,  Failures: F" after the failures,
    each "K) method(class)" (a class-level failure names the class alone)."""
    ok = re.search(r"^OK \((\d+) tests?\)\s*$", text, re.M)
    if ok:
        return Ran(int(ok[1]), (), "")
    lines = text.splitlines()
    summary = re.search(r"^Tests run: (\d+),\s+Failures: (\d+)", text, re.M)
    start = next((i for i, line in enumerate(lines) if re.match(r"^There (was 1 failure|were \d+ failures):", line)),
                 None)
    failed, first = [], ""
    if start is not None:
        for i, line in enumerate(lines[start + 1:], start + 1):
            head = re.match(r"^\d+\) (.+)$", line)
            if head:
                method = re.match(r"^(.*)\(([\w.$]+)\)$", head[1])
                failed.append(method[1] if method else head[1])
                if not first and i + 1 < len(lines):
                    first = lines[i + 1].strip()
    if summary is None:
        tail = [line for line in lines if line.strip()]
        return Ran(None, tuple(failed), first or (tail[-1].strip() if tail else "no output"))
    return Ran(int(summary[1]), tuple(failed), first)


# --- the verdict ----------------------------------------------------------------------------------------


def judge(patched: list[Result], unchanged: dict[str, Result]) -> tuple[str, str]:
    """(outcome, what to say): "failed" when a test that runs on the unchanged tree does not pass
    on the patched one (`unchanged` holds the classes that did not pass on the patched tree, run
    again on the unchanged); "not run" when no class ran; "passed" otherwise."""
    held, too, said = [], [], []
    for r in patched:
        if r.status not in (FAILED, NO_COMPILE):
            continue
        u = unchanged.get(r.name)
        if u is None or u.status == PASSED:
            held.append(f"{_describe(r)}, where the unchanged tree passes" + (f" ({_tests(u.tests)})" if u else ""))
        elif r.status == NO_COMPILE and u.status != NO_COMPILE:
            held.append(f"{r.name} does not compile on the patched tree, but does on the unchanged one: {r.why}")
        elif r.status == FAILED and u.status == NO_COMPILE:
            too.append(f"{_describe(r)} (it does not compile on the unchanged tree)")
        elif r.status == FAILED and u.failed and (set(r.failed) or {"(no summary)"}) - set(u.failed):
            new = sorted((set(r.failed) or {"(no summary)"}) - set(u.failed))
            held.append(f"{r.name} fails {', '.join(new)}, which pass on the unchanged tree ({_describe(r)})")
        else:  # the same failures, or the unchanged tree's run gave no summary to compare with
            too.append(_describe(r) + (f"; on the unchanged tree: {_describe(u)}" if u.failed != r.failed else ""))
    passed = [r for r in patched if r.status == PASSED]
    if passed:
        said.append(", ".join(f"{r.name} ({_tests(r.tests)}, {r.seconds:.0f}s)" for r in passed)
                    + (" pass" if len(passed) > 1 else " passes"))
    if held:
        said.append("held against the patch: " + "; ".join(held))
    if too:
        said.append("fail or do not compile on the unchanged tree too, not held against the patch: " + "; ".join(too))
    for status, label in ((NOT_RUN, "not run"), (SKIPPED, "skipped")):
        rest = [r for r in patched if r.status == status]
        if rest:
            said.append(f"{label}: " + "; ".join(f"{r.name} ({r.why})" for r in rest))
    text = "; ".join(said) or "no test classes"
    if held:
        return FAILED, text
    return (PASSED if any(r.status in (PASSED, FAILED) for r in patched) else NOT_RUN), text


def _tests(n: int) -> str:
    return f"{n} test" + ("" if n == 1 else "s")


def _describe(r: Result) -> str:
    if r.status == FAILED:
        which = ", ".join(r.failed) or "(no summary)"
        return f"{r.name} fails {which} of {r.tests} ({r.why})" if r.tests else f"{r.name}: {r.why}"
    if r.status == NO_COMPILE:  # the library or stand-in javac's errors name, else its first error
        reason = r.why.rsplit("; ", 1)[-1]
        return f"{r.name}: {reason if reason.startswith('needs ') or 'stand-in' in reason else r.why}"
    return f"{r.name} {r.status}"


# --- the check --------------------------------------------------------------------------------------------


def check(tree: Path, tarball: Path, changed: list[str], quick: bool = False,
          say: Callable[[str], None] = lambda line: None) -> tuple[str, str]:
    """RocketMQ's tests of the changed classes on `tree` (a patched tree of `tarball`, or the
    tarball itself) and, for those that do not pass there, on `tarball`: judge's verdict."""
    tests = tests_of(tarball, changed)
    names = ", ".join(Path(t).stem for t in tests)
    if not tests:
        return NOT_RUN, "no test classes in the touched packages"
    missing = missing_libraries()
    if missing:
        return NOT_RUN, f"{names}: need {', '.join(missing)}, not on this machine (`make jdk` installs them as root)"
    patched = run_tests(tree, tests, quick, say, "patched tree" if Path(tree) != Path(tarball) else "tree")
    again = [t for t in tests if any(r.name == Path(t).stem and r.status in (FAILED, NO_COMPILE) for r in patched)]
    unchanged = {r.name: r for r in run_tests(tarball, again, False, say, "unchanged tree")} if again else {}
    return judge(patched, unchanged)


def run_tests(tree: Path, tests: list[str], quick: bool = False, say: Callable[[str], None] = lambda line: None,
              label: str = "tree") -> list[Result]:
    """Each test class (by path in the tree) compiled and run on `tree`, in order."""
    results, no_jupiter = [], _absent(JUPITER_JARS)
    for rel in tests:
        name, module = Path(rel).stem, rel.split("/", 1)[0]
        source = _sources(tree).test / rel
        text = source.read_text(encoding="utf-8", errors="replace") if source.is_file() else ""
        if module not in TARGETS:
            results.append(Result(name, NOT_RUN, why=f"rmqcheck builds no main classes for {module}'s tests"))
        elif JUPITER_TESTS.search(text):
            results.append(Result(name, NOT_RUN, why="JUnit 5 tests; this runner is JUnit 4's"))
        elif "org.junit.jupiter" in text and no_jupiter:
            results.append(Result(name, NOT_RUN, why=f"asserts with JUnit 5: needs {', '.join(no_jupiter)}"))
        elif "@Test" not in text:
            continue  # a base class or helper named *Test
        elif quick and name in SLOW:
            results.append(Result(name, SKIPPED, why=f"--tests quick: slow, {SLOW[name]}s a run"))
        else:
            results.append(_compile_and_run(tree, rel, name, module, say, label))
    return results


def _compile_and_run(tree: Path, rel: str, name: str, module: str, say: Callable[[str], None], label: str) -> Result:
    try:
        classes, cp = compile_test(tree, rel)
    except build.BuildError as exc:
        say(f"  {name} on the {label}: did not compile ({str(exc).splitlines()[0][:200]})")
        return Result(name, NO_COMPILE, why=str(exc))
    say(f"  {name} on the {label}: running (JUnitCore)")
    started = time.perf_counter()
    ran = run_class(classes, cp, rel, _sources(tree).test / module / "src" / "test" / "resources")
    seconds = time.perf_counter() - started
    if ran.tests is not None and not ran.failed:
        result = Result(name, PASSED, ran.tests, (), seconds)
    else:
        result = Result(name, FAILED, ran.tests or 0, ran.failed, seconds, ran.first)
    say(f"  {name} on the {label}: {result.status}, {_tests(result.tests)}, {seconds:.1f}s"
        + (f" ({', '.join(result.failed) or result.why})" if result.status == FAILED else ""))
    return result


# --- sources and compiling --------------------------------------------------------------------------------


class Sources(NamedTuple):
    main: Path  # the tree root whose */src/main/java javac searches
    test: Path  # the tree root holding */src/test/
    key: str  # what identifies the test sources


def _sources(tree: Path) -> Sources:
    """A source tarball's trees: unpacked once under build/java/src-<hash>/. A patched tree's main
    sources are its own, its tests its base tarball's (patches change main sources only)."""
    tree = Path(tree)
    changes = build._changes_of(tree)
    if changes is not None:
        return Sources(tree, _sources(Path(changes["base"])).test, _sources(Path(changes["base"])).key)
    if tree.is_dir():
        return Sources(tree, tree, _digest(sorted(p for m in TARGETS for p in (tree / m / "src" / "test").rglob("*")),
                                           tree))
    key = _digest([tree], tree.parent)
    dest = build.BUILD / f"src-{key}"
    if not (dest / ".done").exists():
        build.BUILD.mkdir(parents=True, exist_ok=True)
        with build._locked(build.BUILD / f"src-{key}.lock"):
            if not (dest / ".done").exists():
                shutil.rmtree(dest, ignore_errors=True)
                root = build._extract(tree, dest / "x", build.CLUSTER_ROOTS)
                with tarfile.open(tree) as tar:
                    prefix = os.path.relpath(root, dest / "x") + "/" if root != dest / "x" else ""
                    wanted = tuple(f"{prefix}{m}/src/test/" for m in TARGETS)
                    tar.extractall(dest / "x", members=[m for m in tar.getmembers() if m.name.startswith(wanted)
                                                        and (m.isfile() or m.isdir())], filter="data")
                (dest / ".done").write_text(str(root.relative_to(dest)))
    root = dest / (dest / ".done").read_text()
    return Sources(root, root, key)


_DIGESTS: dict[tuple, str] = {}


def _digest(paths: Iterable[Path], base: Path) -> str:
    paths = [p for p in paths if p.is_file()]
    memo = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths)
    if memo not in _DIGESTS:
        h = hashlib.sha256()
        for p in paths:
            h.update(str(p.relative_to(base)).encode())
            h.update(p.read_bytes())
        _DIGESTS[memo] = h.hexdigest()[:20]
    return _DIGESTS[memo]


def compile_test(tree: Path, rel: str) -> tuple[Path, list[Path]]:
    """One test class compiled (or reused) against `tree`'s main build: its classes folder and the
    class path beside it. A BuildError names javac's first error and the library it is missing."""
    module = rel.split("/", 1)[0]
    target = TARGETS[module]
    main = build.build(tree, target=target)
    sources = _sources(tree)
    present = [jar for jar in JUPITER_JARS if (build.JAR_DIR / jar).exists()]
    jars = list(dict.fromkeys([*main.jars, *(build.JAR_DIR / jar for jar in (*TEST_JARS, *present))]))
    key = hashlib.sha256("\n".join([main.classes.parent.name, sources.key, _digest(
        sorted(build.java_sources(tests=True)), build.JAVA), build._javac_version(), rel, *present]).encode()
    ).hexdigest()[:20]
    out = build.BUILD / f"tests-{module}-{key}"
    classes, failed = out / "classes", out / "javac-error.txt"
    cp = [main.classes, *jars]
    if not (classes.is_dir() or failed.is_file()):
        build.BUILD.mkdir(parents=True, exist_ok=True)
        with build._locked(build.BUILD / f"{out.name}.lock"):
            if not (classes.is_dir() or failed.is_file()):
                _javac(sources, module, target, rel, cp, out)
    if failed.is_file():
        raise build.BuildError(failed.read_text())
    return classes, cp


def _javac(sources: Sources, module: str, target: build.Target, rel: str, cp: list[Path], out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="building-", dir=build.BUILD))
    try:
        sourcepath = [build.TEST_STUBS, *(build.JAVA / s for s in target.stubs),
                      sources.test / module / "src" / "test" / "java",
                      *(sources.main / r / "src" / "main" / "java" for r in target.roots)]
        cmd = [build._javac(), build.JAVAC_JIT, "-nowarn", "-proc:none", "-encoding", "UTF-8", *target.javac_flags,
               "-implicit:class",
               "-d", str(work / "classes"), "-cp", os.pathsep.join(map(str, cp)),
               "-sourcepath", os.pathsep.join(map(str, sourcepath)), str(sources.test / rel)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        out.mkdir(parents=True, exist_ok=True)
        if done.returncode != 0:
            (out / "javac-error.txt").write_text(javac_error(done.stderr, sources.test, sources.main))
        else:
            (work / "classes").rename(out / "classes")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def javac_error(stderr: str, *roots: Path) -> str:
    """javac's first error, with its symbol line, and why: the missing library an error names."""
    lines = stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if ": error:" in line]
    if not errors:
        return stderr.strip()[-300:] or "javac failed"
    first = lines[errors[0]]
    for root in roots:
        first = first.replace(f"{root}/", "")
    first = re.sub(r"^.*/src/(main|test)/java/", "", first).rstrip(";")
    symbol = next((lines[i].strip() for i in range(errors[0] + 1, min(errors[0] + 4, len(lines)))
                   if lines[i].strip().startswith("symbol:")), "")
    count = "1 error" if len(errors) == 1 else f"{len(errors)} errors" if len(errors) < 100 else "100 or more errors"
    said = f"{count}; first {first}" + (f" ({symbol})" if symbol else "")
    named = {lib: m.start() for package, lib in NOT_HERE.items()
             for m in [re.search(rf"\b{re.escape(package)}\b", stderr)] if m}
    libraries = sorted(named, key=named.get)
    if libraries:
        return f"{said}; needs {', '.join(libraries)}, not on this machine"
    block = "\n".join(lines[errors[0]:errors[0] + 5])
    stand_in = re.search(r"location: (?:class|variable \w+ of type) (\w+)|in (?:class|interface) (\w+)", block)
    stand_in = stand_in and (stand_in[1] or stand_in[2])
    if stand_in and any(next((build.JAVA / s).rglob(f"{stand_in}.java"), None) for s in STAND_INS):
        return f"{said}; {stand_in} is rmqcheck's stand-in (checkers/java/java/stubs*/), which lacks it"
    return said


# --- running ------------------------------------------------------------------------------------------------


def run_class(classes: Path, cp: list[Path], rel: str, resources: Path, timeout: float = TIMEOUT) -> Ran:
    """One test class in its own JVM (JUnitCore) and process group, in a scratch folder that is its
    working directory, java.io.tmpdir and user.home (deleted after); the group is ended on a
    timeout or an interrupt."""
    cls = rel.split("/src/test/java/", 1)[1].removesuffix(".java").replace("/", ".")
    scratch = Path(tempfile.mkdtemp(prefix="rmqcheck-junit-"))
    try:
        (scratch / "tmp").mkdir()
        (scratch / "home").mkdir()
        cmd = [shutil.which("java") or "java", "-Xmx512m", build.QUICK_JIT, *build.CLUSTER.jvm_flags,
               f"-Djava.io.tmpdir={scratch / 'tmp'}", f"-Duser.home={scratch / 'home'}",
               "-cp", os.pathsep.join(map(str, [classes, resources, *cp])), "org.junit.runner.JUnitCore", cls]
        with open(scratch / "output.txt", "w+b") as output:
            proc = subprocess.Popen(cmd, cwd=scratch, stdin=subprocess.DEVNULL, stdout=output,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            ended = ""
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                ended = f"timed out after {timeout:.0f}s; its process group was ended"
            finally:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()
            output.seek(0)
            ran = parse(output.read().decode("utf-8", errors="replace"))
        return ran._replace(first=ended) if ended else ran
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

