"""The packets a misbehaving peer sends and reads: any packet, however wrong, and a packet in words.

    build("DATA", SID, b"x", packet_no=2)     # wire.ppcb.build: the one builder, malformed packets too
    parse(raw)                                # its fields (a transfer.ppcb.Packet), or None: not even a header
    show(raw)                                 # 'RJT(session 504545522d4f4e45, packet 2)', for a reason
    matches(raw, "ACC", SID, 0)               # is it that packet?
    read_stream(sock, timeout)                # (one whole packet from a TCP stream, closed?)

``parse`` reads what the header says and nothing more (a DATA's body as far as it
goes, trailing bytes ignored): a peer must see what a program under test really
sent, where ``transfer.ppcb.unpack`` (the programs' reader) refuses anything
malformed. ``SID`` and ``OTHER`` are the two sessions a misbehaving peer speaks for.
"""
from __future__ import annotations

import socket
import struct

from ..transfer.ppcb import Packet
from ..wire.ppcb import (CODES, DATA_HEADER, HEADER_BY_CODE, NUMBERED, OFFSETS, SESSION_ID_BYTES, SIZES, TABLE,
                         TYPES, build)

__all__ = ["build", "parse", "show", "matches", "session_of", "read_stream", "SID", "OTHER"]

#: The session a misbehaving peer plays, and another one (an intruder's, a foreign ACC's).
SID, OTHER = b"PEER-ONE", b"PEER-TWO"

_DATA = CODES["DATA"]
_DATA_LEN = slice(OFFSETS["data_len"], OFFSETS["data_len"] + SIZES["data_len"])


def parse(raw: bytes | None) -> Packet | None:
    """The fields of ``raw`` by the packet table, or None when it is not even a header of a known type."""
    if not raw or raw[0] not in HEADER_BY_CODE or len(raw) < HEADER_BY_CODE[raw[0]]:
        return None
    kind = TYPES[raw[0]]
    _, fmt, names = TABLE[kind]
    fields = dict(zip(names, struct.unpack_from(fmt, raw)[1:]))
    if kind == "DATA":
        fields["data"] = bytes(raw[DATA_HEADER:DATA_HEADER + fields["data_len"]])
    return Packet(kind, **fields)


def session_of(raw: bytes | None) -> bytes:
    """The session id a packet carries (zeros when there was no packet)."""
    at = OFFSETS["session_id"]
    return bytes(raw[at:at + SESSION_ID_BYTES]) if raw else bytes(SESSION_ID_BYTES)


def show(raw: bytes | None) -> str:
    """A packet in words: 'RJT(session 504545..., packet 2)'; junk as its length and first byte."""
    if raw is None:
        return "nothing"
    packet = parse(raw)
    if packet is None:
        return f"a {len(raw)}-byte datagram that is no PPCB packet" + (f" (type byte {raw[0]})" if raw else "")
    extra = f", packet {packet.packet_no}" if CODES[packet.kind] in NUMBERED else ""
    return f"{packet.kind}(session {packet.session_id.hex()}{extra})"


def matches(raw: bytes | None, kind: str, session_id: bytes | None = None, packet_no: int | None = None) -> bool:
    """Is ``raw`` a ``kind`` (of that session, with that number, where given)?"""
    packet = parse(raw)
    return (packet is not None and packet.kind == kind
            and (session_id is None or packet.session_id == session_id)
            and (packet_no is None or packet.packet_no == packet_no))


def read_stream(sock: socket.socket, timeout: float) -> tuple[bytes | None, bool]:
    """One whole packet from a TCP stream: (raw, closed). (None, False) on timeout; a type no packet
    has ends the read (nobody can know where such a packet ends)."""
    sock.settimeout(max(timeout, 0.01))
    buf = b""
    try:
        while True:
            need = 1 if not buf else HEADER_BY_CODE.get(buf[0], 1)
            if buf and buf[0] == _DATA and len(buf) >= DATA_HEADER:
                need = DATA_HEADER + int.from_bytes(buf[_DATA_LEN], "big")
            if len(buf) >= need:
                return buf, False
            if buf and buf[0] not in HEADER_BY_CODE:
                return buf, False
            chunk = sock.recv(need - len(buf))
            if not chunk:
                return (buf or None), True
            buf += chunk
    except socket.timeout:
        return (buf or None), False
    except OSError:                         # reset by the peer: closed, too
        return (buf or None), True
