"""The usual packet, decoded in fewer passes: Ethernet-like link, IPv4 without options, TCP or UDP.

Most captures of a transfer are one kind of packet over and over: an
Ethernet (or Linux cooked) header, a 20-byte IPv4 header, then TCP or UDP.
For such a packet every header field sits at a fixed column of its row in
``Headers.rows``, so each field is one strided read written straight into
the output columns: no offsets to follow, no intermediate arrays, no masks
to combine. ``dissect`` does the same work for every shape of packet and
costs about twice as much.

``decode_fast`` tests every packet of a block (link type, EtherType 0x0800,
version/IHL 0x45, not a later fragment, TCP or UDP, 40 bytes of IP captured).
When most pass, it writes all rows this way and returns the others, which
``decode`` gives to ``dissect`` (the general decoder) to overwrite. The values
are the same as ``dissect``'s; ``tests/test_capture_fastpath.py`` compares
both paths column by column.
"""
from __future__ import annotations

import numpy as np

from .dissect import _syn_options
from .fields import Headers
from .formats import ETHERTYPE, IPV4, LINK_HEADER, TCP, UDP

__all__ = ["decode_fast", "IPV4_NO_OPTIONS"]

#: version 4, header length 5 words (20 bytes): the first byte of an IPv4 header without options
IPV4_NO_OPTIONS = 0x45
_TCP, _UDP = 6, 17
_V4 = 1                       # the ``l3`` code of IPv4 (dissect.L3_NAMES)
#: fill the fast columns when at least this share of a block is the usual packet
MIN_SHARE = 0.5
_IP_HEADER = 20


def _at(h: Headers, dtype: str, col: int) -> np.ndarray:
    """The field at column ``col`` of every row, as a strided view (no copy)."""
    return np.ndarray((h.size,), dtype=dtype, buffer=h.rows, offset=col, strides=(h.width,))


def _usual(h: Headers, link: tuple, c: int) -> tuple[np.ndarray, np.ndarray]:
    """Where a packet is the usual one (EtherType IPv4, IPv4 without options, not a later
    fragment, TCP or UDP, the link, IP and a TCP header's worth of bytes captured), and where
    it is TCP."""
    l3off, proto_at, _ = link
    fit = _at(h, ">u2", h._lead_const + proto_at) == ETHERTYPE["ipv4"]
    fit &= _at(h, "u1", c + IPV4["ihl"]) == IPV4_NO_OPTIONS
    word = _at(h, ">u4", c + IPV4["flags_frag"])            # flags/fragment offset · TTL · protocol
    fit &= (word & 0x1FFF0000) == 0
    proto = word & 0xFF
    tcp = proto == _TCP
    fit &= tcp | (proto == _UDP)
    fit &= h.cap_len >= l3off + _IP_HEADER + 20             # (a shorter UDP packet: dissect)
    return fit, tcp


def decode_fast(out: dict, rows: slice, h: Headers, linktype: np.ndarray,
                frame_len: np.ndarray) -> np.ndarray | None:
    """Write the dissected columns of block ``h`` into ``out[name][rows]`` the fast way, if most
    of its packets are the usual kind, and return the others (indices into the block: their
    rows are for ``dissect``). None (nothing written) when most are not."""
    n = h.size
    if n == 0 or h._lead_const is None or h.width < h._lead_const + 64:
        return None
    lt = int(linktype[0])
    link = LINK_HEADER.get(lt)
    if link is None or link[2] != "ethertype" or not (linktype == lt).all():
        return None
    l3off = link[0]
    c = h._lead_const + l3off                  # the IPv4 header's column in every row
    fit, tcp = _usual(h, link, c)
    misfits = np.flatnonzero(~fit)
    if misfits.size > n * (1 - MIN_SHARE):
        return None

    def put(name, value, ok=True):
        out[name][rows] = value
        out[name + "_ok"][rows] = ok

    out["l3"][rows] = _V4
    put("vlan", 0, False)
    out["src6_ok"][rows] = False
    out["dst6_ok"][rows] = False
    # ---- IPv4 (20 bytes, no options)
    ip_len = out["ip_len"][rows]
    ip_len[:] = _at(h, ">u2", c + IPV4["total_len"])
    tso = ip_len < _IP_HEADER                  # TSO/GSO: total length 0, the frame's length instead
    if tso.any():
        ip_len[tso] = frame_len[tso] - l3off
    out["ip_len_ok"][rows] = True
    put("ip_id", _at(h, ">u2", c + IPV4["id"]))
    put("frag_offset", 0)
    put("more_frags", (_at(h, "u1", c + IPV4["flags_frag"]) & 0x20) != 0)
    put("ttl", _at(h, "u1", c + IPV4["ttl"]))
    proto = _at(h, "u1", c + IPV4["proto"])
    put("ip_proto", proto)
    put("src4", _at(h, ">u4", c + IPV4["src"]))
    put("dst4", _at(h, ">u4", c + IPV4["dst"]))
    # ---- TCP or UDP, right after the IP header
    t = c + _IP_HEADER
    put("sport", _at(h, ">u2", t + TCP["sport"]))
    put("dport", _at(h, ">u2", t + TCP["dport"]))
    put("tcp_seq", _at(h, ">u4", t + TCP["seq"]), tcp)
    put("tcp_ack", _at(h, ">u4", t + TCP["ack"]), tcp)
    flags = _at(h, ">u2", t + TCP["flags"])
    put("tcp_flags", flags & 0x01FF, tcp)
    put("tcp_win", _at(h, ">u2", t + TCP["window"]), tcp)
    hdr_len = out["tcp_hdr_len"][rows]
    np.multiply(_at(h, "u1", t + TCP["data_offset"]) >> 4, 4, out=hdr_len)
    hdr_ok = tcp & (hdr_len >= 20)
    out["tcp_hdr_len_ok"][rows] = hdr_ok
    put("tcp_opts_len", hdr_len - 20, hdr_ok)
    l4_hdr = np.where(tcp, hdr_len, UDP["header"])
    payload = out["payload_len"][rows]
    np.subtract(ip_len - _IP_HEADER, l4_hdr, out=payload)
    payload_ok = (ip_len >= _IP_HEADER) & (payload >= 0) & (hdr_ok | ~tcp)
    out["payload_len_ok"][rows] = payload_ok
    put("payload_offset", l4_hdr + t - h._lead_const, payload_ok)
    syn = hdr_ok & ((flags & 0x02) != 0)
    if syn.any():
        for name, (value, ok) in _syn_options(h, np.full(n, l3off + _IP_HEADER), syn, hdr_len).items():
            put(name, value, ok)
    else:
        put("tcp_mss", 0, False)
        put("tcp_wscale", 0, False)
    return misfits
