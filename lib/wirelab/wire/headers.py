"""Header sizes of the wire, in bytes, once: what every layer of wirelab reads.

Sources: IEEE 802.3 clause 3-4 (Ethernet framing: preamble+SFD 8, header 14,
FCS 4, inter-frame gap 12 → 38 B per frame on a real wire); IEEE 802.1Q
(VLAN tag, 4 B); RFC 2516 (PPPoE, 6 B + 2 B PPP protocol, MTU 1492);
RFC 791 / RFC 8200 (IPv4 20 B, IPv6 40 B, IPv6 fragment header 8 B);
RFC 9293 (TCP 20 B + options; RFC 7323 timestamps use 10 B padded to 12);
RFC 768 (UDP 8 B).

Two ways to count the link layer:
  * a real wire carries 8 + 14 + 4 + 12 = 38 B around every IP packet (``REAL_WIRE_FRAMING``);
  * a Linux qdisc such as tbf, the userspace link and the relays charge the skb
    length: the IP packet + the 14 B Ethernet header (``frame_bytes``).

    >>> udp_payload(1500), tcp_payload(1500), tcp_payload(1500, timestamps=False), frame_bytes(1500)
    (1472, 1448, 1460, 1514)
"""
from __future__ import annotations

__all__ = ["ETHERNET", "ETHERNET_HEADER", "REAL_WIRE_FRAMING", "ETHERNET_MIN_FRAME", "REAL_WIRE_MIN_FRAME",
           "VLAN_TAG", "PPPOE", "PPPOE_MTU", "IP_HEADER",
           "IPV6_FRAGMENT_HEADER", "TCP_HEADER", "TCP_TIMESTAMPS", "TCP_MAX_OPTIONS", "UDP_HEADER",
           "ETHERNET_MTU", "IPV6_MIN_MTU", "IPV4_MIN_MTU", "MAX_IP_PACKET", "frame_bytes", "ip_and_udp",
           "udp_payload", "tcp_payload"]

#: IEEE 802.3 framing, bytes per frame.
ETHERNET = {"preamble_sfd": 8, "header": 14, "fcs": 4, "ifg": 12}
#: The part of it a capture (and a qdisc) sees.
ETHERNET_HEADER = ETHERNET["header"]
#: Everything a real wire carries around an IP packet: 38 B.
REAL_WIRE_FRAMING = sum(ETHERNET.values())
#: The shortest Ethernet frame (header to FCS, padded: IEEE 802.3 §4.4.2), and what it takes on
#: a real wire with its preamble, SFD and gap: 84 B.
ETHERNET_MIN_FRAME = 64
REAL_WIRE_MIN_FRAME = ETHERNET_MIN_FRAME + ETHERNET["preamble_sfd"] + ETHERNET["ifg"]
VLAN_TAG = 4
PPPOE = 8          # RFC 2516: PPPoE header 6 + PPP protocol field 2
IP_HEADER = {4: 20, 6: 40}
IPV6_FRAGMENT_HEADER = 8
TCP_HEADER = 20
TCP_TIMESTAMPS = 12
TCP_MAX_OPTIONS = 40
UDP_HEADER = 8
#: MTUs: Ethernet's, PPPoE's (1500 − 8), the smallest IPv6 (RFC 8200) and IPv4 (RFC 791) allow.
ETHERNET_MTU = 1500
PPPOE_MTU = ETHERNET_MTU - PPPOE
IPV6_MIN_MTU = 1280
IPV4_MIN_MTU = 68
#: The IP total length field is 16 bits.
MAX_IP_PACKET = 65535


def frame_bytes(ip_packet: int) -> int:
    """The frame a capture shows and a qdisc charges for an IP packet: + 14 B Ethernet header."""
    return ip_packet + ETHERNET_HEADER


def ip_and_udp(ip_version: int = 4) -> int:
    """The IP and UDP headers of one datagram: 28 B over IPv4, 48 B over IPv6."""
    return IP_HEADER[ip_version] + UDP_HEADER


def udp_payload(mtu: int = ETHERNET_MTU, ip_version: int = 4) -> int:
    """The largest UDP payload that does not fragment: MTU − 28 over IPv4 (− 48 over IPv6)."""
    return mtu - ip_and_udp(ip_version)


def tcp_payload(mtu: int = ETHERNET_MTU, ip_version: int = 4, *, timestamps: bool = True) -> int:
    """A full TCP segment's payload: MTU − 52 with timestamps (Linux's default), MTU − 40 without
    (the MSS a host announces), over IPv4; 20 B less over IPv6."""
    return mtu - IP_HEADER[ip_version] - TCP_HEADER - (TCP_TIMESTAMPS if timestamps else 0)
