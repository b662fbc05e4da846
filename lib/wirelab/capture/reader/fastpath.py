"""The usual packet, decoded in fewer passes: IPv4 without options, TCP or UDP, over Ethernet, Linux
cooked capture, raw IP or BSD loopback.

Most captures of a transfer are one kind of packet over and over: a link
header (Ethernet, Linux cooked, BSD loopback's address family, or none for
raw IP), a 20-byte IPv4 header, then TCP or UDP.
For such a packet every header field sits at a fixed column of its row in
``Headers.rows``, so each field is one strided read written straight into
the output columns: no offsets to follow, no intermediate arrays, no masks
to combine. ``dissect`` does the same work for every shape of packet and
costs about twice as much (measured on bench/bench_capture.py's capture:
0.14 against 0.26 s of CPU per million packets, for the packet headers).

``decode_fast`` tests every packet of a block (link type, EtherType 0x0800
or address family 2, version/IHL 0x45, not a later fragment, TCP or UDP, 40 bytes of IP captured).
When most pass, it writes all rows this way and returns the others, which
``decode`` gives to ``dissect`` (the general decoder) to overwrite. The values
are the same as ``dissect``'s; ``tests/test_capture_fastpath.py`` compares
both paths column by column. ``decode_jit`` is this module compiled (one
loop over the records, numba): ``tests/test_capture_jit.py`` compares it too.
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
_AF_INET = 2                  # IPv4's address family on every BSD loopback (formats.AF_FAMILY)
#: fill the fast columns when at least this share of a block is the usual packet
MIN_SHARE = 0.5
_IP_HEADER, _TCP_HEADER = IPV4["header"], TCP["header"]


def _at(h: Headers, dtype: str, col: int) -> np.ndarray:
    """The field at column ``col`` of every row, as a strided view (no copy)."""
    return np.ndarray((h.size,), dtype=dtype, buffer=h.rows, offset=col, strides=(h.width,))


def _word(h: Headers, col: int, size: int = 8) -> np.ndarray:
    """The big-endian ``size`` bytes at column ``col`` of every row, as int64: several fields
    in one pass over the rows (each pass touches a cache line per packet), then taken apart
    with shifts on a small contiguous array."""
    return _at(h, ">i8" if size == 8 else ">u4", col).astype(np.int64)


def _bits(word: np.ndarray, shift: int, mask: int, out: np.ndarray | None = None) -> np.ndarray:
    """``(word >> shift) & mask``, into ``out`` when given."""
    out = np.right_shift(word, shift, out=out)
    return np.bitwise_and(out, mask, out=out)


def _usual(h: Headers, link: tuple, w0: np.ndarray, w1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where a packet is the usual one (EtherType IPv4, IPv4 without options, not a later
    fragment, TCP or UDP, the link, IP and a TCP header's worth of bytes captured), and where
    it is TCP. ``w0``, ``w1``: the IPv4 header's first two 8-byte words."""
    l3off, proto_at, kind = link
    fit = _bits(w0, 56, 0xFF) == IPV4_NO_OPTIONS           # (raw IP: the version says it all)
    if kind == "ethertype":
        fit &= _at(h, ">u2", h._lead_const + proto_at) == ETHERTYPE["ipv4"]
    elif kind == "af":                                      # BSD loopback: the family in either byte order
        fit &= (_at(h, "<u4", h._lead_const) == _AF_INET) | (_at(h, ">u4", h._lead_const) == _AF_INET)
    fit &= (w0 & 0x1FFF) == 0                                # fragment offset
    proto = _bits(w1, 48, 0xFF)
    tcp = proto == _TCP
    fit &= tcp | (proto == _UDP)
    fit &= h.cap_len >= l3off + _IP_HEADER + _TCP_HEADER             # (a shorter UDP packet: dissect)
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
    if link is None or not (linktype == lt).all():
        return None
    l3off = link[0]
    c = h._lead_const + l3off                  # the IPv4 header's column in every row
    # the IPv4 and TCP headers as five words (IPV4, TCP offsets: formats.py)
    w0 = _word(h, c)                           # version/IHL · TOS · total length · id · flags/fragment
    w1 = _word(h, c + IPV4["ttl"])             # TTL · protocol · checksum · source address
    fit, tcp = _usual(h, link, w0, w1)
    misfits = np.flatnonzero(~fit)
    if misfits.size > n * (1 - MIN_SHARE):
        return None
    t = c + _IP_HEADER                         # the transport header's column
    w2 = _word(h, c + IPV4["dst"])             # destination address · source port · destination port
    w3 = _word(h, t + TCP["seq"])              # sequence number · acknowledgment number
    w4 = _word(h, t + TCP["flags"], 4)         # data offset/flags · window

    def col(name, ok=True):
        """The column's rows of this block (to write into), its ``ok`` set."""
        out[name + "_ok"][rows] = ok
        return out[name][rows]

    out["l3"][rows] = _V4
    col("vlan", False)[:] = 0
    out["src6_ok"][rows] = False
    out["dst6_ok"][rows] = False
    # ---- IPv4 (20 bytes, no options)
    # (the columns are narrow, part.NARROW: computed in int64, then assigned)
    ip_len = _bits(w0, 32, 0xFFFF)
    tso = ip_len < _IP_HEADER                  # TSO/GSO: total length 0, the frame's length instead
    if tso.any():
        ip_len[tso] = frame_len[tso].astype(np.int64) - l3off
    col("ip_len")[:] = ip_len
    col("ip_id")[:] = _bits(w0, 16, 0xFFFF)
    col("frag_offset")[:] = 0
    np.not_equal(w0 & 0x2000, 0, out=col("more_frags"))
    col("ttl")[:] = _bits(w1, 56, 0xFF)
    col("ip_proto")[:] = _bits(w1, 48, 0xFF)
    col("src4")[:] = w1 & 0xFFFFFFFF
    col("dst4")[:] = _bits(w2, 32, 0xFFFFFFFF)
    # ---- TCP or UDP, right after the IP header
    col("sport")[:] = _bits(w2, 16, 0xFFFF)
    col("dport")[:] = w2 & 0xFFFF
    col("tcp_seq", tcp)[:] = _bits(w3, 32, 0xFFFFFFFF)
    col("tcp_ack", tcp)[:] = w3 & 0xFFFFFFFF
    flags = _bits(w4, 16, 0x01FF)
    col("tcp_flags", tcp)[:] = flags
    col("tcp_win", tcp)[:] = w4 & 0xFFFF
    hdr_len = _bits(w4, 28, 0xF) * 4
    out["tcp_hdr_len"][rows] = hdr_len
    hdr_ok = tcp & (hdr_len >= _TCP_HEADER)
    out["tcp_hdr_len_ok"][rows] = hdr_ok
    col("tcp_opts_len", hdr_ok)[:] = hdr_len - _TCP_HEADER
    l4_hdr = np.where(tcp, hdr_len, UDP["header"])
    payload = ip_len - _IP_HEADER - l4_hdr
    out["payload_len"][rows] = payload
    payload_ok = (ip_len >= _IP_HEADER) & (payload >= 0) & (hdr_ok | ~tcp)
    out["payload_len_ok"][rows] = payload_ok
    col("payload_offset", payload_ok)[:] = l4_hdr + (t - h._lead_const)
    syn = hdr_ok & ((flags & 0x02) != 0)
    if syn.any():
        for name, (value, ok) in _syn_options(h, np.full(n, l3off + _IP_HEADER), syn, hdr_len).items():
            col(name, ok)[:] = value
    else:
        col("tcp_mss", False)[:] = 0
        col("tcp_wscale", False)[:] = 0
    return misfits
