"""PPCB as a scapy layer: build any packet of shared/ppcb.md, malformed ones included, and parse captures.

One layer, ``PPCB``, for all seven packet types: the type byte decides which
fields follow, with the names of ppcb.md (``session_id``, ``protocol_id``,
``total_length``, ``packet_no``, ``data_len``, ``data``)::

    >>> from wirelab.capture.ppcb_scapy import PPCB            # imports scapy (slow: import it when needed)
    >>> raw = bytes(PPCB(type="ACC", session_id=b"ABCDEFGH", packet_no=7))
    >>> len(raw), PPCB(raw).packet_no
    (17, 7)
    >>> pkt = IP(dst="10.77.0.2") / UDP(dport=5000) / PPCB(type="DATA", session_id=b"S" * 8, data=b"hi")

``data_len`` is computed from ``data`` unless given: ``PPCB(type="DATA",
data_len=99, data=b"abc")`` is the lie a bad-length test needs. An unknown
type (``type=9``) has only a session id. ``PPCB(raw)`` parses one packet; on
TCP, where packets follow each other on the stream, the rest of a segment
parses as the next ``PPCB``. ``bind_ppcb(port)`` makes scapy (and
``rdpcap``) decode UDP and TCP traffic to or from ``port`` as PPCB; 5000,
the port ``wirelab grade`` uses, is bound on import.

The field table is written here from ppcb.md, independently of
``wirelab.transfer.ppcb`` (capture and transfer sit side by side); a test
checks that both give the same bytes for every type.
"""
from __future__ import annotations

from scapy.fields import (ByteEnumField, ConditionalField, FieldLenField, LongField, StrFixedLenField,
                          StrLenField)
from scapy.layers.inet import TCP, UDP
from scapy.packet import Packet, Raw, bind_bottom_up, bind_top_down

__all__ = ["PPCB", "TYPES", "PROTOCOLS", "bind_ppcb", "DEFAULT_PORT"]

#: type code → name (ppcb.md, "Packets")
TYPES = {1: "CONN", 2: "CONACC", 3: "CONRJT", 4: "DATA", 5: "ACC", 6: "RJT", 7: "RCVD"}
#: protocol_id → transport name
PROTOCOLS = {1: "tcp", 2: "udp", 3: "udpr"}
#: The port bound on import (wirelab grade's servers listen there).
DEFAULT_PORT = 5000

_NUMBERED = (4, 5, 6)        # DATA, ACC, RJT carry packet_no


class PPCB(Packet):
    """One PPCB packet; fields present depend on ``type`` (see the module docstring)."""
    name = "PPCB"
    fields_desc = [
        ByteEnumField("type", 4, TYPES),
        StrFixedLenField("session_id", b"\0" * 8, 8),
        ConditionalField(ByteEnumField("protocol_id", 3, PROTOCOLS), lambda p: p.type == 1),
        ConditionalField(LongField("total_length", 0), lambda p: p.type == 1),
        ConditionalField(LongField("packet_no", 0), lambda p: p.type in _NUMBERED),
        ConditionalField(FieldLenField("data_len", None, length_of="data", fmt="!I"),
                         lambda p: p.type == 4),
        ConditionalField(StrLenField("data", b"", length_from=lambda p: p.data_len),
                         lambda p: p.type == 4),
    ]

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
        if self.type in _NUMBERED:
            text += f" packet {self.packet_no}"
        if self.type == 4:
            text += f" {self.data_len} B"
        if self.type == 1:
            text += f" {PROTOCOLS.get(self.protocol_id, self.protocol_id)} {self.total_length} B"
        return text


def bind_ppcb(port: int) -> None:
    """Decode UDP and TCP to or from ``port`` as PPCB (building sets the port too)."""
    for carrier in (UDP, TCP):
        bind_bottom_up(carrier, PPCB, dport=port)
        bind_bottom_up(carrier, PPCB, sport=port)
        bind_top_down(carrier, PPCB, sport=port, dport=port)   # building: both ports, unless given


bind_ppcb(DEFAULT_PORT)
