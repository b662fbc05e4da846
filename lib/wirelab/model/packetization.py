"""Efficiency η = payload / bytes on the wire, and IP fragmentation.

Source: document 002 (η = S / (S + L4 + L3 + L2), L2 = 38 B); RFC 791 §2.3 and
RFC 8200 §4.5 (fragments carry multiples of 8 data bytes; IPv6 adds an 8 B
fragment header to each); Kent & Mogul, "Fragmentation considered harmful"
(1987): losing any fragment loses the datagram, so delivery = (1 − p)^k.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ModelError
from ..wire.headers import IPV6_FRAGMENT_HEADER, MAX_IP_PACKET
from .headers import HeaderStack

__all__ = ["Packetization", "max_payload", "packetize", "efficiency"]


def max_payload(stack: HeaderStack) -> int:
    """Largest payload that fits one packet: MTU − L3 − L4 (TCP: the MSS
    less options; UDP: MTU − 28 over IPv4; UDPR: MTU − 28 − 21)."""
    return stack.mtu - stack.l3 - stack.l4


@dataclass(frozen=True)
class Packetization:
    """How one application payload travels: IP packets and bytes on the wire."""
    stack: HeaderStack
    payload_bytes: int
    ip_packets: tuple[int, ...]   # size of each IP packet (segment or fragment)
    fragmented: bool              # True when one UDP datagram became several IP fragments

    @property
    def packets(self) -> int:
        """IP packets (TCP segments, or the fragments of one datagram)."""
        return len(self.ip_packets)

    @property
    def wire_bytes(self) -> int:
        """Bytes the link carries, link-layer overhead of every frame included (a real wire's
        minimum frame too)."""
        return sum(self.stack.frame(ip) for ip in self.ip_packets)

    @property
    def header_bytes(self) -> int:
        return self.wire_bytes - self.payload_bytes

    @property
    def efficiency(self) -> float:
        """η = payload / wire bytes (document 002)."""
        return self.payload_bytes / self.wire_bytes

    def delivery_probability(self, loss: float, unit: str = "packet") -> float:
        """P(datagram arrives) = (1 − p)^k for k fragments each lost alone (Kent & Mogul 1987);
        1 − p when the link draws one loss per datagram (``unit="datagram"``, a test link).
        TCP retransmits what it loses, so for TCP this is per-segment only."""
        return 1.0 - loss if unit == "datagram" else (1.0 - loss) ** self.packets

    def expected_lost(self, loss: float, datagrams: int) -> float:
        """Expected datagrams lost of ``datagrams`` sent: N·(1 − (1 − p)^k) (each
        datagram independently, Kent & Mogul 1987 for the k fragments)."""
        return datagrams * (1.0 - self.delivery_probability(loss))


def packetize(stack: HeaderStack, payload: int | None = None) -> Packetization:
    """Split one application write of ``payload`` bytes into IP packets.

    TCP cuts the stream into MSS-sized segments; UDP sends one datagram that
    IP fragments when it exceeds the MTU (RFC 791 / RFC 8200).
    """
    largest = max_payload(stack)
    if payload is None:
        payload = largest
    if isinstance(payload, bool) or not isinstance(payload, int) or payload < 1:
        raise ModelError(f"payload must be a whole number of bytes ≥ 1, not {payload!r}", "e.g. 1472")
    transport = stack.transport
    if transport.stream:
        full, rest = divmod(payload, largest)
        sizes = [largest] * full + ([rest] if rest else [])
        header = stack.l3 + stack.l4
        return Packetization(stack, payload, tuple(header + s for s in sizes), False)

    if transport.max_payload is not None and payload > transport.max_payload:
        raise ModelError(f"a PPCB DATA packet carries at most {transport.max_payload} B, not {payload}",
                         f"use --payload {transport.max_payload} or less")
    datagram = stack.l4 + payload  # UDP header (+ PPCB) and data: the IP payload
    limit = MAX_IP_PACKET - (stack.l3 if stack.ip_version == 4 else 0)
    if datagram > limit:
        raise ModelError(f"a {payload} B payload makes a {datagram} B datagram, over the "
                         f"{limit} B IP limit", f"use --payload {limit - stack.l4} or less")
    if datagram <= stack.mtu - stack.l3:
        return Packetization(stack, payload, (stack.l3 + datagram,), False)
    # Fragments: each carries a multiple of 8 data bytes, except the last.
    frag_header = stack.l3 + (IPV6_FRAGMENT_HEADER if stack.ip_version == 6 else 0)
    per_fragment = (stack.mtu - frag_header) // 8 * 8
    count = math.ceil(datagram / per_fragment)
    sizes = [per_fragment] * (count - 1) + [datagram - per_fragment * (count - 1)]
    return Packetization(stack, payload, tuple(frag_header + s for s in sizes), True)


def efficiency(stack: HeaderStack, payload: int | None = None) -> float:
    """η = S / (S + L4 + L3 + L2) for one write of ``payload`` (default: a full packet).
    Source: document 002; fragments each pay L3 + L2 (RFC 791)."""
    return packetize(stack, payload).efficiency

