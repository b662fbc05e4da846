"""PPCB, the wire format behind tcp / udp / udpr (see notebooks/ppcb-protocol.md): packing and unpacking.

The format itself is one table, ``wirelab.wire.ppcb.TABLE`` (re-exported here):
name, type code, struct layout and the field names of every packet. Every
packet starts with a type byte and an 8-byte session id; integers are
big-endian, no padding. DATA is the only packet with a body (``data``,
1..64000 bytes, length in ``data_len``).

    >>> raw = pack("ACC", session_id=b"ABCDEFGH", packet_no=7)
    >>> len(raw), unpack(raw)
    (17, Packet(kind='ACC', session_id=b'ABCDEFGH', packet_no=7))

Anything malformed raises ``ProtocolError`` saying what was wrong.
Standard library only: this module is read by students.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..errors import ProtocolError
from ..wire.ppcb import (CODES, DATA_HEADER, HEADER_BYTES, MAX_DATA, OFFSETS, PROTOCOL_IDS, PROTOCOL_NAMES,
                         SESSION_ID_BYTES, TABLE, TYPES, build)

__all__ = ["TABLE", "TYPES", "CODES", "PROTOCOL_IDS", "PROTOCOL_NAMES", "MAX_DATA", "HEADER_BYTES",
           "Packet", "pack", "unpack", "header_size", "data_header", "session_of", "new_session_id"]

_STRUCTS = {name: struct.Struct(fmt) for name, (_, fmt, _) in TABLE.items()}


@dataclass(frozen=True)
class Packet:
    """One decoded packet. Fields a kind does not have stay None."""
    kind: str
    session_id: bytes
    packet_no: int | None = None
    protocol_id: int | None = None
    total_length: int | None = None
    data_len: int | None = None
    data: bytes | None = None

    def __repr__(self) -> str:  # short, so doctests and logs stay readable
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in ("packet_no", "protocol_id",
                        "total_length") if getattr(self, k) is not None)
        body = f", data_len={self.data_len}" if self.data_len is not None else ""
        return f"Packet(kind={self.kind!r}, session_id={self.session_id!r}{extra}{body})"


def header_size(type_code: int) -> int:
    """Bytes of header for a type code (what a TCP reader must read next)."""
    if type_code not in TYPES:
        raise ProtocolError(f"unknown packet type {type_code}", f"PPCB types are 1..{len(TYPES)}")
    return HEADER_BYTES[TYPES[type_code]]


def pack(kind: str, session_id: bytes, data: bytes | None = None, **fields: int) -> bytes:
    """Encode one packet. DATA takes ``packet_no`` and ``data`` (data_len is computed)."""
    if kind not in TABLE:
        raise ProtocolError(f"unknown packet kind {kind!r}", f"use one of {', '.join(TABLE)}")
    names = TABLE[kind][2]
    if len(session_id) != SESSION_ID_BYTES:
        raise ProtocolError(f"session id must be {SESSION_ID_BYTES} bytes, not {len(session_id)}",
                            "use new_session_id()")
    if kind == "DATA":
        if data is None or not 1 <= len(data) <= MAX_DATA:
            raise ProtocolError(f"DATA carries 1..{MAX_DATA} bytes, not {0 if data is None else len(data)}",
                                "split the input into smaller chunks")
        fields["data_len"] = len(data)
    missing = [name for name in names[1:] if name not in fields]
    if missing:
        raise ProtocolError(f"{kind} needs {', '.join(missing)}", f"give {kind} every field of ppcb.md")
    try:
        return build(kind, session_id, data or b"", **fields)       # laid out by the one table
    except struct.error as err:
        raise ProtocolError(f"cannot pack {kind}: {err}", "check the field values") from None


def data_header(session_id: bytes, packet_no: int, data_len: int) -> bytes:
    """Just the DATA header (``DATA_HEADER`` bytes, for senders that write header and body separately)."""
    return _STRUCTS["DATA"].pack(CODES["DATA"], session_id, packet_no, data_len)


def unpack(raw: bytes, *, stream: bool = False) -> Packet:
    """Decode one packet from ``raw``.

    A datagram must be exactly one packet: a DATA's data_len must match the
    bytes that follow. With ``stream=True`` (TCP) ``raw`` may be a DATA header
    alone (``data`` None); the caller reads ``data_len`` more bytes itself.
    """
    if not raw:
        raise ProtocolError("empty packet", "every PPCB packet starts with a type byte")
    kind = TYPES.get(raw[0])
    if kind is None:
        raise ProtocolError(f"unknown packet type {raw[0]}", f"PPCB types are 1..{len(TYPES)}")
    size = HEADER_BYTES[kind]
    if len(raw) < size:
        raise ProtocolError(f"truncated {kind}: {len(raw)} of {size} header bytes",
                            "send the whole header in one datagram")
    _, session_id, *values = _STRUCTS[kind].unpack_from(raw)
    fields = dict(zip(TABLE[kind][2][1:], values))
    if kind != "DATA":
        if len(raw) != size:
            raise ProtocolError(f"{kind} is {size} bytes, got {len(raw)}", "no trailing bytes allowed")
        return Packet(kind, session_id, **fields)
    data_len = fields.pop("data_len")
    if not 1 <= data_len <= MAX_DATA:
        raise ProtocolError(f"DATA data_len {data_len} outside 1..{MAX_DATA}", f"send 1..{MAX_DATA} bytes per DATA")
    if stream and len(raw) == size:
        return Packet(kind, session_id, packet_no=fields["packet_no"], data_len=data_len)
    body = raw[size:]
    if len(body) != data_len:
        raise ProtocolError(f"DATA says data_len {data_len} but carries {len(body)} bytes",
                            f"data_len must equal the bytes after the {DATA_HEADER}-byte header")
    return Packet(kind, session_id, packet_no=fields["packet_no"], data_len=data_len, data=bytes(body))


def session_of(raw: bytes) -> bytes:
    """The session id bytes of a packet, read without decoding the rest (it may be malformed)."""
    at = OFFSETS["session_id"]
    return bytes(raw[at:at + SESSION_ID_BYTES])


def new_session_id() -> bytes:
    """8 random bytes, as the client chooses them."""
    return os.urandom(SESSION_ID_BYTES)


if __name__ == "__main__":          # python -m wirelab.transfer.ppcb: print the table
    from ..wire.ppcb import describe
    print(describe())
