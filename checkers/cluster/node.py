"""One broker of a real-run cluster as a Python object: a JVM running RmqcheckBroker
(checkers/java/java/driver/RmqcheckBroker.java) with RocketMQ's store, HA service and
ReplicasManager in it.

The JVM speaks JSON lines both ways. Python sends commands ({"id", "op", ...}) and answers to the
JVM's controller RPCs ({"rpc_reply", "answer"}); the JVM sends command replies ({"reply", ...}),
RPCs ({"rpc", "op", "args"}) and events ({"event": "put", ...}). A reader thread turns every line
from the JVM into an item of the cluster's one inbox, tagged with the broker; the harness
(harness.py) is the only reader of that inbox, so it decides, one item at a time, what each RPC
meets. The JVM runs in its own process group and is killed by that group (never by name).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

from rmqcheck.checkers.java.build import Classpath


class NodeError(RuntimeError):
    """The broker's JVM died, hung or answered what is not JSON: names the broker and the request."""


class Item(NamedTuple):
    """One line from a broker's JVM, for the harness's inbox."""

    broker: int
    kind: str  # "reply", "rpc", "event" or "exit"
    body: dict[str, Any]


class BrokerNode:
    def __init__(self, broker: int, classpath: Classpath, store: Path, inbox: "queue.Queue[Item]",
                 java: str = "java", heap: str = "256m") -> None:
        self.broker = broker
        self.classpath = classpath
        self.store = store
        self.inbox = inbox
        self.java = java
        self.heap = heap
        self.proc: subprocess.Popen | None = None
        self.next_id = 0
        self.log = store.parent / f"broker-{broker}.log"
        self._write = threading.Lock()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def spawn(self) -> None:
        """Start the JVM (the store is started by the `start` command)."""
        self.store.mkdir(parents=True, exist_ok=True)
        err = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen(
                [self.java, *self.classpath.jvm_flags, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-Xshare:auto",
                 "-XX:+DisplayVMOutputToStderr",  # thread dumps (SIGQUIT) to the log, not the JSON pipe
                 f"-Djava.io.tmpdir={tempfile.gettempdir()}",
                 # RocketMQ's own log lines, as an operator's broker writes them (the logging stand-in)
                 f"-Drmqcheck.logDir={self.store.parent.parent / 'logs' / self.store.name}",
                 "-cp", str(self.classpath), self.classpath.main],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        except OSError as exc:
            raise NodeError(f"broker {self.broker}: cannot start {self.java}: {exc.strerror}") from None
        finally:
            err.close()
        threading.Thread(target=self._read, args=(self.proc,), name=f"broker-{self.broker}-reader", daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                body = json.loads(line)
            except ValueError:
                body = {"garbage": line.decode("utf-8", "replace")[:300]}
            kind = "reply" if "reply" in body else "rpc" if "rpc" in body else "event" if "event" in body else "garbage"
            if kind == "garbage":
                body = {"garbage": line.decode("utf-8", "replace")[:300]}
            self.inbox.put(Item(self.broker, kind, body))
        proc.wait()
        self.inbox.put(Item(self.broker, "exit", {"pid": proc.pid, "code": proc.returncode}))

    def send(self, message: dict[str, Any]) -> None:
        if not self.alive:
            raise NodeError(f"broker {self.broker}: its JVM is not running ({self.log_tail()})")
        assert self.proc is not None and self.proc.stdin is not None
        with self._write:
            try:
                self.proc.stdin.write(json.dumps(message).encode() + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise NodeError(f"broker {self.broker}: its JVM went away ({self.log_tail()})") from None

    def command(self, op: str, **args: Any) -> int:
        """Send a command; its id (the reply comes through the inbox)."""
        self.next_id += 1
        self.send({"id": self.next_id, "op": op, **args})
        return self.next_id

    def answer(self, rpc: int, answer: dict[str, Any] | None) -> None:
        """The harness's answer to an RPC (None: not delivered). A dead JVM needs none."""
        if self.alive:
            self.send({"rpc_reply": rpc, "answer": answer})

    def kill(self) -> None:
        """kill -9 of the JVM's process group: a crash (the page cache survives)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def dump_threads(self) -> None:
        """A thread dump into the broker's log (SIGQUIT), to see where it hangs."""
        if self.alive:
            assert self.proc is not None
            size = self.log.stat().st_size if self.log.exists() else 0
            os.kill(self.proc.pid, signal.SIGQUIT)
            end = time.monotonic() + 5  # the JVM writes it on its own thread: wait for it before any kill
            while time.monotonic() < end and (not self.log.exists() or self.log.stat().st_size == size):
                time.sleep(0.05)

    def log_tail(self, limit: int = 600) -> str:
        try:
            text = self.log.read_bytes()[-limit:].decode("utf-8", "replace").strip()
        except OSError:
            return "no log"
        return f"the end of {self.log}: {text}" if text else f"{self.log} is empty"
