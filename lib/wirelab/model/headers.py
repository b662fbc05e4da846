"""What each layer adds to a packet, in bytes: one protocol over one link (``HeaderStack``).

The sizes are the wire's (``wirelab.wire.headers``, with their sources: IEEE 802.3,
802.1Q, RFC 2516, 791, 8200, 9293, 7323, 768; ``wirelab.wire.ppcb`` for PPCB's
packets, notebooks/ppcb-protocol.md).

Two ways to count the link layer (``wire``):
  * ``"real"``: every byte the medium carries: 8 + 14 + 4 + 12 = 38 B/frame, and
    never less than 84 B (a 64 B minimum frame, IEEE 802.3 §4.4.2, + 20).
  * ``"emulated"``: what a Linux qdisc such as tbf charges, the skb length:
    the 14 B Ethernet header only, no preamble, FCS or gap.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError, UsageError
from ..wire.headers import (ETHERNET, ETHERNET_MTU, IP_HEADER, IPV6_MIN_MTU, MAX_IP_PACKET, PPPOE, PPPOE_MTU,
                            REAL_WIRE_FRAMING, REAL_WIRE_MIN_FRAME, TCP_MAX_OPTIONS, VLAN_TAG)
from ..wire.ppcb import HEADER_BYTES
from .. import transports

__all__ = ["ETHERNET", "PPCB_HEADER", "HeaderStack", "ethernet_overhead", "min_frame",
           "ip_header", "transport_header"]

#: PPCB packet sizes without data (notebooks/ppcb-protocol.md, "Packets").
PPCB_HEADER = HEADER_BYTES

WIRES = ("real", "emulated")


def ethernet_overhead(wire: str = "real", *, vlan: bool = False, pppoe: bool = False) -> int:
    """Bytes per frame outside the IP packet (802.3: 38 real, 14 as a qdisc counts)."""
    if wire not in WIRES:
        raise UsageError(f"unknown wire {wire!r}", "use 'real' (38 B/frame) or 'emulated' (14 B/frame)")
    base = REAL_WIRE_FRAMING if wire == "real" else ETHERNET["header"]
    return base + (VLAN_TAG if vlan else 0) + (PPPOE if pppoe else 0)


def min_frame(wire: str = "real") -> int:
    """Least bytes a frame takes: 84 on a real wire (64 B minimum frame + preamble, SFD and gap,
    IEEE 802.3 §4.4.2); 0 emulated (a qdisc charges the skb as it is, unpadded)."""
    ethernet_overhead(wire)
    return REAL_WIRE_MIN_FRAME if wire == "real" else 0


def ip_header(version: int = 4) -> int:
    """IPv4 20 B (RFC 791), IPv6 40 B (RFC 8200), without options."""
    if version not in IP_HEADER:
        raise UsageError(f"unknown IP version {version!r}", "use 4 or 6")
    return IP_HEADER[version]


def transport_header(proto: str, tcp_options: int = 0) -> int:
    """Transport bytes before the application data: the transport's ``header_layers``
    (``wirelab.transports``): TCP 20 + options (RFC 9293), UDP 8 (RFC 768), UDPR = UDP 8
    + PPCB DATA 21 (ppcb.md)."""
    transport = transports.get(proto)
    if transport.stream:
        if not 0 <= tcp_options <= TCP_MAX_OPTIONS or tcp_options % 4:
            raise ModelError(f"TCP options of {tcp_options} B are impossible",
                             "options are a multiple of 4 bytes, at most 40 (timestamps: 12)")
        return transport.header_bytes + tcp_options
    if tcp_options:
        raise UsageError(f"{proto} has no TCP options", "drop --tcp-options/--timestamps or use --proto tcp")
    return transport.header_bytes


@dataclass(frozen=True)
class HeaderStack:
    """One protocol over one link: everything needed to count overhead.

    ``mtu`` is the IP MTU (largest IP packet); with ``pppoe`` it defaults to 1492.
    """
    proto: str = "tcp"
    mtu: int | None = None
    ip_version: int = 4
    tcp_options: int = 0
    vlan: bool = False
    pppoe: bool = False
    wire: str = "real"

    def __post_init__(self):
        if self.mtu is None:
            object.__setattr__(self, "mtu", PPPOE_MTU if self.pppoe else ETHERNET_MTU)
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int):
            raise UsageError(f"MTU must be a whole number of bytes, not {self.mtu!r}", "e.g. 1500")
        if self.ip_version == 6 and self.mtu < IPV6_MIN_MTU:
            raise ModelError(f"MTU {self.mtu} B is below IPv6's minimum of {IPV6_MIN_MTU} B (RFC 8200)",
                             f"use --mtu {IPV6_MIN_MTU} or more, or --ip 4")
        smallest = self.l3 + self.l4 + (8 if self.transport.stream else 1)
        if self.mtu < smallest:
            raise ModelError(f"MTU {self.mtu} B is smaller than the {self.l3 + self.l4} B of "
                             f"{self.proto.upper()}/IPv{self.ip_version} headers",
                             f"use an MTU of at least {smallest} B (Ethernet: 1500)")
        if self.mtu > MAX_IP_PACKET:
            raise ModelError(f"MTU {self.mtu} B exceeds the {MAX_IP_PACKET} B IP packet limit",
                             f"use at most {MAX_IP_PACKET}")
        ethernet_overhead(self.wire)

    @property
    def transport(self) -> transports.Transport:
        """The protocol's facts (``wirelab.transports``)."""
        return transports.get(self.proto)

    @property
    def l2(self) -> int:
        """Link-layer bytes per frame (see ``ethernet_overhead``)."""
        return ethernet_overhead(self.wire, vlan=self.vlan, pppoe=self.pppoe)

    def frame(self, ip_bytes: int) -> int:
        """Bytes one frame carrying an IP packet of ``ip_bytes`` takes: + ``l2``, at least ``min_frame``."""
        return max(ip_bytes + self.l2, min_frame(self.wire))

    @property
    def l3(self) -> int:
        return ip_header(self.ip_version)

    @property
    def l4(self) -> int:
        return transport_header(self.proto, self.tcp_options)

    def layers(self) -> dict[str, int]:
        """Header bytes per full packet by layer, for a stacked bar."""
        l2 = {"ethernet": ETHERNET["header"]}
        if self.wire == "real":
            l2 = {"preamble+SFD": ETHERNET["preamble_sfd"], **l2,
                  "FCS": ETHERNET["fcs"], "inter-frame gap": ETHERNET["ifg"]}
        if self.vlan:
            l2["802.1Q"] = VLAN_TAG
        if self.pppoe:
            l2["PPPoE"] = PPPOE
        l4 = dict(self.transport.header_layers)
        if self.tcp_options:
            l4 = {**l4, "TCP options": self.tcp_options}
        return {**l2, f"IPv{self.ip_version}": self.l3, **l4}
