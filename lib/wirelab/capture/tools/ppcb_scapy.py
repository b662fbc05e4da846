"""PPCB as a scapy layer: build any packet of notebooks/ppcb-protocol.md, malformed ones included, and parse captures.

One layer, ``PPCB``, for all seven packet types: the type byte decides which
fields follow, with the names of ppcb.md (``session_id``, ``protocol_id``,
``total_length``, ``packet_no``, ``data_len``, ``data``)::

    >>> from wirelab.capture.tools.ppcb_scapy import PPCB            # imports scapy (slow: import it when needed)
    >>> raw = bytes(PPCB(type="ACC", session_id=b"ABCDEFGH", packet_no=7))
    >>> len(raw), PPCB(raw).packet_no
    (17, 7)
    >>> pkt = IP(dst="10.77.0.2") / UDP(dport=5000) / PPCB(type="DATA", session_id=b"S" * 8, data=b"hi")

``data_len`` is computed from ``data`` unless given: ``PPCB(type="DATA",
data_len=99, data=b"abc")`` is the lie a bad-length test needs. An unknown
type (``type=9``) has only a session id. ``PPCB(raw)`` parses one packet; on
TCP, where packets follow each other on the stream, the rest of a segment
parses as the next ``PPCB``.

The fields are made from the packet table, ``wirelab.wire.ppcb`` (a field is
present in the types that carry it). Nothing is bound into scapy on import:
``bind_ppcb()`` makes scapy (and ``rdpcap``) decode UDP and TCP traffic to or
from port 5000 (the port ``wirelab grade`` uses), or another, as PPCB; the
grader and the notebooks call it where they start.
"""
from __future__ import annotations

from scapy.fields import (ByteEnumField, ConditionalField, FieldLenField, LongField, StrFixedLenField,
                          StrLenField)
from scapy.layers.inet import TCP, UDP
from scapy.packet import Packet, Raw, bind_bottom_up, bind_top_down

from ... import transports
from ...wire.ppcb import CARRIES, CODES, NUMBERED, SESSION_ID_BYTES, TYPES

__all__ = ["PPCB", "TYPES", "PROTOCOLS", "bind_ppcb", "DEFAULT_PORT"]

#: protocol_id → transport name
PROTOCOLS = transports.protocol_names()
#: The port ``bind_ppcb()`` binds by default (wirelab grade's servers listen there).
DEFAULT_PORT = 5000

_CONN, _DATA = CODES["CONN"], CODES["DATA"]


def _only(field, name: str):
    """``field`` present in the packet types that carry ``name`` (the table's CARRIES)."""
    return ConditionalField(field, lambda p, codes=CARRIES[name]: p.type in codes)


def _fields() -> list:
    """The layer's fields in wire order: u8 protocol_id, u64 total_length and packet_no, u32
    data_len (the table's struct letters B, Q, L; a test checks both give the same bytes)."""
    return [
        ByteEnumField("type", _DATA, TYPES),
        StrFixedLenField("session_id", b"\0" * SESSION_ID_BYTES, SESSION_ID_BYTES),
        _only(ByteEnumField("protocol_id", 3, PROTOCOLS), "protocol_id"),
        _only(LongField("total_length", 0), "total_length"),
        _only(LongField("packet_no", 0), "packet_no"),
        _only(FieldLenField("data_len", None, length_of="data", fmt="!I"), "data_len"),
        _only(StrLenField("data", b"", length_from=lambda p: p.data_len), "data"),
    ]


class PPCB(Packet):
    """One PPCB packet; fields present depend on ``type`` (see the module docstring)."""
    name = "PPCB"
    fields_desc = _fields()

    def guess_payload_class(self, payload):
        """What follows one packet: the next packet on a TCP stream, junk (Raw) in a datagram."""
        carrier = self.underlayer
        while isinstance(carrier, PPCB):
            carrier = carrier.underlayer
        if isinstance(carrier, TCP) and payload:
            return PPCB               # a stream: packets follow each other
        return Raw                    # a datagram holds one packet: anything after it is junk

    def mysummary(self):
        kind = TYPES.get(self.type, f"type {self.type}")
        text = f"PPCB {kind} session {self.session_id.hex()}"
        if self.type in NUMBERED:
            text += f" packet {self.packet_no}"
        if self.type == _DATA:
            text += f" {self.data_len} B"
        if self.type == _CONN:
            text += f" {PROTOCOLS.get(self.protocol_id, self.protocol_id)} {self.total_length} B"
        return text


def bind_ppcb(port: int = DEFAULT_PORT) -> None:
    """Decode UDP and TCP to or from ``port`` as PPCB (building sets the port too)."""
    for carrier in (UDP, TCP):
        bind_bottom_up(carrier, PPCB, dport=port)
        bind_bottom_up(carrier, PPCB, sport=port)
        bind_top_down(carrier, PPCB, sport=port, dport=port)   # building: both ports, unless given

