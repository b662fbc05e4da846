"""The measurement modes' wire format, as ONE table (like ``ppcb.py`` for PPCB).

Measurement sessions share PPCB's port but not its wire: their first byte
(0x80 and up) is no PPCB type, so a PPCB server tells them apart at once.

    HELLO      0x80 · u32 len · JSON {mode, packet, ...}      (udp: answered by 0x81 HELLO_ACK)
    RECORD     0x82 · u64 seq · u64 send_ns · padding          (packet bytes in all)
    END        0x83 · u64 records sent · padding               (answered by 0x84 REPORT)
               (tcp, HELLO with interval_s: no END; REPORT when the interval ends, unasked)
    REPORT     0x84 · u32 len · JSON: what the receiver saw
    ECHO       0x85 · u64 seq · u64 t1 · u64 t2 · u64 t3 · padding  (reply 0x86, t2/t3 filled)
    END_MARK   0x87 · u8 number · u16 0                        (udp, when asked: 4 B, never answered)

END_MARK is nttcp's end of a UDP transmission (document 002): after the last
record the sender sends three 4-byte datagrams 2 s apart, so that a receiver
which lost the last records still learns when the sending ended (one of three
arrives). wirelab's END/REPORT exchange does that job with retransmissions;
the markers are sent only when asked, to show what nttcp puts on the wire.

Standard library only: this module is read by students.
"""
from __future__ import annotations

import json
import struct

from ..errors import ProtocolError

__all__ = ["MAGIC", "HELLO_ACK", "RECORD", "END", "REPORT", "ECHO", "ECHO_REPLY", "REC", "REC_STAMP",
           "ECHO_HDR", "END_HDR", "END_MARK", "END_MARK_HDR", "END_MARKERS", "END_MARKER_GAP_S",
           "MIN_PACKET", "REPORT_SAMPLES", "SEQ_WINDOW", "json_packet",
           "parse_json_packet", "read_json", "same_host"]

MAGIC, HELLO_ACK, RECORD, END, REPORT, ECHO, ECHO_REPLY, END_MARK = 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87
REC = struct.Struct("!BQQ")          # type, seq, send_ns
REC_STAMP = struct.Struct("!QQ")     # just seq, send_ns (at offset 1): what a sender rewrites per record
ECHO_HDR = struct.Struct("!BQQQQ")   # type, seq, t1, t2, t3
END_HDR = struct.Struct("!BQ")       # type, records sent
END_MARK_HDR = struct.Struct("!BBH") # type, marker number, zero: nttcp's 4 B end marker
#: nttcp's UDP ending (document 002): this many markers, this far apart.
END_MARKERS, END_MARKER_GAP_S = 3, 2.0
MIN_PACKET = ECHO_HDR.size           # 33 B: every record must hold an ECHO header
#: At most this many delay samples travel in a UDP REPORT (it must fit one datagram).
REPORT_SAMPLES = 1500
#: A sequence number further than this past the highest seen is refused (no unbounded memory).
SEQ_WINDOW = 1 << 20



def json_packet(kind: int, obj: dict) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack("!BL", kind, len(body)) + body


def parse_json_packet(raw: bytes, kind: int) -> dict:
    if len(raw) < 5 or raw[0] != kind:
        raise ProtocolError(f"expected a {kind:#x} packet", "the peer is not a wirelab measurement end")
    (length,) = struct.unpack_from("!L", raw, 1)
    if length != len(raw) - 5:
        raise ProtocolError("JSON packet with a wrong length", "send the whole packet")
    try:
        return json.loads(raw[5:])
    except ValueError:
        raise ProtocolError("JSON packet that is not JSON", "the peer is not a wirelab measurement end") from None


def read_json(reader, kind: int, limit: int = 1 << 24) -> dict:
    """A JSON packet from a TCP ``StreamReader``."""
    head = reader.read(5)
    if head[0] != kind:
        raise ProtocolError(f"expected a {kind:#x} packet, got {head[0]:#x}", "check both ends are wirelab")
    (length,) = struct.unpack_from("!L", head, 1)
    if length > limit:
        raise ProtocolError(f"JSON packet of {length} B", f"at most {limit} B")
    return parse_json_packet(head + reader.read(length), kind)


def same_host(host: str) -> bool:
    """True when ``host`` is this machine's loopback (one clock for both ends)."""
    return host in ("localhost", "::1") or host.startswith("127.")
