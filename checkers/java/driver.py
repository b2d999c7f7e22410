"""The Java driver as a Python object: one JVM, many requests.

`JavaDriver(classpath)` starts `java RmqcheckDriver` (checkers/java/java/driver/) in its own
process group; `run(requests)` writes the whole batch from a writer thread while the answers are
read, one JSON line per request, so a batch costs one round trip. Every answer must arrive within
`timeout` seconds of the previous one; otherwise the JVM's process group is killed (no zombie JVM)
and DriverError names the request it hung on. A JVM that dies names the request it died on and the
end of its stderr.

The protocol: each request is a JSON object with an "op" (see model_side.py for the ops and
RmqcheckDriver.java for the answers). An answer is {"ok": true, ...} or {"ok": false, "error":
...} for a request the driver cannot read, or {"ok": false, "exception": "Class: message"} when
RocketMQ's code threw.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
from typing import Any, Sequence

from .build import Classpath


class DriverError(RuntimeError):
    """The JVM died, hung or answered something that is not JSON; the message names the request."""


_EOF = object()


class JavaDriver:
    def __init__(self, classpath: Classpath | str, timeout: float = 30.0, java: str = "java", flags: tuple = ()):
        self.classpath = str(classpath)
        self.main = classpath.main if isinstance(classpath, Classpath) else "RmqcheckDriver"
        self.jvm_flags = (*(classpath.jvm_flags if isinstance(classpath, Classpath) else ()), *flags)
        self.timeout = timeout
        self.java = java
        self.proc: subprocess.Popen | None = None
        self.requests_sent = 0

    def __enter__(self) -> "JavaDriver":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        self._stderr = tempfile.TemporaryFile()
        # the driver's epoch files go to memory when it can (thousands of small writes a second)
        tmp = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
        self.proc = subprocess.Popen(
            [self.java, *self.jvm_flags, "-Xshare:auto", "-XX:+UseSerialGC", "-cp", self.classpath,
             self.main, tmp],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(_EOF)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace").strip()
        return text[-1500:] if text else "(nothing on stderr)"

    def run(self, requests: Sequence[dict]) -> list[dict]:
        """Send every request, return every answer, in order."""
        if self.proc is None or self.proc.poll() is not None:
            raise DriverError("the Java driver is not running")
        payload = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in requests).encode()
        failed: list[BaseException] = []

        def write() -> None:
            try:
                self.proc.stdin.write(payload)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                failed.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        answers = []
        for i, req in enumerate(requests):
            try:
                line = self._lines.get(timeout=self.timeout)
            except queue.Empty:
                self._kill()
                raise DriverError(f"the Java driver gave no answer to request {self.requests_sent + i + 1} "
                                  f"{json.dumps(req)} within {self.timeout:g}s; killed it") from None
            if line is _EOF:
                code = self.proc.wait()
                raise DriverError(f"the Java driver exited (status {code}) on request {self.requests_sent + i + 1} "
                                  f"{json.dumps(req)}; its stderr: {self._stderr_tail()}")
            try:
                answers.append(json.loads(line))
            except json.JSONDecodeError:
                self._kill()
                raise DriverError(f"the Java driver answered request {json.dumps(req)} with something that is not "
                                  f"JSON: {line[:300].decode('utf-8', 'replace').strip()!r}") from None
        writer.join()
        self.requests_sent += len(requests)
        return answers

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self._kill()
        self._stderr.close()
        self.proc = None


def run_both(core: JavaDriver, core_requests: Sequence[dict], ha: JavaDriver | None,
             ha_requests: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """Each driver's batch, the two JVMs working at once (the HA driver's only if it has one)."""
    got: dict[str, Any] = {}

    def run_ha() -> None:
        try:
            got["ha"] = ha.run(ha_requests)
        except BaseException as exc:  # re-raised below, in the caller's thread
            got["error"] = exc

    if ha_requests and ha is None:
        raise DriverError(f"{len(ha_requests)} requests need the HA driver, which is not running "
                          f"(the first: {json.dumps(ha_requests[0])[:200]})")
    worker = threading.Thread(target=run_ha) if ha_requests else None
    if worker:
        worker.start()
    core_answers = core.run(core_requests) if core_requests else []
    if worker:
        worker.join()
    if "error" in got:
        raise got["error"]
    return core_answers, got.get("ha", [])
