"""``read_capture``: a pcap or pcapng file → a pandas DataFrame, one row per frame.

Columns (missing values are <NA>; an unreadable header leaves its fields missing):

    time          seconds since the epoch (float; NaN for pcapng simple packet blocks)
    frame_len     bytes on the wire (as the capture saw them: no preamble, no FCS)
    cap_len       bytes the file holds (less than frame_len when the snaplen cut it)
    l3            "ipv4", "ipv6", "arp" or "other"
    src, dst      IP addresses as text (categorical)
    proto         "tcp", "udp", "icmp", "icmpv6", ... or "ip-proto-N"
    sport, dport  TCP/UDP ports
    ip_len        IP packet length, header included (IPv6: 40 + payload length)
    ttl           IPv4 TTL or IPv6 hop limit
    frag_offset, more_frags, ip_id     IP fragmentation (IPv6: from the fragment header)
    tcp_seq, tcp_ack, tcp_flags, tcp_win, tcp_hdr_len, tcp_opts_len
    tcp_mss, tcp_wscale                announced in SYN segments only
    payload_len   transport payload bytes in this frame (a later fragment: all its IP data)
    vlan          outer 802.1Q VLAN id
    linktype, iface                    link-layer type and pcapng interface index
    payload_offset                     where the transport payload starts in the frame
    file_offset                        where the frame starts in the file (to read payload bytes)

``df.attrs["capture"]`` holds the file format, the interfaces (name, link
type, snaplen, drops from pcapng statistics blocks) and notes about damage.
"""
from __future__ import annotations

import ipaddress
import mmap
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import CaptureError
from .dissect import L3_NAMES, dissect
from .fields import FileBytes
from .files import Records, read_records
from .formats import IP_PROTO

__all__ = ["read_capture", "capture_info"]

#: integer columns in the order they appear
INT_COLUMNS = ["sport", "dport", "ip_len", "ttl", "frag_offset", "ip_id", "tcp_seq", "tcp_ack",
               "tcp_flags", "tcp_win", "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan",
               "tcp_mss", "tcp_wscale", "payload_offset"]
COLUMNS = ["time", "frame_len", "cap_len", "l3", "src", "dst", "proto", "sport", "dport", "ip_len",
           "ttl", "frag_offset", "more_frags", "ip_id", "tcp_seq", "tcp_ack", "tcp_flags", "tcp_win",
           "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan", "tcp_mss", "tcp_wscale",
           "linktype", "iface", "payload_offset", "file_offset"]


def _buffer(source):
    """The file's bytes: a memory map for a path, the contents for a file object."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise CaptureError("the file object gives text, not bytes", "open it with mode 'rb'")
        return bytes(data)
    path = Path(os.fspath(source))
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise CaptureError(f"no capture file at {path}", "check the path (captures/ has examples)") from None
    except IsADirectoryError:
        raise CaptureError(f"{path} is a directory", "give a .pcap or .pcapng file") from None


def _int(values: np.ndarray, ok: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(values.astype(np.int64, copy=False), ~ok)


def _addresses(fields: dict) -> tuple[pd.Categorical, pd.Categorical]:
    """src and dst as categoricals sharing one set of address strings."""
    (s4, s4ok), (d4, d4ok) = fields["src4"], fields["dst4"]
    (s6, s6ok), (d6, d6ok) = fields["src6"], fields["dst6"]
    src = np.full(s4.size, -1, dtype=np.int64)
    dst = np.full(s4.size, -1, dtype=np.int64)
    codes4, uniq4 = pd.factorize(np.concatenate([s4[s4ok], d4[d4ok]]))
    names = [str(ipaddress.IPv4Address(int(a))) for a in uniq4]
    k = int(s4ok.sum())
    src[s4ok] = codes4[:k]
    dst[d4ok] = codes4[k:]
    if s6ok.any() or d6ok.any():
        six = np.concatenate([s6[s6ok], d6[d6ok]]).view("S16").ravel()
        codes6, uniq6 = pd.factorize(six)
        k = int(s6ok.sum())
        src[s6ok] = len(names) + codes6[:k]
        dst[d6ok] = len(names) + codes6[k:]
        names += [str(ipaddress.IPv6Address(bytes(a).ljust(16, b"\0"))) for a in uniq6]
    cats = pd.Index(names, dtype=object)
    return (pd.Categorical.from_codes(src, categories=cats),
            pd.Categorical.from_codes(dst, categories=cats))


def _protocols(fields: dict) -> pd.Categorical:
    proto, ok = fields["ip_proto"]
    numbers = np.flatnonzero(np.bincount(proto[ok], minlength=256))
    names = [IP_PROTO.get(int(p), f"ip-proto-{int(p)}") for p in numbers]
    table = np.full(256, -1, dtype=np.int64)
    table[numbers] = np.arange(numbers.size)
    codes = np.where(ok, table[proto & 0xFF], -1)
    return pd.Categorical.from_codes(codes, categories=names)


def frame_from_records(fb: FileBytes, rec: Records) -> pd.DataFrame:
    """Dissect every record and assemble the DataFrame."""
    linktype = rec.linktype
    fields = dissect(rec.headers, linktype, rec.frame_len)
    src, dst = _addresses(fields)
    data = {"time": rec.time, "frame_len": rec.frame_len, "cap_len": rec.cap_len,
            "l3": pd.Categorical.from_codes(fields["l3"].astype(np.int64), categories=L3_NAMES),
            "src": src, "dst": dst, "proto": _protocols(fields)}
    for name in INT_COLUMNS:
        data[name] = _int(*fields[name])
    more, ok = fields["more_frags"]
    data["more_frags"] = pd.arrays.BooleanArray(more, ~ok)
    data["linktype"] = linktype
    data["iface"] = rec.iface
    data["file_offset"] = rec.start
    df = pd.DataFrame({c: data[c] for c in COLUMNS}, copy=False)
    df.attrs["capture"] = capture_info(rec)
    return df


def capture_info(rec: Records) -> dict:
    """File-level facts: format, interfaces (with drop counts), notes."""
    return {"format": rec.format, "packets": int(rec.start.size), "notes": list(rec.notes),
            "interfaces": [vars(i).copy() for i in rec.interfaces]}


def read_capture(source) -> pd.DataFrame:
    """Read a pcap/pcapng file (path, bytes or binary file object) into a DataFrame.

    Raises ``CaptureError`` only when the input is not a capture at all;
    damage inside the file gives the readable packets and a note in
    ``df.attrs["capture"]["notes"]``.
    """
    buf = _buffer(source)
    fb = FileBytes(buf)
    return frame_from_records(fb, read_records(fb))
