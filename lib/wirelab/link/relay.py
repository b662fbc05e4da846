"""The loopback backend: relays on 127.0.0.1 that apply a ``LinkSpec``, no root needed.

* ``UdpRelay``: a real emulated link for UDP and UDPR. Each datagram is cut
  into the IP fragments the link's MTU would make (``wirelab.model.packetize``),
  each fragment is charged as a frame of the spec's wire like the other backends
  (``LinkSpec.charge``: IP + 14 B emulated, + 38 B and at least 84 B real), and
  goes through a ``Shaper`` (rate, queue, loss, delay, jitter, duplicate,
  reorder); a datagram arrives only if all its fragments do.
* ``TcpRelay``: **only paces and delays the byte stream.** TCP on loopback
  never loses a segment, and the relay terminates one TCP connection and
  opens another, so it cannot drop, duplicate or reorder segments of the
  sender's connection: the sender's congestion control never sees loss and
  its RTT is the relay's delay only through flow control. Goodput is bounded
  by the rate (charged as full segments on the emulated wire) and by the
  delay; loss-limited TCP (Mathis, PFTK) needs a namespaces testbed.
  Full segments are charged as frames of the spec's wire.

Both say what they did in ``describe()``, for a result's metadata.
"""
from __future__ import annotations

import heapq
import random
import select
import socket
import threading
import time
from collections import deque
from dataclasses import replace

from ..model import HeaderStack, packetize
from ..wire.headers import TCP_TIMESTAMPS, tcp_payload
from .emulator import Shaper
from .spec import QDISC_L2, LinkSpec

__all__ = ["UdpRelay", "TcpRelay"]

IDLE_S = 0.1
RCVBUF = 4 << 20   # the kernel caps it at net.core.rmem_max


class _Relay:
    kind = ""

    def __init__(self, spec: LinkSpec, target: tuple[str, int], *, listen=("127.0.0.1", 0),
                 seed: int | None = None):
        self.spec, self.target = spec, tuple(target)
        rng = random.Random(seed)
        self.forward = Shaper(self._direction(spec.forward), self._queue(spec.forward), random.Random(rng.random()),
                              spec.loss_unit)
        self.reverse = Shaper(self._direction(spec.reverse), self._queue(spec.reverse), random.Random(rng.random()),
                              spec.loss_unit)
        self._stop = threading.Event()
        # close() writes to this pair: every serving thread's select wakes at once, rather than
        # each waiting out its IDLE_S (a sweep on loopback closes its relays after every run)
        self._wake, self._waker = socket.socketpair()
        self._threads: list[threading.Thread] = []

    def _direction(self, direction):
        return direction

    def _queue(self, direction) -> int:
        return self.spec.queue_for(direction)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def start(self):
        thread = threading.Thread(target=self._serve, daemon=True, name=f"wirelab-{self.kind}-relay")
        self._threads.append(thread)
        thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        try:
            self._waker.send(b"x")       # never read: the wake stays readable for every thread
        except OSError:
            pass
        for thread in self._threads:
            thread.join(timeout=3)
        self.sock.close()
        self._wake.close()
        self._waker.close()

    def describe(self) -> dict:
        return {"backend": "loopback", "relay": self.kind, "listen": list(self.address),
                "target": list(self.target), "spec": self.spec.to_dict(), "link": self.spec.describe(),
                "counters": {"a->b": vars(self.forward.counters), "b->a": vars(self.reverse.counters)}}


class UdpRelay(_Relay):
    """Datagrams sent to ``address`` reach ``target`` across the emulated link; replies come back."""
    kind = "udp"

    def __init__(self, spec: LinkSpec, target, *, listen=("127.0.0.1", 0), seed=None):
        super().__init__(spec, target, listen=listen, seed=seed)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.sock.bind(listen)
        self.address = self.sock.getsockname()
        self.stack = HeaderStack("udp", spec.mtu)
        self._datagrams = 0

    def _admit(self, shaper: Shaper, size: int, now: float) -> list[float]:
        """Delivery times of one datagram: every fragment must make it."""
        fragments = packetize(self.stack, max(size, 1)).ip_packets
        self._datagrams += 1         # the key its fragments share (loss by datagram)
        key = self._datagrams if len(fragments) > 1 else None
        times = [shaper.admit(self.spec.charge(length + QDISC_L2), now, key) for length in fragments]
        if not all(times):
            return []
        return [max(t[0] for t in times)] * (2 if len(fragments) == 1 and len(times[0]) == 2 else 1)

    def _serve(self) -> None:
        upstream: dict[tuple, socket.socket] = {}    # client address -> its socket towards target
        clients: dict[socket.socket, tuple] = {}
        heap: list = []
        seq = 0
        while not self._stop.is_set():
            now = time.monotonic()
            timeout = IDLE_S if not heap else min(IDLE_S, max(0.0, heap[0][0] - now))
            ready, _, _ = select.select([self.sock, *clients, self._wake], [], [], timeout)
            now = time.monotonic()
            for sock in ready:
                if sock is self._wake:
                    continue
                try:
                    data, peer = sock.recvfrom(65536)
                except OSError:
                    continue
                if sock is self.sock:             # a → b
                    if peer not in upstream:
                        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        up.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
                        up.bind((self.address[0], 0))
                        upstream[peer], clients[up] = up, peer
                    out, dest, shaper = upstream[peer], self.target, self.forward
                else:                             # b → a
                    out, dest, shaper = self.sock, clients[sock], self.reverse
                for due in self._admit(shaper, len(data), now):
                    seq += 1
                    heapq.heappush(heap, (due, seq, out, dest, data))
            now = time.monotonic()
            while heap and heap[0][0] <= now:
                _, _, out, dest, data = heapq.heappop(heap)
                try:
                    out.sendto(data, dest)
                except OSError:
                    pass
        for up in clients:
            up.close()

    def describe(self) -> dict:
        return {**super().describe(), "emulates": ["rate", "queue", "delay", "jitter", "loss",
                                                   "duplicate", "reorder", "MTU fragmentation"],
                "cannot_emulate": [], "charged_bytes": _charged(self.spec, "each IP fragment")}


def _receive_window(spec: LinkSpec) -> int:
    """The relay's socket buffer towards the sender: 10 ms at the rate, at least 32 KB (the kernel
    doubles it). The emulated queue and delay are the relay's own, held after it reads; this only
    has to cover the relay's own pauses between reads."""
    rate = spec.forward.rate_bps or 1e9
    return int(min(max(rate / 8 * 0.010, 32 << 10), 4 << 20))


class TcpRelay(_Relay):
    """Connections to ``address`` are carried to ``target``, paced at the rate and delayed.

    It cannot lose, duplicate or reorder TCP segments (see the module docstring):
    ``describe()`` says so, so that results carry it.
    """
    kind = "tcp"

    def __init__(self, spec: LinkSpec, target, *, listen=("127.0.0.1", 0), seed=None):
        super().__init__(spec, target, listen=listen, seed=seed)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # The sender's TCP never sees loss here, so only flow control limits what it has in flight:
        # its segments as large as the emulated link's (MSS of the MTU, not loopback's 64 KB) and a
        # small receive window keep its send buffer near what a real link would leave it. Without
        # them a 1 s timed run at 10 Mbit/s had 4 MB waiting in buffers and ran 3.6 s longer.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, tcp_payload(spec.mtu, timestamps=False))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _receive_window(spec))
        self.sock.bind(listen)
        self.sock.listen(8)
        self.address = self.sock.getsockname()
        self.stack = HeaderStack("tcp", spec.mtu, tcp_options=TCP_TIMESTAMPS)

    def _direction(self, direction):
        return replace(direction, loss=0.0, duplicate=0.0, reorder=0.0)

    def _queue(self, direction) -> int:
        return 1 << 62          # never drops: the relay stops reading instead (flow control)

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock, self._wake], [], [], IDLE_S)
            if self.sock not in ready or self._stop.is_set():
                continue
            try:
                client, _ = self.sock.accept()
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                continue
            thread = threading.Thread(target=self._connection, args=(client, server), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _connection(self, client: socket.socket, server: socket.socket) -> None:
        forward = threading.Thread(target=self._pump, args=(client, server, self.forward), daemon=True)
        forward.start()
        self._pump(server, client, self.reverse)
        forward.join(timeout=30)
        client.close()
        server.close()

    def _pump(self, src: socket.socket, dst: socket.socket, shaper: Shaper) -> None:
        """Read, charge as TCP segments, hold until due, write; stop reading when the queue is full."""
        limit = self.spec.queue_for(shaper.direction)
        chunk = 4 * tcp_payload(self.spec.mtu)             # a few segments at a time keeps the pacing smooth
        queue: deque[tuple[float, bytes]] = deque()
        queued, eof = 0, False
        try:
            while not self._stop.is_set() and not (eof and not queue):
                now = time.monotonic()
                timeout = IDLE_S if not queue else min(IDLE_S, max(0.0, queue[0][0] - now))
                readable = [src] if not eof and queued < limit else []
                ready, _, _ = select.select([*readable, self._wake], [], [], timeout)
                if src in ready:
                    data = src.recv(chunk)
                    if not data:
                        eof = True
                    else:
                        now = time.monotonic()
                        packets = packetize(self.stack, len(data)).ip_packets
                        due = shaper.admit(sum(self.spec.charge(p + QDISC_L2) for p in packets), now)[0]
                        queue.append((due, data))
                        queued += len(data)
                now = time.monotonic()
                while queue and queue[0][0] <= now:
                    _, data = queue.popleft()
                    dst.sendall(data)
                    queued -= len(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def describe(self) -> dict:
        return {**super().describe(), "emulates": ["rate (paced byte stream)", "delay", "jitter"],
                "cannot_emulate": ["loss", "duplicate", "reorder", "queue drops"],
                "note": "TCP relay on loopback: paces and delays the byte stream only; the sender's TCP "
                        "never sees loss. Use a namespaces testbed (root) for loss-limited TCP.",
                "charged_bytes": _charged(self.spec, "full TCP segments (timestamps on)")}


def _charged(spec: LinkSpec, what: str) -> str:
    """What a relay charges per packet, in words, for its ``describe()``."""
    if spec.wire == "real":
        return f"{what} + {spec.l2_bytes} B of real-wire framing each (at least {spec.min_frame_bytes} B)"
    return f"{what} + {spec.l2_bytes} B Ethernet header{' and PPPoE' if spec.pppoe else ''} each"
