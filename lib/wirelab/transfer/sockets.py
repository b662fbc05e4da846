"""Small socket helpers shared by the programs: open, size buffers, count calls,
hand a finished client's Result over.

``Meter`` counts the socket calls a program makes (each ``send``, ``recv``,
``select``... is one system call) and the CPU time of the calling thread, so
a Result can say what a transfer cost.
"""
from __future__ import annotations

import os
import socket
import threading
import time

from ..errors import TransferError, UsageError

__all__ = ["Meter", "Stop", "open_socket", "buffer_sizes", "congestion_control", "DEFAULT_HOST"]

#: Servers listen here unless the user names another address.
DEFAULT_HOST = "127.0.0.1"


class Stop(threading.Event):
    """A server's stop flag that its ``select`` can wait on too (it has a ``fileno``), so a
    server stops the moment it is set; a plain ``threading.Event`` is seen at the next
    0.1 s wake-up. ``close()`` when the server is done (setting it later is harmless)."""

    def __init__(self):
        super().__init__()
        self._wake, self._waker = socket.socketpair()
        self._waker.setblocking(False)
        self._guard = threading.Lock()     # set() and close() come from different threads
        self._open = True

    def set(self) -> None:
        super().set()
        with self._guard:
            if self._open:
                try:
                    self._waker.send(b"!")
                except BlockingIOError:    # woken many times already: once is enough
                    pass

    def fileno(self) -> int:
        return self._wake.fileno()

    def close(self) -> None:
        with self._guard:
            self._open = False
            self._wake.close()
            self._waker.close()


def waiting_on(sock: socket.socket, stop) -> list:
    """What a server's idle ``select`` waits on: its socket, and ``stop`` when it can wake it."""
    return [sock, stop] if isinstance(stop, Stop) else [sock]


class Meter:
    """Counts socket calls and the CPU time this thread spends between start() and stop()."""

    def __init__(self):
        self.calls = 0
        self.cpu_s = 0.0
        self._cpu0 = time.thread_time()

    def call(self, n: int = 1) -> None:
        self.calls += n

    def stop(self) -> float:
        self.cpu_s = time.thread_time() - self._cpu0
        return self.cpu_s


def open_socket(kind: str, *, sndbuf: int | None = None, rcvbuf: int | None = None,
                congestion: str | None = None) -> socket.socket:
    """A TCP (``kind="tcp"``) or UDP socket with the requested buffer sizes set
    *before* connect/listen (so TCP's window scaling can use them)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    try:
        if sndbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(sndbuf))
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(rcvbuf))
        if congestion and kind == "tcp":
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
            except OSError:
                raise UsageError(f"congestion control {congestion!r} is not available here",
                                 "see /proc/sys/net/ipv4/tcp_available_congestion_control") from None
    except BaseException:
        sock.close()
        raise
    return sock


def buffer_sizes(sock: socket.socket) -> tuple[int, int]:
    """(SO_SNDBUF, SO_RCVBUF) as the kernel granted them (Linux reports twice the request)."""
    return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


def congestion_control(sock: socket.socket) -> str | None:
    """The TCP congestion control algorithm of a TCP socket (e.g. "bbr", "cubic")."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
    except (OSError, AttributeError):
        return None
    return raw.split(b"\0", 1)[0].decode() or None


def congestion_unavailable(name: str | None) -> str | None:
    """Why this process cannot use TCP congestion control ``name``, or None if it can.
    Only root may pick one outside net.ipv4.tcp_allowed_congestion_control."""
    if not name:
        return None
    def read(key):
        try:
            with open(f"/proc/sys/net/ipv4/{key}") as f:
                return f.read().split()
        except OSError:
            return None
    available, allowed = read("tcp_available_congestion_control"), read("tcp_allowed_congestion_control")
    if available is not None and name not in available:
        return (f"congestion control {name!r} is not loaded here (available: {' '.join(available)}): "
                f"as root, `modprobe tcp_{name}`")
    if allowed is not None and name not in allowed and os.geteuid() != 0:
        return (f"only root may choose congestion control {name!r} (allowed: {' '.join(allowed)}): "
                "run as root, or leave cc unset")
    return None


def bind(sock: socket.socket, host: str, port: int) -> None:
    """Bind, turning "address in use" into an error that says what to do."""
    if sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise TransferError(f"cannot listen on {host}:{port} ({err.strerror})",
                            "pick another port, or 0 for any free one") from None


def hand_over(result, addr, log=None, on_result=None) -> None:
    """A server is done with one client: name the client, log its error, pass the Result on."""
    result.metadata.setdefault("client", f"{addr[0]}:{addr[1]}")
    if result.receiver_error and log:
        log(f"ERROR: {result.receiver_error} (client {addr[0]}:{addr[1]})")
    if on_result:
        on_result(result)
