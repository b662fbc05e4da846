"""The columns ``decode`` reads → the DataFrame ``read_capture`` gives (one row per frame).

Addresses become text categories (one set of strings shared by ``src`` and
``dst``), IP protocol numbers become names (``proto``), fields that could not
be read become <NA> in nullable integer columns. ``loader`` (the whole file)
and ``stream`` (chunks) both end here. ``frame`` and ``time_relative`` are Wireshark's
``frame.number`` (from 1, in file order) and ``frame.time_relative`` (seconds since the
file's first frame), whichever chunk a frame is in.
"""
from __future__ import annotations

import ipaddress

import numpy as np
import pandas as pd

from .part import Part
from .dissect import L3_NAMES
from .formats import IP_PROTO

__all__ = ["COLUMNS", "INT_COLUMNS", "frame_from_part", "frame_addresses", "first_time"]

#: integer columns in the order they appear
INT_COLUMNS = ["sport", "dport", "ip_len", "ttl", "frag_offset", "ip_id", "tcp_seq", "tcp_ack",
               "tcp_flags", "tcp_win", "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan",
               "tcp_mss", "tcp_wscale", "payload_offset"]
COLUMNS = ["frame", "time", "time_relative", "frame_len", "cap_len", "l3", "src", "dst", "proto", "sport", "dport", "ip_len",
           "ttl", "frag_offset", "more_frags", "ip_id", "tcp_seq", "tcp_ack", "tcp_flags", "tcp_win",
           "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan", "tcp_mss", "tcp_wscale",
           "linktype", "iface", "payload_offset", "file_offset"]


def _int(values: np.ndarray, ok: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(values.astype(np.int64, copy=False), ~ok)


def frame_addresses(part: Part) -> tuple[pd.Categorical, pd.Categorical]:
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


def first_time(part: Part) -> float | None:
    """The time of the part's first frame that has one (a pcapng simple packet block has none)."""
    time = part["time"]
    if time.size and not np.isnan(time[0]):           # (nearly always: no pass over the frames)
        return float(time[0])
    known = np.flatnonzero(~np.isnan(time))
    return float(time[known[0]]) if known.size else None


def frame_from_part(part: Part, info: dict | None = None, *, first_frame: int = 1,
                    start: float | None = None) -> pd.DataFrame:
    """Columns from ``decode`` → the DataFrame (``info`` goes to ``df.attrs["capture"]``);
    ``first_frame``: the number of the part's first frame, ``start``: the file's first time
    (None: the part's own, it starts the file)."""
    src, dst = frame_addresses(part)
    start = first_time(part) if start is None else start
    data = {"frame": np.arange(first_frame, first_frame + part["time"].size, dtype=np.int64),
            "time": part["time"], "time_relative": part["time"] - (np.nan if start is None else start),
            "frame_len": part["frame_len"].astype(np.int64), "cap_len": part["cap_len"].astype(np.int64),
            "l3": pd.Categorical.from_codes(part["l3"], categories=L3_NAMES),      # (int8 codes as they are)
            "src": src, "dst": dst, "proto": _protocols(part)}
    for name in INT_COLUMNS:
        data[name] = _int(part[name], part[name + "_ok"])
    data["more_frags"] = pd.arrays.BooleanArray(part["more_frags"], ~part["more_frags_ok"])
    for name in ("linktype", "iface", "file_offset"):
        data[name] = part[name].astype(np.int64, copy=False)      # (int32 in the reader: part.py)
    df = pd.DataFrame({c: data[c] for c in COLUMNS}, copy=False)
    if info is not None:
        df.attrs["capture"] = info
    return df

