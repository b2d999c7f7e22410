"""Compile RocketMQ's own classes, with our drivers, from a RocketMQ source tree (a checkout or a
source tarball), into build/java/<content hash>/.

Two targets, each a driver (java/driver/) and what javac's -sourcepath over the tree's common/,
remoting/, controller/ and store/ `src/main/java` reaches from it:

* `CORE`: the controller's ReplicasInfoManager, DefaultElectPolicy, DefaultBrokerHeartbeatManager,
  the events and headers, SyncStateInfo, BrokerReplicaInfo, ControllerConfig, and the store's
  EpochFileCache and CheckpointFile (about a hundred classes).
* `HA`: the store's AutoSwitchHAService, AutoSwitchHAClient, CommitLog and DefaultMessageStore
  (about 450 classes), run against a Mockito store (Debian's libmockito-java).

Third-party classes come from Debian's jars; for what Debian lacks, our stubs stand in (java/stubs/:
RocketMQ's shaded slf4j, silent; fastjson's encoder, which keeps the object for the driver, and
annotations; RaftBrokerHeartBeatManager, which needs sofa-jraft and is never built; java/stubs-store/:
the RocksDB, OpenTelemetry and DLedger types the store names, and inert stand-ins, searched before
the tree, for four RocketMQ classes on no HA path that need them: DLedgerCommitLog,
CombineConsumeQueueStore, DefaultStoreMetricsManager, RemotingMetricsManager).

Every failure is a BuildError whose message names what is missing: javac, a jar (and its Debian
package), a class or method the driver needs (an older or newer RocketMQ), or a tree that is not
RocketMQ at all.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

HERE = Path(__file__).resolve().parent
JAVA = HERE / "java"
REPO = HERE.parents[1]


def _cache_dir() -> Path:
    """$RMQCHECK_CACHE, else build/java/ of a checkout, else the user's cache (an installed
    package's folder may not be writable)."""
    if os.environ.get("RMQCHECK_CACHE"):
        return Path(os.environ["RMQCHECK_CACHE"]) / "java"
    if (REPO / "pyproject.toml").is_file():
        return REPO / "build" / "java"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rmqcheck" / "java"


BUILD = _cache_dir()
ROOTS = ("common", "remoting", "controller", "store")
CLUSTER_ROOTS = ROOTS + ("broker", "client")

# Debian's jars, by file name under /usr/share/java, and the package that installs each.
JAR_DIR = Path("/usr/share/java")
JARS = {
    "commons-lang3.jar": "libcommons-lang3-java",
    "guava.jar": "libguava-java",
    "netty-common.jar": "libnetty-java",
    "netty-transport.jar": "libnetty-java",
    "netty-buffer.jar": "libnetty-java",
    "netty-codec.jar": "libnetty-java",
    "netty-handler.jar": "libnetty-java",
    "netty-resolver.jar": "libnetty-java",
    "commons-validator.jar": "libcommons-validator-java",
    "hessian.jar": "libhessian-java",
    "commons-collections3.jar": "libcommons-collections3-java",
}
HA_JARS = {
    **JARS,
    "netty-handler-proxy.jar": "libnetty-java",
    "jna.jar": "libjna-java",
    "lz4-java.jar": "liblz4-java",
    "zstd-jni.jar": "libzstd-jni-java",
    "conversant-disruptor.jar": "libconversant-disruptor-java",
    "jsr305.jar": "libjsr305-java",
    "mockito-core.jar": "libmockito-java",
    "byte-buddy.jar": "libbyte-buddy-java",
    "byte-buddy-agent.jar": "libbyte-buddy-java",
    "objenesis.jar": "libobjenesis-java",
}

# The classes and members the drivers call; checked before javac so that an older or newer
# RocketMQ fails with the name of what it lacks.
_C = "controller/src/main/java/org/apache/rocketmq/controller/"
_S = "store/src/main/java/org/apache/rocketmq/store/"
NEEDED = {
    _C + "impl/manager/ReplicasInfoManager.java": (
        "alterSyncStateSet", "electMaster", "getNextBrokerId", "applyBrokerId", "registerBroker", "getReplicaInfo",
        "cleanBrokerData", "scanNeedReelectBrokerSets", "applyEvent", "serialize", "deserializeFrom"),
    _C + "elect/impl/DefaultElectPolicy.java": ("elect",),
    _C + "impl/heartbeat/DefaultBrokerHeartbeatManager.java": ("onBrokerHeartbeat", "isBrokerActive",
                                                               "getBrokerLiveInfo", "onBrokerChannelClose",
                                                               "initialize"),
    _C + "impl/heartbeat/BrokerLiveInfo.java": ("setLastUpdateTimestamp", "getConfirmOffset", "getElectionPriority"),
    _C + "impl/manager/SyncStateInfo.java": ("getMasterBrokerId", "getMasterEpoch", "getSyncStateSetEpoch"),
    _C + "impl/manager/BrokerReplicaInfo.java": ("getBrokerIdTable", "getNextAssignBrokerId"),
    _S + "ha/autoswitch/EpochFileCache.java": (
        "appendEntry", "setLastEpochEntryEndOffset", "truncateSuffixByEpoch", "truncateSuffixByOffset",
        "truncatePrefixByOffset", "findConsistentPoint", "initCacheFromFile", "initCacheFromEntries",
        "findEpochEntryByOffset", "nextEntry", "getEntry", "getAllEntries"),
    "common/src/main/java/org/apache/rocketmq/common/ControllerConfig.java": ("setEnableElectUncleanMaster",),
}
HA_NEEDED = {
    _S + "ha/autoswitch/AutoSwitchHAService.java": (
        "computeConfirmOffset", "updateConfirmOffsetWhenSlaveAck", "maybeExpandInSyncStateSet",
        "maybeShrinkSyncStateSet", "setSyncStateSet", "inSyncReplicasNums", "setLocalBrokerId", "removeConnection"),
    _S + "ha/DefaultHAService.java": ("removeConnection",),
    _S + "ha/autoswitch/AutoSwitchHAClient.java": ("doTruncate", "reportSlaveMaxOffset"),
    _S + "ha/GroupTransferService.java": ("putRequest", "swapRequests", "doWaitTransfer"),
    _S + "ha/autoswitch/AutoSwitchHAConnection.java": ("getSlaveId", "getSlaveAckOffset"),
    _S + "ha/autoswitch/EpochFileCache.java": ("initCacheFromEntries", "getAllEntries"),
    _S + "CommitLog.java": ("getConfirmOffset", "getConfirmOffsetDirectly", "setConfirmOffset"),
    _S + "DefaultMessageStore.java": ("truncateFiles", "isOffsetAligned", "truncateDirtyFiles"),
}

# The drivers, the JUnit runs and javac live seconds to minutes: C1 alone, since C2's compiler
# threads cost more CPU than they save on a small machine (the HA and cluster builds' javac 31 ->
# 16 CPU-seconds; docs/performance.md). Not the cluster's brokers: they run RocketMQ's threads
# against the clock, as a deployment does (with C1, known-bugs A3's run of seed 2 was not
# repeated).
QUICK_JIT = "-XX:TieredStopAtLevel=1"
JAVAC_JIT = f"-J{QUICK_JIT}"
# The java.base packages Hessian (ReplicasInfoManager's snapshot) reflects into, which Java 17 closes.
OPENS = ("--add-opens", "java.base/java.lang=ALL-UNNAMED",
         "--add-opens", "java.base/java.util=ALL-UNNAMED",
         "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
         "--add-opens", "java.base/java.util.concurrent.atomic=ALL-UNNAMED")
JVM_FLAGS = (QUICK_JIT, *OPENS)


class Target(NamedTuple):
    """One driver and what its build needs."""

    name: str
    main: str  # the driver's class, java/driver/<main>.java
    stubs: tuple[str, ...]  # stub folders under java/, searched before the tree, in order
    jars: dict[str, str]
    needed: dict[str, tuple[str, ...]]
    javac_flags: tuple[str, ...]
    jvm_flags: tuple[str, ...]
    roots: tuple[str, ...] = ROOTS  # the tree's modules whose src/main/java javac searches


# The conformance drivers are compiled for Java 11 (run on Java 17): class files Debian's JaCoCo
# 0.8.6 can analyze, so `conform --coverage` measures the very build `conform` runs. With Debian's
# ASM 9.4 it reads Java 17 class files, but its ASM 8 visitors refuse the PermittedSubclasses
# attribute javac 17 writes for an enum with constant bodies ("PermittedSubclasses requires ASM9").
CORE = Target("core", "RmqcheckDriver", ("stubs",), JARS, NEEDED, ("--release", "11"), JVM_FLAGS)
# The store's CommitLog imports sun.nio.ch.DirectBuffer: exported to it, which --release forbids.
HA = Target("ha", "RmqcheckHaDriver", ("stubs-store", "stubs"), HA_JARS, HA_NEEDED,
            ("-source", "11", "-target", "11", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"), (QUICK_JIT,))
# A broker of a real-run cluster (cluster/): the store and HA service on real files and sockets,
# the broker's ReplicasManager over stand-ins (stubs-broker/); no Mockito.
CLUSTER_JARS = {jar: pkg for jar, pkg in HA_JARS.items() if pkg not in ("libmockito-java", "libbyte-buddy-java",
                                                                        "libobjenesis-java")}
CLUSTER_NEEDED = {
    **{k: v for k, v in HA_NEEDED.items() if "GroupTransferService" not in k},
    "broker/src/main/java/org/apache/rocketmq/broker/controller/ReplicasManager.java": (
        "start", "changeToMaster", "changeToSlave", "sendHeartbeatToController", "getMasterEpoch", "getSyncStateSet",
        "getBrokerControllerId"),
}
CLUSTER = Target("cluster", "RmqcheckBroker", ("stubs-broker", "stubs-store", "stubs"), CLUSTER_JARS, CLUSTER_NEEDED,
                 HA.javac_flags, OPENS + ("--add-opens", "java.base/java.nio=ALL-UNNAMED",
                                          "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                                          "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
                                          "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"),
                 CLUSTER_ROOTS)


class BuildError(RuntimeError):
    """The classes could not be built; the message says what is missing and how to get it."""


class Classpath(NamedTuple):
    classes: Path
    jars: tuple[Path, ...]
    main: str = CORE.main
    jvm_flags: tuple[str, ...] = CORE.jvm_flags

    def __str__(self) -> str:
        return os.pathsep.join(str(p) for p in (self.classes, *self.jars))


def shared_tree() -> Path | None:
    """../shared/rocketmq/ beside the checkout (or the working directory), when present."""
    for base in (REPO, Path.cwd()):
        candidate = base.parent / "shared" / "rocketmq"
        if candidate.is_dir():
            return candidate
    return None


def locate(src: str | os.PathLike | None) -> Path:
    """The tree to build: `src`, else $RMQCHECK_ROCKETMQ_SRC, else ../shared/rocketmq/. A
    directory holding exactly one *-src.tar.gz (as ../shared/rocketmq/ does) means that tarball."""
    chosen = src or os.environ.get("RMQCHECK_ROCKETMQ_SRC") or shared_tree()
    if chosen is None:
        raise BuildError("no RocketMQ source: pass --rocketmq-src PATH (a checkout or a source tarball) "
                         "or set RMQCHECK_ROCKETMQ_SRC")
    path = Path(chosen)
    if not path.exists():
        raise BuildError(f"{path}: no such file or directory (expected a RocketMQ checkout or source tarball)")
    if path.is_dir() and not (path / "controller").is_dir():
        tarballs = sorted(path.glob("*.tar.gz")) + sorted(path.glob("*.tgz"))
        if len(tarballs) == 1:
            return tarballs[0]
    return path


def _tree_key(tree: Path, target: Target) -> str:
    """The content hash of what the build reads: the tree (its tarball's bytes, or every file
    under the four source roots), our Java sources, the target and the javac version."""
    h = hashlib.sha256()
    if tree.is_file():
        with open(tree, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    else:
        for root in target.roots:
            base = tree / root / "src" / "main" / "java"
            for p in sorted(base.rglob("*.java")) if base.is_dir() else ():
                h.update(str(p.relative_to(tree)).encode())
                h.update(p.read_bytes())
    for p in sorted(java_sources()):
        h.update(str(p.relative_to(JAVA)).encode())
        h.update(p.read_bytes())
    h.update(repr(target._replace(jvm_flags=())).encode())  # how the classes run is not how they are built
    h.update(_javac_version().encode())
    return h.hexdigest()[:20]


TEST_STUBS = JAVA / "test-stubs"  # rocketmq_tests.py's stand-ins: read by the test builds only


def java_sources(*, tests: bool = False) -> list[Path]:
    """Our Java sources a build reads: the drivers' and stand-ins', or (tests) those of RocketMQ's tests."""
    return [p for p in JAVA.rglob("*.java") if (TEST_STUBS in p.parents) == tests]


def _javac() -> str:
    javac = shutil.which("javac")
    if javac is None:
        raise BuildError("no javac: conformance compiles RocketMQ's classes and needs a JDK "
                         "(Debian: openjdk-17-jdk-headless; `make jdk` installs it when run as root)")
    return javac


def _javac_version() -> str:
    out = subprocess.run([_javac(), "-version"], capture_output=True, text=True)
    return (out.stdout + out.stderr).strip()


def _jars(jars: dict[str, str]) -> tuple[Path, ...]:
    missing = sorted({pkg for jar, pkg in jars.items() if not (JAR_DIR / jar).exists()})
    if missing:
        names = ", ".join(j for j, p in jars.items() if p in missing)
        raise BuildError(f"missing Java libraries ({names} under {JAR_DIR}): install the Debian packages "
                         f"{' '.join(missing)} (`make jdk` does it when run as root)")
    return tuple(JAR_DIR / jar for jar in jars)


def _extract(tarball: Path, dest: Path, roots: tuple[str, ...] = ROOTS) -> Path:
    """The source roots of a RocketMQ tarball, unpacked under dest; returns the tree root."""
    try:
        tar = tarfile.open(tarball)
    except (tarfile.TarError, OSError) as exc:
        raise BuildError(f"{tarball}: not a readable source tarball ({exc})") from None
    with tar:
        names = tar.getnames()
        tops = {n.split("/", 1)[0] for n in names}
        prefix = f"{min(tops)}/" if len(tops) == 1 and not tops & set(ROOTS) else ""
        wanted = tuple(f"{prefix}{root}/src/main/java/" for root in roots)
        members = [m for m in tar.getmembers() if m.name.startswith(wanted) and (m.isfile() or m.isdir())]
        if not any(m.name.startswith(f"{prefix}controller/src/main/java/org/apache/rocketmq/") for m in members):
            raise BuildError(f"{tarball}: not a RocketMQ source tarball "
                             f"(it has no controller/src/main/java/org/apache/rocketmq/)")
        tar.extractall(dest, members=members, filter="data")
    return dest / prefix if prefix else dest


class Change(NamedTuple):
    """One change to a RocketMQ source file: `old` (found exactly `count` times) becomes `new`."""
    rel: str
    old: str
    new: str
    count: int = 1


PATCHED = REPO / "build" / "patched"
CHANGES = ".changes"  # in a patched tree's folder: its base tarball and the files its changes touch


def patched(name: str, changes: tuple[Change, ...], src: str | os.PathLike | None = None,
            roots: tuple[str, ...] = CLUSTER_ROOTS) -> Path:
    """A copy of the tree's source roots with `changes` applied, under build/patched/<name>/
    (made once: a later call reuses it); the tree root, for --rocketmq-src."""
    def apply(root: Path) -> None:
        for c in changes:
            text = (root / c.rel).read_text(encoding="utf-8")
            if text.count(c.old) != c.count:
                raise BuildError(f"{name}: {c.rel} holds the text to change {text.count(c.old)} times, not {c.count}")
            (root / c.rel).write_text(text.replace(c.old, c.new), encoding="utf-8")

    return _patched_tree(name, sorted({c.rel for c in changes}), apply, src, roots)


def from_diff(diff: Path, src: str | os.PathLike | None = None, roots: tuple[str, ...] = CLUSTER_ROOTS) -> Path:
    """A copy of the tree's source roots with a unified diff applied (`patch -p1`, no fuzz: a
    diff written for another tree is refused, not bent to fit), under build/patched/, named by
    the diff's name and content (an edited diff makes a new tree); the tree root."""
    diff = Path(diff)
    try:
        text = diff.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{diff}: cannot read the patch ({exc})") from None
    files = diff_files(text)
    if not files:
        raise BuildError(f"{diff}: not a unified diff with a/ and b/ paths (no '+++ b/...' line)")
    if shutil.which("patch") is None:
        raise BuildError("no `patch` program: install Debian's patch package")

    def apply(root: Path) -> None:
        done = subprocess.run(["patch", "-p1", "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch",
                               "-i", str(diff.resolve())], cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            said = (done.stdout + done.stderr).strip().splitlines()
            raise BuildError(f"{diff}: does not apply to {locate(src).name}: " + " / ".join(said[-4:]))

    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return _patched_tree(f"{diff.stem}-{digest}", files, apply, src, roots)


def diff_files(text: str) -> list[str]:
    """The files a unified diff with a/ and b/ paths changes."""
    return sorted(set(re.findall(r"^\+\+\+ b/(\S+)", text, re.M)))


def _patched_tree(name: str, files: list[str], apply: Callable[[Path], None], src: str | os.PathLike | None,
                  roots: tuple[str, ...]) -> Path:
    tree = PATCHED / name
    PATCHED.mkdir(parents=True, exist_ok=True)
    with _locked(PATCHED / f"{name}.lock"):  # test workers may ask for the same tree at once
        if not (tree / ".patched").exists():
            shutil.rmtree(tree, ignore_errors=True)
            tarball = locate(src)
            if not tarball.is_file():
                raise BuildError(f"{tarball}: a patched tree is made from a source tarball")
            root = _extract(tarball, tree / "x", roots)
            # What `build` needs to compile only the changed files over the base's classes.
            (tree / CHANGES).write_text(json.dumps({"base": str(tarball), "files": files}))
            try:
                apply(root)
            except BaseException:
                shutil.rmtree(tree, ignore_errors=True)
                raise
            (tree / ".patched").write_text(str(root.relative_to(tree)))
    return tree / (tree / ".patched").read_text()


def check_tree(tree: Path, label: str | Path, needed: dict[str, tuple[str, ...]] = NEEDED) -> None:
    """Every class and member the driver calls is in the tree; otherwise name the first missing."""
    if not (tree / "controller" / "src" / "main" / "java" / "org" / "apache" / "rocketmq").is_dir():
        raise BuildError(f"{label}: not a RocketMQ source tree (it has no controller/src/main/java/org/apache/rocketmq/)")
    for rel, members in needed.items():
        path = tree / rel
        cls = path.stem
        if not path.is_file():
            raise BuildError(f"{label}: RocketMQ's class {cls} is missing ({rel}); the driver needs it, so this "
                             f"RocketMQ is older or newer than the ones conformance supports")
        text = path.read_text(encoding="utf-8", errors="replace")
        for member in members:
            if not re.search(rf"\b{re.escape(member)}\s*\(", text):
                raise BuildError(f"{label}: RocketMQ's {cls}.{member} is missing ({rel}); the driver calls it, so "
                                 f"this RocketMQ is older or newer than the ones conformance supports")


def build(tree: Path, cache: Path = BUILD, target: Target = CORE) -> Classpath:
    """Compile (or reuse, by content hash) a driver against `tree`; the class path to run it."""
    tree = Path(tree)
    jars = _jars(target.jars)
    javac = _javac()
    out = cache / f"{target.name}-{_tree_key(tree, target)}"
    classes = out / "classes"
    built = Classpath(classes, jars, target.main, target.jvm_flags)
    if (classes / f"{target.main}.class").exists():
        return built
    cache.mkdir(parents=True, exist_ok=True)
    with _locked(cache / f"{out.name}.lock"):  # another process (a test worker) may be building it
        if not (classes / f"{target.main}.class").exists():
            changed = _changes_of(tree)
            if changed is None:
                _compile(tree, target, jars, javac, classes)
            else:
                _compile_changes(tree, changed, build(Path(changed["base"]), cache, target), target, javac, classes)
    return built


def _source_rel(rel: str) -> str:
    """A tree's source file by its package path (store/src/main/java/org/... -> org/...)."""
    return rel.split("/src/main/java/", 1)[-1]


def stood_in(files: list[str], target: Target) -> list[str]:
    """The files a target does not build from the tree: a stand-in of ours replaces their class
    (java/stubs*/), so a change to them is not compiled or run there."""
    return [rel for rel in files if any((JAVA / stub / _source_rel(rel)).exists() for stub in target.stubs)]


def compiled(files: list[str], target: Target, classes: Path) -> list[str]:
    """Of a patched tree's changed files, those the target compiles: its build loads their class
    (`classes` holds it) and no stand-in of ours replaces it."""
    stood = set(stood_in(files, target))
    return [rel for rel in files if rel not in stood and (classes / _source_rel(rel)).with_suffix(".class").exists()]


def changed_files(tree: Path) -> list[str]:
    """The files `patched` or `from_diff` changed in the tree (none for any other tree)."""
    changed = _changes_of(Path(tree))
    return list(changed["files"]) if changed else []


def _changes_of(tree: Path) -> dict | None:
    """A tree made by `patched`: its base tarball and changed files (None for any other tree)."""
    for folder in tree.parents[:2]:
        if (folder / CHANGES).is_file() and folder.parent == PATCHED:
            return json.loads((folder / CHANGES).read_text())
    return None


def _compile_changes(tree: Path, changed: dict, base: Classpath, target: Target, javac: str, classes: Path) -> None:
    """A patched tree's classes: the base tree's, with each changed file the target loads compiled
    again over them (whole builds of the ten mutant trees took 63 s of a clean `make test`, this
    19 s). A change
    of a method's body compiles to what a whole build gives; one that changes a constant other
    classes inline would not, and `patched`'s changes do not."""
    work = Path(tempfile.mkdtemp(prefix="building-", dir=classes.parent.parent))
    try:
        shutil.copytree(base.classes, work / "classes")
        sources = [tree / rel for rel in compiled(changed["files"], target, base.classes)]
        if sources:
            cmd = [javac, JAVAC_JIT, "-nowarn", "-encoding", "UTF-8", *target.javac_flags, "-implicit:none",
                   "-d", str(work / "classes"), "-cp", os.pathsep.join(map(str, (base.classes, *base.jars))),
                   *map(str, sources)]
            _javac_run(cmd, f"{tree}: javac failed on the changed files")
        classes.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(classes, ignore_errors=True)
        (work / "classes").rename(classes)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _compile(tree: Path, target: Target, jars: tuple[Path, ...], javac: str, classes: Path) -> None:
    out = classes.parent
    work = Path(tempfile.mkdtemp(prefix="building-", dir=out.parent))
    try:
        root = _extract(tree, work / "src", target.roots) if tree.is_file() else tree
        check_tree(root, tree, target.needed)
        sourcepath = [JAVA / s for s in target.stubs] + [root / r / "src" / "main" / "java" for r in target.roots]
        sourcepath.append(JAVA / "driver")
        cmd = [javac, JAVAC_JIT, "-nowarn", "-encoding", "UTF-8", *target.javac_flags, "-implicit:class",
               "-d", str(work / "classes"), "-cp", os.pathsep.join(map(str, jars)),
               "-sourcepath", os.pathsep.join(map(str, sourcepath)), str(JAVA / "driver" / f"{target.main}.java")]
        _javac_run(cmd, f"{tree}: javac failed on RocketMQ's classes")
        out.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(classes, ignore_errors=True)
        (work / "classes").rename(classes)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _javac_run(cmd: list[str], failed: str) -> None:
    """Run javac; a BuildError starting with `failed` and naming its first errors if it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if ": error:" in line]
        first = "; ".join(errors[:3]) or done.stderr.strip()[-800:]
        raise BuildError(f"{failed} ({len(errors)} errors); first: {first}")
