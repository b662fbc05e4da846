"""The capture file formats and link layers, as tables (byte offsets, magic numbers).

Sources: the pcap format, draft-ietf-opsawg-pcap; the pcapng format,
draft-ietf-opsawg-pcapng; link-layer header types,
https://www.tcpdump.org/linktypes.html; Linux cooked capture v1/v2,
https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html and _SLL2.html.
"""
from __future__ import annotations

from ...wire.headers import IP_HEADER, TCP_HEADER, UDP_HEADER, VLAN_TAG

__all__ = ["PCAP_MAGIC", "PCAP_HEADER", "PCAP_RECORD", "PCAPNG", "BLOCK", "EPB", "PB", "SPB",
           "IDB_OPTIONS", "ISB_OPTIONS", "LINKTYPE", "LINK_HEADER", "LINK_NAMES", "ETHERTYPE", "AF_FAMILY",
           "IP_PROTO", "IPV6_EXTENSION", "IDB", "ISB", "IPV4", "IPV6", "IPV6_FRAG", "TCP", "UDP",
           "PCAP_HEADER_LEN", "VLAN_TAG_LEN", "RECORD_FORMATS"]

#: classic pcap magic (as read with the file's own byte order) → (ticks per second, record header bytes)
PCAP_MAGIC = {
    0xA1B2C3D4: (1_000_000, 16),        # microseconds
    0xA1B23C4D: (1_000_000_000, 16),    # nanoseconds
    0xA1B2CD34: (1_000_000, 24),        # "modified" pcap (Kuznetzov): 8 more bytes per record
}
#: the 24-byte file header: field → (offset, size)
PCAP_HEADER = {"magic": (0, 4), "version_major": (4, 2), "version_minor": (6, 2),
               "snaplen": (16, 4), "linktype": (20, 4)}
PCAP_HEADER_LEN = 24
#: each record header: field → offset (all u32)
PCAP_RECORD = {"ts_sec": 0, "ts_frac": 4, "incl_len": 8, "orig_len": 12}

#: pcapng: every block is type u32, total length u32, body, total length u32 again.
PCAPNG = {"shb_type": 0x0A0D0D0A, "byte_order_magic": 0x1A2B3C4D, "min_block": 12}
BLOCK = {"idb": 1, "pb": 2, "spb": 3, "nrb": 4, "isb": 5, "epb": 6, "shb": 0x0A0D0D0A}
#: Enhanced Packet Block: field → offset from the block start
EPB = {"interface": 8, "ts_high": 12, "ts_low": 16, "cap_len": 20, "orig_len": 24, "data": 28}
#: obsolete Packet Block (interface is u16 here)
PB = {"interface": 8, "ts_high": 12, "ts_low": 16, "cap_len": 20, "orig_len": 24, "data": 28}
#: Simple Packet Block: no timestamp, no interface (always interface 0)
SPB = {"orig_len": 8, "data": 12}
#: Interface Description Block: linktype u16 at 8, snaplen u32 at 12, options from 16
IDB = {"linktype": 8, "snaplen": 12, "options": 16}
IDB_OPTIONS = {"if_name": 2, "if_description": 3, "if_tsresol": 9, "if_filter": 11,
               "if_os": 12, "if_tsoffset": 14}
#: Interface Statistics Block: interface u32 at 8, timestamp at 12/16, options from 20
ISB = {"interface": 8, "options": 20}
ISB_OPTIONS = {"isb_starttime": 2, "isb_endtime": 3, "isb_ifrecv": 4, "isb_ifdrop": 5,
               "isb_filteraccept": 6, "isb_osdrop": 7, "isb_usrdeliv": 8}

#: the record formats as the compiled kernels number them (``jit``, ``walk_jit``, ``decode_jit``)
RECORD_FORMATS = {"pcap": 0, "pcapng": 1}

#: link-layer header types we dissect (tcpdump.org/linktypes.html)
LINKTYPE = {"null": 0, "ethernet": 1, "raw": 101, "loop": 108, "linux_sll": 113,
            "linux_sll2": 276, "ipv4": 228, "ipv6": 229, "raw_openbsd": 12, "raw_bsdos": 14}
#: link type → (bytes before the network layer, offset of the protocol field or None, its kind)
#: kind: "ethertype" (big-endian 16 bits), "af" (address family, host or network order), "ip" (sniff the version)
LINK_HEADER = {
    0: (4, 0, "af"), 108: (4, 0, "af"),
    1: (14, 12, "ethertype"),
    113: (16, 14, "ethertype"),
    276: (20, 0, "ethertype"),
    101: (0, None, "ip"), 12: (0, None, "ip"), 14: (0, None, "ip"),
    228: (0, None, "ip"), 229: (0, None, "ip"),
}
#: what each link type is called, as Wireshark's frame says it ("Encapsulation type")
LINK_NAMES = {0: "BSD loopback", 1: "Ethernet", 12: "raw IP", 14: "raw IP", 101: "raw IP",
              108: "OpenBSD loopback", 113: "Linux cooked", 228: "raw IPv4", 229: "raw IPv6",
              276: "Linux cooked v2"}
ETHERTYPE = {"ipv4": 0x0800, "arp": 0x0806, "vlan": 0x8100, "qinq": 0x88A8, "ipv6": 0x86DD,
             "vlan_9100": 0x9100}
VLAN_TAG_LEN = VLAN_TAG
#: BSD loopback address families: IPv4 is 2 everywhere; IPv6 differs by OS
AF_FAMILY = {2: "ipv4", 10: "ipv6", 24: "ipv6", 28: "ipv6", 30: "ipv6"}

#: IP protocol numbers (IANA) → name used in the ``proto`` column
IP_PROTO = {1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 47: "gre", 50: "esp", 51: "ah",
            58: "icmpv6", 89: "ospf", 103: "pim", 132: "sctp"}
#: IPv6 extension headers we step over: next-header value → how to get its length
#: ("8n": (hdr_ext_len + 1) * 8, "fixed8": 8 bytes (fragment), "ah": (len + 2) * 4)
IPV6_EXTENSION = {0: "8n", 43: "8n", 60: "8n", 135: "8n", 44: "fixed8", 51: "ah"}

#: IPv4 and TCP/UDP fixed parts: field → offset; "header": the fixed part's size (wire.headers)
IPV4 = {"ihl": 0, "total_len": 2, "id": 4, "flags_frag": 6, "ttl": 8, "proto": 9, "src": 12, "dst": 16,
        "header": IP_HEADER[4]}
IPV6 = {"payload_len": 4, "next": 6, "hop_limit": 7, "src": 8, "dst": 24, "header": IP_HEADER[6]}
IPV6_FRAG = {"next": 0, "offset_flags": 2, "id": 4}
TCP = {"sport": 0, "dport": 2, "seq": 4, "ack": 8, "data_offset": 12, "flags": 12, "window": 14,
       "header": TCP_HEADER}
UDP = {"sport": 0, "dport": 2, "length": 4, "header": UDP_HEADER}
