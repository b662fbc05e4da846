"""Small socket probes that measure a link: UDP echo RTT and UDP loss (for the tests and benches).

They work the same on a testbed (pass ``netns=`` to create a socket on a
host) and on loopback through a relay. Every wait has a deadline.

    >>> with Testbed(spec) as tb, UdpEcho(("10.77.0.2", 0), netns=tb.namespace("b")) as echo:  # doctest: +SKIP
    ...     rtts = udp_rtts(echo.address, 50, netns=tb.namespace("a"))
"""
from __future__ import annotations

import select
import socket
import struct
import threading
import time

from wirelab.link.netns import inside

__all__ = ["UdpEcho", "UdpCounter", "udp_socket", "udp_rtts", "udp_blast"]

_SEQ = struct.Struct("!Id")


def udp_socket(bind: tuple[str, int], netns: str | None = None, *, rcvbuf: int = 4 << 20) -> socket.socket:
    """A UDP socket bound to ``bind`` on the host whose namespace is ``netns``."""
    with inside(netns):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind(bind)
    return sock


class _Receiver:
    """A thread reading one UDP socket until closed."""

    def __init__(self, bind: tuple[str, int], netns: str | None = None):
        self.sock = udp_socket(bind, netns)
        self.address = self.sock.getsockname()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if ready:
                try:
                    data, peer = self.sock.recvfrom(65536)
                except OSError:
                    return
                self.handle(data, peer)

    def handle(self, data: bytes, peer) -> None:
        raise NotImplementedError


class UdpEcho(_Receiver):
    """Sends every datagram back to where it came from."""

    def handle(self, data, peer):
        try:
            self.sock.sendto(data, peer)
        except OSError:
            pass


class UdpCounter(_Receiver):
    """Counts distinct sequence numbers received, and apart: duplicates; ``out_of_order``
    (RFC 4737: arrived after a higher number, i.e. was overtaken); ``overtaking`` (arrived
    with a gap before it: on a loss-free link, each is one packet that jumped the queue)."""

    def __init__(self, bind, netns=None):
        super().__init__(bind, netns)
        self.seen: set[int] = set()
        self.duplicates = 0
        self.out_of_order = 0
        self.overtaking = 0
        self.highest = -1
        self.last_arrival = time.monotonic()

    def handle(self, data, peer):
        if len(data) >= 4:
            seq = struct.unpack_from("!I", data)[0]
            if seq in self.seen:
                self.duplicates += 1
            elif seq < self.highest:
                self.out_of_order += 1
            elif seq > self.highest + 1:
                self.overtaking += 1
            self.seen.add(seq)
            self.highest = max(self.highest, seq)
            self.last_arrival = time.monotonic()

    def wait_quiet(self, quiet_s: float = 0.3, timeout_s: float = 10.0) -> int:
        """Wait until nothing arrived for ``quiet_s`` (at most ``timeout_s``); returns the count."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and time.monotonic() - self.last_arrival < quiet_s:
            self._stop.wait(0.05)
        return len(self.seen)


def udp_rtts(target: tuple[str, int], count: int = 20, *, netns: str | None = None, size: int = 32,
             timeout_s: float = 1.0, interval_s: float = 0.01) -> list[float]:
    """Round-trip times (s) of ``count`` echoes to ``target``, one at a time; lost ones are left out."""
    sock = udp_socket(("0.0.0.0", 0), netns)
    rtts = []
    try:
        for seq in range(count):
            sent = time.monotonic()
            sock.sendto(_SEQ.pack(seq, sent).ljust(size, b"\0"), target)
            deadline = sent + timeout_s
            while (left := deadline - time.monotonic()) > 0:
                ready, _, _ = select.select([sock], [], [], left)
                if not ready:
                    break
                data = sock.recv(65536)
                now = time.monotonic()
                got, stamp = _SEQ.unpack_from(data)
                if got == seq:
                    rtts.append(now - stamp)
                    break
            pause = sent + interval_s - time.monotonic()
            if pause > 0:
                select.select([], [], [], pause)
    finally:
        sock.close()
    return rtts


def udp_blast(target: tuple[str, int], count: int, *, rate_pps: float = 5000, size: int = 64,
              netns: str | None = None, timeout_s: float = 60.0) -> int:
    """Send ``count`` numbered datagrams at ``rate_pps``; returns how many were sent."""
    sock = udp_socket(("0.0.0.0", 0), netns)
    start = time.monotonic()
    sent = 0
    pad = b"\0" * max(0, size - 4)
    try:
        while sent < count and time.monotonic() - start < timeout_s:
            due = start + sent / rate_pps
            wait = due - time.monotonic()
            if wait > 0:
                select.select([], [], [], wait)
            try:
                sock.sendto(struct.pack("!I", sent) + pad, target)
            except BlockingIOError:
                continue
            sent += 1
    finally:
        sock.close()
    return sent
