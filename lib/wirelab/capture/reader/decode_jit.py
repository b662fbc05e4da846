"""The usual packet and its record header, decoded by one compiled loop (numba).

``fastpath.py`` reads the usual packet (IPv4 without options, TCP or UDP,
over Ethernet, Linux cooked capture, BSD loopback or raw IP) with a few
numpy passes over a block of copied headers; the record header's fields
(times, lengths) come from ``pcap.py``/``pcapng.py`` the same way. This
module does the same in one pass per record, reading the file's bytes where
they are: each record's header and packet headers share one or two cache
lines, so they are fetched once, not once per field.

It writes exactly what ``fastpath.decode_fast`` and the reader's ``fields``
write, and leaves to ``dissect`` the same packets ``fastpath`` leaves (and
SYN segments too: their options are for ``dissect``). It covers the usual
files: classic pcap, and pcapng with one section and one interface whose
block holds only enhanced packet blocks; ``decode.py`` takes the numpy path
for anything else. ``tests/test_capture_jit.py`` checks both paths give the
same DataFrame.
"""
from __future__ import annotations

import numpy as np

from .fastpath import IPV4_NO_OPTIONS
from .formats import AF_FAMILY, BLOCK, EPB, ETHERTYPE, IPV4, LINK_HEADER, PCAP_RECORD, TCP, UDP
from .jit_build import PCAP, PCAPNG, njit, prefetch as _prefetch
from .part import allocate

__all__ = ["params", "usual", "records", "warm_up_steps"]

_ETHERTYPE, _AF, _IP = 0, 1, 2
# the tables of formats.py as numbers (numba reads a module's int constants, not its dicts)
_SEC, _FRAC, _INCL, _ORIG = (PCAP_RECORD[k] for k in ("ts_sec", "ts_frac", "incl_len", "orig_len"))
_IFACE, _TS_HIGH, _TS_LOW, _CAP, _WIRE = (EPB[k] for k in ("interface", "ts_high", "ts_low", "cap_len", "orig_len"))
_EPB_FIXED = EPB["data"] + 4                  # header and trailing length: what is not packet
_TOTAL, _ID, _FRAG, _TTL, _PROTO, _SRC, _DST = (IPV4[k] for k in ("total_len", "id", "flags_frag", "ttl", "proto",
                                                                 "src", "dst"))
_SPORT, _DPORT, _SEQ, _ACK, _TCP_FLAGS = (TCP[k] for k in ("sport", "dport", "seq", "ack", "flags"))
_IP_HEADER, _TCP_HEADER = IPV4["header"], TCP["header"]     # IPv4 without options; TCP's smallest header
_UDP_HEADER = UDP["header"]
_IPV4_ETHERTYPE = ETHERTYPE["ipv4"]
_AF_INET = next(af for af, name in AF_FAMILY.items() if name == "ipv4")
_TCP_PROTO, _UDP_PROTO = 6, 17
#: records between the one prefetched and the one decoded (measured: 8 to 16 is best)
AHEAD = 12
_LINK_KIND = {"ethertype": _ETHERTYPE, "af": _AF, "ip": _IP}
#: the columns the kernel writes, in the order of its ``cols`` tuple (index constants below)
COLUMNS = ("time", "frame_len", "cap_len", "iface", "linktype", "file_offset", "l3", "vlan", "vlan_ok",
           "src6_ok", "dst6_ok", "ip_len", "ip_len_ok", "ip_id", "ip_id_ok", "frag_offset", "frag_offset_ok",
           "more_frags", "more_frags_ok", "ttl", "ttl_ok", "ip_proto", "ip_proto_ok", "src4", "src4_ok",
           "dst4", "dst4_ok", "sport", "sport_ok", "dport", "dport_ok", "tcp_seq", "tcp_seq_ok", "tcp_ack",
           "tcp_ack_ok", "tcp_flags", "tcp_flags_ok", "tcp_win", "tcp_win_ok", "tcp_hdr_len", "tcp_hdr_len_ok",
           "tcp_opts_len", "tcp_opts_len_ok", "payload_len", "payload_len_ok", "payload_offset",
           "payload_offset_ok", "tcp_mss", "tcp_mss_ok", "tcp_wscale", "tcp_wscale_ok")
(TIME, FRAME_LEN, CAP_LEN, IFACE, LINKTYPE, FILE_OFFSET, L3, VLAN, VLAN_OK, SRC6_OK, DST6_OK, IP_LEN, IP_LEN_OK,
 IP_ID, IP_ID_OK, FRAG, FRAG_OK, MORE, MORE_OK, TTL, TTL_OK, PROTO, PROTO_OK, SRC4, SRC4_OK, DST4, DST4_OK,
 SPORT, SPORT_OK, DPORT, DPORT_OK, SEQ, SEQ_OK, ACK, ACK_OK, FLAGS, FLAGS_OK, WIN, WIN_OK, HDR, HDR_OK,
 OPTS, OPTS_OK, PAYLOAD, PAYLOAD_OK, PAYLOAD_AT, PAYLOAD_AT_OK, MSS, MSS_OK, WSCALE, WSCALE_OK) = range(len(COLUMNS))


@njit
def _get(buf, p, size, big):
    """The unsigned ``size``-byte integer at ``p``; bytes past the window read as 0 (as
    ``Headers`` rows are padded). Unsigned indices: no test for negative ones, and the
    compiler joins the byte reads into one."""
    v = np.int64(0)
    q = np.uint64(p)
    if p + size <= buf.size:                  # (nearly always: no test per byte)
        for b in range(size):
            v |= np.int64(buf[q + np.uint64(b)]) << (8 * (size - 1 - b) if big else 8 * b)
        return v
    for b in range(size):
        byte = np.int64(buf[q + np.uint64(b)]) if p + b < buf.size else np.int64(0)
        v |= byte << (8 * (size - 1 - b) if big else 8 * b)
    return v


@njit
def _be(buf, p, size):
    """Big-endian ``size`` bytes at ``p`` (the caller checked they are in the window)."""
    v = np.int64(0)
    q = np.uint64(p)
    for b in range(size):
        v = (v << 8) | np.int64(buf[q + np.uint64(b)])
    return v


@njit
def decode(buf, offs, lengths, fmt, big, ticks, ts_offset, base, lead, linktype0, l3off, link_kind,
           proto_at, cols, misfit):
    """Record fields of every record, and the usual packet's fields where it is one (else
    ``misfit[i]`` is set: ``dissect`` reads it). Returns how many name an undescribed interface."""
    n = buf.size
    undescribed = 0
    for i in range(offs.size):
        if i + AHEAD < offs.size:             # the record AHEAD records on: its header and its packet's
            ahead = offs[i + AHEAD]
            _prefetch(buf, ahead)
            _prefetch(buf, min(ahead + lead + 48, n - 1))     # (the IP and TCP headers' line)
        off = offs[i]
        s = off + lead                                # where the packet starts
        if fmt == PCAP:
            incl, orig = _get(buf, off + _INCL, 4, big), _get(buf, off + _ORIG, 4, big)
            cap = max(min(incl, n - s), 0)
            cols[TIME][i] = np.float64(_get(buf, off + _SEC, 4, big)) \
                + np.float64(_get(buf, off + _FRAC, 4, big)) / ticks
            iface = 0
        else:                                         # an enhanced packet block of interface 0
            iface = 0 if _get(buf, off + _IFACE, 4, big) == 0 else -1
            undescribed += iface != 0
            incl, orig = _get(buf, off + _CAP, 4, big), _get(buf, off + _WIRE, 4, big)
            cap = max(min(min(incl, lengths[i] - _EPB_FIXED), n - s), 0)
            ts = (np.uint64(_get(buf, off + _TS_HIGH, 4, big)) << np.uint64(32)) \
                | np.uint64(_get(buf, off + _TS_LOW, 4, big))
            t = np.float64(ts) / ticks
            if ts_offset != 0:
                t += np.float64(ts_offset)
            cols[TIME][i] = t
        cols[FRAME_LEN][i] = orig
        cols[CAP_LEN][i] = cap
        cols[IFACE][i] = iface
        cols[LINKTYPE][i] = linktype0 if iface == 0 else -1
        cols[FILE_OFFSET][i] = base + s
        # ---- the usual packet? (fastpath._usual, and not a SYN)
        # (every read below is then in the window)
        fit = iface == 0 and l3off >= 0 and cap >= l3off + _IP_HEADER + _TCP_HEADER
        c = s + l3off                                 # the IPv4 header
        if fit:
            if link_kind == _ETHERTYPE:
                fit = _be(buf, s + proto_at, 2) == _IPV4_ETHERTYPE
            elif link_kind == _AF:                    # (in either byte order)
                fit = _get(buf, s, 4, False) == _AF_INET or _get(buf, s, 4, True) == _AF_INET
            fit = fit and _be(buf, c, 1) == IPV4_NO_OPTIONS and (_be(buf, c + _FRAG, 2) & 0x1FFF) == 0
        proto = _be(buf, c + _PROTO, 1) if fit else 0
        tcp = proto == _TCP_PROTO
        t = c + _IP_HEADER                            # the transport header
        w4 = _be(buf, t + _TCP_FLAGS, 4) if fit else 0        # data offset/flags · window
        hdr_len = ((w4 >> 28) & 0xF) * 4
        flags = (w4 >> 16) & 0x01FF
        hdr_ok = tcp and hdr_len >= _TCP_HEADER
        if not fit or not (tcp or proto == _UDP_PROTO) or (hdr_ok and flags & 0x02):
            misfit[i] = True
            continue
        misfit[i] = False
        cols[L3][i] = 1
        # (no VLAN, IPv6 address, fragment offset, MSS or window scale: the zeros those columns
        # are allocated with, ``part.ZEROED``, are left as they are: pages never written cost
        # neither the kernel's zeroing nor the writes, a sixth of what a packet's columns take)
        ip_len = _be(buf, c + _TOTAL, 2)
        if ip_len < _IP_HEADER:                               # TSO/GSO: total length 0, the frame's length instead
            ip_len = orig - l3off
        cols[IP_LEN][i] = ip_len
        cols[IP_LEN_OK][i] = True
        cols[IP_ID][i] = _be(buf, c + _ID, 2)
        cols[IP_ID_OK][i] = True
        cols[FRAG_OK][i] = True
        cols[MORE][i] = (_be(buf, c + _FRAG, 2) & 0x2000) != 0
        cols[MORE_OK][i] = True
        cols[TTL][i] = _be(buf, c + _TTL, 1)
        cols[TTL_OK][i] = True
        cols[PROTO][i] = proto
        cols[PROTO_OK][i] = True
        cols[SRC4][i] = _be(buf, c + _SRC, 4)
        cols[SRC4_OK][i] = True
        cols[DST4][i] = _be(buf, c + _DST, 4)
        cols[DST4_OK][i] = True
        cols[SPORT][i] = _be(buf, t + _SPORT, 2)
        cols[SPORT_OK][i] = True
        cols[DPORT][i] = _be(buf, t + _DPORT, 2)
        cols[DPORT_OK][i] = True
        cols[SEQ][i] = _be(buf, t + _SEQ, 4)
        cols[SEQ_OK][i] = tcp
        cols[ACK][i] = _be(buf, t + _ACK, 4)
        cols[ACK_OK][i] = tcp
        cols[FLAGS][i] = flags
        cols[FLAGS_OK][i] = tcp
        cols[WIN][i] = w4 & 0xFFFF
        cols[WIN_OK][i] = tcp
        cols[HDR][i] = hdr_len
        cols[HDR_OK][i] = hdr_ok
        cols[OPTS][i] = hdr_len - _TCP_HEADER
        cols[OPTS_OK][i] = hdr_ok
        l4_hdr = hdr_len if tcp else _UDP_HEADER
        payload = ip_len - _IP_HEADER - l4_hdr
        payload_ok = ip_len >= _IP_HEADER and payload >= 0 and (hdr_ok or not tcp)
        cols[PAYLOAD][i] = payload
        cols[PAYLOAD_OK][i] = payload_ok
        cols[PAYLOAD_AT][i] = l4_hdr + l3off + _IP_HEADER
        cols[PAYLOAD_AT_OK][i] = payload_ok
    return undescribed


@njit
def records(buf, offs, fmt, big, ticks, ts_offset, time, frame_len):
    """``decode``'s record fields ``time`` and ``frame_len`` alone, by the same reads and sums
    (``reader/records.py``: the I/O graph of all frames needs no more)."""
    for i in range(offs.size):
        if i + AHEAD < offs.size:
            _prefetch(buf, offs[i + AHEAD])
        off = offs[i]
        if fmt == PCAP:
            frame_len[i] = _get(buf, off + _ORIG, 4, big)
            time[i] = np.float64(_get(buf, off + _SEC, 4, big)) + np.float64(_get(buf, off + _FRAC, 4, big)) / ticks
        else:
            frame_len[i] = _get(buf, off + _WIRE, 4, big)
            ts = (np.uint64(_get(buf, off + _TS_HIGH, 4, big)) << np.uint64(32)) \
                | np.uint64(_get(buf, off + _TS_LOW, 4, big))
            t = np.float64(ts) / ticks
            if ts_offset != 0:
                t += np.float64(ts_offset)
            time[i] = t


def params(reader, scan, pick: slice):
    """The kernel's description of a block's records (format, byte order, clock, where the packet
    starts, link type), or None when the block is not of the usual kind (numpy reads it)."""
    first = reader.interfaces[0] if reader.interfaces else None
    if first is None:
        return None
    if reader.format == "pcap":
        head = (PCAP, reader.big, reader.ticks, 0, reader.rec_len)
    else:
        order, kinds = scan.order[pick], scan.kinds[pick]
        if (len(reader.section_base) != 1 or len(reader.interfaces) != 1 or not order.size
                or not (order == order[0]).all() or not (kinds == BLOCK["epb"]).all()):
            return None
        head = (PCAPNG, bool(order[0]), first.ticks, first.ts_offset, EPB["data"])
    l3off, proto_at, kind = LINK_HEADER.get(first.linktype, (-1, None, "ip"))
    return head + (first.linktype, l3off, _LINK_KIND[kind], proto_at or 0)


def usual(out: dict, rows: slice, buf: np.ndarray, offs: np.ndarray, lengths: np.ndarray, base: int,
          described) -> tuple[np.ndarray, int]:
    """Run the kernel on one block (``described``: ``params``); returns the rows left to
    ``dissect`` (indices into the block) and how many name an undescribed interface."""
    fmt, big, ticks, ts_offset, lead, linktype0, l3off, link_kind, proto_at = described
    cols = tuple(out[name][rows] for name in COLUMNS)
    misfit = np.empty(offs.size, dtype=bool)
    undescribed = decode(buf, np.ascontiguousarray(offs, dtype=np.int64),
                         np.ascontiguousarray(lengths, dtype=np.int64), fmt, bool(big), float(ticks),
                         int(ts_offset), int(base), int(lead), int(linktype0), int(l3off), link_kind,
                         int(proto_at), cols, misfit)
    return np.flatnonzero(misfit), int(undescribed)


def warm_up_steps(walk_jit) -> list:
    """Calls that compile every kernel (or read it from the cache): the walk and the decode of a
    tiny capture, classic pcap (little-endian) and pcapng (big-endian). The calls' argument types
    are the ones ``jit.walker`` and ``usual`` give, so nothing is compiled again later."""
    frame = bytes(12) + b"\x08\x00" + bytes.fromhex("4500002800010000400600000a0000010a000002"
                                                   "0001000200000001000000025010ffff00000000")
    blen = 32 + len(frame)                    # (a multiple of 4)

    def words(values, big):
        return b"".join(int(v).to_bytes(4, "big" if big else "little") for v in values)

    pcap = words((1, 1, len(frame), len(frame)), False) + frame
    block = words((6, blen, 0, 0, 1, len(frame), len(frame)), True) + frame + words((blen,), True)
    steps = []
    for fmt, big, data, lead in ((PCAP, False, pcap * 3, 16), (PCAPNG, True, block * 3, EPB["data"])):
        buf = np.frombuffer(data, dtype=np.uint8)
        described = (fmt, big, 1_000_000, 0, lead, 1, 14, _ETHERTYPE, 12)

        def walk(buf=buf, fmt=fmt, big=big):
            return walk_jit.walk(buf, 0, fmt, big, 16, -1, False, 1_000_000, 262144, 0, 4)[0]

        def decode(buf=buf, walk=walk, described=described):
            offs = walk()
            usual(allocate(offs.size), slice(0, offs.size), buf, offs, np.full(offs.size, blen), 0, described)
            part = allocate(offs.size)
            records(buf, offs, described[0], described[1], float(described[2]), int(described[3]), part["time"],
                    part["frame_len"])
        steps += [walk, decode]
    return steps
