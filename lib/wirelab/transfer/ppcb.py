"""PPCB, the wire format behind tcp / udp / udpr (see shared/ppcb.md), as ONE table.

Every packet starts with a type byte and an 8-byte session id; integers are
big-endian, no padding. The table below is the whole format: name, type code,
struct layout after the type byte, and the field names. DATA is the only
packet with a body (``data``, 1..64000 bytes, length in ``data_len``).

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

__all__ = ["TABLE", "TYPES", "PROTOCOL_IDS", "PROTOCOL_NAMES", "MAX_DATA", "HEADER_BYTES",
           "Packet", "pack", "unpack", "header_size", "data_header", "new_session_id"]

#: name: (type code, struct format of the whole header, field names after "type").
#: "8s" is the session id (opaque bytes), Q = u64, L = u32, B = u8; "!" = network order.
TABLE: dict[str, tuple[int, str, tuple[str, ...]]] = {
    "CONN":   (1, "!B8sBQ", ("session_id", "protocol_id", "total_length")),   # 18 B
    "CONACC": (2, "!B8s",   ("session_id",)),                                  # 9 B
    "CONRJT": (3, "!B8s",   ("session_id",)),                                  # 9 B
    "DATA":   (4, "!B8sQL", ("session_id", "packet_no", "data_len")),          # 21 B + data
    "ACC":    (5, "!B8sQ",  ("session_id", "packet_no")),                      # 17 B
    "RJT":    (6, "!B8sQ",  ("session_id", "packet_no")),                      # 17 B
    "RCVD":   (7, "!B8s",   ("session_id",)),                                  # 9 B
}
#: type code → name
TYPES = {code: name for name, (code, _, _) in TABLE.items()}
PROTOCOL_IDS = {"tcp": 1, "udp": 2, "udpr": 3}
PROTOCOL_NAMES = {v: k for k, v in PROTOCOL_IDS.items()}
#: The largest DATA body the protocol allows.
MAX_DATA = 64000
#: Header size of every packet, by name (DATA: without its body).
HEADER_BYTES = {name: struct.calcsize(fmt) for name, (_, fmt, _) in TABLE.items()}
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
    code, _, names = TABLE[kind]
    if len(session_id) != 8:
        raise ProtocolError(f"session id must be 8 bytes, not {len(session_id)}",
                            "use new_session_id()")
    if kind == "DATA":
        if data is None or not 1 <= len(data) <= MAX_DATA:
            raise ProtocolError(f"DATA carries 1..{MAX_DATA} bytes, not {0 if data is None else len(data)}",
                                "split the input into smaller chunks")
        fields["data_len"] = len(data)
    values = [session_id] + [fields[name] for name in names[1:]]
    try:
        header = _STRUCTS[kind].pack(code, *values)
    except struct.error as err:
        raise ProtocolError(f"cannot pack {kind}: {err}", "check the field values") from None
    return header + data if kind == "DATA" else header


def data_header(session_id: bytes, packet_no: int, data_len: int) -> bytes:
    """Just the 21-byte DATA header (for senders that write header and body separately)."""
    return _STRUCTS["DATA"].pack(4, session_id, packet_no, data_len)


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
        raise ProtocolError(f"DATA data_len {data_len} outside 1..{MAX_DATA}", "send 1..64000 bytes per DATA")
    if stream and len(raw) == size:
        return Packet(kind, session_id, packet_no=fields["packet_no"], data_len=data_len)
    body = raw[size:]
    if len(body) != data_len:
        raise ProtocolError(f"DATA says data_len {data_len} but carries {len(body)} bytes",
                            "data_len must equal the bytes after the 21-byte header")
    return Packet(kind, session_id, packet_no=fields["packet_no"], data_len=data_len, data=bytes(body))


def new_session_id() -> bytes:
    """8 random bytes, as the client chooses them."""
    return os.urandom(8)


if __name__ == "__main__":          # python -m wirelab.transfer.ppcb: print the table
    print(f"{'packet':<8}{'type':>5}  {'bytes':>6}  fields (big-endian, after the type byte)")
    for name, (code, fmt, names) in TABLE.items():
        extra = " + data (1..64000 B)" if name == "DATA" else ""
        print(f"{name:<8}{code:>5}  {HEADER_BYTES[name]:>6}  {', '.join(names)}{extra}   struct {fmt!r}")
