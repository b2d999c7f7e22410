"""RocketMQ's own JUnit tests of the classes a patch touches, and the test libraries running them
would need on this machine (`rmqcheck findings --check`, the third of its checks).

The tests are those of the changed classes' packages, in the tree's src/test/java. The libraries are looked for where Debian installs Java libraries and in
the local Maven repository; the versions are the snapshot's pom.xml's.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import NamedTuple

from . import build

# What RocketMQ's tests of the broker and the store compile against (pom.xml at the snapshot), by
# the file-name patterns under which Debian or Maven keeps each.
LIBRARIES = {
    "junit 4.13": ("junit4.jar", "junit-4.13*.jar"),
    "mockito-core 3": ("mockito-core-3.*.jar", "mockito-core-4.*.jar"),
    "assertj-core 3.22": ("assertj-core-3.2[2-9]*.jar",),
    "awaitility 4": ("awaitility-4.*.jar",),
}
PLACES = (build.JAR_DIR, Path(os.path.expanduser("~/.m2/repository")))


class TestsOf(NamedTuple):
    tests: list[str]  # test classes, by their path in the tree
    missing: list[str]  # LIBRARIES not found on this machine


def tests_of(tarball: Path, changed: list[str]) -> list[str]:
    """The tree's test classes in the packages of the changed main classes (AutoSwitchHATest
    tests AutoSwitchHAService, AutoSwitchHAClient and AutoSwitchHAConnection together)."""
    packages = {str(Path(rel.replace("/src/main/java/", "/src/test/java/", 1)).parent)
                for rel in changed if "/src/main/java/" in rel}
    with tarfile.open(tarball) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    return sorted(rel for rel in names if rel.endswith("Test.java") and str(Path(rel).parent) in packages)


def missing_libraries(places: tuple[Path, ...] = PLACES) -> list[str]:
    def present(patterns: tuple[str, ...]) -> bool:
        return any(next(place.rglob(p), None) is not None for place in places if place.is_dir() for p in patterns)

    return [name for name, patterns in LIBRARIES.items() if not present(patterns)]


def survey(tarball: Path, changed: list[str]) -> TestsOf:
    return TestsOf(tests_of(tarball, changed), missing_libraries())
