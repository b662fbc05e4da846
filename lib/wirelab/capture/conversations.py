"""Conversations (like ``tshark -z conv,tcp``) and traffic over time (like Wireshark's I/O graph).

A conversation is the pair of endpoints (address, port) in either order.
Endpoint "A" is the source of the conversation's first packet. Later IP
fragments carry no ports; they are given to the conversation of their first
fragment (same addresses, protocol and IP id), as tshark does after reassembly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UsageError

__all__ = ["conversation_ids", "flows", "io_graph"]


def conversation_ids(df: pd.DataFrame, *, later_fragments: bool = True) -> pd.DataFrame:
    """Per frame: ``conv`` (conversation number, -1 if none) and ``a_to_b`` (direction).
    ``later_fragments=False`` leaves port-less later IP fragments out (as ``tshark -z conv``)."""
    src = df["src"].cat.codes.to_numpy(np.int64)
    dst = df["dst"].cat.codes.to_numpy(np.int64)
    proto = df["proto"].cat.codes.to_numpy(np.int64)
    sport = df["sport"].fillna(-1).to_numpy(np.int64)
    dport = df["dport"].fillna(-1).to_numpy(np.int64)
    if later_fragments:
        sport, dport = _ports_of_later_fragments(df, src, dst, proto, sport, dport)
    valid = (src >= 0) & (dst >= 0) & (proto >= 0) & (sport >= 0) & (dport >= 0)
    forward = (src < dst) | ((src == dst) & (sport <= dport))
    lo_a = np.where(forward, src, dst)
    lo_p = np.where(forward, sport, dport)
    hi_a = np.where(forward, dst, src)
    hi_p = np.where(forward, dport, sport)
    keys = pd.DataFrame({"p": proto, "a": lo_a, "ap": lo_p, "b": hi_a, "bp": hi_p})[valid]
    conv = np.full(len(df), -1, dtype=np.int64)
    if len(keys):
        ids = keys.groupby(["p", "a", "ap", "b", "bp"], sort=False).ngroup().to_numpy()
        conv[valid] = ids
    # "A" is whoever sent the conversation's first packet
    first = pd.Series(np.arange(len(df)))[valid].groupby(conv[valid]).min()
    a_is_lo = np.zeros(int(conv.max()) + 1 if conv.size else 0, dtype=bool)
    a_is_lo[first.index.to_numpy()] = forward[first.to_numpy()]
    a_to_b = (conv >= 0) & (forward == a_is_lo[np.maximum(conv, 0)]) if a_is_lo.size else conv >= 0
    return pd.DataFrame({"conv": conv, "a_to_b": a_to_b}, index=df.index)


def _ports_of_later_fragments(df, src, dst, proto, sport, dport):
    """Later fragments take the ports of the first fragment of the same datagram."""
    frag = df["frag_offset"].fillna(0).to_numpy(np.int64)
    later = frag > 0
    if not later.any():
        return sport, dport
    ident = df["ip_id"].fillna(-1).to_numpy(np.int64)
    more = df["more_frags"].fillna(False).to_numpy(bool)
    first = (frag == 0) & more & (sport >= 0)
    key = pd.DataFrame({"s": src, "d": dst, "p": proto, "i": ident})
    heads = key[first].assign(sp=sport[first], dp=dport[first]).drop_duplicates(["s", "d", "p", "i"], keep="last")
    joined = key[later].merge(heads, on=["s", "d", "p", "i"], how="left")
    sport, dport = sport.copy(), dport.copy()
    sport[later] = joined["sp"].fillna(-1).to_numpy(np.int64)
    dport[later] = joined["dp"].fillna(-1).to_numpy(np.int64)
    return sport, dport


def flows(df: pd.DataFrame, *, min_packets: int = 1, later_fragments: bool = True) -> pd.DataFrame:
    """One row per conversation: packets and bytes each way, duration, goodput.

    ``bytes`` are frame bytes as captured (``frame_len``), as in ``tshark -z conv``.
    ``payload_a_to_b`` sums transport payload (retransmissions included).
    ``goodput_bps`` = payload of the busier direction · 8 / duration (first
    to last packet of the conversation); ``throughput_bps`` the same for frame bytes.
    """
    ids = conversation_ids(df, later_fragments=later_fragments)
    use = ids["conv"] >= 0
    d = pd.DataFrame({
        "conv": ids["conv"][use], "ab": ids["a_to_b"][use], "time": df["time"][use],
        "frame_len": df["frame_len"][use], "payload": df["payload_len"][use].fillna(0).astype(np.int64),
        "frame": np.flatnonzero(use.to_numpy())})
    cols = ["proto", "a", "a_port", "b", "b_port", "packets", "bytes", "packets_a_to_b", "bytes_a_to_b",
            "packets_b_to_a", "bytes_b_to_a", "payload_a_to_b", "payload_b_to_a", "start", "duration",
            "throughput_bps", "goodput_bps"]
    if d.empty:
        return pd.DataFrame(columns=cols)
    g = d.groupby("conv", sort=True)
    first = g["frame"].min()
    ab = d[d["ab"]].groupby("conv")
    ba = d[~d["ab"]].groupby("conv")
    sport = df["sport"].to_numpy(dtype=object, na_value=None)
    dport = df["dport"].to_numpy(dtype=object, na_value=None)
    out = pd.DataFrame({
        "proto": df["proto"].to_numpy()[first.to_numpy()],
        "a": df["src"].to_numpy()[first.to_numpy()], "a_port": sport[first.to_numpy()],
        "b": df["dst"].to_numpy()[first.to_numpy()], "b_port": dport[first.to_numpy()],
        "packets": g.size(), "bytes": g["frame_len"].sum(),
        "packets_a_to_b": ab.size(), "bytes_a_to_b": ab["frame_len"].sum(),
        "packets_b_to_a": ba.size(), "bytes_b_to_a": ba["frame_len"].sum(),
        "payload_a_to_b": ab["payload"].sum(), "payload_b_to_a": ba["payload"].sum(),
        "start": g["time"].min(), "duration": g["time"].max() - g["time"].min()})
    for c in ["packets_a_to_b", "bytes_a_to_b", "packets_b_to_a", "bytes_b_to_a",
              "payload_a_to_b", "payload_b_to_a"]:
        out[c] = out[c].fillna(0).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        dur = out["duration"].where(out["duration"] > 0)
        out["throughput_bps"] = out["bytes"] * 8 / dur
        out["goodput_bps"] = out[["payload_a_to_b", "payload_b_to_a"]].max(axis=1) * 8 / dur
    out = out[out["packets"] >= min_packets].sort_values("bytes", ascending=False, kind="stable")
    return out[cols].reset_index(drop=True)


def io_graph(df: pd.DataFrame, interval: float = 0.1, *, mask=None, marks: dict | None = None) -> pd.DataFrame:
    """Packets, bytes, throughput and goodput per ``interval`` seconds (Wireshark's I/O graph).

    ``mask`` selects frames (e.g. one direction of one flow); ``marks`` maps a
    column name to a boolean per frame (e.g. retransmissions) to count per bin.
    ``goodput_bps`` counts payload bytes, minus those in frames marked
    ``retransmission`` when that mark is given (only new data is goodput).
    """
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
