"""Conversations (like ``tshark -z conv,tcp``) and traffic over time (like Wireshark's I/O graph).

A conversation is the pair of endpoints (address, port) in either order.
Endpoint "A" is the source of the conversation's first packet. Later IP
fragments carry no ports; they are given to the conversation of their first
fragment (same addresses, protocol and IP id), as tshark does after reassembly.

Two numbers name a conversation: ``conv`` counts every conversation, of any
protocol, in order of its first packet (the key to join frames on:
``conversation_ids`` gives it per frame); ``stream`` counts those of its own
protocol only, as Wireshark's ``tcp.stream`` and ``udp.stream`` do (a TCP
conversation after two UDP ones is ``conv`` 2 and ``stream`` 0, ``tcp.stream == 0``).

A TCP SYN (without ACK) on ports already in use begins a new conversation when its sequence
number is not that direction's first one in the current conversation (a resent SYN is not):
Wireshark's "A new tcp session is started with the same ports as an earlier session"
(``TCP_A_REUSED_PORTS``, epan/dissectors/packet-tcp.c 4.0; ``_split_reused``). Without it a
reused 4-tuple was one conversation, its second handshake "previous segment not captured".
(The DuckDB twin, ``sql/flows.py``, compares with the direction's last SYN instead of its
first segment: the same wherever each conversation begins with its SYN.)

The work is done on numpy columns (``frames.Frames``: ``conversations_of``,
``flow_table``), so ``wirelab analyze`` runs without pandas; ``conversation_ids``,
``flows`` and ``io_graph`` take and give DataFrames. The numbering has a compiled twin,
one pass with a hash table (``reader/number_jit.py``), used where the reader's kernels
are loaded (``reader.jit.numbering``); numpy is the reference (both give the same numbers,
``tests/test_capture_jit.py``).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from ..errors import UsageError
from .reader.frames import Frames

if TYPE_CHECKING:        # pandas only in annotations here; the functions import it when called (start-up)
    import pandas as pd

__all__ = ["conversation_ids", "conversation_numbers", "streams_of", "ranks_by_protocol", "flows", "io_graph", "conversations_of", "flow_table", "FLOW_COLUMNS",
           "first_seen_ids", "reused_ports"]

#: The flow table's columns, in order.
FLOW_COLUMNS = ["conv", "stream", "proto", "a", "a_port", "b", "b_port", "packets", "bytes", "packets_a_to_b", "bytes_a_to_b",
                "packets_b_to_a", "bytes_b_to_a", "payload_a_to_b", "payload_b_to_a", "start", "duration",
                "throughput_bps", "goodput_bps"]


def first_seen_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``keys`` (one key per row, integers) → group numbers in order of first appearance,
    and the row where each group first appears."""
    if keys.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return _first_seen(list(keys.T), keys)


def _first_seen(columns: list[np.ndarray], keys: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``first_seen_ids`` of the keys given as columns (``keys``: the same as rows, if at hand)."""
    packed = _one_number(columns)
    pandas = sys.modules.get("pandas")
    if packed is not None and pandas is not None:
        # pandas already loaded (a DataFrame came in): its hash table numbers the keys in order
        # of first appearance in one pass, 6x as fast as sorting them (np.unique) on 1M frames;
        # ``wirelab analyze`` runs without pandas and sorts
        ids = pandas.factorize(packed, sort=False)[0].astype(np.int64, copy=False)
        return ids, np.flatnonzero(np.diff(np.maximum.accumulate(ids), prepend=-1) > 0)
    if packed is None and keys is None:
        keys = np.stack(columns, axis=1)
    _, first, inverse = np.unique(keys if packed is None else packed, axis=0 if packed is None else None,
                                  return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[inverse.reshape(-1)], first[order]


def _one_number(columns: list[np.ndarray]) -> np.ndarray | None:
    """Each key (one element of each column, small integers) as one int64 (mixed radix), or
    None when they do not fit: one number sorts several times faster than a row."""
    low = [int(c.min()) for c in columns]
    spans = [int(c.max()) - lo + 1 for c, lo in zip(columns, low)]      # (Python ints: no overflow)
    if np.prod(np.array(spans, dtype=object)) >= 2 ** 62:
        return None
    out = np.zeros(columns[0].size, dtype=np.int64)
    for column, lo, span in zip(columns, low, spans):
        out *= span
        out += column
        out -= lo
    return out


def conversations_of(f: Frames, *, later_fragments: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: the conversation number (-1 if none; numbered in order of first packet) and
    whether it goes from A to B. ``later_fragments=False`` leaves port-less later IP fragments
    out (as ``tshark -z conv``)."""
    conv, a_to_b, _ = _conversations(f, later_fragments)
    return conv, a_to_b


def _conversations(f: Frames, later_fragments: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``conversations_of``, and the frame where each conversation begins."""
    src, dst, proto, sport, dport = f.src, f.dst, f.proto, f.sport, f.dport
    if later_fragments:
        sport, dport = _ports_of_later_fragments(f, sport, dport)
    compiled = _compiled(f)
    if compiled is not None:            # one pass, the same answer (reader/number_jit.py)
        columns = (src, dst, proto, sport, dport, f.tcp_flags, f.tcp_seq)
        # (int64, contiguous: the types it was compiled for, so it is never compiled again)
        return compiled.number(*(np.ascontiguousarray(c, dtype=np.int64) for c in columns), _code(f, "tcp"))
    valid = (src >= 0) & (dst >= 0) & (proto >= 0) & (sport >= 0) & (dport >= 0)
    forward = (src < dst) | ((src == dst) & (sport <= dport))
    if not valid.any():
        ids, first = first_seen_ids(np.zeros((0, 5), dtype=np.int64))
    else:                               # (column by column: no n × 5 copy of the keys)
        fw = forward[valid]
        vs, vd, vsp, vdp = src[valid], dst[valid], sport[valid], dport[valid]
        ids, first = _first_seen([proto[valid], np.where(fw, vs, vd), np.where(fw, vsp, vdp),
                                  np.where(fw, vd, vs), np.where(fw, vdp, vsp)])
        ids, first = _split_reused(f, np.flatnonzero(valid), ids, fw, first)
    conv = np.full(len(f), -1, dtype=np.int64)
    conv[valid] = ids
    # "A" is whoever sent the conversation's first packet
    begins = np.flatnonzero(valid)[first]
    a_is_lo = forward[begins]
    a_to_b = (conv >= 0) & (forward == a_is_lo[np.maximum(conv, 0)]) if a_is_lo.size else conv >= 0
    return conv, a_to_b, begins


def _compiled(f: Frames):
    """The compiled numbering when it is loaded (or pays for loading) and the codes fit its keys."""
    from .reader.jit import numbering            # (numba only when it pays: start-up)

    compiled = numbering(len(f))
    # (address keys below 2**32: raw IPv4 addresses fit, ``stats/numbered.py`` gives them so)
    if compiled is None or not len(f) or max(f.src.max(), f.dst.max()) >= 2 ** 32 or f.proto.max() >= 2 ** 31:
        return None
    return compiled


def _code(f: Frames, name: str) -> int:
    return f.protocols.index(name) if name in f.protocols else -1


def _split_reused(f: Frames, rows: np.ndarray, ids: np.ndarray, forward: np.ndarray, first: np.ndarray):
    """``ids`` (per frame ``rows``, a 5-tuple's group) split where a SYN reuses the ports (see the
    module docstring), renumbered in order of first frame; and each group's first row."""
    flags, seq = f.tcp_flags[rows], f.tcp_seq[rows]
    syn = (flags >= 0) & ((flags & 0x12) == 0x02) & f.protocol("tcp")[rows]
    syn[first] = False                             # (a group's first frame starts it anyway)
    if not syn.any():
        return ids, first
    order = np.argsort(ids, kind="stable")         # each group's rows, in frame order
    starts = np.searchsorted(ids[order], np.arange(int(ids.max()) + 2))
    sub = np.zeros(ids.size, dtype=np.int64)
    for gid in np.unique(ids[syn]):
        g = order[starts[gid]:starts[gid + 1]]
        begin, part = 0, 0                         # (positions in g)
        for at in np.flatnonzero(syn[g]):
            side = forward[g[begin:at]] == forward[g[at]]
            if not side.any():
                continue                           # this SYN sets its direction's base
            k = g[begin:at][np.argmax(side)]        # that direction's first frame here
            base = seq[k] if (flags[k] & 0x02) else (seq[k] - 1) % 2 ** 32
            if seq[g[at]] != base:
                part += 1
                begin = at
                sub[g[at:]] = part
    if not sub.any():
        return ids, first
    return first_seen_ids(np.stack([ids, sub], axis=1))


def reused_ports(f: Frames, conv: np.ndarray) -> np.ndarray:
    """Per frame: the SYN that began a conversation on ports an earlier one used."""
    out = np.zeros(len(f), dtype=bool)
    if not (conv >= 0).any():
        return out
    rows = np.flatnonzero(conv >= 0)
    begins = np.full(int(conv.max()) + 1, len(f), dtype=np.int64)     # each conversation's first frame
    np.minimum.at(begins, conv[rows], rows)                            # (one pass, no sort)
    begins = begins[begins < len(f)]
    src, dst, sport, dport = f.src[begins], f.dst[begins], f.sport[begins], f.dport[begins]
    forward = (src < dst) | ((src == dst) & (sport <= dport))
    keys = np.stack([f.proto[begins], np.where(forward, src, dst), np.where(forward, sport, dport),
                     np.where(forward, dst, src), np.where(forward, dport, sport)], axis=1)
    ids, first = first_seen_ids(keys)
    later = np.ones(begins.size, dtype=bool)
    later[first] = False
    out[begins[later]] = True
    return out


def _ports_of_later_fragments(f: Frames, sport: np.ndarray, dport: np.ndarray):
    """Later fragments take the ports of the (last) first fragment of the same datagram."""
    later = f.frag_offset > 0
    if not later.any():
        return sport, dport
    heads = (f.frag_offset <= 0) & f.more_frags & (sport >= 0)
    keys = np.stack([f.src, f.dst, f.proto, f.ip_id], axis=1)
    ids, _ = first_seen_ids(np.concatenate([keys[heads], keys[later]]))
    head_ids, later_ids = ids[:int(heads.sum())], ids[int(heads.sum()):]
    last = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    np.maximum.at(last, head_ids, np.arange(head_ids.size))
    at = last[later_ids]
    sport, dport = sport.copy(), dport.copy()
    sport[later] = np.where(at >= 0, sport[heads][np.maximum(at, 0)], -1)
    dport[later] = np.where(at >= 0, dport[heads][np.maximum(at, 0)], -1)
    return sport, dport


def streams_of(f: Frames, begins: np.ndarray) -> np.ndarray:
    """Per conversation (numbered in order of first packet, beginning at frames ``begins``): its
    number among the conversations of its own protocol (Wireshark's ``tcp.stream``, ``udp.stream``)."""
    return ranks_by_protocol(f.proto[begins])


def ranks_by_protocol(proto: np.ndarray) -> np.ndarray:
    """``streams_of`` given each conversation's protocol (in order of first packet)."""
    proto = np.asarray(proto, dtype=np.int64)
    order = np.argsort(proto, kind="stable")                # by protocol, each in order of appearance
    group_start = np.flatnonzero(np.diff(proto[order], prepend=-2))
    rank = np.arange(order.size) - np.repeat(group_start, np.diff(np.append(group_start, order.size)))
    out = np.empty(order.size, dtype=np.int64)
    out[order] = rank
    return out


def conversation_ids(df, *, later_fragments: bool = True):
    """Per frame of a ``read_capture`` DataFrame: ``conv`` (conversation number, -1 if none),
    ``a_to_b`` (direction) and ``stream`` (Wireshark's ``tcp.stream``/``udp.stream``, -1 if none),
    as a DataFrame with ``df``'s index (``conversations_of``)."""
    import pandas as pd                                 # (start-up: analyze reads no DataFrame)

    conv, a_to_b, stream = conversation_numbers(Frames.of(df), later_fragments=later_fragments)
    return pd.DataFrame({"conv": conv, "a_to_b": a_to_b, "stream": stream}, index=df.index)


def conversation_numbers(f: Frames, *, later_fragments: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``conversation_ids``' three columns (``conv``, ``a_to_b``, ``stream``) of ``f``'s frames as
    arrays. Any one-to-one codes of the addresses and protocols give the same numbers (which
    way is "forward" flips for every frame of a pair alike; ``stats/numbered.py`` gives raw
    IPv4 addresses and IP protocol numbers)."""
    conv, a_to_b, begins = _conversations(f, later_fragments)
    # (one gather: conversation -1, none, reads the -1 appended last)
    stream = np.append(streams_of(f, begins), -1)[conv] if begins.size else conv
    return conv, a_to_b, stream


def flow_table(f: Frames, *, min_packets: int = 1, later_fragments: bool = True) -> dict:
    """The flow table as columns (``FLOW_COLUMNS`` → arrays), biggest conversation first (see
    ``flows``)."""
    conv, a_to_b, first = _conversations(f, later_fragments)
    use = conv >= 0
    n = first.size
    c, ab = conv[use], a_to_b[use]
    frame_len, time = f.frame_len[use], f.time[use]
    payload = np.maximum(f.payload_len[use], 0)

    def count(where=None, weights=None):
        pick = slice(None) if where is None else where
        w = None if weights is None else weights[pick]
        return np.bincount(c[pick], weights=w, minlength=n).astype(np.int64)

    # first and last time of each conversation (NaN times left out, as pandas does)
    order = np.argsort(c, kind="stable")
    starts = np.flatnonzero(np.diff(c[order], prepend=-1))
    start = np.fmin.reduceat(time[order], starts) if n else np.zeros(0)
    duration = (np.fmax.reduceat(time[order], starts) if n else np.zeros(0)) - start
    table = {"conv": np.arange(n), "stream": streams_of(f, first),
             "proto": [f.protocols[p] for p in f.proto[first]],
             "a": [f.addresses[a] for a in f.src[first]], "a_port": _ports(f.sport[first]),
             "b": [f.addresses[b] for b in f.dst[first]], "b_port": _ports(f.dport[first]),
             "packets": count(), "bytes": count(weights=frame_len),
             "packets_a_to_b": count(ab), "bytes_a_to_b": count(ab, frame_len),
             "packets_b_to_a": count(~ab), "bytes_b_to_a": count(~ab, frame_len),
             "payload_a_to_b": count(ab, payload), "payload_b_to_a": count(~ab, payload),
             "start": start, "duration": duration}
    with np.errstate(divide="ignore", invalid="ignore"):
        seconds = np.where(duration > 0, duration, np.nan)
        table["throughput_bps"] = table["bytes"] * 8 / seconds
        table["goodput_bps"] = np.maximum(table["payload_a_to_b"], table["payload_b_to_a"]) * 8 / seconds
    keep = np.flatnonzero(table["packets"] >= min_packets)
    order = keep[np.argsort(-table["bytes"][keep], kind="stable")]
    return {name: ([values[i] for i in order] if isinstance(values, list) else values[order])
            for name, values in ((k, table[k]) for k in FLOW_COLUMNS)}


def _ports(values: np.ndarray) -> list:
    return [int(v) if v >= 0 else None for v in values]


def flows(df, *, min_packets: int = 1, later_fragments: bool = True):
    """One row per conversation: packets and bytes each way, duration, goodput.

    ``conv`` is the conversation's number (``conversation_ids`` gives it per frame: the key to
    join on), ``stream`` its number among those of its protocol (Wireshark's ``tcp.stream``).
    ``bytes`` are frame bytes as captured (``frame_len``), as in ``tshark -z conv``.
    ``payload_a_to_b`` sums transport payload (retransmissions included).
    ``goodput_bps`` = payload of the busier direction · 8 / duration (first
    to last packet of the conversation); ``throughput_bps`` the same for frame bytes.
    """
    import pandas as pd                                 # (start-up: analyze reads no DataFrame)

    table = flow_table(Frames.of(df), min_packets=min_packets, later_fragments=later_fragments)
    return pd.DataFrame({name: pd.Series(values, dtype=object) if name.endswith("_port") else values
                         for name, values in table.items()}, columns=FLOW_COLUMNS)


def io_graph(df: pd.DataFrame, interval: float = 0.1, *, mask=None, marks: dict | None = None) -> pd.DataFrame:
    """Packets, bytes, throughput and goodput per ``interval`` seconds (Wireshark's I/O graph).

    ``time`` is each bin's start in seconds since the capture's first frame, whatever ``mask``
    selects: the axis of the frames' ``time_relative``, so a flow's marks go at their
    ``time_relative`` (as Wireshark's I/O graph, which counts from the capture's start too).

    ``mask`` selects frames (e.g. one direction of one flow); ``marks`` maps a
    column name to a boolean per frame (e.g. retransmissions) to count per bin.
    ``goodput_bps`` counts payload bytes, minus those in frames marked
    ``retransmission`` when that mark is given (only new data is goodput).
    """
    import pandas as pd                                 # (start-up: analyze reads no DataFrame)

    if interval <= 0:
        raise UsageError(f"interval must be positive, not {interval}", "e.g. 0.1 (seconds)")
    keep = np.ones(len(df), dtype=bool) if mask is None else np.array(mask, dtype=bool)
    t = df["time"].to_numpy(np.float64)
    keep &= ~np.isnan(t)
    start = np.nanmin(t) if keep.any() else 0.0
    bins = np.floor((t[keep] - start) / interval).astype(np.int64)
    nbins = int(bins.max()) + 1 if bins.size else 0
    payload = df["payload_len"].fillna(0).to_numpy(np.int64)[keep]
    frame = df["frame_len"].to_numpy(np.int64)[keep]
    out = pd.DataFrame({"time": np.arange(nbins) * interval,
                        "packets": np.bincount(bins, minlength=nbins),
                        "bytes": np.bincount(bins, weights=frame, minlength=nbins).astype(np.int64)})
    new = payload.copy()
    for name, flag in (marks or {}).items():
        flag = np.asarray(flag, dtype=bool)[keep]
        out[name] = np.bincount(bins, weights=flag, minlength=nbins).astype(np.int64)
        if name == "retransmission":
            new = np.where(flag, 0, new)
    out["throughput_bps"] = out["bytes"] * 8 / interval
    out["goodput_bps"] = np.bincount(bins, weights=new, minlength=nbins) * 8 / interval
    return out
