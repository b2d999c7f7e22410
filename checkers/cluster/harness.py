"""The cluster: RocketMQ's controller classes in one JVM, each broker in its own (node.py), a proxy
on every slave-to-master HA link (proxy.py), and the one loop that decides what happens.

Every line a JVM writes reaches one inbox; only this module reads it, so the harness alone decides
what each controller RPC meets: delivered to the controller (the default), not delivered (the
broker is cut off from the controller), or applied and its answer lost. ReplicasManager's
periodic tasks run only when `task` says so. A step ends when the cluster is quiet (`settle`):
no command running, no RPC waiting, no one-shot job queued, no put waiting for replicas, nothing
held on an open link, and every broker's observable state unchanged over a poll interval.

A stepping cluster (`replay --cluster`) is driven one model step at a time: its HA links hold
every frame until the harness releases it (proxy.py, step mode), its AlterSyncStateSet RPCs wait
until released (`release_rpc`), and a put waiting for replicas does not keep a step from ending.
Wall-clock time still passes inside RocketMQ's threads (the HA service's heartbeats and the
put's wait for replicas): the configuration keeps those timeouts far from the step times, and a
run that depends on them is reported as not repeatable by the caller.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from rmqcheck.checkers.java import build
from rmqcheck.checkers.java.build import Classpath

from . import epochfiles, quiet
from .controller import Controller
from .node import BrokerNode, Item, NodeError
from .proxy import OPEN, STEP, LinkProxy
from .settings import ClusterConfig

DELIVER, DROP, LOSE_ANSWER = "deliver", "drop", "lose_answer"


class ClusterError(RuntimeError):
    """The harness could not do what was asked: names the broker and what happened; `broker`,
    when a broker's command failed (no answer in time, an exception, its JVM died)."""

    def __init__(self, message: str, broker: int | None = None) -> None:
        super().__init__(message)
        self.broker = broker


class Put(NamedTuple):
    broker: int
    msg: str
    queue: int


class Cluster:
    """Start with `with Cluster(cfg, run_dir) as c:`; every JVM is ended on leaving."""

    def __init__(self, cfg: ClusterConfig, run_dir: Path, src: str | None = None,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None, stepping: bool = False) -> None:
        self.cfg, self.stepping = cfg, stepping
        self.link_mode = STEP if stepping else OPEN  # what a link is when nothing cuts it
        self.held_rpcs: list[tuple[int, dict[str, Any]]] = []  # (broker, RPC) held back (stepping)
        self.unreleased: list[tuple[int, dict[str, Any]]] = []  # held RPCs dropped for a command (call)
        self.dir = Path(run_dir)
        self.src = src
        self.on_event = on_event or (lambda kind, body: None)
        self.inbox: queue.Queue[Item] = queue.Queue()
        self.nodes: dict[int, BrokerNode] = {}
        self.links: dict[tuple[int, int], LinkProxy] = {}  # (slave, master) -> proxy
        self.rpc_policy: dict[int, str] = {}  # broker -> DELIVER | DROP | LOSE_ANSWER
        self.cut_off: set[int] = set()  # brokers a partition cuts off from the controller, until the heal
        self.ha_ports: dict[int, int | None] = {}
        self.replies: dict[tuple[int, int], dict[str, Any]] = {}
        self.puts: dict[tuple[int, int], Put] = {}
        self.controller: Controller | None = None
        self.classpath: Classpath | None = None
        self.settled = True  # whether the last settle() found the cluster quiet
        self.epoch_files: dict[int, epochfiles.PageCache] = {}  # broker -> its epoch files' versions
        # Slaves stuck (no progress for `stuck_after` s) at this max offset: not waited for there.
        self.stranded: dict[int, int] = {}
        self.exited: set[int] = set()  # JVM pids whose output has all been read
        self.command_timeout = 60.0  # seconds a command may take before the broker counts as hung

    # --- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> "Cluster":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        tree = build.locate(self.src)
        self.classpath = build.build(tree, target=build.CLUSTER)
        self.controller = Controller(build.build(tree), self.cfg.unclean, self.cfg.heartbeat_timeout,
                                     self.dir / "logs" / "controller")
        self.controller.start()
        self.dir.mkdir(parents=True, exist_ok=True)
        for b in self.brokers:
            for m in self.brokers:
                if b != m:
                    self.links[(b, m)] = LinkProxy(f"{b}->{m}", lambda m=m: self.ha_ports.get(m))
                    self.links[(b, m)].set_mode(self.link_mode)
        for b in self.brokers:
            self.nodes[b] = BrokerNode(b, self.classpath, self.dir / "stores" / f"broker-{b}", self.inbox)
            self.epoch_files[b] = epochfiles.PageCache(self.nodes[b].store)
            self.restart(b)
        for b in self.brokers:  # a start that found no master (a learner not to be elected) tries again, as
            if (self.observe(b) or {}).get("rm_state") not in (None, "RUNNING"):  # its start-retry loop would
                self.task(b, "retry_start")
        self.note_epoch_files()  # what the start wrote, at the controller's first tick

    def close(self) -> None:
        for node in self.nodes.values():
            node.kill()
        for link in self.links.values():
            link.close()
        if self.controller is not None:
            self.controller.close()

    @property
    def brokers(self) -> range:
        return range(1, self.cfg.brokers + 1)

    # --- the one loop --------------------------------------------------------------------------

    def _pump(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Handle the inbox until `done()`; ClusterError naming `what` after `timeout` seconds."""
        end = time.monotonic() + timeout
        while not done():
            left = end - time.monotonic()
            if left <= 0:
                raise ClusterError(f"{what}: no answer within {timeout:g} s")
            try:
                item = self.inbox.get(timeout=min(left, 0.05))
            except queue.Empty:
                continue
            self._handle(item)

    def _handle(self, item: Item) -> None:
        b, body = item.broker, item.body
        if item.kind == "reply":
            self.replies[(b, body["reply"])] = body
        elif item.kind == "rpc":
            self._rpc(b, body)
        elif item.kind == "event" and body.get("event") == "put":
            put = self.puts.pop((b, body["msg"]), None)
            if put is not None:
                self.on_event("put_done", {**body, "broker": b, "queue": put.queue})
        elif item.kind == "exit":
            self.exited.add(body["pid"])
            self.on_event("exit", {"broker": b, **body})
        elif item.kind == "garbage":
            raise ClusterError(f"broker {b} wrote what is not JSON: {body['garbage']!r}")

    def _rpc(self, b: int, body: dict[str, Any]) -> None:
        node = self.nodes[b]
        op, args = body["op"], body.get("args", {})
        if op == "name_server":  # registerBrokerAll: the master's HA address, through this link's proxy
            master = self.master()
            link = self.links.get((b, master)) if master is not None else None
            node.answer(body["rpc"], {"ha_address": f"127.0.0.1:{link.port}" if link else None})
            return
        if self.stepping and op == "alter_sss":  # released by the model's alter_sss step
            self.held_rpcs.append((b, body))
            self.on_event("rpc", {"broker": b, "op": op, "args": args, "held": True})
            return
        self._deliver(b, body, self.rpc_policy.get(b, DELIVER))

    def _deliver(self, b: int, body: dict[str, Any], policy: str) -> None:
        node, op, args = self.nodes[b], body["op"], body.get("args", {})
        if policy == DROP:
            node.answer(body["rpc"], None)
            self.on_event("rpc", {"broker": b, "op": op, "args": args, "delivered": False})
            return
        assert self.controller is not None
        answer = self.controller.rpc(op, args)
        self.on_event("rpc", {"broker": b, "op": op, "args": args, "code": answer.get("code"), "delivered": True,
                              "answer_lost": policy == LOSE_ANSWER})
        node.answer(body["rpc"], None if policy == LOSE_ANSWER else answer)

    def release_rpc(self, b: int, policy: str = DELIVER) -> dict[str, Any] | None:
        """Deliver (or drop, or lose the answer of) broker `b`'s oldest held RPC; the RPC, or None."""
        for i, (broker, body) in enumerate(self.held_rpcs):
            if broker == b:
                del self.held_rpcs[i]
                if self.nodes[b].alive:
                    self._deliver(b, body, policy)
                return body
        return None

    def call(self, b: int, op: str, timeout: float | None = None, **args: Any) -> dict[str, Any]:
        """A command to broker `b`, its reply (within `timeout`, else `command_timeout`, seconds);
        RPCs meanwhile are handled as the policy says."""
        timeout = timeout or self.command_timeout
        node = self.nodes[b]
        while self.stepping and op != "state" and self._held(b) and self._waits_in_rpc(b):  # a proposal the
            self.unreleased.append((b, self.release_rpc(b, DROP)))  # model never released fails: the next can run
        held = self._held(b)
        n = node.command(op, **args)
        # In a stepping cluster a command that sends an RPC the harness holds back (ReplicasManager's
        # check calls alterSyncStateSet on the command's thread) ends there: its reply comes later.
        blocked = lambda: self.stepping and self._held(b) > held  # noqa: E731
        try:
            self._pump(lambda: (b, n) in self.replies or self._ended(node) or blocked(), timeout, f"broker {b}: {op}")
        except ClusterError:
            node.dump_threads()
            raise ClusterError(f"broker {b}: {op}: no answer within {timeout:g} s (a thread dump is in {node.log})",
                               b) from None
        reply = self.replies.pop((b, n), None)
        if reply is None and blocked():
            return {"ok": True, "ran": 1, "held_rpc": True}
        if reply is None:
            raise ClusterError(f"broker {b} died during {op} ({node.log_tail()})", b)
        if not reply.get("ok"):
            raise ClusterError(f"broker {b}: {op}: {reply.get('exception') or reply.get('error')}", b)
        return reply

    def handle_waiting(self, wait: float = 0.0) -> None:
        """Handle every item the inbox holds (RPCs, put outcomes), waiting up to `wait` s for the first."""
        try:
            self._handle(self.inbox.get(timeout=wait) if wait > 0 else self.inbox.get_nowait())
            while True:
                self._handle(self.inbox.get_nowait())
        except queue.Empty:
            pass

    def _ended(self, node: BrokerNode) -> bool:
        """The JVM is gone and everything it wrote has been read (its exit is the reader's last item)."""
        return node.proc is not None and node.proc.pid in self.exited

    def _drain(self, node: BrokerNode) -> None:
        """Handle what a JVM that just died wrote before it died (a put's outcome, say)."""
        self._pump(lambda: self._ended(node), 30, f"broker {node.broker}: its last output")

    # --- observation ---------------------------------------------------------------------------

    def observe(self, b: int, messages: bool = False) -> dict[str, Any] | None:
        """Broker `b`'s state (RmqcheckBroker.state; with `messages`, every message its commit
        log holds), or None when its JVM is down."""
        if not self.nodes[b].alive:
            return None
        try:
            return self.call(b, "state", timeout=30, messages=messages)
        except (ClusterError, NodeError):
            if not self.nodes[b].alive:
                return None
            raise

    def master(self) -> int | None:
        """The broker the controller names master (by its address), if any."""
        assert self.controller is not None
        address = self.controller.last.get("master_address")
        if not address:
            return None
        return int(str(address).rsplit(":", 1)[1]) - 30000

    def settle(self, timeout: float = 8.0, stuck_after: float | None = None) -> dict[int, dict[str, Any] | None]:
        """The brokers' states once the cluster is quiet (`_settle`), the epoch files noted."""
        states = self._settle(timeout, stuck_after)
        self.note_epoch_files()
        return states

    def _settle(self, timeout: float, stuck_after: float | None) -> dict[int, dict[str, Any] | None]:
        """Run queued one-shots and wait until the cluster is quiet (module docstring) and every slave
        on an open link to the master holds what the master holds (`quiet.lagging`); the brokers' states.
        `self.settled` says whether that happened within `timeout` seconds (a slave that cannot catch
        up, a link held: the caller records the step as not settled). With `stuck_after`, it gives up
        sooner when nothing but a slave's lag keeps it busy and nothing has moved for that long, and
        stops waiting for a lagging slave whose max offset has not moved for that long (a slave whose
        handshake finds no consistent point never catches up): such a slave is not waited for again
        while it stays at that offset (`stranded`); every step leaving a slave behind is not settled."""
        end = time.monotonic() + timeout
        quiet_for = 2 * self.cfg.ha_heartbeat_ms / 1000  # a slave reports at least this often
        last: Any = None
        stable_since = moved_at = time.monotonic()
        progress: dict[int, tuple[int, float]] = {}  # lagging slave -> (its max offset, since when)
        while True:
            states = {b: self.observe(b) for b in self.brokers}
            if self.run_one_shots(states):
                last = None
            held = sum(link.bytes_held() for link in self.links.values() if link.mode == OPEN)
            working = {b: s and self._working(b, s) for b, s in states.items()}
            working_now = bool(held or (self.puts and not self.stepping) or any(working.values()))
            lagging = quiet.lagging(states, self.master(), self.links)
            # Every lagging slave's progress is noted each poll (a list, not any(): no short cut).
            waited = [self._waited_for(b, states[b]["max_offset"], progress, stuck_after) for b in lagging]
            busy = working_now or any(waited)
            shape = {b: quiet.shape(s) for b, s in states.items()}
            if shape != last:
                moved_at = time.monotonic()
            if busy or shape != last:
                last, stable_since = shape, time.monotonic()
            elif time.monotonic() - stable_since >= quiet_for:
                self.settled = not lagging
                return self._with_messages(states)
            stuck = stuck_after is not None and not working_now and time.monotonic() - moved_at >= stuck_after
            if time.monotonic() > end or stuck:
                if any(w and ("busy" in w or "rpcs_waiting" in w) for w in working.values()):
                    raise ClusterError(f"a broker is stuck in a command or an RPC: {working}")
                self.settled = False
                return self._with_messages(states)
            try:  # what came in meanwhile (RPCs, put outcomes)
                self._handle(self.inbox.get(timeout=0.03))
            except queue.Empty:
                pass

    def run_one_shots(self, states: dict[int, dict[str, Any] | None]) -> bool:
        """Run every broker's queued one-shot jobs; whether any ran. Only once ReplicasManager runs:
        before, the one is its start-retry loop (sleep 5 s, try again), run a try at a time (retry_start)."""
        due = [b for b, s in states.items() if s and s.get("one_shots_pending") and s.get("rm_state") == "RUNNING"
               and not self._waits_in_rpc(b, s)]
        for b in due:
            self.call(b, "task", name="one_shots")
        return bool(due)

    def _working(self, b: int, state: dict[str, Any]) -> dict[str, Any]:
        """What broker `b` is still doing (empty when idle). Not work: RPCs the harness holds back,
        the start-retry loop of a ReplicasManager whose start failed and, in a stepping cluster,
        puts that wait for acks the model has not released yet."""
        held = self._held(b)
        counts = {**state, "rpcs_waiting": max(0, state.get("rpcs_waiting", 0) - held),
                  "puts_pending": 0 if self.stepping else state.get("puts_pending")}
        if held and state.get("busy"):  # the command that sent it waits for it, and the one-shots behind it
            counts["busy"] = counts["one_shots_pending"] = 0
        if state.get("rm_state") != "RUNNING":  # its one one-shot is the start-retry loop, run by retry_start
            counts["one_shots_pending"] = 0
        return {k: v for k in ("busy", "rpcs_waiting", "puts_pending", "dispatch_behind", "one_shots_pending")
                if (v := counts.get(k))}

    def _waits_in_rpc(self, b: int, state: dict[str, Any] | None = None) -> bool:
        """Whether `b`'s command thread waits in an RPC held (one the HA threads send leaves it free)."""
        return bool(self._held(b) and (state or self.observe(b) or {}).get("busy"))

    def _held(self, b: int) -> int:
        return sum(1 for broker, _ in self.held_rpcs if broker == b)

    def _with_messages(self, states: dict[int, dict[str, Any] | None]) -> dict[int, dict[str, Any] | None]:
        return {b: self.observe(b, messages=True) if s else None for b, s in states.items()}

    def _waited_for(self, b: int, offset: int, progress: dict[int, tuple[int, float]],
                    stuck_after: float | None) -> bool:
        """Whether settle still waits for lagging slave `b` at `offset` (settle's docstring)."""
        now = time.monotonic()
        if progress.get(b, (None, now))[0] != offset:
            progress[b] = (offset, now)
        if stuck_after is not None and now - progress[b][1] >= stuck_after:
            self.stranded[b] = offset
        return self.stranded.get(b) != offset

    # --- steps: the client's, the nemesis's, the controller's -------------------------------------

    def restart(self, b: int) -> None:
        """Start broker `b`'s JVM on its store (RocketMQ's recovery runs), then its ReplicasManager."""
        node = self.nodes[b]
        self.stranded.clear()  # its slaves, or it as a slave, may catch up now
        if node.proc is not None:
            node.kill()
            self._drain(node)
            self._forget(b)
        self.ha_ports[b] = None
        node.spawn()
        cfg = self.cfg
        reply = self.call(b, "start", timeout=120, dir=str(node.store), broker=b, priority=_at(cfg.priorities, b, 0),
                          file_size=cfg.file_size, cq_file_entries=cfg.cq_file_entries, flush=cfg.flush,
                          all_ack=cfg.all_ack, in_sync_replicas=cfg.in_sync_replicas,
                          min_in_sync_replicas=cfg.min_in_sync_replicas, async_learner=b in cfg.async_learners,
                          brokers=cfg.brokers, ha_port=0,
                          ha_heartbeat_ms=cfg.ha_heartbeat_ms, ha_housekeeping_ms=cfg.ha_housekeeping_ms,
                          ha_batch_bytes=cfg.ha_batch_bytes, not_catchup_ms=cfg.not_catchup_ms,
                          slave_timeout_ms=cfg.slave_timeout_ms)
        self.ha_ports[b] = reply["ha_port"]

    def crash(self, b: int) -> None:
        """kill -9: what the JVM wrote stays in the page cache."""
        self.nodes[b].kill()
        self._drain(self.nodes[b])
        self.ha_ports[b] = None
        self._forget(b)

    def power_loss(self, b: int, commit_log_kept_to: int = 0) -> str:
        """The JVM halts and every byte not flushed is lost: the commit log and consume queue files
        keep only their flushed prefix (the rest zeroed, as a file system that lost it reads; the
        positions are the store's own, reported just before the halt; the commit log also keeps
        what lies before `commit_log_kept_to`: pages the OS wrote back), the epoch files their last
        version the file system had written back (epochfiles.py; this answers "kept", "reverted" or
        "lost"). The checkpoint file loses nothing more: StoreCheckpoint forces its page in flush(),
        though the confirmOffset moves since its last flush (once a second) are lost as at a kill -9."""
        node = self.nodes[b]
        n = node.command("halt", power_loss=True)
        self._pump(lambda: self._ended(node), 30, f"broker {b}: power loss")
        reply = self.replies.pop((b, n), {})
        node.kill()
        self.ha_ports[b] = None
        self._forget(b)
        if "flushed" not in reply:
            raise ClusterError(f"broker {b}: power loss: no flushed positions came before the halt "
                               f"({reply.get('exception') or node.log_tail()})")
        for name, position in reply["flushed"].items():
            path = Path(name)  # a commit-log file is named by its first offset
            kept = commit_log_kept_to - int(path.name) if path.parent.name == "commitlog" else 0
            epochfiles.drop_after(path, max(int(position), kept))
        return self.epoch_files[b].after_power_loss(self.controller.now, self.cfg.epoch_file_writeback)

    def note_epoch_files(self) -> None:
        for files in self.epoch_files.values():
            files.note(self.controller.now)

    def _forget(self, b: int) -> None:
        """Broker `b`'s JVM is gone: its waiting puts have no answer, its held RPCs no sender."""
        self.held_rpcs = [(broker, body) for broker, body in self.held_rpcs if broker != b]
        for key in [k for k in self.puts if k[0] == b]:
            put = self.puts.pop(key)
            self.on_event("put_done", {"broker": b, "msg": put.msg, "queue": put.queue, "status": "NO_RESPONSE"})

    def put(self, b: int, msg: str, queue_id: int, size: int = 0) -> None:
        """Send `msg` to broker `b` (in `size` bytes: body padded); its outcome comes later (put_done)."""
        self.puts[(b, msg)] = Put(b, msg, queue_id)  # before the call: the outcome may come before the reply
        self._sending(b, [msg], "put", msg=msg, queue=queue_id, size=size)

    def put_many(self, b: int, puts: list[tuple[str, int]]) -> None:
        """`put` of each (message, queue), in one command (a soak's burst)."""
        for msg, queue_id in puts:
            self.puts[(b, msg)] = Put(b, msg, queue_id)
        self._sending(b, [msg for msg, _ in puts], "puts", puts=[{"msg": m, "queue": q} for m, q in puts])

    def _sending(self, b: int, msgs: list[str], op: str, **args: Any) -> None:
        try:
            self.call(b, op, **args)
        except (ClusterError, NodeError):
            if any((b, msg) in self.puts for msg in msgs):
                self._forget(b)  # the puts still waiting have no answer
            raise

    def read(self, b: int, queue_id: int, offset: int, max_messages: int = 32) -> dict[str, Any]:
        return self.call(b, "read", queue=queue_id, offset=offset, max=max_messages)

    def task(self, b: int, name: str) -> int:
        """Run one of ReplicasManager's periodic tasks (RmqcheckBroker.TASKS) once on broker `b`."""
        return self.call(b, "task", name=name)["ran"]

    def heartbeat(self, b: int) -> None:
        self.call(b, "heartbeat")

    def link(self, slave: int, master: int, mode: str) -> None:
        self._set_modes([(slave, master)], mode)

    def links_of(self, b: int, mode: str) -> None:
        """Every HA link to and from broker `b` (a partition of its HA traffic)."""
        self._set_modes([k for k in self.links if b in k], mode)

    def partition(self, side: set[int], mode: str) -> None:
        """Cut `side` off from the controller (its RPCs are dropped) and from the other brokers
        (every HA link across): the brokers inside still reach each other."""
        self._set_modes([(s, m) for s, m in self.links if (s in side) != (m in side)], mode)
        self.rpc_policy.update(dict.fromkeys(side, DROP))
        self.cut_off |= side

    def heal(self) -> None:
        self._set_modes(list(self.links), self.link_mode)
        self.rpc_policy.clear()
        self.cut_off.clear()

    def _set_modes(self, links: list[tuple[int, int]], mode: str) -> None:
        for key in links:
            self.links[key].set_mode(mode)
        self.stranded.clear()  # a slave stuck behind may catch up now


def _at(values: tuple[int, ...], b: int, default: int) -> int:
    return values[b - 1] if len(values) >= b else default
