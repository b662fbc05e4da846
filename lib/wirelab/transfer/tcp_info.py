"""The kernel's own view of a TCP connection: ``struct tcp_info``, read with getsockopt.

    info = tcp_info.read(sock)        # {"cwnd_segments": 10, "srtt_s": 0.0402, ...} or None
    tcp_info.parse(raw)               # every field of the struct, from the bytes the kernel gave

The layout is ``struct tcp_info`` of ``include/uapi/linux/tcp.h`` (Linux 6.x), field by
field in the table below; a kernel older than the table returns fewer bytes, and
only the fields it filled are read. Units as the kernel keeps them: times in µs,
rates in bytes per second, ``snd_cwnd`` in segments (``snd_mss`` bytes each). The
fields named ``RFC4898`` in the header are the TCP ESTATS MIB's (RFC 4898).
``summary`` turns the ones a live plot needs into SI units.
"""
from __future__ import annotations

import socket
import struct

__all__ = ["FIELDS", "parse", "read", "summary", "TCP_INFO_BYTES"]

#: (field, struct code) in the order of linux/tcp.h; "state" to "fastopen" are single bytes
#: (two of them bit fields: the window scales 4 + 4 bits, then app_limited 1, fastopen_fail 2).
FIELDS = (
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"), ("backoff", "B"),
    ("options", "B"), ("wscale", "B"), ("app_limited", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"), ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"), ("snd_ssthresh", "I"),
    ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"),
    ("rcv_rtt", "I"), ("rcv_space", "I"),
    ("total_retrans", "I"),
    ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"), ("bytes_received", "Q"),
    ("segs_out", "I"), ("segs_in", "I"),
    ("notsent_bytes", "I"), ("min_rtt", "I"), ("data_segs_in", "I"), ("data_segs_out", "I"),
    ("delivery_rate", "Q"),
    ("busy_time", "Q"), ("rwnd_limited", "Q"), ("sndbuf_limited", "Q"),
    ("delivered", "I"), ("delivered_ce", "I"),
    ("bytes_sent", "Q"), ("bytes_retrans", "Q"), ("dsack_dups", "I"), ("reord_seen", "I"),
    ("rcv_ooopack", "I"),
    ("snd_wnd", "I"),
)
#: Where each field starts (C alignment: every u64 here falls on a multiple of 8).
_LAYOUT = struct.Struct("=" + "".join(code for _, code in FIELDS))
_OFFSETS = []
_offset = 0
for _name, _code in FIELDS:
    _OFFSETS.append((_name, _code, _offset))
    _offset += struct.calcsize(_code)
#: Bytes to ask the kernel for: the whole table (it answers with what it has).
TCP_INFO_BYTES = _LAYOUT.size
#: Linux's names for ``ca_state`` (include/uapi/linux/tcp.h, enum tcp_ca_state).
CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")


def parse(raw: bytes) -> dict:
    """Every field the bytes hold (a shorter answer from an older kernel gives fewer)."""
    out = {}
    for name, code, offset in _OFFSETS:
        size = struct.calcsize(code)
        if offset + size > len(raw):
            break
        (out[name],) = struct.unpack_from("=" + code, raw, offset)
    if "wscale" in out:
        out["snd_wscale"], out["rcv_wscale"] = out["wscale"] & 0x0F, out["wscale"] >> 4
    return out


def read(sock: socket.socket) -> dict | None:
    """``parse`` of the socket's TCP_INFO now, or None (not TCP, closed, or no TCP_INFO here)."""
    try:
        return parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES))
    except (OSError, AttributeError):
        return None


def summary(info: dict | None) -> dict:
    """What a live plot of the sender needs, in SI units: cwnd (segments and bytes), smoothed
    RTT and its variation, the smallest RTT seen, retransmissions, slow-start threshold,
    pacing and delivery rate (bit/s), bytes acknowledged, sent and retransmitted."""
    if not info:
        return {}
    mss = info.get("snd_mss") or 0
    out = {"cwnd_segments": info.get("snd_cwnd"), "cwnd_bytes": (info.get("snd_cwnd") or 0) * mss,
           "mss_bytes": mss, "srtt_s": _us(info.get("rtt")), "rttvar_s": _us(info.get("rttvar")),
           "retransmissions": info.get("total_retrans"), "unacked_segments": info.get("unacked"),
           "ca_state": CA_STATES[info["ca_state"]] if info.get("ca_state", 99) < len(CA_STATES) else None}
    ssthresh = info.get("snd_ssthresh")
    out["ssthresh_segments"] = None if ssthresh is None or ssthresh >= 0x7FFFFFFF else ssthresh  # "infinite"
    for key, name in (("min_rtt", "min_rtt_s"),):
        if key in info:
            out[name] = None if info[key] in (0, 0xFFFFFFFF) else _us(info[key])
    for key, name in (("pacing_rate", "pacing_rate_bps"), ("delivery_rate", "delivery_rate_bps")):
        if key in info:
            out[name] = None if info[key] >= 2 ** 63 else 8.0 * info[key]     # ~0: no pacing set
    for key in ("bytes_acked", "bytes_sent", "bytes_retrans", "bytes_received"):
        if key in info:
            out[key] = info[key]
    return out


def _us(value) -> float | None:
    return None if value is None else value / 1e6
