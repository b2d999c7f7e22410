"""Java branch coverage of RocketMQ's classes while `conform` drives them (`conform --coverage`).

Debian's JaCoCo (libjacoco-java 0.8.6, with Debian's ASM 9.4) reads Java 17 class files, but its
ASM 8 visitors refuse the PermittedSubclasses attribute that javac 17 writes for an enum with
constant bodies (tried: "PermittedSubclasses requires ASM9"), so the conformance drivers are
compiled for Java 11 (`build.CORE`, `build.HA`): coverage measures the build `conform` runs.
Its agent jar has no `Premain-Class`, so a two-line agent jar is written beside the build cache,
naming the agent's classes and ASM on its `Class-Path`. Each driver JVM writes its execution data when it exits;
`RmqcheckCoverage` (java/coverage/) reads it with JaCoCo's analyzer and prints each method of
every RocketMQ class that ran: its branches covered and missed, and the lines that hold them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Iterable, NamedTuple

from . import build

# Debian's jars for the agent and the analyzer (libjacoco-java, and the ASM it depends on).
JARS = {
    "org.jacoco.agent.rt.jar": "libjacoco-java",
    "org.jacoco.core.jar": "libjacoco-java",
    "asm.jar": "libasm-java",
    "asm-commons.jar": "libasm-java",
    "asm-tree.jar": "libasm-java",
}
AGENT_MAIN = "org.jacoco.agent.rt.internal.PreMain"
ANALYZER = build.JAVA / "coverage" / "RmqcheckCoverage.java"

# The methods docs/conformance.md lists as what conformance runs: those the drivers call, by
# class (build.NEEDED and build.HA_NEEDED), as JaCoCo names classes.
LISTED: dict[str, frozenset[str]] = {}
for _needed in (build.NEEDED, build.HA_NEEDED):
    for _path, _methods in _needed.items():
        _name = _path.split("/src/main/java/", 1)[1].removesuffix(".java")
        LISTED[_name] = LISTED.get(_name, frozenset()) | frozenset(_methods)


class Method(NamedTuple):
    cls: str  # org/apache/rocketmq/...
    name: str
    desc: str
    first: int
    last: int
    covered: int  # branches
    total: int
    lines: tuple[tuple[int, int, int], ...]  # (line, covered, total) of each line with branches

    @property
    def listed(self) -> bool:
        return self.name in LISTED.get(self.cls, ())

    def missed_lines(self) -> list[int]:
        return [n for n, covered, total in self.lines if covered < total]


def _manifest(attributes: dict[str, str]) -> bytes:
    """A jar manifest: lines of at most 72 bytes, longer ones continued after a space."""
    out = []
    for key, value in attributes.items():
        line = f"{key}: {value}".encode()
        out.append(line[:72])
        out += [b" " + line[i:i + 71] for i in range(72, len(line), 71)]
    return b"\r\n".join(out) + b"\r\n\r\n"


def agent_jar(cache: Path = build.BUILD) -> Path:
    """JaCoCo's agent as a jar the JVM can load with -javaagent (made once)."""
    jars = build._jars(JARS)
    path = cache / "jacoco-agent.jar"
    manifest = _manifest({"Manifest-Version": "1.0", "Premain-Class": AGENT_MAIN,
                          "Class-Path": " ".join(j.as_uri() for j in jars)})
    if not path.exists() or zipfile.ZipFile(path).read("META-INF/MANIFEST.MF") != manifest:
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with zipfile.ZipFile(partial, "w") as z:
            z.writestr("META-INF/MANIFEST.MF", manifest)
        partial.replace(path)
    return path


def agent_flags(exec_file: Path, cache: Path = build.BUILD) -> tuple[str, ...]:
    """The JVM flag that records the coverage of RocketMQ's classes into `exec_file` at exit."""
    return (f"-javaagent:{agent_jar(cache)}=destfile={exec_file},includes=org.apache.rocketmq.*,dumponexit=true",)


def _analyzer(cache: Path = build.BUILD) -> Path:
    """RmqcheckCoverage, compiled once against Debian's JaCoCo."""
    classes = cache / "coverage-analyzer"
    if not ANALYZER.exists():
        raise build.BuildError(f"{ANALYZER}: missing (rmqcheck's own Java sources were not installed)")
    if not (classes / "RmqcheckCoverage.class").exists() or \
            (classes / "RmqcheckCoverage.class").stat().st_mtime < ANALYZER.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        cp = ":".join(map(str, build._jars(JARS)))
        build._javac_run([build._javac(), build.JAVAC_JIT, "-nowarn", "-d", str(classes), "-cp", cp, str(ANALYZER)],
                         "the coverage analyzer did not compile")
    return classes


def analyze(classes: Path, exec_files: Iterable[Path], cache: Path = build.BUILD) -> list[Method]:
    """Every method of the RocketMQ classes under `classes` that ran, with its branch coverage."""
    execs = [str(p) for p in exec_files if Path(p).exists()]
    if not execs:
        return []
    cp = ":".join(map(str, (_analyzer(cache), *build._jars(JARS))))
    done = subprocess.run([shutil.which("java") or "java", build.QUICK_JIT, "-XX:+UseSerialGC", "-cp", cp,
                           "RmqcheckCoverage", str(classes), *execs], capture_output=True, text=True)
    if done.returncode != 0:
        raise build.BuildError(f"the coverage analyzer failed: {done.stderr.strip()[-800:]}")
    methods = []
    for line in done.stdout.splitlines():
        m = json.loads(line)
        methods.append(Method(m["class"], m["method"], m["desc"], m["first"], m["last"], m["covered"], m["total"],
                              tuple(tuple(x) for x in m["lines"])))
    return methods


def merged(runs: Iterable[list[Method]]) -> list[Method]:
    """One list from the drivers' (both load EpochFileCache, each its own build): a method's
    branches on a line count as covered as far as either driver covered them."""
    by_key: dict[tuple[str, str, str], Method] = {}
    for methods in runs:
        for m in methods:
            key = (m.cls, m.name, m.desc)
            other = by_key.get(key)
            if other is not None and other.lines:
                best = {n: (c, t) for n, c, t in other.lines}
                for n, c, t in m.lines:
                    best[n] = max(best.get(n, (c, t)), (c, t))
                lines = tuple((n, c, t) for n, (c, t) in sorted(best.items()))
                m = m._replace(lines=lines, covered=sum(c for _, c, _ in lines), total=sum(t for _, _, t in lines))
            by_key[key] = m
    return list(by_key.values())


def measure(builds: Iterable[tuple[Path, Path]], cache: Path = build.BUILD) -> list[Method]:
    """The coverage of each (classes, execution data) pair of a run's drivers, merged."""
    return merged([analyze(classes, [data], cache) for classes, data in builds])


def totals(methods: Iterable[Method]) -> tuple[int, int]:
    """(branches covered, branches) over `methods`."""
    ms = list(methods)
    return sum(m.covered for m in ms), sum(m.total for m in ms)


def percent(covered: int, total: int) -> str:
    return f"{100 * covered / total:.1f} %" if total else "no branches"


def report(methods: list[Method]) -> dict:
    """The report `conform --coverage OUT` writes (coverage.json): the figures, then each class
    and method with its branches covered and missed and the lines of the missed ones."""
    listed = [m for m in methods if m.listed]
    classes: dict[str, list[dict]] = {}
    for m in sorted(methods, key=lambda m: (m.cls, m.first, m.name)):
        classes.setdefault(m.cls, []).append({
            "method": m.name, "desc": m.desc, "lines": [m.first, m.last], "listed": m.listed,
            "branches_covered": m.covered, "branches_missed": m.total - m.covered,
            "missed_at_lines": m.missed_lines()})
    return {"listed_methods": dict(zip(("branches_covered", "branches"), totals(listed))),
            "all_loaded": dict(zip(("branches_covered", "branches"), totals(methods))),
            "classes": classes}


def summary(methods: list[Method]) -> str:
    listed = totals(m for m in methods if m.listed)
    every = totals(methods)
    return (f"branch coverage: the listed methods {listed[0]:,} of {listed[1]:,} ({percent(*listed)}), "
            f"every loaded RocketMQ method {every[0]:,} of {every[1]:,} ({percent(*every)})")
