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
    linktype, iface                    link-layer type and pcapng interface index (-1: not described)
    payload_offset                     where the transport payload starts in the frame
    file_offset                        where the frame starts in the file (to read payload bytes)

``df.attrs["capture"]`` holds the file format, the interfaces (name, link
type, snaplen, drops from pcapng statistics blocks) and notes about damage.

The file is read a window at a time (``decode``), so what it costs in memory
is the DataFrame, not the file. For a capture larger than memory, read it
in chunks with ``stream.iter_capture`` or convert it once into a parquet
dataset (``dataset.convert``) and query that with DuckDB.
"""
from __future__ import annotations

import ipaddress
import mmap
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import CaptureError
from .decode import Part, allocate, decode_into, grow, notes, scans, shrink
from .dissect import L3_NAMES
from .formats import IP_PROTO

__all__ = ["read_capture", "capture_info", "frame_from_part", "COLUMNS"]

#: read_capture keeps every packet in memory anyway: bigger windows of the file cost less per record
WHOLE_FILE_WINDOW = 512 << 20

#: integer columns in the order they appear
INT_COLUMNS = ["sport", "dport", "ip_len", "ttl", "frag_offset", "ip_id", "tcp_seq", "tcp_ack",
               "tcp_flags", "tcp_win", "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan",
               "tcp_mss", "tcp_wscale", "payload_offset"]
COLUMNS = ["time", "frame_len", "cap_len", "l3", "src", "dst", "proto", "sport", "dport", "ip_len",
           "ttl", "frag_offset", "more_frags", "ip_id", "tcp_seq", "tcp_ack", "tcp_flags", "tcp_win",
           "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan", "tcp_mss", "tcp_wscale",
           "linktype", "iface", "payload_offset", "file_offset"]


def _buffer(source):
    """The file's bytes: a memory map for a path, the contents for a file object
    (for the few readers that jump to payload bytes, e.g. ``udp_loss``)."""
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


def _addresses(part: Part) -> tuple[pd.Categorical, pd.Categorical]:
    """src and dst as categoricals sharing one set of address strings."""
    s4, s4ok, d4, d4ok = part["src4"], part["src4_ok"], part["dst4"], part["dst4_ok"]
    src = np.full(s4.size, -1, dtype=np.int64)
    dst = np.full(s4.size, -1, dtype=np.int64)
    if np.array_equal(s4ok, d4ok):
        # one hash lookup per packet, not two: factorize the (source, destination) pairs, then
        # the few distinct pairs. Addresses keep their order of first appearance, sources first:
        # a value first appears with the first pair that holds it
        every = bool(s4ok.all())             # (an IPv4-only capture: no selection, no copies)
        s, d = (s4, d4) if every else (s4[s4ok], d4[s4ok])
        pair_codes, pairs = pd.factorize((s.astype(np.int64) << 32) | d)
        ends = np.concatenate([(pairs >> 32) & 0xFFFFFFFF, pairs & 0xFFFFFFFF])   # (the shift kept the sign)
        end_codes, uniq4 = pd.factorize(ends)
        if every:
            src, dst = end_codes[:pairs.size][pair_codes], end_codes[pairs.size:][pair_codes]
        else:
            src[s4ok] = end_codes[:pairs.size][pair_codes]
            dst[d4ok] = end_codes[pairs.size:][pair_codes]
    else:
        codes4, uniq4 = pd.factorize(np.concatenate([s4[s4ok], d4[d4ok]]))
        k = int(s4ok.sum())
        src[s4ok] = codes4[:k]
        dst[d4ok] = codes4[k:]
    names = [str(ipaddress.IPv4Address(int(a))) for a in uniq4]
    s6, s6ok, d6, d6ok = part["src6"], part["src6_ok"], part["dst6"], part["dst6_ok"]
    if s6 is not None and (s6ok.any() or d6ok.any()):
        six = np.concatenate([s6[s6ok], d6[d6ok]]).view("S16").ravel()
        codes6, uniq6 = pd.factorize(six)
        k = int(s6ok.sum())
        src[s6ok] = len(names) + codes6[:k]
        dst[d6ok] = len(names) + codes6[k:]
        names += [str(ipaddress.IPv6Address(bytes(a).ljust(16, b"\0"))) for a in uniq6]
    cats = pd.Index(names, dtype=object)
    return (pd.Categorical.from_codes(src, categories=cats),
            pd.Categorical.from_codes(dst, categories=cats))


def _protocols(part: Part) -> pd.Categorical:
    proto, ok = part["ip_proto"], part["ip_proto_ok"]          # (uint8: 0 to 255)
    every = bool(ok.all())
    numbers = np.flatnonzero(np.bincount(proto if every else proto[ok], minlength=256))
    names = [IP_PROTO.get(int(p), f"ip-proto-{int(p)}") for p in numbers]
    table = np.full(256, -1, dtype=np.int16)
    table[numbers] = np.arange(numbers.size)
    codes = table[proto] if every else np.where(ok, table[proto], -1)
    return pd.Categorical.from_codes(codes, categories=names)


def frame_from_part(part: Part, info: dict | None = None) -> pd.DataFrame:
    """Columns from ``decode`` → the DataFrame (``info`` goes to ``df.attrs["capture"]``)."""
    src, dst = _addresses(part)
    data = {"time": part["time"], "frame_len": part["frame_len"], "cap_len": part["cap_len"],
            "l3": pd.Categorical.from_codes(part["l3"], categories=L3_NAMES),      # (int8 codes as they are)
            "src": src, "dst": dst, "proto": _protocols(part)}
    for name in INT_COLUMNS:
        data[name] = _int(part[name], part[name + "_ok"])
    data["more_frags"] = pd.arrays.BooleanArray(part["more_frags"], ~part["more_frags_ok"])
    for name in ("linktype", "iface", "file_offset"):
        data[name] = part[name]
    df = pd.DataFrame({c: data[c] for c in COLUMNS}, copy=False)
    if info is not None:
        df.attrs["capture"] = info
    return df


def capture_info(state: dict, packets: int) -> dict:
    """File-level facts: format, interfaces (with drop counts), notes."""
    reader = state["reader"]
    return {"format": reader.format, "packets": int(packets), "notes": notes(state),
            "interfaces": [vars(i).copy() for i in reader.interfaces]}


def read_capture(source, *, chunk_packets: int | None = None):
    """Read a pcap/pcapng file (path, bytes or binary file object) into a DataFrame.

    Raises ``CaptureError`` only when the input is not a capture at all;
    damage inside the file gives the readable packets and a note in
    ``df.attrs["capture"]["notes"]``. With ``chunk_packets`` it returns an
    iterator of DataFrames of at most that many rows instead (memory stays
    bounded whatever the file's size: ``stream.iter_capture``).
    """
    if chunk_packets is not None:
        from .stream import iter_capture
        return iter_capture(source, chunk_packets=chunk_packets)
    if hasattr(source, "read") and not _is_plain_file(source):
        source = _buffer(source)                 # a stream, BytesIO, a file read into: read it all
    state: dict = {}
    out, at = None, 0
    found = scans(source, window_bytes=WHOLE_FILE_WINDOW, state=state)
    decoding = None               # the previous window's decode, running beside the next scan
    # (windows here are memory maps or the bytes in memory, never a reused buffer: a stream was
    # read whole above, so a window stays valid while it decodes)
    with ThreadPoolExecutor(1) as background:
        while (item := next(found, None)) is not None:
            fb, base, scan = item
            del item              # (no reference to a window outlives its decode: two are mapped at most)
            if decoding is not None:
                decoding.result()                        # (its error, if any, is raised here)
            need = at + scan.offsets.size
            if out is None or need > out["time"].size:     # room for the rest of the file, estimated
                rest = state["windows"].size_after(base + fb.n)
                out = grow(out, at, need + int(rest * scan.offsets.size / max(fb.n, 1) * 1.05) + 64)
            decoding = background.submit(decode_into, out, at, fb, state["reader"], scan, base)
            at += scan.offsets.size
            del fb
        if decoding is not None:
            decoding.result()
    state["windows"].close()
    return frame_from_part(shrink(out or allocate(0), at), capture_info(state, at))


def _is_plain_file(f) -> bool:
    """A regular file object at its start (read through memory maps, not into memory)."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and f.tell() == 0
    except (AttributeError, OSError, ValueError):
        return False
