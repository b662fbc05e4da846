"""The overhead read from the wire, from a capture dataset, in DuckDB SQL.

The same reading as ``overhead.read_overhead`` (read that module's docstring):
the main flow is the conversation direction carrying most payload; its full
segment is the most common payload (the largest when several are as common);
the rest follows from that segment's headers. Every step is a query, so a
flow of any length is read without holding it in memory.
"""
from __future__ import annotations

from ...errors import CaptureError
from ...wire.headers import ETHERNET_MTU, IPV4_MIN_MTU, IPV6_MIN_MTU, TCP_HEADER, VLAN_TAG
from ..overhead import WireOverhead, header_sizes, link_header_of, loopback_warning
from .flows import conversations
from .tcp import tcp_flags

__all__ = ["read_overhead", "capture_warnings"]


def _one(ds, query: str, params=()) -> tuple:
    return ds.con.execute(query, list(params)).fetchone()


def _mode(ds, column: str, rows: str, params=()) -> int:
    """The most common non-missing value of ``column`` in ``rows`` (largest of ties; 0 if none)."""
    got = _one(ds, f"""SELECT v FROM (SELECT {column} AS v FROM {rows}) WHERE v IS NOT NULL
                       GROUP BY v ORDER BY count(*) DESC, v DESC LIMIT 1""", params)
    return int(got[0]) if got else 0


def capture_warnings(ds) -> list[str]:
    """Things that make a capture show something other than the wire (as ``overhead.capture_warnings``)."""
    out = []
    cut, biggest = _one(ds, "SELECT count(*), max(cap_len) FROM packets WHERE cap_len < frame_len")
    if cut:
        out.append(f"snaplen cut {cut} of {len(ds)} frames (to {biggest} B): "
                   "headers are complete, payload bytes are not in the file")
    for i, iface in enumerate(ds.info.get("interfaces", [])):
        dropped = (iface.get("dropped") or 0) + (iface.get("os_dropped") or 0)
        if dropped:
            out.append(f"the capture dropped {dropped} packets on interface {iface.get('name') or i}: "
                       "counts and retransmissions may be wrong; use a capture filter or a bigger buffer (-B)")
    biggest, = _one(ds, """SELECT max(ip_len) FROM packets WHERE src IN ('127.0.0.1', '::1')
                           OR dst IN ('127.0.0.1', '::1')""")
    if biggest is not None and biggest > ETHERNET_MTU:
        out.append(loopback_warning(int(biggest)))
    for note in ds.info.get("notes", []):
        out.append(f"file: {note}")
    return out


def read_overhead(ds, *, conv: int | None = None) -> WireOverhead:
    """Read the overhead of the main flow (or conversation ``conv``) of a capture dataset."""
    con = ds.con
    ids = conversations(ds, later_fragments=True)
    if not _one(ds, f"SELECT count(*) FROM {ids}")[0]:
        raise CaptureError("no TCP or UDP conversation in this capture", "capture a transfer (tcp or udp)")
    pick = "" if conv is None else "WHERE i.conv = ?"
    main = _one(ds, f"""
        SELECT i.conv, i.a_to_b FROM {ids} i JOIN packets p USING (file_offset) {pick}
        GROUP BY i.conv, i.a_to_b ORDER BY sum(coalesce(p.payload_len, 0)) DESC, i.conv, i.a_to_b LIMIT 1""",
                [] if conv is None else [conv])
    if main is None:
        raise CaptureError(f"no conversation {conv} in this capture", "see flows() for the numbers")
    conv_id, ab = int(main[0]), bool(main[1])
    con.execute(f"""CREATE OR REPLACE TEMP TABLE overhead_d AS
        SELECT p.* FROM {ids} i JOIN packets p USING (file_offset)
        WHERE i.conv = ? AND i.a_to_b = ? ORDER BY p.file_offset""", [conv_id, ab])
    data = "(SELECT * FROM overhead_d WHERE coalesce(payload_len, 0) > 0)"
    n_data, payload_bytes, first_t, last_t, biggest = _one(
        ds, f"SELECT count(*), sum(payload_len), min(time), max(time), max(payload_len) FROM {data}")
    if not n_data:
        raise CaptureError("the main flow carries no payload", "capture the data transfer itself")
    proto, src, dst, frag, vlan, max_ip_len = _one(ds, """
        SELECT first(proto ORDER BY file_offset), first(src ORDER BY file_offset),
               first(dst ORDER BY file_offset),
               coalesce(bool_or(coalesce(more_frags, false) OR coalesce(frag_offset, 0) > 0), false),
               count(vlan) > 0, max(ip_len)
        FROM overhead_d""")
    proto, frag = str(proto), bool(frag)
    l3, = _one(ds, f"SELECT first(l3 ORDER BY file_offset) FROM {data}")
    ip_version = 6 if l3 == "ipv6" else 4
    if frag:        # a datagram's payload is spread over its fragments
        sizes = f"(SELECT sum(payload_len) AS s FROM {data} GROUP BY coalesce(ip_id, -1))"
        full = _mode(ds, "s", sizes)
        n_sizes, = _one(ds, f"SELECT count(*) FROM {sizes}")
        seg_payload = _mode(ds, "payload_len", data)
    else:
        full = _mode(ds, "payload_len", data)
        n_sizes, seg_payload = n_data, full
    segs = f"(SELECT * FROM {data} WHERE payload_len = {int(seg_payload)})"
    warnings = capture_warnings(ds)
    tcp_opts = _mode(ds, "tcp_opts_len", segs) if proto == "tcp" else 0
    ip_len = _mode(ds, "ip_len", segs)
    l4, ip_header = header_sizes(proto, tcp_opts, ip_version, ip_len, full, frag)
    mss, = _one(ds, f"SELECT min(p.tcp_mss) FROM {ids} i JOIN packets p USING (file_offset) "
                    "WHERE i.conv = ?", [conv_id])
    mss = int(mss) if mss is not None else None
    mtu = int(max_ip_len) if frag else int(ip_len or full + l4 + ip_header)
    if proto == "tcp" and mss and int(biggest) > mss:
        warnings.append(f"segments of up to {int(biggest)} B exceed the MSS of {mss} B: "
                        "segmentation offload (TSO/GSO/GRO) was on where this was captured; "
                        "turn it off (ethtool -K IFACE tso off gso off gro off) to see wire packets")
        mtu = mss + ip_header + TCP_HEADER
    unique = int(payload_bytes)
    if proto == "tcp":
        again, = _one(ds, f"""SELECT coalesce(sum(d.payload_len), 0) FROM {data} d
            JOIN {tcp_flags(ds)} f USING (file_offset) WHERE f.retransmission""")
        unique -= int(again)
    mtu = max(mtu, IPV6_MIN_MTU if ip_version == 6 else IPV4_MIN_MTU)
    frame_len = _mode(ds, "frame_len", segs)
    linktype = _mode(ds, "linktype", segs)
    # (as overhead.overhead_of: what came before the IP header, as the frames say)
    before_ip = (_mode(ds, f"payload_offset - {int(ip_header)} - {int(l4)}", segs) if not frag else 0) or \
        link_header_of(linktype) + VLAN_TAG * bool(vlan)
    con.execute("DROP TABLE overhead_d")
    return WireOverhead(
        proto=proto, conv=conv_id, src=str(src), dst=str(dst), ip_version=ip_version, vlan=bool(vlan),
        mss=mss, payload=int(full), tcp_options=int(tcp_opts), ip_header=int(ip_header), l4_header=int(l4),
        frame_len=frame_len,
        mtu=int(mtu), fragmented=frag, data_packets=int(n_sizes), payload_bytes=int(payload_bytes),
        unique_payload_bytes=unique, first_time=float(first_t), last_time=float(last_t),
        warnings=tuple(warnings), linktype=linktype, link_header=int(before_ip))
