"""PPCB packets built by hand from notebooks/ppcb-protocol.md with struct, independent of
wirelab.transfer.ppcb, plus small raw peers for the conformance tests."""
from __future__ import annotations

import socket
import struct
import time

SID = b"SESSION1"
OTHER = b"SESSION2"


def conn(sid=SID, proto=3, total=0):
    return struct.pack(">B8sBQ", 1, sid, proto, total)


def conacc(sid=SID):
    return struct.pack(">B8s", 2, sid)


def conrjt(sid=SID):
    return struct.pack(">B8s", 3, sid)


def data(no, body, sid=SID, data_len=None):
    return struct.pack(">B8sQI", 4, sid, no, len(body) if data_len is None else data_len) + body


def acc(no, sid=SID):
    return struct.pack(">B8sQ", 5, sid, no)


def rjt(no, sid=SID):
    return struct.pack(">B8sQ", 6, sid, no)


def rcvd(sid=SID):
    return struct.pack(">B8s", 7, sid)


def udp_peer(port: int | None = None, timeout: float = 2.0) -> socket.socket:
    """A UDP socket on loopback; connected to ``port`` if given."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(timeout)
    if port:
        sock.connect(("127.0.0.1", port))
    return sock


def recv_within(sock: socket.socket, seconds: float):
    """The next datagram within ``seconds``, or None (a bounded wait, not a sleep)."""
    before = sock.gettimeout()
    sock.settimeout(seconds)
    try:
        return sock.recv(65535)
    except (socket.timeout, ConnectionRefusedError):
        return None
    finally:
        sock.settimeout(before)


def recv_exact(sock: socket.socket, n: int, timeout: float = 2.0) -> bytes:
    """n bytes from a TCP socket (b'' prefix of what arrived if it closed)."""
    sock.settimeout(timeout)
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def wait_for(predicate, timeout: float = 5.0, step: float = 0.01) -> bool:
    """Poll ``predicate`` until true or ``timeout``: True when it became true."""
    import threading
    end, event = time.monotonic() + timeout, threading.Event()
    while time.monotonic() < end:
        if predicate():
            return True
        event.wait(step)
    return bool(predicate())
