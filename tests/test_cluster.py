"""Real runs (issue 41, checkers/cluster/): the harness's parts alone (the link proxy, the
generator, the history it writes, power loss on a file), then RocketMQ's own broker-side code as a
cluster: a failover with the old master rejoining, the restart that moves an epoch's start, and
`rmqcheck cluster` from the command line. The cluster tests need a JDK and ../shared/rocketmq."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import needs_rocketmq
from rmqcheck.checkers.cluster import historical, run as cluster_run
from rmqcheck.checkers.cluster.epochfiles import drop_after
from rmqcheck.checkers.cluster.harness import Cluster, ClusterConfig
from rmqcheck.checkers.cluster.proxy import BLACKHOLE, CUT, OPEN, STEP, LinkProxy
from rmqcheck.checkers.cluster.quiet import lagging
from rmqcheck.checkers.java import build
from rmqcheck.cli import main
from rmqcheck.model.bugs import TOGGLES
from rmqcheck.traces import logs
from rmqcheck.traces.openchaos import read_history
from rmqcheck.traces.validate import discover, validate_local


# --- the parts -----------------------------------------------------------------------------------


def ack(offset: int) -> bytes:
    """A slave's ack frame: TRANSFER, the offset."""
    return (2).to_bytes(4, "big") + offset.to_bytes(8, "big")


def heartbeat(offset: int) -> bytes:
    """A master's transfer frame with no body: TRANSFER, size 0, offset, epoch, epoch start, confirm."""
    return (2).to_bytes(4, "big") + (0).to_bytes(4, "big") + offset.to_bytes(8, "big") + (1).to_bytes(4, "big") \
        + (0).to_bytes(8, "big") + offset.to_bytes(8, "big")


@pytest.fixture
def master_port():
    """A stand-in master: each ack is answered with a heartbeat at that offset, written in two
    pieces (header, then the rest) as AutoSwitchHAConnection writes a frame's parts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def answer(conn):
        with conn:
            while len(data := conn.recv(12)) == 12:
                frame = heartbeat(int.from_bytes(data[4:], "big"))
                conn.sendall(frame[:20])
                time.sleep(0.05)
                conn.sendall(frame[20:])

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _recv_frame(s: socket.socket) -> bytes:
    return s.recv(4096)


def test_a_link_forwards_whole_frames_holds_releases_and_cuts(master_port):
    link = LinkProxy("t", lambda: master_port)
    try:
        s = socket.create_connection(("127.0.0.1", link.port), timeout=2)
        s.sendall(ack(7))
        assert _recv_frame(s) == heartbeat(7)  # one read: the two pieces came as one frame
        link.set_mode(BLACKHOLE)  # the connection stays up, nothing gets through
        s.sendall(ack(9))
        with pytest.raises(socket.timeout):
            s.settimeout(0.3)
            s.recv(10)
        assert link.bytes_held() == 12
        link.set_mode(OPEN)  # delivered, in order
        s.settimeout(2)
        assert _recv_frame(s) == heartbeat(9) and link.bytes_held() == 0
        link.set_mode(CUT)
        assert s.recv(10) == b""  # closed
        s.close()
        with socket.create_connection(("127.0.0.1", link.port), timeout=2) as again:  # accepted, closed at once
            assert again.recv(10) == b""
        link.set_mode(OPEN)
        with socket.create_connection(("127.0.0.1", link.port), timeout=2) as back:
            back.sendall(ack(11))
            assert _recv_frame(back) == heartbeat(11)
    finally:
        link.close()
    with pytest.raises(ValueError, match="unknown link mode"):
        link.set_mode("sideways")


def _until(condition, seconds: float = 3.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "not within the time"
        time.sleep(0.01)


def test_a_stepping_link_releases_one_frame_at_a_time(master_port):
    """replay --cluster drives the HA steps by releasing held frames, one direction and one frame
    at a time."""
    link = LinkProxy("t", lambda: master_port)
    try:
        link.set_mode(STEP)
        s = socket.create_connection(("127.0.0.1", link.port), timeout=2)
        s.sendall(ack(1) + ack(2))
        _until(lambda: len(link.held(to_master=True)) == 2)
        assert link.release(True, 1) == 1  # the master reads ack 1 and answers; its answer is held
        _until(lambda: len(link.held(to_master=False)) == 1)
        assert link.held(to_master=True) == [ack(2)] and link.held(to_master=False) == [heartbeat(1)]
        assert link.release(False, 5) == 1 and _recv_frame(s) == heartbeat(1)
        s.close()
    finally:
        link.close()


def test_a_lingering_connection_keeps_the_master_s_end_open_until_it_is_closed():
    """ha_linger on the code: the slave's end closes and it connects again, while the master's
    end of the old connection stays open, silent, until ha_close_lingering closes it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    ended: list[int] = []  # the master's connections that saw the end of the stream, by number

    def answer(conn, n):
        with conn:
            while len(data := conn.recv(12)) == 12:
                conn.sendall(heartbeat(int.from_bytes(data[4:], "big")))
            ended.append(n)

    def serve():
        n = 0
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            n += 1
            threading.Thread(target=answer, args=(conn, n), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    link = LinkProxy("t", lambda: server.getsockname()[1])
    try:
        first = socket.create_connection(("127.0.0.1", link.port), timeout=2)
        first.sendall(ack(1))
        assert _recv_frame(first) == heartbeat(1)
        assert link.linger()
        assert first.recv(10) == b""  # the slave's end is closed
        with socket.create_connection(("127.0.0.1", link.port), timeout=2) as second:  # it connects again
            second.sendall(ack(2))
            assert _recv_frame(second) == heartbeat(2)
            time.sleep(0.2)
            assert ended == [] and link.live_connections() == 1  # the master still holds connection 1
            assert link.close_lingering() == 1
            _until(lambda: ended == [1])  # the master reads the end of connection 1 only
            second.sendall(ack(3))
            assert _recv_frame(second) == heartbeat(3)
        first.close()
    finally:
        link.close()
        server.close()
    assert not link.linger()  # no connection left to linger


def test_every_model_action_has_a_way_onto_the_cluster():
    """A new action in the model must say how replay --cluster drives it (or why it cannot)."""
    from rmqcheck.checkers.cluster.replay import STEPS
    from rmqcheck.model.step import ACTIONS

    assert set(STEPS) == set(ACTIONS)


def test_keep_is_refused_without_cluster(capsys):
    assert main(["replay", "scenarios/coverage/failover-with-truncation.scn", "--keep", "x"]) == 2
    assert "--keep: only with --cluster" in capsys.readouterr().err


def test_frames_are_cut_where_the_ha_protocol_says():
    from rmqcheck.checkers.cluster.proxy import frame_end

    assert frame_end(ack(5), to_master=True) == 12 and frame_end(ack(5)[:7], to_master=True) == 0
    handshake = (1).to_bytes(4, "big") + (24).to_bytes(4, "big") + bytes(12) + bytes(24)  # two epoch entries
    assert frame_end(handshake, to_master=False) == 44 and frame_end(handshake[:43], to_master=False) == 0
    assert frame_end(heartbeat(3) + ack(1), to_master=False) == 36
    assert frame_end(b"\0\0\0\x09" + bytes(8), to_master=False) == -1  # not a frame: passed on as it comes


def test_a_released_transfer_is_waited_for_until_the_slave_has_applied_it(monkeypatch):
    """The step's state is read only once the slave's log reaches the data released and its
    confirmOffset is the last frame's, clamped to its log (a slave's first append can outlast
    the settle's quiet window); a slave that left TRANSFER is not waited for."""
    from types import SimpleNamespace

    from rmqcheck.checkers.cluster import stepping
    from rmqcheck.checkers.cluster.proxy import header_confirm

    assert header_confirm(heartbeat(7)) == 7 and header_confirm(ack(7)) is None
    # A clock of the test's own: each look's sleep moves it, so the wait ends after the same
    # number of looks on any machine (with real time, a fast one looked 100,000 times in 50 ms).
    clock = [0.0]
    monkeypatch.setattr(stepping, "time", SimpleNamespace(monotonic=lambda: clock[0],
                                                          sleep=lambda s: clock.__setitem__(0, clock[0] + s)))

    def slave(*states):
        seen = iter(states)
        return SimpleNamespace(c=SimpleNamespace(observe=lambda b: next(seen)))

    on = lambda top, confirm: {"client": "TRANSFER", "max_offset": top, "confirm_offset": confirm}  # noqa: E731
    x = slave(on(0, 0), on(128, 0), on(128, 128), on(0, 0))
    assert stepping._applied(x, 2, 128, 256)  # applied at the third look: confirm min(256, 128)
    assert x.c.observe(2) == on(0, 0)  # and looked no further
    assert stepping._applied(slave({"client": "READY"}), 2, 128, 256)
    x = slave(*[on(128, 0)] * (int(stepping.APPLY_WAIT / 0.02) + 2))
    assert not stepping._applied(x, 2, 128, 256)  # APPLY_WAIT's looks, 20 ms apart, then given up
    assert x.c.observe(2) == on(128, 0)  # looked no more than that


def test_a_slave_amid_a_handshake_is_waited_for_whatever_its_master_s_role():
    """durable3 seed 500, step 77: a restarted slave's handshake with a fenced broker (no role,
    so not a SYNC_MASTER whose slaves settle waits for) was in flight when the step's view was
    read, and the model, which runs the handshake to its end, parted from it. A connection in
    HANDSHAKE on an open link keeps the cluster busy; on a cut or blackholed link it does not."""
    links = {(s, m): SimpleNamespace(mode=OPEN) for s in (1, 2, 3) for m in (1, 2, 3) if s != m}
    broker = lambda i, conns=(), role="SLAVE": {  # noqa: E731
        "started": True, "broker_id": i, "role": role, "master_epoch": 2, "max_offset": 2204,
        "epochs": [[1, 0, 872]], "connections": [list(x) for x in conns]}
    fenced = broker(2, [("1", 2204, "HANDSHAKE"), ("3", 2204, "TRANSFER")])
    states = {1: broker(1), 2: fenced, 3: broker(3), 4: None}
    assert lagging(states, 2, links) == {1}
    links[(1, 2)].mode = BLACKHOLE
    assert lagging(states, 2, links) == set()
    links[(1, 2)].mode = OPEN
    states[2] = broker(2, [("1", 2204, "TRANSFER"), ("3", 2204, "TRANSFER")])
    assert lagging(states, 2, links) == set()
    master = broker(2, [("1", 2204, "TRANSFER"), ("3", 2204, "HANDSHAKE")], role="SYNC_MASTER")
    assert lagging({1: broker(1), 2: master, 3: broker(3)}, 2, links) == {3}  # a SYNC_MASTER's too


def test_the_schedule_is_the_seed_s_and_bounds_the_faults():
    a, b = cluster_run.schedule(7, 3, 200, 3), cluster_run.schedule(7, 3, 200, 3)
    assert a == b and a != cluster_run.schedule(8, 3, 200, 3)
    assert sum(op.f in cluster_run.FAULTS for op in a) <= 3
    assert {op.f for op in a} >= {"put", "read", "round"}


def test_a_soak_s_faults_are_the_seed_s_and_each_is_healed_its_way():
    from itertools import islice

    from rmqcheck.checkers.cluster.soak import fault_plan

    a, b = list(islice(fault_plan(5, 3), 200)), list(islice(fault_plan(5, 3), 200))
    assert a == b and a != list(islice(fault_plan(6, 3), 200))
    assert {f.op.f for f in a} == set(cluster_run.FAULTS)
    for f in a:  # a crash or power loss by its broker's restart (MASTER: the one it hit), the rest by healing
        assert f.healing == (cluster_run.Op("restart", f.op.arg) if f.op.f in ("crash", "power_loss")
                             else cluster_run.Op("heal"))
        assert f.gap > 0 and f.hold > 0


def test_a_soak_restarts_a_broker_whose_reput_service_stays_stopping_before_its_truncation_goes_on(monkeypatch):
    """apache/rocketmq#9811: a truncation joins a spinning ReputMessageService for 90 s, then goes on
    beside it and the consume queue loses entries. The soak restarts such a broker after
    REPUT_STUCK seconds; a reput seen stopping for less, or stopped again in between, is left."""
    from rmqcheck.checkers.cluster.soak import REPUT_STUCK, ReputWatch

    watch, stopping, idle = ReputWatch(), {"reput_stopping": True}, {"reput_stopping": False}
    assert watch.stuck({1: idle, 2: stopping, 3: None}, 100.0) is None
    assert watch.stuck({1: stopping, 2: stopping, 3: None}, 100.0 + REPUT_STUCK - 1) is None
    assert watch.stuck({1: stopping, 2: idle, 3: None}, 100.0 + REPUT_STUCK) is None  # 2 stopped in between
    assert watch.stuck({1: stopping, 2: stopping, 3: None}, 99.0 + 2 * REPUT_STUCK) == 1
    assert watch.stuck({1: stopping, 2: stopping, 3: None}, 99.0 + 2 * REPUT_STUCK) is None  # 1 is watched afresh

    # The soak's load asks each broker's state and names the broker to restart as one in trouble.
    from rmqcheck.checkers.cluster import soak as soak_module

    load = soak_module._Load.__new__(soak_module._Load)
    load.reput_watch = ReputWatch()
    load.cluster = SimpleNamespace(brokers=[1, 2], observe=lambda b: stopping if b == 2 else idle)
    clock = iter([0.0, REPUT_STUCK])
    monkeypatch.setattr(soak_module.time, "monotonic", lambda: next(clock))
    assert load.stuck_reput() is None
    trouble = load.stuck_reput()
    assert trouble.broker == 2 and "#9811" in str(trouble)


def test_a_soak_s_history_rotates_and_reads_back_as_the_one_run_it_is(tmp_path):
    """What RotatingHistory writes in parts is what History writes whole, record for record."""
    from rmqcheck.checkers.cluster.soak import RotatingHistory

    whole, parts = cluster_run.History(tmp_path / "whole" / "soak-1-history"), \
        RotatingHistory(tmp_path / "soak-1-history", part_lines=4)
    (tmp_path / "whole").mkdir()
    for h in (whole, parts):
        h.fault("crash", "start")
        for n in range(1, 6):
            h.request(n, f"m{n}", 0)
        for n in range(1, 6):
            h.response(n, f"m{n}", 0, "SUCCESS" if n != 3 else "FAILURE")
        h.read(0, "m1", 0)
        h.write()
    assert parts.records == 12 and parts.parts == 3 and sorted(p.name for p in tmp_path.glob("soak-1-history.*")) == \
        ["soak-1-history.00000", "soak-1-history.00001", "soak-1-history.00002"]
    mine, _ = read_history(str(tmp_path / "soak-1-history.00000"))
    theirs, _ = read_history(str(whole.path))
    assert mine == theirs and mine.num_rows == 6  # the same run name, and the lines' places in it
    assert [v.subject for v in validate_local(discover([str(tmp_path / "soak-1-history.00000")])).violations] == \
        [f"message m{n}" for n in (2, 4, 5)]  # acked, never read


def test_the_consumer_takes_the_next_offset_the_store_gives_as_a_rocketmq_consumer_does(tmp_path):
    """A master's store corrects an offset beyond its queue to the queue's end (a new master whose
    queue is shorter than what the consumer read on the old one): the consumer goes on from there
    and reads what the new master appends, instead of waiting beyond it for ever."""
    answers = [{"status": "OFFSET_OVERFLOW_BADLY", "next": 3, "messages": []},
               {"status": "FOUND", "next": 5, "messages": [{"msg": "m7", "queue_offset": 3, "offset": 0},
                                                         {"msg": None, "queue_offset": 4, "offset": None}]}]
    asked, rm_state = [], ["STARTING"]

    class Store:
        nodes = {1: SimpleNamespace(alive=True)}

        def master(self):
            return 1

        def observe(self, b):
            return {"rm_state": rm_state[0]}

        def read(self, b, queue, offset, max_messages=32):
            asked.append(offset)
            return answers.pop(0)

    client = cluster_run.Client(Store(), cluster_run.History(tmp_path / "history"), 1)
    client.offsets[0] = 9
    assert client.read(0) == 0 and asked == []  # no role yet: no pulls, as in the model (`_serves_pulls`)
    rm_state[0] = "RUNNING"
    assert client.read(0) == 0 and client.offsets[0] == 3
    assert client.read(0) == 2 and client.offsets[0] == 5 and asked == [9, 3]
    assert client.history.lines[-1].split("\t")[4] == "m7" and client.undecodable == [(1, 0, 4)]


def test_a_minority_partition_cuts_the_links_across_and_the_controller_only(monkeypatch):
    """The target and its peer keep their HA link and lose the controller and the others."""
    monkeypatch.setattr(LinkProxy, "set_mode", lambda self, mode: setattr(self, "mode", mode))
    c = Cluster(ClusterConfig(brokers=3), Path("/nonexistent"))
    c.links = {(s, m): LinkProxy.__new__(LinkProxy) for s in c.brokers for m in c.brokers if s != m}
    for link in c.links.values():
        link.mode = OPEN
    op = next(op for seed in range(200) for op in cluster_run.schedule(seed, 3, 60, 3) if op.f == "minority")
    assert op.peer in (1, 2)
    c.partition({1, 3}, CUT)
    assert {k for k, link in c.links.items() if link.mode == CUT} == {(1, 2), (2, 1), (3, 2), (2, 3)}
    assert c.rpc_policy == {1: "drop", 3: "drop"}
    # Losing a cut-off broker's answers would reopen its path alone, which the model cannot
    # follow (durable seed 2's step 20, re-recorded 2026-11-29): it does nothing until the heal.
    nemesis = cluster_run.Nemesis(c, SimpleNamespace(fault=lambda *a: None))
    assert nemesis.apply(cluster_run.Op("lose_answers", 3)) == "nothing to do" and c.rpc_policy[3] == "drop"
    # A second partition while one is in force: the model holds one at a time (a 300-step
    # durable3 run, seed 100, step 80): nothing either, until the heal.
    assert nemesis.apply(cluster_run.Op("minority", 2, 1)) == "nothing to do" and c.cut_off == {1, 3}
    c.heal()
    assert nemesis.apply(cluster_run.Op("lose_answers", 3)) == "broker 3" and c.rpc_policy[3] == "lose_answer"
    c.heal()
    assert nemesis.apply(cluster_run.Op("minority", 2, 1)) == "broker 2" and c.cut_off == {2, 3}


def test_the_endings_heal_heals_though_it_names_no_broker(monkeypatch, tmp_path):
    """The ending's heal (no broker) was taken for a fault at the master and, with no master, did
    nothing: every run ended with its partitions and dropped paths in force (durable seed 8 then
    ended with no master and reported its acked messages lost)."""
    monkeypatch.setattr(LinkProxy, "set_mode", lambda self, mode: setattr(self, "mode", mode))
    c = Cluster(ClusterConfig(brokers=3), Path("/nonexistent"))
    c.links = {(s, m): LinkProxy.__new__(LinkProxy) for s in c.brokers for m in c.brokers if s != m}
    for link in c.links.values():
        link.mode = OPEN
    monkeypatch.setattr(c, "master", lambda: None)
    c.partition({1, 3}, CUT)
    history = cluster_run.History(tmp_path / "history")
    heal, = (op for op in cluster_run._ending(SimpleNamespace(brokers=3)) if op.f == "heal")
    assert cluster_run.Nemesis(c, history).apply(heal) == "healed"
    assert {link.mode for link in c.links.values()} == {OPEN} and c.rpc_policy == {}
    assert history.lines[-1].startswith("fault\theal\tend\t")


def test_a_read_the_confirmed_master_no_longer_holds_is_i3_on_the_code(tmp_path):
    """views.code_violations: a consumer that read m2 from a deposed master (a stale route), m2
    then cut by the new master's truncation: the running code broke I3."""
    from types import SimpleNamespace

    from rmqcheck.checkers.cluster.views import code_violations
    from rmqcheck.model import configs

    h = cluster_run.History(tmp_path / "history")
    for n in (1, 2):
        h.request(n, f"m{n}", 0)
    h.response(1, "m1", 0, "SUCCESS")
    h.read(0, "m1", 0)
    h.read(0, "m2", 0)
    controller = {"master": 3, "master_epoch": 2, "sss": [3]}
    x = SimpleNamespace(c=SimpleNamespace(controller=SimpleNamespace(last=controller), master=lambda: 3),
                        cfg=configs.load("durable3"), history=h, outcomes={1: "PUT_OK", 2: "FLUSH_SLAVE_TIMEOUT"})
    master = {"role": "SYNC_MASTER", "master_epoch": 2, "sss": [3], "connections": [], "epochs": [],
              "messages": [[0, 100, "m1"]]}
    found = code_violations(x, {1: None, 2: None, 3: master})
    assert found == [("I3", "m2, read by the consumer, is not in confirmed master broker 3's commit log")]
    assert code_violations(x, {1: None, 2: None, 3: {**master, "messages": [[0, 100, "m1"], [100, 100, "m2"]]}}) == []


def test_the_history_is_openchaos_and_a_lost_ack_is_found(tmp_path):
    h = cluster_run.History(tmp_path / "history")
    h.request(1, "m1", 0)
    h.response(1, "m1", 0, "SUCCESS")
    h.request(2, "m2", 0)
    h.response(2, "m2", 0, "SUCCESS")
    h.fault("crash", "start")
    h.read(0, "m2", 0)
    h.write()
    table, bad = read_history(str(tmp_path / "history"))
    assert not bad and table.num_rows == 3
    lost = [v for v in validate_local(discover([str(tmp_path)])).violations if v.check == "lost_ack"]
    assert [v.subject for v in lost] == ["message m1"]  # the checker can fail


def test_power_loss_zeroes_what_was_not_flushed(tmp_path):
    f = tmp_path / "00000000000000000000"
    f.write_bytes(b"x" * 100)
    drop_after(f, 60)
    assert f.read_bytes() == b"x" * 60 + b"\0" * 40
    drop_after(f, 200)  # beyond the end: nothing
    drop_after(tmp_path / "missing", 0)
    assert f.stat().st_size == 100


# --- RocketMQ's code as a cluster --------------------------------------------------------------------


def _show(states, *keys):
    return {b: s and {k: s[k] for k in keys} for b, s in states.items()}


def _own_jvms(cluster: Cluster) -> list[int]:
    return [n.proc.pid for n in cluster.nodes.values() if n.proc is not None]


@needs_rocketmq
@pytest.mark.heavy
def test_a_failover_elects_a_slave_and_the_old_master_rejoins_holding_every_acked_message(tmp_path):
    """failover-with-truncation's shape on the running code: broker 3's link is blackholed, so
    m2 reaches broker 2 only and times out (present but not acked); the master dies; the controller
    elects broker 2 (epoch 2 from offset 218); broker 1 restarts as its slave and catches up, though
    another process took its old HA port."""
    outcomes = {}
    with Cluster(ClusterConfig(brokers=3), tmp_path,
                 on_event=lambda kind, body: outcomes.update({body["msg"]: body["status"]})
                 if kind == "put_done" else None) as c:
        c.settle()
        assert c.master() == 1 and c.settled
        c.put(1, "m1", 0)
        c.settle()
        c.link(3, 1, BLACKHOLE)
        c.put(1, "m2", 0)
        c.settle()
        assert outcomes == {"m1": "PUT_OK", "m2": "FLUSH_SLAVE_TIMEOUT"}
        jvms = _own_jvms(c)
        old_port = c.ha_ports[1]
        c.crash(1)
        # A port in use: the harness never asks for a fixed one, so broker 1's old HA port taken by
        # someone else changes nothing (its restart listens on another; the proxies look it up).
        taken = socket.socket()
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", old_port))
        taken.listen()
        for _ in range(4):  # heartbeats stop from broker 1; after the timeout the controller elects
            for b in (2, 3):
                c.heartbeat(b)
            c.controller.tick()
            if c.controller.needs_election():
                c.controller.elect()
        assert c.master() == 2 and c.controller.last["master_epoch"] == 2
        for b in (2, 3):
            c.task(b, "sync_replica_info")
        c.link(3, 1, OPEN)
        c.restart(1)
        c.task(1, "sync_replica_info")
        states = c.settle(timeout=20)  # an HA client whose first connection fails waits 5 s to retry
        assert c.settled, _show(states, "role", "epochs", "max_offset", "client")
        assert [s["role"] for s in states.values()] == ["SLAVE", "SYNC_MASTER", "SLAVE"]
        for s in states.values():  # every replica holds both messages and the same epochs
            assert [m[2] for m in s["messages"]] == ["m1", "m2"]
            assert s["epochs"][:1] == [[1, 0, 218]] or s["epochs"] == [[1, 0, 9223372036854775807]]
        assert states[2]["epochs"] == [[1, 0, 218], [2, 218, 9223372036854775807]]
        assert c.read(2, 0, 0)["messages"][0]["msg"] == "m1"
        assert c.ha_ports[1] != old_port
        taken.close()
        jvms += [*_own_jvms(c), c.controller.driver.proc.pid]
    for pid in set(jvms):  # every JVM the cluster started has ended
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@needs_rocketmq
@pytest.mark.heavy
def test_a_master_restarted_before_the_controller_notices_moves_its_epoch_and_strands_its_slaves(tmp_path):
    """epoch_reapply_moves_start (docs/findings.md) on the running code: after kill -9 and a
    restart, ReplicasManager's in-memory masterEpoch is 0, the controller still names the broker
    master of epoch 1, and changeToMaster(1) re-appends epoch 1 at the max offset. The slaves hold
    (1, 0): their handshakes find no consistent point, and they retry for ever."""
    with Cluster(ClusterConfig(brokers=3), tmp_path) as c:
        c.settle()
        for i in range(3):
            c.put(1, f"m{i + 1}", 0)
        c.settle()
        end = c.observe(1)["max_offset"]
        c.crash(1)
        c.restart(1)
        c.task(1, "sync_replica_info")
        states = c.settle(timeout=4)
        assert not c.settled  # the slaves never catch up
        assert states[1]["epochs"] == [[1, end, 9223372036854775807]]
        assert states[2]["epochs"] == states[3]["epochs"] == [[1, 0, 9223372036854775807]]
        assert {s["client"] for b, s in states.items() if b != 1} <= {"READY", "HANDSHAKE"}  # never TRANSFER
    found = [v for v in validate_local(discover([str(tmp_path)])).violations]
    assert {v.check for v in found} >= {"epoch_agreement", "consistent_point"}
    # The finding's signature in RocketMQ's own log lines (traces/logs.py): epoch 1 begun twice.
    (again,) = [v for v in found if v.check == "epoch_agreement_in_logs"]
    assert again.subject == "epoch 1" and f"starts at 2 offsets: 0 at broker-1/store.log:" in again.detail
    assert f"; {end} at broker-1/store.log:" in again.detail


@needs_rocketmq
@pytest.mark.heavy
def test_the_cluster_command_records_and_checks_a_run(tmp_path, capsys):
    out = tmp_path / "runs"
    code = main(["cluster", "--config", "durable3", "--runs", "1", "--steps", "6", "--faults", "1", "--seed", "3",
                 "--out", str(out), "--summary-json", str(tmp_path / "s.json")])
    text = capsys.readouterr().out
    assert code == 0, text
    assert (out / "run-3" / "run-3-history").exists() and (out / "run-3" / "steps.jsonl").exists()
    steps = [json.loads(line) for line in (out / "run-3" / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["op"] == "round" and steps[-1]["op"] == "final_read"
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["command"] == "cluster" and summary["exit_status"] == 0
    assert main(["cluster", "--runs", "1", "--out", str(out)]) == 2  # an earlier output: --force replaces it
    assert main(["cluster", "--config", "default", "--runs", "1", "--steps", "2", "--out", str(tmp_path / "x"),
                 "--rocketmq-src", str(tmp_path)]) == 2
    assert "not a RocketMQ source tree" in capsys.readouterr().err


@needs_rocketmq
@pytest.mark.heavy
def test_replay_on_the_cluster_cuts_message_2_from_the_old_master_and_loses_nothing(tmp_path, capsys):
    """scenarios/coverage/failover-with-truncation.scn step by step on RocketMQ's running code:
    message 1 reaches broker 2 and message 2 does not (frames released one at a time), broker 2 is
    elected, and the old master's handshake really cuts message 2 from its commit log."""
    keep = tmp_path / "kept"
    scenario = str(Path(__file__).resolve().parents[1] / "scenarios" / "coverage" / "failover-with-truncation.scn")
    code = main(["replay", scenario, "--cluster", "--keep", str(keep), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0 and "held on RocketMQ's code" in text, text
    rows = [json.loads(line) for line in (keep / "steps.jsonl").read_text().splitlines()]
    assert len(rows) == 24 and rows[6]["code"]["brokers"]["2"]["messages"] == ["m1"]  # frames up to m1's end
    broker_1 = [row["code"]["brokers"]["1"] for row in rows]
    assert broker_1[21]["messages"] == ["m1", "m2"]  # restarted, recovered both
    assert broker_1[23]["messages"] == ["m1"] and broker_1[23]["role"] == "SLAVE"  # the handshake cut message 2
    # The model promotes in two steps (changeToMaster waits for dispatch), the code in one: the
    # step before is compared with the model's state after both as well.
    assert [row["index"] for row in rows if row["differences"]] == []
    assert "the code has also taken the model's next" in rows[18]["did"], rows[18]
    assert (keep / "replay-history").exists() and (keep / "stores" / "broker-1").is_dir()
    # RocketMQ's own log lines of the run (the logging stand-in) pass `validate --logs`.
    store_log = (keep / "logs" / "broker-2" / "store.log").read_text()
    assert "Change ha to master success, newMasterEpoch:2, startOffset:" in store_log
    assert "master epoch entries is [EpochEntry{epoch=1, startOffset=0" in (keep / "logs" / "broker-1" / "store.log").read_text()
    assert main(["validate", "--logs", str(keep / "logs"), "--violations", str(tmp_path / "v.ndjson")]) == 0


def test_a_crash_keeping_part_of_the_tail_keeps_the_same_messages_and_share_of_the_torn_one():
    """`crash keep=3` of 4 unflushed model bytes (m2 whole, half of m3): the commit log is kept to
    m2's end plus half of m3's bytes, wherever the cluster stored them; a message the broker does
    not hold cannot be kept."""
    from rmqcheck.checkers.cluster.replay import _commit_log_kept_to
    from rmqcheck.checkers.counterexamples.files import read
    from rmqcheck.model.step import initial_state, step

    cx = read(Path(__file__).resolve().parents[1] / "scenarios" / "coverage" / "crash-keeps-a-torn-tail.scn")
    s = initial_state(cx.config)
    for a in cx.actions[:4]:  # up to the crash
        s = step(s, a, cx.config)
    held = [[0, 256, "m1"], [256, 256, "m2"], [512, 256, "m3"]]
    x = SimpleNamespace(c=SimpleNamespace(observe=lambda b, messages: {"messages": held}))
    assert _commit_log_kept_to(x, s, 1, 3) == (512 + 128, "")
    assert _commit_log_kept_to(x, s, 1, 2) == (512, "")  # m2 whole, nothing of m3
    held.pop()
    assert _commit_log_kept_to(x, s, 1, 3) == (0, "broker 1 does not hold m3")


@needs_rocketmq
@pytest.mark.slow
def test_a_crash_keeping_part_of_the_unflushed_tail_tears_the_same_message_on_the_cluster(tmp_path, capsys):
    """scenarios/coverage/crash-keeps-a-torn-tail.scn: `crash keep=3` of 4 unflushed bytes is a
    power loss whose commit log keeps m2 whole and part of m3; RocketMQ's recovery cuts m3, as
    the model's does."""
    keep = tmp_path / "kept"
    scenario = str(Path(__file__).resolve().parents[1] / "scenarios" / "coverage" / "crash-keeps-a-torn-tail.scn")
    assert main(["replay", scenario, "--cluster", "--keep", str(keep), "--quiet"]) == 0
    rows = [json.loads(line) for line in (keep / "steps.jsonl").read_text().splitlines()]
    crash = rows[5]
    assert crash["kind"] == "driven" and "commit log kept to offset" in crash["did"], crash
    assert rows[6]["code"]["brokers"]["1"]["messages"] == ["m1", "m2"]  # recovered: the torn m3 cut
    assert [row["index"] for row in rows if row["differences"]] == []


@needs_rocketmq
@pytest.mark.heavy
def test_replay_on_the_cluster_reproduces_epoch_reapply_moves_start(capsys, tmp_path):
    """The finding (docs/findings.md), step by step on RocketMQ's running code: the restarted master
    re-appends its epoch at its max offset, the slave's handshake keeps nothing past the moved
    start, and the controller's SyncStateSet then holds a broker that lacks an acknowledged
    message (I2). The slave's log then carries truncation_point_beyond_log_end's signature
    (traces/logs.py): its handshake's point is beyond its log's end."""
    scenario = str(Path(__file__).resolve().parents[1] / "scenarios" / "toggles" / "epoch_reapply_moves_start.scn")
    assert main(["replay", scenario, "--cluster", "--quiet", "--keep", str(tmp_path / "kept")]) == 1
    text = capsys.readouterr().out
    assert "reproduced on RocketMQ's code: I2 isr_safety: broker 2 is in the controller's SyncStateSet [1, 2] but " \
           "its commit log lacks acknowledged m3" in text.replace("\n", " "), text
    beyond = [v for v in logs.check_set(str(tmp_path / "kept" / "logs")) if v.check == "consistent_point_beyond_log_end"]
    assert [v.subject for v in beyond] == ["broker-2"] and "point 640 is beyond the slave's log end 0" in beyond[0].detail


@needs_rocketmq
@pytest.mark.heavy
def test_a_slave_that_lost_a_received_epoch_shows_it_at_its_next_handshake_on_the_cluster(capsys, tmp_path):
    """received_epoch_survives_truncation's scenario, then one more reset and handshake of slave 1:
    its store.log, as RocketMQ's own code writes it, shows the handshake that cut (2, 128), which
    it had received in that session, and the next one with its log at 256 and no entry of epoch 2
    (traces/logs.py)."""
    finding = Path(__file__).resolve().parents[1] / "scenarios" / "toggles" / "received_epoch_survives_truncation.scn"
    scenario = tmp_path / "again.scn"
    scenario.write_text(finding.read_text().replace("connection_resets=1", "connection_resets=2")
                        + "conn_reset slave=1\nha_connect slave=1\n")
    assert main(["replay", str(scenario), "--cluster", "--quiet", "--keep", str(tmp_path / "kept")]) == 1
    assert "reproduced on RocketMQ's code: I5 epoch_log_matching: slave 1 attributes m2 to epoch 1" in \
        capsys.readouterr().out.replace("\n", " ")
    [lost] = [v for v in logs.check_set(str(tmp_path / "kept" / "logs")) if v.check == "received_epoch_not_recorded"]
    assert lost.subject == "broker-1" and re.search(r"cut epoch 2's entry at 128, received in this slave session; at "
                                                    r"broker-1/store.log:\d+ the slave's log reaches 256", lost.detail)



@needs_rocketmq
@pytest.mark.heavy
def test_a_master_s_log_shows_its_applied_proposal_overwritten_on_the_cluster(capsys, tmp_path):
    """proposal_overwrites_pending_sss's scenario, then the rejected second proposal sent and the
    controller's set polled: broker 1's broker.log, as ReplicasManager writes it, shows {1, 3}
    with its answer lost, {1, 2} rejected at the same SyncStateSet epoch, and {1, 3} installed
    (traces/logs.py). With the finding's patch the same lines are logged (by hand: the check is
    reported only)."""
    finding = Path(__file__).resolve().parents[1] / "scenarios" / "toggles" / "proposal_overwrites_pending_sss.scn"
    scenario = tmp_path / "sent.scn"
    scenario.write_text(finding.read_text().replace("lost_responses=1", "lost_responses=2")
                        + "alter_sss broker=1 lost=0\nsync_replica_info broker=1 lost=0\n")
    assert main(["replay", str(scenario), "--cluster", "--quiet", "--keep", str(tmp_path / "kept")]) == 1
    assert "reproduced on RocketMQ's code: I2 isr_safety" in capsys.readouterr().out
    [v] = [v for v in logs.check_set(str(tmp_path / "kept" / "logs")) if v.check == "applied_proposal_overwritten"]
    assert v.subject == "broker-1" and re.search(r"proposed \[1, 3\] at syncStateSetEpoch 1, its answer lost, and the "
                                                 r"controller applied it; its next proposal \[1, 2\] \(broker-1/broker"
                                                 r"\.log:\d+\) replaced it", v.detail)

FINDINGS = [t.name for t in TOGGLES if t.in_snapshot]


@needs_rocketmq
@pytest.mark.slow
@pytest.mark.parametrize("name", FINDINGS)
def test_docs_findings_say_what_each_finding_does_on_the_running_code(name, capsys):
    """docs/findings.md: the column "on RocketMQ's running code" is what `replay --cluster` of the
    finding's scenario shows: reproduced (exit 1) and the invariant, or held (exit 0)."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "findings.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}` |"))
    said = row.split(" | ")[4]
    scenario = str(Path(__file__).resolve().parents[1] / "scenarios" / "toggles" / f"{name}.scn")
    code = main(["replay", scenario, "--cluster", "--quiet"])
    text = capsys.readouterr().out.replace("\n", " ")
    if said.startswith("reproduced"):
        invariant = said.split(":")[1].split(",")[0].split()[0]
        seen = f"reproduced on RocketMQ's code: {invariant} " in text or \
            (invariant == "I1" and "reproduced on RocketMQ's code: lost_ack" in text)  # seen in the history's reads
        assert code == 1 and seen, text[-600:]
    else:
        assert said.startswith("held") and code == 0, text[-600:]


EXPECTED = sorted((Path(__file__).resolve().parents[1] / "scenarios" / "expected").glob("*.scn"))


@needs_rocketmq
@pytest.mark.slow
@pytest.mark.parametrize("scenario", EXPECTED, ids=[p.stem for p in EXPECTED])
def test_each_expected_violation_is_reproduced_on_the_running_code_step_for_step(scenario, capsys):
    """scenarios/expected/: what the configuration does not promise happens on RocketMQ's code too,
    by the same path (every step the same on both sides; docs/cluster.md)."""
    assert main(["replay", str(scenario), "--cluster"]) == 1
    text = capsys.readouterr().out.replace("\n", " ")
    expected = next(line.split()[1] for line in scenario.read_text().splitlines() if line.startswith("expect "))
    assert f"reproduced on RocketMQ's code: {expected} " in text and " 0 different;" in text, text[-800:]


# docs/cluster.md, Historical bugs put back: what the schedules do not reach yet (strict: catching
# one fails the test, so docs/cluster.md is brought up to date).
NOT_CAUGHT_YET = {
    "sss_expand_answer_lost": "needs four faults in one order (docs/cluster.md): 8 runs of three faults (1,154-1,216 s) "
                              "and 21 of four (612 s) did not",
}


# Runs allowed beyond the eight: A12 was caught at its 13th run (seed 12, 538 s), the first seed
# at which bench/schedule_reach.py's model reaches it.
RUNS = {"cq_recover_only_to_confirm": 13}


@needs_rocketmq
@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=NOT_CAUGHT_YET[n], strict=True))
                                  if n in NOT_CAUGHT_YET else n for n in sorted(historical.BUGS)])
def test_a_historical_bug_put_back_is_caught_by_cluster_runs(name, tmp_path, capsys):
    """docs/cluster.md, Historical bugs put back: each historical bug put back into the tree
    (checkers/cluster/historical.py) makes `rmqcheck cluster` end with a violation that the unchanged
    tree, run with the same seed, does not show, within eight runs or those RUNS allows (a count,
    not the 600 s of docs/cluster.md, so that the verdict does not hang on the machine's load: A2
    was caught in its 6th run, A3 its 3rd, A12 its 13th, each under 600 s)."""
    bug = historical.BUGS[name]
    code = main(["cluster", "--config", bug.config, "--rocketmq-src", str(historical.tree(name)),
                 "--runs", str(RUNS.get(name, 8)),
                 "--baseline", str(build.locate(None)), "--stop-at-unexplained", "--out", str(tmp_path / "runs")])
    text = capsys.readouterr().out
    assert code == 1 and "the configuration does not explain" in text, text[-2000:]


def test_a_violation_a_rerun_shows_or_not_is_reclassed(tmp_path, monkeypatch):
    """cluster: a run with an unexplained violation is run again, same seed, on the same tree (what
    that does not show is "not repeated"), then with --baseline on the unchanged tree (what that
    shows too, the same check on the same subject, is "baseline")."""
    from argparse import Namespace

    from rmqcheck.commands import cluster as command

    ran = []
    monkeypatch.setattr(command, "record_run", lambda cfg, seed, folder, steps, faults, src: ran.append((seed, src)))
    monkeypatch.setattr(command, "check_run", lambda folder, cfg: [
        ("epoch_agreement", "unexplained", "replicas broker-1 broker-2", "epoch 1 starts at 0 and 109"),
        ("duplicate", "reported", "message m1", "read twice")])
    mine = [("epoch_agreement", "unexplained", "replicas broker-1 broker-2", "epoch 1 starts at 109 and 0"),
            ("lost_ack", "unexplained", "message m4", "acked, never read"),
            ("duplicate", "reported", "message m1", "read twice")]
    args = Namespace(steps=30, faults=3, keep_stores=True)
    got = command._reclassed(mine, None, 7, tmp_path, args, "CLEAN", seen_again=command.BASELINE, not_seen=None)
    assert ran == [(7, "CLEAN")]
    assert [kind for _, kind, _, _ in got] == ["baseline", "unexplained", "reported"]
    # The changed tree's own rerun first: what it does not show again was a race, not the change.
    got = command._reclassed(mine, None, 7, tmp_path, args, "CHANGED", seen_again=None, not_seen=command.NOT_REPEATED)
    assert [kind for _, kind, _, _ in got] == ["unexplained", "not repeated", "reported"]


@needs_rocketmq
@pytest.mark.heavy
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounts a small tmpfs (needs root)")
def test_a_full_disk_is_a_harness_failure_that_keeps_and_names_the_runs_files(tmp_path, capsys):
    import subprocess

    tiny = tmp_path / "tiny"
    tiny.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(tiny)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (tiny / "filler").write_bytes(bytes(2048 * 1024 - 40 * 1024))  # 40 KiB left
        code = main(["cluster", "--config", "durable", "--runs", "1", "--steps", "10", "--out", str(tiny / "runs")])
        err = capsys.readouterr().err
        assert code == 2 and "the harness failed" in err and "No space left on device" in err, err
        kept = err.rsplit("what was written is in ", 1)[1].strip()
        assert Path(kept).is_dir() and (Path(kept) / "run-0").is_dir()
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert str(tiny) not in ps  # every JVM of the run has ended
    finally:
        subprocess.run(["umount", "-l", str(tiny)], capture_output=True)


def test_what_the_running_code_broke_is_classed_by_what_the_configuration_promises(tmp_path, monkeypatch):
    """cluster: the invariants the code broke on the way (code-violations.jsonl) are violations
    like validate's: unexplained when the configuration promises the invariant, else expected."""
    from types import SimpleNamespace

    from rmqcheck.commands import cluster_runs as command
    from rmqcheck.model import configs

    monkeypatch.setattr(command, "validate_local", lambda inputs: SimpleNamespace(violations=[]))
    monkeypatch.setattr(command, "discover", lambda paths: None)
    (tmp_path / "steps.jsonl").write_text("")  # no operation: the model only settles (6 steps)
    (tmp_path / cluster_run.CODE_VIOLATIONS).write_text(
        json.dumps({"step": 9, "invariant": "I2", "what": "broker 2 is in the controller's SyncStateSet [1, 2] but "
                                                          "its commit log lacks acknowledged m3"}) + "\n")
    durable, default = configs.load("durable"), configs.load("default")
    assert command.check_run(tmp_path, durable) == [
        ("I2", "unexplained", "broker 2 is in the controller's SyncStateSet [1, 2] but its commit log lacks "
                              "acknowledged m3", "on the running code, step 9; model: the model's path of the same "
                                                 "schedule (6 steps) keeps I2")]
    assert [kind for _, kind, _, _ in command.check_run(tmp_path, default)] == ["expected"]


def test_a_soak_s_violations_in_a_finding_s_shape_are_that_snapshot_defect_and_no_other_shape_is(tmp_path):
    """A soak records no steps for the model to follow, so an epoch_agreement of its stores is
    matched against boundary_batch_labelled_next_epoch's shape: the 10-minute soak's two
    (2026-11-29: epoch 16 held 3,213 bytes, and brokers 1 and 2 never recorded it); and a
    check that says a finding's shape itself classes the violation so."""
    from rmqcheck.commands.cluster_runs import check_run
    from rmqcheck.model import configs
    from rmqcheck.traces.stores import FILE, format_epoch_file

    master = [(1, 0), (15, 34216072), (16, 42462118), (20, 42465331), (53, 175126107)]

    def judged(entries: dict[str, list[tuple[int, int]]]) -> list[tuple[str, str]]:
        for name, e in entries.items():
            (tmp_path / "stores" / name).mkdir(parents=True, exist_ok=True)
            (tmp_path / "stores" / name / FILE).write_text(format_epoch_file(e))
        return [(kind, detail) for _, kind, _, detail in check_run(tmp_path, configs.load("durable3"), by_model=False,
                                                                          shapes=True)]

    [(kind, detail)] = judged({"broker-1": [e for e in master if e[0] != 16], "broker-3": master})
    assert kind == "snapshot defect" and "boundary_batch_labelled_next_epoch" in detail and "lacks epoch 16 (3213 " \
        "bytes from 42462118" in detail and "to epoch 15" in detail
    longer = [(e, s + 40_000 * (e >= 20)) for e, s in master]  # epoch 16 longer than a 32 KiB batch
    assert judged({"broker-1": [e for e in longer if e[0] != 16], "broker-3": longer})[0][0] == "unexplained"
    ahead = [e for e in master if e[0] != 16] + [(60, 200_000_000)]  # the replica lacking 16 has a later epoch too
    assert judged({"broker-1": ahead, "broker-3": master})[0][0] == "snapshot defect"
    moved = [(e, s + (e == 16)) for e, s in master]  # epoch 16 begun at two offsets: another shape
    assert judged({"broker-1": moved, "broker-3": master})[0][0] == "unexplained"
    # A check that says the shape itself (the 30-minute soak's epoch_reapply_moves_start, logs.py)
    shutil.rmtree(tmp_path / "stores")
    (tmp_path / "logs" / "broker-1").mkdir(parents=True)
    (tmp_path / "logs" / "broker-1" / "store.log").write_text("".join(
        f"2026-11-29 16:17:{t} INFO rmqcheck-command - Change ha to master success, newMasterEpoch:74, startOffset:{o}\n"
        for t, o in ((44, 265394393), (53, 265518297))))
    [(kind, detail)] = judged({})
    assert kind == "snapshot defect" and "the shape epoch_reapply_moves_start leaves: broker-1" in detail


def test_a_baseline_that_is_not_a_tree_is_refused_before_any_run(tmp_path, capsys):
    """--baseline is used only when a run has a violation: a wrong one must not wait for that."""
    code = main(["cluster", "--config", "durable", "--runs", "1", "--baseline", str(tmp_path / "nosuch"),
                 "--out", str(tmp_path / "runs")])
    assert code == 2 and "--baseline" in capsys.readouterr().err and not (tmp_path / "runs").exists()


def test_a_power_loss_keeps_the_epoch_files_the_file_system_had_written_back(tmp_path):
    """RocketMQ rewrites its epoch files with no fsync: a power loss keeps the last version at
    least `writeback` controller ticks old, or none (epochfiles.py)."""
    from rmqcheck.checkers.cluster import epochfiles

    store = tmp_path / "broker-1"
    store.mkdir()
    files = epochfiles.PageCache(store)

    def write(main: bytes, bak: bytes | None, tick: int) -> None:
        (store / "epochFileCheckpoint").write_bytes(main)
        if bak is not None:
            (store / "epochFileCheckpoint.bak").write_bytes(bak)
        files.note(tick)

    write(b"1\n0\n1-0\n", None, 0)
    write(b"2\n0\n1-0\n2-218\n", b"1\n0\n1-0\n", 3)
    assert files.after_power_loss(3, writeback=1) == "reverted"  # the tick-3 version is younger than a tick
    assert (store / "epochFileCheckpoint").read_bytes() == b"1\n0\n1-0\n"
    assert not (store / "epochFileCheckpoint.bak").exists()
    assert files.after_power_loss(4, writeback=1) == "kept"  # nothing written since: the same version
    write(b"2\n0\n1-0\n2-218\n", b"1\n0\n1-0\n", 4)
    assert files.after_power_loss(4, writeback=None) == "kept"  # replay --cluster: the model's assumption
    assert (store / "epochFileCheckpoint").read_bytes() == b"2\n0\n1-0\n2-218\n"
    write(b"2\n0\n1-0\n2-218\n", b"2\n0\n1-0\n2-218\n", 5)  # the same list written again: a new .bak
    assert files.after_power_loss(5, writeback=1) == "kept"  # the main file reads the same
    assert (store / "epochFileCheckpoint.bak").read_bytes() == b"1\n0\n1-0\n"

    fresh = tmp_path / "broker-2"
    fresh.mkdir()
    (fresh / "epochFileCheckpoint").write_bytes(b"1\n0\n1-0\n")
    assert epochfiles.PageCache(fresh).after_power_loss(2, writeback=1) == "lost"  # never written back
    assert not (fresh / "epochFileCheckpoint").exists()

@needs_rocketmq
@pytest.mark.heavy
def test_replay_of_a_cluster_run_s_violation_file_runs_it_again_and_explains_it(tmp_path, capsys):
    """docs/cluster.md: `rmqcheck replay run-N/violation.json` reruns the run (same
    configuration, seed and schedule) on the cluster, and the model explains what it breaks:
    durable's seed 7, a master losing power and restarting before the controller notices."""
    from rmqcheck.model import configs

    file = tmp_path / "violation.json"
    file.write_text(json.dumps({"kind": "rmqcheck cluster run", "config": configs.to_dict(configs.load("durable")),
                                "seed": 7, "steps": 12, "faults": 3, "violations": [  # its violation at step 10
                                    {"check": "epoch_agreement", "subject": "replicas broker-1 broker-2"}]}))
    assert main(["replay", str(file), "--keep", str(tmp_path / "kept")]) == 0
    text = capsys.readouterr().out.replace("\n", " ")
    assert "epoch_agreement (snapshot defect, seen again)" in text and "epoch_reapply_moves_start" in text, text
    assert "the model follows the rerun to its end" in text and (tmp_path / "kept" / "run-7" / "steps.jsonl").exists()


def test_a_cluster_run_file_that_is_wrong_is_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "violation.json"
    bad.write_text(json.dumps({"kind": "rmqcheck cluster run", "config": {"brokers": 2}, "seed": 1, "steps": 0,
                               "faults": 3}))
    assert main(["replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: steps must be an integer of at least 1, got 0" in err and "Traceback" not in err
