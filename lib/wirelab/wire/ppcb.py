"""PPCB's packet table (notebooks/ppcb-protocol.md, "Packets"): type codes, sizes and field offsets, once.

Every packet starts with a type byte and an 8-byte session id; integers are
big-endian, no padding. One row per packet: its type code, the ``struct``
layout of its whole header, and the field names after the type byte. DATA is
the only packet with a body (``data``, 1..64000 bytes, its length in ``data_len``).
Everything else is derived from the table: header sizes, where each field
sits, which packets carry it.

    >>> HEADER_BYTES["DATA"], OFFSETS["data_len"], TYPES[5]
    (21, 17, 'ACC')

Whoever speaks PPCB reads this module: the programs (``transfer.ppcb``), the
capture reader, the scapy layer and the Lua dissector (``capture/tools/ppcb.lua``, its
table written by ``lua_table()``), the misbehaving peers (``wirelab.peers``), the
grader and the model. ``build`` lays any packet out by the table, the malformed
ones a misbehaving peer sends included (``transfer.ppcb.pack`` checks what a
correct program may send, then builds with it); ``give_up_s`` is how long a
peer keeps trying. Standard library only: a student reads it beside ppcb.md.
"""
from __future__ import annotations

import re
import struct

__all__ = ["TABLE", "CODES", "TYPES", "PROTOCOL_IDS", "PROTOCOL_NAMES", "MAX_DATA", "SESSION_ID_BYTES",
           "HEADER_BYTES", "HEADER_BY_CODE", "DATA_HEADER", "OFFSETS", "SIZES", "CARRIES", "NUMBERED",
           "build", "give_up_s", "lua_table", "describe"]

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
#: name → type code, and type code → name
CODES = {name: code for name, (code, _, _) in TABLE.items()}
TYPES = {code: name for name, code in CODES.items()}
#: CONN's protocol_id
PROTOCOL_IDS = {"tcp": 1, "udp": 2, "udpr": 3}
PROTOCOL_NAMES = {v: k for k, v in PROTOCOL_IDS.items()}
#: The largest DATA body the protocol allows (the smallest is 1 byte).
MAX_DATA = 64000
SESSION_ID_BYTES = 8
#: Header size of every packet, by name and by type code (DATA: without its body).
HEADER_BYTES = {name: struct.calcsize(fmt) for name, (_, fmt, _) in TABLE.items()}
HEADER_BY_CODE = {CODES[name]: size for name, size in HEADER_BYTES.items()}
#: DATA's header: the bytes before its body.
DATA_HEADER = HEADER_BYTES["DATA"]


def _layout() -> tuple[dict[str, int], dict[str, int], dict[str, frozenset[int]]]:
    """Each field's offset and size, and the type codes carrying it, read off the struct formats."""
    offsets, sizes, carries = {"type": 0}, {"type": 1}, {"type": frozenset(TYPES)}
    for code, fmt, fields in TABLE.values():
        at, codes = 1, re.findall(r"\d*[a-zA-Z]", fmt)[1:]          # ("B" of the type byte skipped)
        for field, letter in zip(fields, codes):
            size = struct.calcsize("!" + letter)
            if offsets.setdefault(field, at) != at or sizes.setdefault(field, size) != size:
                raise AssertionError(f"PPCB field {field} sits in two places")    # (the table is wrong)
            carries[field] = carries.get(field, frozenset()) | {code}
            at += size
    offsets["data"], carries["data"] = DATA_HEADER, frozenset({CODES["DATA"]})
    return offsets, sizes, carries


#: Byte offset of every field in the packets that carry it (the same in each): type 0,
#: session_id 1, protocol_id 9, total_length 10, packet_no 9, data_len 17, data 21.
#: SIZES: its bytes; CARRIES: the type codes that have it.
OFFSETS, SIZES, CARRIES = _layout()
#: Type codes that carry a packet number (DATA, ACC, RJT).
NUMBERED = CARRIES["packet_no"]


def build(kind: str | int, session_id: bytes, data: bytes = b"", **fields: int) -> bytes:
    """Any packet's bytes as the table lays it out, with no check: ``kind`` a name ("DATA") or any
    type code (one the table lacks, e.g. 9: a type byte and a session id); a field not given is 0;
    DATA's ``data_len`` is ``len(data)`` unless given (a lie a bad-length test needs).

        >>> build("DATA", b"SESSION1", b"abc", packet_no=2, data_len=99)[17:]
        b'\\x00\\x00\\x00cabc'
    """
    name = kind if isinstance(kind, str) else TYPES.get(kind)
    code, fmt, names = TABLE[name] if name else (kind, "!B8s", ("session_id",))
    if name == "DATA":
        fields.setdefault("data_len", len(data))
    header = struct.pack(fmt, code, session_id, *(fields.get(field, 0) for field in names[1:]))
    return header + data if name == "DATA" else header


def give_up_s(max_wait_s: float, max_retransmits: int) -> float:
    """How long a peer keeps trying before it gives up (ppcb.md, "udpr client"): one send plus
    MAX_RETRANSMITS resends, MAX_WAIT apart. (udp and tcp wait once: MAX_WAIT.)"""
    return max_wait_s * (max_retransmits + 1)


def lua_table() -> str:
    """The packet table as Lua: the block between ``-- BEGIN wire table`` and ``-- END wire table`` in
    ``capture/tools/ppcb.lua`` (a test keeps them equal; ``python -m wirelab.wire.ppcb --lua`` prints it)."""
    def _quoted(name: str) -> str:
        return '"' + name + '"'

    def table(items) -> str:
        return "{ " + ", ".join(f"[{k}] = {v}" for k, v in items) + " }"
    return "\n".join([
        f"local TYPES = {table((c, _quoted(n)) for c, n in TYPES.items())}",
        "local CODE = { " + ", ".join(f"{n} = {c}" for n, c in CODES.items()) + " }",
        "-- Header bytes by type (DATA without its data).",
        f"local HEADER = {table(HEADER_BY_CODE.items())}",
        f"local PROTOCOLS = {table((i, _quoted(n)) for i, n in PROTOCOL_NAMES.items())}",
        f"local MAX_DATA = {MAX_DATA}",
        "-- Where each field starts (bytes from the packet's start) and its size.",
        "local AT = { " + ", ".join(f"{f} = {o}" for f, o in OFFSETS.items() if f != "type") + " }",
        "local SIZE = { " + ", ".join(f"{f} = {s}" for f, s in SIZES.items() if f != "type") + " }",
    ])


def describe() -> str:
    """The table as text, one line a packet (``python -m wirelab.wire.ppcb`` prints it)."""
    lines = [f"{'packet':<8}{'type':>5}  {'bytes':>6}  fields (big-endian, after the type byte)"]
    for name, (code, fmt, names) in TABLE.items():
        extra = f" + data (1..{MAX_DATA} B)" if name == "DATA" else ""
        lines.append(f"{name:<8}{code:>5}  {HEADER_BYTES[name]:>6}  {', '.join(names)}{extra}   struct {fmt!r}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    print(lua_table() if sys.argv[1:] == ["--lua"] else describe())
