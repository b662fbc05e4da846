"""Go-Back-N's wire: PPCB's packets and sizes, with a protocol id of its own (notebooks/ppcb-protocol.md,
"Go-Back-N: a fourth transport, not the assignment's").

Every packet is PPCB's (``wirelab.wire.ppcb.TABLE``: CONN, CONACC, CONRJT, DATA, ACC, RJT, RCVD,
same fields, same sizes); only CONN's ``protocol_id`` differs: 4, outside the assignment's three
(1 tcp, 2 udp, 3 udpr), so a strict PPCB server answers a Go-Back-N client with CONRJT instead of
misreading its window of DATA as a udpr session out of order. What changes is the meaning of ACC:

* ACC n is **cumulative**: the receiver holds every packet 0..n (in order); the sender may forget them.
* The receiver accepts only the next packet in order; any other DATA is discarded and answered
  with an ACC of the last packet received in order (none yet: no answer).
* RCVD acknowledges everything.

Standard library and ``wirelab.wire`` only (a student reads it beside ppcb.md; the registry reads it).
"""
from __future__ import annotations

from ...wire.ppcb import PROTOCOL_NAMES, build

__all__ = ["NAME", "PROTOCOL_ID", "MAX_WINDOW", "conn", "data", "acc", "is_ours"]

#: The name the kit's options use (``--proto gbn``).
NAME = "gbn"
#: CONN's protocol field for Go-Back-N: not one of the assignment's (1, 2, 3).
PROTOCOL_ID = 4
assert PROTOCOL_ID not in PROTOCOL_NAMES, "Go-Back-N must not borrow a PPCB protocol id"
#: The largest window: more would only fill the socket buffer; no link in the kit needs it.
MAX_WINDOW = 4096


def conn(session: bytes, total_length: int) -> bytes:
    """CONN announcing a Go-Back-N session of ``total_length`` bytes."""
    return build("CONN", session, protocol_id=PROTOCOL_ID, total_length=total_length)


def data(session: bytes, number: int, body: bytes) -> bytes:
    """DATA ``number`` carrying ``body`` (PPCB's layout, 21 B of header)."""
    return build("DATA", session, body, packet_no=number)


def acc(session: bytes, number: int) -> bytes:
    """ACC ``number``: every packet 0..``number`` arrived in order."""
    return build("ACC", session, packet_no=number)


def is_ours(packet) -> bool:
    """A CONN (``transfer.ppcb.Packet``) that asks for Go-Back-N."""
    return packet.kind == "CONN" and packet.protocol_id == PROTOCOL_ID
