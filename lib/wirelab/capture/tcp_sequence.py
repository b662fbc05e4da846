"""TCP sequence analysis like Wireshark's ``tcp.analysis.*`` flags, vectorised per direction.

The rules (Wireshark 4.0, epan/dissectors/packet-tcp.c,
``tcp_analyze_sequence_number``), for each segment of one direction, where
*nextseq* is the highest seq + length seen so far in that direction and
*seglen* counts SYN and FIN as one byte:

* lost_segment: seq > nextseq ("previous segment not captured"), not RST.
* duplicate_ack: no data, no SYN/FIN/RST, window ≠ 0 and unchanged, seq =
  nextseq, ack = the previous ack of this direction.
* a segment carrying data with seq < nextseq (not a keep-alive) is, in order:
  fast_retransmission if the other direction has sent ≥ 2 duplicate ACKs for
  exactly this seq, the last under 20 ms ago; out_of_order if it came less
  than one handshake RTT (3 ms without a handshake; never if earlier) after the segment that
  set nextseq and does not end at nextseq; spurious_retransmission if the
  other side had already acknowledged all of it; otherwise retransmission.
  Wireshark marks fast and spurious ones as retransmissions too.

Sequence numbers are made relative per direction (32-bit wrap handled for
flows under 2 GiB per direction).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .conversations import conversation_ids

__all__ = ["tcp_analysis", "retransmission_summary", "FLAGS"]

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
FAST_RETRANSMIT_WINDOW = 0.020       # s, Wireshark's 20 ms
DEFAULT_OOO_THRESHOLD = 0.003        # s, without a handshake RTT
FLAGS = ["retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order",
         "lost_segment", "duplicate_ack"]


def _relative(x: np.ndarray, base: int) -> np.ndarray:
    """Signed distance from ``base`` modulo 2^32."""
    return ((x - base + 2 ** 31) % 2 ** 32) - 2 ** 31


def _cummax_with_time(end: np.ndarray, t: np.ndarray):
    """Before each packet: the highest ``end`` so far and the time it was first reached."""
    best = np.maximum.accumulate(end)
    prev_best = np.concatenate([[np.iinfo(np.int64).min], best[:-1]])
    new = end > prev_best
    idx = np.maximum.accumulate(np.where(new, np.arange(end.size), 0))
    best_time = t[idx]
    return np.concatenate([[np.iinfo(np.int64).min], best[:-1]]), np.concatenate([[np.nan], best_time[:-1]])


def _direction(d: pd.DataFrame, base: int, rev_ack_base: int) -> pd.DataFrame:
    """Per-direction state: nextseq before each packet, dup acks, lost segments."""
    seq = _relative(d["seq"].to_numpy(), base)
    ack = _relative(d["ack"].to_numpy(), rev_ack_base)
    flags = d["flags"].to_numpy()
    seglen = d["len"].to_numpy() + ((flags & SYN) > 0) + ((flags & FIN) > 0)
    t = d["time"].to_numpy()
    win = d["win"].to_numpy()
    end = seq + seglen
    nextseq, nexttime = _cummax_with_time(end, t)
    first = np.arange(seq.size) == 0
    has_ack = (flags & ACK) > 0
    # the previous ack and window of this direction (Wireshark keeps the last seen)
    prev_ack = pd.Series(np.where(has_ack, ack, np.nan)).ffill().shift(1).to_numpy()
    prev_win = np.concatenate([[-1], win[:-1]])
    control = (flags & (SYN | FIN | RST)) > 0
    lost = ~first & (seq > nextseq) & ((flags & RST) == 0)
    dup = (~first & (seglen == 0) & (win != 0) & (win == prev_win) & (seq == nextseq)
           & (ack == prev_ack) & ~control)
    run = np.cumsum(~dup)
    dupnum = pd.Series(dup.astype(np.int64)).groupby(run).cumsum().to_numpy()
    keepalive = (seglen <= 1) & (seq == nextseq - 1) & ~control
    syn_fin = (flags & (SYN | FIN)) > 0
    behind = ~first & ((seglen > 0) | syn_fin) & (seq < nextseq) & ~keepalive
    return pd.DataFrame({"seq": seq, "end": end, "ack": ack, "has_ack": has_ack, "t": t,
                         "nextseq": nextseq, "nexttime": nexttime, "lost_segment": lost,
                         "duplicate_ack": dup, "dupnum": dupnum, "behind": behind,
                         "seglen": seglen, "data": d["len"].to_numpy()}, index=d.index)


def tcp_analysis(df: pd.DataFrame) -> pd.DataFrame:
    """Wireshark-style flags for every frame (False for non-TCP frames), plus
    ``conv`` (conversation) and ``a_to_b`` (direction); index = df's."""
    ids = conversation_ids(df, later_fragments=False)
    out = pd.DataFrame(False, index=df.index, columns=FLAGS)
    out["conv"], out["a_to_b"] = ids["conv"], ids["a_to_b"]
    tcp = (df["proto"] == "tcp").to_numpy() & df["tcp_seq"].notna().to_numpy() & (ids["conv"] >= 0).to_numpy()
    if not tcp.any():
        return out
    d = pd.DataFrame({"conv": ids["conv"][tcp], "ab": ids["a_to_b"][tcp], "time": df["time"][tcp],
                      "seq": df["tcp_seq"][tcp].astype(np.int64), "ack": df["tcp_ack"][tcp].fillna(0).astype(np.int64),
                      "flags": df["tcp_flags"][tcp].fillna(0).astype(np.int64),
                      "win": df["tcp_win"][tcp].fillna(0).astype(np.int64),
                      "len": df["payload_len"][tcp].fillna(0).astype(np.int64)})
    for conv, c in d.groupby("conv", sort=False):
        fwd_rows, rev_rows = c[c["ab"]], c[~c["ab"]]
        base = {True: int(fwd_rows["seq"].iloc[0]) if len(fwd_rows) else 0,
                False: int(rev_rows["seq"].iloc[0]) if len(rev_rows) else 0}
        state = {ab: _direction(rows, base[ab], base[not ab])
                 for ab, rows in ((True, fwd_rows), (False, rev_rows)) if len(rows)}
        rtt = _handshake_rtt(c)
        for ab, s in state.items():
            flags = _classify(s, state.get(not ab), rtt)
            out.loc[s.index, FLAGS] = flags.to_numpy()
    return out


def _handshake_rtt(c: pd.DataFrame) -> float | None:
    """Time from the SYN to the ACK that completes the handshake, as seen at the capture point."""
    syn = c[(c["flags"] & (SYN | ACK)) == SYN]
    if syn.empty:
        return None
    after = c[(c.index > syn.index[0]) & (c["ab"] == syn["ab"].iloc[0]) & ((c["flags"] & (SYN | ACK)) == ACK)]
    return float(after["time"].iloc[0] - syn["time"].iloc[0]) if len(after) else None


def _classify(s: pd.DataFrame, rev: pd.DataFrame | None, rtt: float | None) -> pd.DataFrame:
    """Split the segments that are behind nextseq into fast/out-of-order/spurious/plain."""
    n = len(s)
    fast = np.zeros(n, dtype=bool)
    spurious = np.zeros(n, dtype=bool)
    behind = s["behind"].to_numpy()
    if rev is not None and behind.any():
        # the reverse direction's state just before each of our packets
        pos = np.searchsorted(rev.index.to_numpy(), s.index.to_numpy()) - 1
        have = pos >= 0
        p = np.maximum(pos, 0)
        acked = rev[rev["has_ack"]]
        apos = np.searchsorted(acked.index.to_numpy(), s.index.to_numpy()) - 1
        ahave = apos >= 0
        ap = np.maximum(apos, 0)
        last_ack = np.where(ahave, acked["ack"].to_numpy()[ap], np.iinfo(np.int64).min)
        last_ack_t = np.where(ahave, acked["t"].to_numpy()[ap], np.nan)
        dupnum = np.where(have, rev["dupnum"].to_numpy()[p], 0)
        seq, t = s["seq"].to_numpy(), s["t"].to_numpy()
        fast = behind & ahave & (dupnum >= 2) & (last_ack == seq) & (t - last_ack_t < FAST_RETRANSMIT_WINDOW)
        data_end = s["seq"].to_numpy() + s["data"].to_numpy()
        spurious = behind & ahave & (s["data"].to_numpy() > 0) & (data_end <= last_ack)
    threshold = rtt if rtt else DEFAULT_OOO_THRESHOLD
    since = (s["t"] - s["nexttime"]).to_numpy()     # Wireshark's t is unsigned: negative = huge
    ooo = behind & ~fast & (since >= 0) & (since < threshold) & \
        (s["nextseq"].to_numpy() != s["end"].to_numpy())
    spurious &= ~fast & ~ooo
    retrans = behind & ~ooo
    return pd.DataFrame({"retransmission": retrans, "fast_retransmission": fast,
                         "spurious_retransmission": spurious, "out_of_order": ooo,
                         "lost_segment": s["lost_segment"].to_numpy(),
                         "duplicate_ack": s["duplicate_ack"].to_numpy()}, index=s.index)[FLAGS]


def retransmission_summary(df: pd.DataFrame, flags: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per conversation: segments with data, and how many carry each flag."""
    flags = tcp_analysis(df) if flags is None else flags
    data = (df["payload_len"].fillna(0) > 0).to_numpy() & (df["proto"] == "tcp").to_numpy()
    f = flags[flags["conv"] >= 0].copy()
    f["data_segments"] = data[flags["conv"].to_numpy() >= 0]
    out = f.groupby("conv")[["data_segments"] + FLAGS].sum()
    out["retransmitted_fraction"] = out["retransmission"] / out["data_segments"].where(out["data_segments"] > 0)
    return out
