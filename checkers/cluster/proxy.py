"""A TCP proxy on one HA link (a slave's connections to one master), on loopback, that the
nemesis can open, cut and blackhole. It forwards whole AutoSwitchHA frames (`frame_end`).

- open: bytes flow both ways as they come (TCP_NODELAY both sides: without it a put waited
  26 ms for the ack, real-runs.md);
- cut: every connection is closed and a new one is accepted and closed at once (a reset link);
- blackhole: connections stay up but nothing gets through; what is sent is held, in order, and
  delivered when the link opens again (a link that stalls, as a full buffer or a lost route does,
  until TCP's retransmission gets through);
- step: like blackhole, but the harness releases the held frames one direction and one frame
  at a time (`release`): how `replay --cluster` drives the model's HA steps (handshake, transfer,
  ack) on the running code;
- `bytes_held` says whether anything waits, so the harness can tell a quiet link from a busy one;
- `linger` closes the slave's end of the newest connection and keeps the master's end open and
  silent (what the master sends there is read and dropped), as when the slave's HA client gives
  up on a connection and reconnects before the master's end notices; `close_lingering` then
  closes the master's end, which the master reads as the end of the stream.

The master's HA port is looked up at each new connection (`target()`), so a master that restarts
on another port is reached through the same proxy.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import deque
from typing import Callable

OPEN, CUT, BLACKHOLE, STEP = "open", "cut", "blackhole", "step"
SEND_TIMEOUT = 10  # seconds
MODES = (OPEN, CUT, BLACKHOLE, STEP)
HANDSHAKE, TRANSFER = 1, 2  # a frame's state (its first int)


# AutoSwitchHA frames (big-endian; state 1 HANDSHAKE, 2 TRANSFER). Slave to master: a 16-byte
# handshake or a 12-byte ack. Master to slave: a handshake of 20 bytes plus its body (12 a
# epoch entry), a transfer of 36 bytes plus its body; the body size is the int at byte 4.
_TO_MASTER = {1: 16, 2: 12}
_TO_SLAVE_HEADER = {1: 20, 2: 36}


def frame_end(buf: bytes | bytearray, to_master: bool) -> int:
    """The length of the whole frame at the start of `buf`: 0 while incomplete, -1 when `buf`
    does not start with a frame this proxy knows (then bytes are passed as they come)."""
    if len(buf) < 8:
        return 0
    state = int.from_bytes(buf[:4], "big")
    if to_master:
        size = _TO_MASTER.get(state, -1)
    elif state in _TO_SLAVE_HEADER:
        size = _TO_SLAVE_HEADER[state] + int.from_bytes(buf[4:8], "big", signed=True)
    else:
        size = -1
    if size < 0:
        return -1
    return size if len(buf) >= size else 0


def frame_state(frame: bytes) -> int:
    return int.from_bytes(frame[:4], "big")


def data_end(frame: bytes) -> int:
    """Where a master-to-slave transfer frame's data ends in the commit log (its offset plus its
    body's size); -1 for any other frame."""
    if frame_state(frame) != TRANSFER or len(frame) < 16:
        return -1
    return int.from_bytes(frame[8:16], "big", signed=True) + int.from_bytes(frame[4:8], "big", signed=True)


def header_confirm(frame: bytes) -> int | None:
    """The confirmOffset a master-to-slave transfer frame's header carries (its last 8 bytes);
    None for any other frame."""
    if frame_state(frame) != TRANSFER or len(frame) < _TO_SLAVE_HEADER[TRANSFER]:
        return None
    return int.from_bytes(frame[28:36], "big", signed=True)


def carries_data(frame: bytes) -> bool:
    """A master-to-slave transfer frame with a body (messages), not a heartbeat."""
    return frame_state(frame) == TRANSFER and int.from_bytes(frame[4:8], "big", signed=True) > 0


class _Pipe:
    """One direction of one connection: reads from `src`, writes whole frames to `dst` unless
    held. The master writes a frame's header and body in two writes; sent on at once, a slave can
    read half a handshake reply, send its handshake again and meet a second reply in TRANSFER
    ("State not matched", then a 5 s wait): whole frames keep the proxy from adding to that race."""

    def __init__(self, link: "LinkProxy", src: socket.socket, dst: socket.socket, to_master: bool) -> None:
        self.link, self.src, self.dst, self.to_master = link, src, dst, to_master
        self.held: deque[bytes] = deque()
        self.partial = bytearray()
        self.lingering = False  # the slave's end is gone, the master's stays: read and drop (LinkProxy.linger)

    def run(self) -> None:
        try:
            while True:
                data = self.src.recv(65536)
                if not data:
                    break
                self.partial += data
                frames = []
                while self.partial:
                    end = frame_end(self.partial, self.to_master)
                    if end == 0:
                        break
                    end = len(self.partial) if end < 0 else end
                    frames.append(bytes(self.partial[:end]))
                    del self.partial[:end]
                with self.link.lock:
                    if self.lingering:
                        continue
                    for frame in frames:
                        if self.link.mode == OPEN and not self.held:
                            self.dst.sendall(frame)
                        else:
                            self.held.append(frame)
        except OSError:
            pass
        if not self.lingering:
            self.link.drop(self)

    def release(self, count: int | None = None) -> None:
        """Deliver what was held, or its first `count` frames; called with the link's lock held."""
        try:
            while self.held and (count is None or count > 0):
                self.dst.sendall(self.held.popleft())
                count = None if count is None else count - 1
        except OSError:
            self.held.clear()


class LinkProxy:
    def __init__(self, name: str, target: Callable[[], int | None]) -> None:
        self.name = name
        self.target = target  # the master's HA port now (None: not listening)
        self.mode = OPEN
        self.lock = threading.Lock()
        self.pipes: list[_Pipe] = []
        self.lingering: list[socket.socket] = []  # the master's ends of lingering connections
        self.connections = 0  # accepted so far
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, name=f"proxy-{name}", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            port = self.target()
            with self.lock:
                refuse = self.mode == CUT or port is None
            if refuse:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                # a peer that stops reading fails a send after this long, instead of holding the link's lock
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", SEND_TIMEOUT, 0))
            pair = [_Pipe(self, client, upstream, to_master=True), _Pipe(self, upstream, client, to_master=False)]
            with self.lock:
                self.pipes += pair
            for p in pair:
                threading.Thread(target=p.run, name=f"proxy-{self.name}-pipe", daemon=True).start()

    def drop(self, pipe: _Pipe) -> None:
        """One direction ended: the whole connection goes, as a TCP reset would take it."""
        with self.lock:
            for p in [q for q in self.pipes if q.src in (pipe.src, pipe.dst)]:
                self.pipes.remove(p)
            for s in (pipe.src, pipe.dst):
                _close(s)

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown link mode {mode!r}; known: {', '.join(MODES)}")
        with self.lock:
            self.mode = mode
            pipes = list(self.pipes)
            if mode == OPEN:
                for p in pipes:
                    p.release()
        if mode == CUT:
            for p in pipes:
                self.drop(p)
            self.close_lingering()

    def linger(self) -> bool:
        """Close the slave's end of the newest connection and keep the master's (module
        docstring); whether there was a connection."""
        with self.lock:
            to_slave = self._newest(False)
            if to_slave is None:
                return False
            pair = [p for p in self.pipes if p.src in (to_slave.src, to_slave.dst)]
            for p in pair:
                p.lingering = True
                p.held.clear()
                self.pipes.remove(p)
            self.lingering.append(to_slave.src)  # the master's end
            slave_end = to_slave.dst
        _close(slave_end)
        return True

    def close_lingering(self) -> int:
        """Close the master's end of each lingering connection; how many there were."""
        with self.lock:
            ends, self.lingering = self.lingering, []
        for s in ends:
            _close(s)
        return len(ends)

    def held(self, to_master: bool) -> list[bytes]:
        """The frames held in one direction of the newest connection (step mode)."""
        with self.lock:
            pipe = self._newest(to_master)
            return list(pipe.held) if pipe else []

    def release(self, to_master: bool, count: int) -> int:
        """Deliver the first `count` frames held in one direction of the newest connection; how
        many there were to deliver."""
        with self.lock:
            pipe = self._newest(to_master)
            if pipe is None:
                return 0
            n = min(count, len(pipe.held))
            pipe.release(n)
            return n

    def drop_held(self, to_master: bool, indexes: set[int]) -> None:
        """Forget the frames at `indexes` of those held in one direction of the newest connection."""
        with self.lock:
            pipe = self._newest(to_master)
            if pipe is not None:
                pipe.held = deque(f for i, f in enumerate(pipe.held) if i not in indexes)

    def _newest(self, to_master: bool) -> "_Pipe | None":
        return next((p for p in reversed(self.pipes) if p.to_master == to_master), None)

    def bytes_held(self) -> int:
        with self.lock:
            return sum(len(b) for p in self.pipes for b in p.held)

    def live_connections(self) -> int:
        with self.lock:
            return len(self.pipes) // 2

    def close(self) -> None:
        self.closed = True
        try:  # shutdown wakes the accepting thread; close alone does not
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        self.set_mode(CUT)
        self.close_lingering()


def _close(s: socket.socket) -> None:
    try:  # shutdown first: it wakes a recv blocked on the socket and sends the FIN
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
