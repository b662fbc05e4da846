"""Read link, IP and transport headers of every packet at once (numpy, no per-packet loop).

Each step works on all packets together: find where the network layer
starts for every packet (by link type, stepping over VLAN tags), read IPv4
or IPv6 (stepping over IPv6 extension headers, noting fragments), then TCP
or UDP. Every value comes with a mask saying whether it could be read; what
cannot be read (truncated, unknown protocol, later fragment) stays missing.
"""
from __future__ import annotations

import numpy as np

from .fields import Headers
from .formats import (AF_FAMILY, ETHERTYPE, IPV4, IPV6, IPV6_EXTENSION, IPV6_FRAG, LINK_HEADER,
                      TCP, UDP, VLAN_TAG_LEN)

__all__ = ["dissect", "L3_NAMES"]

#: codes of the ``l3`` column
L3_NAMES = ["other", "ipv4", "ipv6", "arp"]
_OTHER, _V4, _V6, _ARP = range(4)
_TCP, _UDP = 6, 17
TCP_OPTION_MSS, TCP_OPTION_WSCALE = 2, 3
#: up to this many SYNs in a block, their options are read one segment at a time
FEW_SYNS = 64


def _any_of(x: np.ndarray, values) -> np.ndarray:
    """x == any of a few values (faster than np.isin for a handful)."""
    out = np.zeros(x.shape, dtype=bool)
    for v in values:
        out |= x == v
    return out


def _same(values: np.ndarray, where: np.ndarray):
    """``values`` as one int when it is the same wherever ``where`` (the usual capture: one
    link type, no IP options), so reads take the fast fixed-column path; else the array."""
    if where.size == 0:
        return 0
    first = int(np.argmax(where))
    if not where[first]:
        return 0
    v = values[first]
    return int(v) if ((values == v) | ~where).all() else values


def _link(h: Headers, linktype: np.ndarray):
    """Network-layer offset, l3 code and outer VLAN id of every packet."""
    n = h.size
    l3off = np.zeros(n, dtype=np.int64)
    l3 = np.full(n, _OTHER, dtype=np.int8)
    ethertype = np.zeros(n, dtype=np.int64)
    has_et = np.zeros(n, dtype=bool)
    one = n and linktype[0] == linktype[-1] and (linktype == linktype[0]).all()
    for lt, (hdr, proto_at, kind) in LINK_HEADER.items():
        if one and lt != linktype[0]:
            continue
        rows = np.ones(n, dtype=bool) if one else linktype == lt     # one link type: no compare
        if not rows.any():
            continue
        l3off[rows] = hdr
        if kind == "ethertype":
            et, ok = h.be16(proto_at, rows)
            ethertype = np.where(ok, et, ethertype)
            has_et |= ok
        elif kind == "af":
            le, ok = h.le32(0, rows)
            be, _ = h.be32(0, rows)
            family = np.where(le <= 0xFF, le, be)
            for value, name in AF_FAMILY.items():
                l3[ok & (family == value)] = _V4 if name == "ipv4" else _V6
        else:
            version, ok = h.u8(0, rows)
            l3[ok & (version >> 4 == 4)] = _V4
            l3[ok & (version >> 4 == 6)] = _V6
    vlan = np.zeros(n, dtype=np.int64)
    vlan_ok = np.zeros(n, dtype=bool)
    for _ in range(2):                       # up to two tags (802.1Q, Q-in-Q)
        tagged = has_et & _any_of(ethertype, [ETHERTYPE["vlan"], ETHERTYPE["qinq"], ETHERTYPE["vlan_9100"]])
        if not tagged.any():
            break
        tci, ok = h.be16(l3off, tagged)
        first = ok & ~vlan_ok
        vlan[first] = tci[first] & 0x0FFF
        vlan_ok |= first
        et, ok2 = h.be16(l3off + 2, tagged)
        ethertype[tagged] = np.where(ok2[tagged], et[tagged], 0)
        has_et &= ~tagged | ok2
        l3off[tagged] += VLAN_TAG_LEN
    l3[has_et & (ethertype == ETHERTYPE["ipv4"])] = _V4
    l3[has_et & (ethertype == ETHERTYPE["ipv6"])] = _V6
    l3[has_et & (ethertype == ETHERTYPE["arp"])] = _ARP
    return l3off, l3, (vlan, vlan_ok)


def dissect(h: Headers, linktype: np.ndarray, frame_len: np.ndarray) -> dict:
    """All header fields of all packets: name → (values, readable mask)."""
    n = h.size
    l3off, l3, vlan = _link(h, linktype)
    l3at = _same(l3off, l3 != _OTHER)          # the network layer's offset for the reads
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {"vlan": vlan}
    i64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731  (no copy when already int64)

    # ---- IPv4
    v4 = l3 == _V4
    # fields that share a 32-bit word are read together (one pass over memory per word)
    w0, ok = h.be32(l3at + IPV4["ihl"], v4)              # version/IHL · TOS · total length
    b0 = w0 >> 24
    ihl = (b0 & 0x0F) * 4
    v4_ok = ok & (b0 >> 4 == 4) & (ihl >= IPV4["header"])
    total, tot_ok = w0 & 0xFFFF, v4_ok
    w1, id_ok = h.be32(l3at + IPV4["id"], v4_ok)         # identification · flags/fragment offset
    ident, ff, ff_ok = w1 >> 16, w1 & 0xFFFF, id_ok
    w2, ttl_ok = h.be16(l3at + IPV4["ttl"], v4_ok)       # TTL · protocol
    ttl, proto, proto_ok = w2 >> 8, w2 & 0xFF, ttl_ok
    both, src4_ok = h.read(">u8", l3at + IPV4["src"], v4_ok)   # source and destination: one read
    src4, dst4, dst4_ok = (both >> 32) & 0xFFFFFFFF, both & 0xFFFFFFFF, src4_ok
    ip_len = i64(total)
    ip_len_ok = tot_ok.copy()
    # TSO/GSO frames may carry total length 0: fall back to the frame's own length
    tso = tot_ok & (ip_len < ihl)
    ip_len[tso] = frame_len[tso] - l3off[tso]
    l4_data = np.where(v4_ok, ip_len - ihl, 0)
    l4off = l3off + ihl
    frag_offset = i64(ff & 0x1FFF) * 8
    more = (ff & 0x2000) != 0
    frag_ok = ff_ok.copy()
    ip_id = i64(ident)
    ttl = i64(ttl)
    proto = i64(proto)

    # ---- IPv6 (with extension headers)
    v6 = l3 == _V6
    no_address = (np.zeros((n, 16), dtype=np.uint8), np.zeros(n, dtype=bool))
    src6, src6_ok = dst6, dst6_ok = no_address
    v6_ok = np.zeros(n, dtype=bool)
    if v6.any():                             # an IPv4-only capture skips all of this
        b0, ok = h.u8(l3at, v6)
        v6_ok = ok & (b0 >> 4 == 6)
        plen, plen_ok = h.be16(l3at + IPV6["payload_len"], v6_ok)
        nh, nh_ok = h.u8(l3at + IPV6["next"], v6_ok)
        hop, hop_ok = h.u8(l3at + IPV6["hop_limit"], v6_ok)
        src6, src6_ok = h.block(l3at + IPV6["src"], 16, v6_ok)
        dst6, dst6_ok = h.block(l3at + IPV6["dst"], 16, v6_ok)
        nh = i64(nh)
        off6 = l3off + IPV6["header"]
        ext_len = np.zeros(n, dtype=np.int64)
        for _ in range(6):
            is_ext = nh_ok & _any_of(nh, IPV6_EXTENSION)
            if not is_ext.any():
                break
            nxt, nxt_ok = h.u8(off6, is_ext)
            hlen_raw, hl_ok = h.u8(off6 + 1, is_ext)
            length = np.where(nh == 44, 8, np.where(nh == 51, (i64(hlen_raw) + 2) * 4, (i64(hlen_raw) + 1) * 8))
            frag = is_ext & (nh == 44)
            fo, fo_ok = h.be16(off6 + IPV6_FRAG["offset_flags"], frag)
            fid, fid_ok = h.be32(off6 + IPV6_FRAG["id"], frag)
            frag_offset[fo_ok] = i64(fo[fo_ok] & 0xFFF8)
            more[fo_ok] = (fo[fo_ok] & 1) != 0
            frag_ok |= fo_ok
            ip_id[fid_ok] = i64(fid[fid_ok])
            id_ok |= fid_ok
            stuck = is_ext & ~(nxt_ok & (hl_ok | frag))
            nh_ok &= ~stuck
            adv = is_ext & ~stuck
            nh[adv] = nxt[adv]
            off6[adv] += length[adv]
            ext_len[adv] += length[adv]
        ip_len[plen_ok] = IPV6["header"] + i64(plen[plen_ok])
        ip_len_ok |= plen_ok
        jumbo = plen_ok & (plen == 0)
        ip_len[jumbo] = frame_len[jumbo] - l3off[jumbo]
        l4_data[plen_ok] = ip_len[plen_ok] - IPV6["header"] - ext_len[plen_ok]
        l4off[v6_ok] = off6[v6_ok]
        ttl[hop_ok] = i64(hop[hop_ok])
        ttl_ok |= hop_ok
        proto[nh_ok] = nh[nh_ok]
        proto_ok |= nh_ok

    out.update(ip_len=(ip_len, ip_len_ok), ttl=(ttl, ttl_ok), ip_id=(ip_id, id_ok),
               frag_offset=(frag_offset, frag_ok), more_frags=(more, frag_ok), ip_proto=(proto, proto_ok))
    out["l3"] = l3
    out["src4"], out["dst4"] = (src4, src4_ok), (dst4, dst4_ok)
    out["src6"], out["dst6"] = (src6, src6_ok), (dst6, dst6_ok)

    # ---- transport: only where the fragment offset is 0 (first fragment or whole packet)
    has_l4 = proto_ok & ~(frag_ok & (frag_offset > 0))
    tcp = has_l4 & (proto == _TCP)
    udp = has_l4 & (proto == _UDP)
    ports = tcp | udp
    l4at = _same(l4off, ports)                 # the transport header's offset for the reads
    pw, sport_ok = h.be32(l4at + TCP["sport"], ports)     # source port · destination port
    sport, dport, dport_ok = pw >> 16, pw & 0xFFFF, sport_ok
    both, seq_ok = h.read(">u8", l4at + TCP["seq"], tcp)        # sequence and ack numbers: one read
    seq, ack, ack_ok = (both >> 32) & 0xFFFFFFFF, both & 0xFFFFFFFF, seq_ok
    fw, flags_ok = h.be32(l4at + TCP["flags"], tcp)       # data offset/flags · window
    flags, win, win_ok = fw >> 16, fw & 0xFFFF, flags_ok
    hdr_len = i64(flags >> 12) * 4
    hdr_ok = flags_ok & (hdr_len >= TCP["header"])
    out.update(sport=(i64(sport), sport_ok), dport=(i64(dport), dport_ok), tcp_seq=(i64(seq), seq_ok),
               tcp_ack=(i64(ack), ack_ok), tcp_flags=(i64(flags & 0x01FF), flags_ok),
               tcp_win=(i64(win), win_ok), tcp_hdr_len=(hdr_len, hdr_ok),
               tcp_opts_len=(hdr_len - TCP["header"], hdr_ok))
    payload_ok = ip_len_ok & (v4_ok | v6_ok) & (l4_data >= 0)
    l4_hdr = np.where(tcp, hdr_len, np.where(udp, UDP["header"], 0))   # transport header bytes
    payload = l4_data - l4_hdr
    payload_ok &= (~tcp | hdr_ok) & (payload >= 0)
    out["payload_len"] = (payload, payload_ok)
    l4_hdr += l4off
    out["payload_offset"] = (l4_hdr, payload_ok)
    out.update(_syn_options(h, l4off, tcp & hdr_ok & ((flags & 0x02) != 0), hdr_len))
    return out


def _options_of_one(opts: bytes) -> dict:
    """MSS and window scale from one segment's option bytes: ``_syn_options`` for a few SYNs
    (a numpy pass per option costs more than plain Python on a handful of segments)."""
    out, at = {}, 0
    for _ in range(20):
        if at >= len(opts) or opts[at] == 0:       # end of the header, or end of option list
            break
        kind = opts[at]
        if kind == 1:                              # no-operation: one byte
            at += 1
            continue
        if at + 1 >= len(opts):
            break
        length = opts[at + 1]
        if kind == TCP_OPTION_MSS and length == 4 and at + 4 <= len(opts):
            out["mss"] = int.from_bytes(opts[at + 2:at + 4], "big")
        elif kind == TCP_OPTION_WSCALE and length == 3 and at + 3 <= len(opts):
            out["ws"] = opts[at + 2]
        if length < 2:
            break
        at += length
    return out


def _syn_options(h: Headers, l4off, syn, hdr_len) -> dict:
    """MSS and window scale announced in SYN segments (RFC 9293 §3.2, RFC 7323 §2).
    Only SYNs are read (few), straight from the file: one by one when there are a few,
    else a numpy pass per option."""
    n = h.size
    mss = np.zeros(n, dtype=np.int64)
    mss_ok = np.zeros(n, dtype=bool)
    ws = np.zeros(n, dtype=np.int64)
    ws_ok = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(syn)
    if rows.size == 0:
        return {"tcp_mss": (mss, mss_ok), "tcp_wscale": (ws, ws_ok)}
    base = h.start[rows]
    limit = np.minimum(l4off[rows] + hdr_len[rows], h.cap_len[rows])
    at = l4off[rows] + TCP["header"]
    if rows.size <= FEW_SYNS:
        for i, b, a, end in zip(rows.tolist(), base.tolist(), at.tolist(), limit.tolist()):
            found = _options_of_one(h.file.u8v[b + a:b + max(end, a)].tobytes())
            if "mss" in found:
                mss[i], mss_ok[i] = found["mss"], True
            if "ws" in found:
                ws[i], ws_ok[i] = found["ws"], True
        return {"tcp_mss": (mss, mss_ok), "tcp_wscale": (ws, ws_ok)}
    live = np.ones(rows.size, dtype=bool)
    f = h.file
    for _ in range(20):
        live &= at < limit
        if not live.any():
            break
        kind = f.u8(base + at).astype(np.int64)
        length = f.u8(base + at + 1).astype(np.int64)
        live &= kind != 0
        one = kind == 1
        has_len = live & ~one & (at + 1 < limit)
        is_mss = has_len & (kind == TCP_OPTION_MSS) & (length == 4) & (at + 4 <= limit)
        is_ws = has_len & (kind == TCP_OPTION_WSCALE) & (length == 3) & (at + 3 <= limit)
        mss[rows[is_mss]] = f.u16(base[is_mss] + at[is_mss] + 2, True)
        mss_ok[rows[is_mss]] = True
        ws[rows[is_ws]] = f.u8(base[is_ws] + at[is_ws] + 2)
        ws_ok[rows[is_ws]] = True
        live &= one | (has_len & (length >= 2))
        at = at + np.where(one, 1, length)
    return {"tcp_mss": (mss, mss_ok), "tcp_wscale": (ws, ws_ok)}
