"""Crafted PPCB packets for the scenarios (built with the scapy layer) and bounded ways to wait for one.

``build("DATA", sid, packet_no=2, data=b"x")`` is ``bytes(PPCB(...))`` from
``wirelab.capture.ppcb_scapy``; ``show(raw)`` names a packet in words for a
reason ("RJT(session 5345535331, packet 2)"); ``Exchange`` is one UDP socket
playing a peer: it sends, and waits (never past the test's deadline) for the
packet a check expects, keeping everything else it saw for the reason.
"""
from __future__ import annotations

import select
import socket
import time

from .context import Failed

__all__ = ["build", "parse", "show", "Exchange", "read_stream_packet", "HEADER"]

#: Header bytes by type code (ppcb.md), what a stream reader needs before the body.
HEADER = {1: 18, 2: 9, 3: 9, 4: 21, 5: 17, 6: 17, 7: 9}


def _layer():
    from ..capture.ppcb_scapy import PPCB      # scapy is slow to import: only when a scenario runs
    return PPCB


def build(kind, session_id: bytes, **fields) -> bytes:
    """One packet's bytes; ``kind`` a name ("DATA") or any type code (9: unknown)."""
    return bytes(_layer()(type=kind, session_id=session_id, **fields))


def parse(raw: bytes):
    """The PPCB layer of ``raw``, or None when it is not even a header."""
    if not raw or raw[0] not in HEADER or len(raw) < HEADER[raw[0]]:
        return None
    try:
        return _layer()(raw)
    except Exception:                      # noqa: BLE001 - scapy raises many kinds on junk
        return None


def show(raw: bytes | None) -> str:
    """A packet in words: 'RJT(session 414141..., packet 2)'; junk as its length and first byte."""
    if raw is None:
        return "nothing"
    packet = parse(raw)
    if packet is None:
        return f"a {len(raw)}-byte datagram that is no PPCB packet" + (f" (type byte {raw[0]})" if raw else "")
    kind = {1: "CONN", 2: "CONACC", 3: "CONRJT", 4: "DATA", 5: "ACC", 6: "RJT", 7: "RCVD"}[packet.type]
    extra = f", packet {packet.packet_no}" if packet.type in (4, 5, 6) else ""
    return f"{kind}(session {packet.session_id.hex()}{extra})"


def matches(raw: bytes, kind: str, session_id: bytes | None = None, packet_no: int | None = None) -> bool:
    packet = parse(raw)
    names = {"CONN": 1, "CONACC": 2, "CONRJT": 3, "DATA": 4, "ACC": 5, "RJT": 6, "RCVD": 7}
    return (packet is not None and packet.type == names[kind]
            and (session_id is None or packet.session_id == session_id)
            and (packet_no is None or packet.packet_no == packet_no))


class Exchange:
    """A UDP socket of wirelab's playing a peer; ``seen`` keeps (time, raw, address) of all it received."""

    def __init__(self, ctx, sock: socket.socket, peer: tuple[str, int] | None = None):
        self.ctx, self.sock, self.peer = ctx, sock, peer
        self.seen: list[tuple[float, bytes, tuple]] = []

    def send(self, raw: bytes, to: tuple[str, int] | None = None) -> float:
        self.sock.sendto(raw, to or self.peer)
        return time.monotonic()

    def receive(self, timeout: float) -> tuple[bytes, tuple] | None:
        """The next datagram within ``timeout`` (and the deadline), or None."""
        ready, _, _ = select.select([self.sock], [], [], max(min(timeout, self.ctx.left()), 0.0))
        if not ready:
            return None
        raw, addr = self.sock.recvfrom(65535)
        self.seen.append((time.monotonic(), raw, addr))
        return raw, addr

    def expect(self, what: str, predicate, timeout: float, *, after: str = "") -> tuple[bytes, tuple]:
        """Wait for a datagram ``predicate(raw)`` accepts; ``Failed`` naming what came instead."""
        end = time.monotonic() + timeout
        others = []
        while (left := end - time.monotonic()) > 0 and self.ctx.left() > 0:
            got = self.receive(left)
            if got is None:
                break
            if predicate(got[0]):
                return got
            others.append(show(got[0]))
        came = f"got {', '.join(others[:3])}" if others else "got nothing"
        raise Failed(f"expected {what}{after}, {came} within {timeout:g} s")

    def quiet(self, seconds: float, forbidden, what: str) -> None:
        """For ``seconds``: nothing ``forbidden(raw)`` accepts may arrive (``Failed`` if it does)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            got = self.receive(left)
            if got is None:
                return
            if forbidden(got[0]):
                raise Failed(f"{what}: got {show(got[0])}")

    def close(self) -> None:
        self.sock.close()


def read_stream_packet(sock: socket.socket, timeout: float) -> tuple[bytes | None, bool]:
    """One whole packet from a TCP stream: (raw, closed). (None, False) on timeout; junk types end the read."""
    sock.settimeout(max(timeout, 0.01))
    buf = b""
    try:
        while True:
            need = 1 if not buf else HEADER.get(buf[0], 1)
            if buf and buf[0] == 4 and len(buf) >= 21:
                need = 21 + int.from_bytes(buf[17:21], "big")
            if len(buf) >= need:
                return buf, False
            if buf and buf[0] not in HEADER:
                return buf, False
            chunk = sock.recv(need - len(buf))
            if not chunk:
                return (buf or None), True
            buf += chunk
    except socket.timeout:
        return (buf or None), False
    except OSError:                         # reset by the peer: closed, too
        return (buf or None), True
