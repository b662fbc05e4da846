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

from ..wire.ppcb import CODES, DATA_HEADER, HEADER_BY_CODE as HEADER, NUMBERED, OFFSETS, SIZES, TYPES
from .context import Failed

__all__ = ["build", "parse", "show", "session_of", "Exchange", "read_stream_packet", "HEADER"]

_DATA = CODES["DATA"]
_DATA_LEN = slice(OFFSETS["data_len"], OFFSETS["data_len"] + SIZES["data_len"])


def _layer():
    # scapy is slow to import: only when a scenario runs (in-function import, for start-up)
    from ..capture.ppcb_scapy import PPCB, bind_ppcb
    bind_ppcb()                                # captures read in this process decode port 5000 as PPCB
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


def session_of(raw: bytes | None) -> bytes:
    """The session id a packet carries (zeros when there was no packet)."""
    at = OFFSETS["session_id"]
    return bytes(raw[at:at + SIZES["session_id"]]) if raw else bytes(SIZES["session_id"])


def show(raw: bytes | None) -> str:
    """A packet in words: 'RJT(session 414141..., packet 2)'; junk as its length and first byte."""
    if raw is None:
        return "nothing"
    packet = parse(raw)
    if packet is None:
        return f"a {len(raw)}-byte datagram that is no PPCB packet" + (f" (type byte {raw[0]})" if raw else "")
    kind = TYPES[packet.type]
    extra = f", packet {packet.packet_no}" if packet.type in NUMBERED else ""
    return f"{kind}(session {packet.session_id.hex()}{extra})"


def matches(raw: bytes, kind: str, session_id: bytes | None = None, packet_no: int | None = None) -> bool:
    packet = parse(raw)
    return (packet is not None and packet.type == CODES[kind]
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
            if buf and buf[0] == _DATA and len(buf) >= DATA_HEADER:
                need = DATA_HEADER + int.from_bytes(buf[_DATA_LEN], "big")
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
