"""RFC 6349's metrics of the main TCP transfer in a capture (``model.rfc6349`` for the formulas).

    metrics = rfc6349_from_capture(read_capture("run.pcapng"), achievable_bps=9.41e6)

From the data direction of the biggest TCP conversation:

* transmitted bytes: the payload of every data segment, retransmissions included, and
  retransmitted bytes: the payload of those Wireshark flags as retransmissions
  (``tcp_analysis``: fast and spurious ones are retransmissions too) (§4.2);
* RTT samples as Wireshark's ``tcp.analysis.ack_rtt``: an ACK whose number is exactly the
  end of a data segment sent once gives the time from that segment to it (Karn's rule: a
  retransmitted segment gives none); the baseline is the handshake's round trip (SYN to
  SYN/ACK, or SYN/ACK to ACK), else the smallest sample (§4.3). These are round trips *as
  seen where the capture was taken*: at the sender the path's RTT, at the receiver (where
  wirelab captures) only the receiver's ACK delay, and the buffer delay then says little;
* the actual transfer time: first to last data segment; the ideal one, with
  ``achievable_bps`` (the model's goodput for the link), the unique bytes at that rate (§4.1).
"""
from __future__ import annotations

import pandas as pd

from ..model import rfc6349 as rfc
from .flows import conversation_ids
from .tcp_analysis import tcp_analysis

__all__ = ["rfc6349_from_capture", "ack_rtt_samples"]

SYN, ACK = 0x02, 0x10
SEQ_SPACE = 1 << 32


def _main_conversation(df: pd.DataFrame, ids: pd.DataFrame) -> tuple[int, bool] | None:
    """(conversation, direction a→b?) carrying the most TCP payload."""
    tcp = df[(df["proto"] == "tcp") & (ids["conv"] >= 0)]
    if tcp.empty:
        return None
    payload = tcp["payload_len"].fillna(0).groupby([ids["conv"][tcp.index], ids["a_to_b"][tcp.index]]).sum()
    if payload.empty or payload.max() <= 0:
        return None
    conv, a_to_b = payload.idxmax()
    return int(conv), bool(a_to_b)


def ack_rtt_samples(data: pd.DataFrame, acks: pd.DataFrame, retransmitted: pd.Series) -> list[tuple[float, float]]:
    """(time of the ACK, RTT) for every ACK that acknowledges exactly the end of a data segment
    sent once (Wireshark's ``tcp.analysis.ack_rtt``, Karn's rule), each segment once."""
    sent: dict[int, float] = {}
    for seq, length, t, again in zip(data["tcp_seq"], data["payload_len"], data["time"], retransmitted):
        end = (int(seq) + int(length)) % SEQ_SPACE
        if again:
            sent.pop(end, None)               # sent more than once: its ACK times nothing certain
        elif end not in sent:
            sent[end] = float(t)
    out = []
    for number, t in zip(acks["tcp_ack"], acks["time"]):
        first = sent.pop(int(number), None)
        if first is not None and t >= first:
            out.append((float(t), float(t) - first))
    return out


def _handshake(conv: pd.DataFrame) -> float | None:
    """The handshake's round trip at the capture point: SYN → SYN/ACK, else SYN/ACK → ACK."""
    flags = conv["tcp_flags"].fillna(0).astype(int)
    syn, synack = conv[(flags & (SYN | ACK)) == SYN], conv[(flags & (SYN | ACK)) == (SYN | ACK)]
    if syn.empty or synack.empty:
        return None
    first = float(synack["time"].iloc[0] - syn["time"].iloc[0])
    after = conv[(conv.index > synack.index[0]) & ((flags & (SYN | ACK)) == ACK)]
    second = float(after["time"].iloc[0] - synack["time"].iloc[0]) if len(after) else None
    return max(x for x in (first, second) if x is not None)


def rfc6349_from_capture(df: pd.DataFrame, flags: pd.DataFrame | None = None, *,
                         achievable_bps: float | None = None) -> dict | None:
    """The main TCP transfer's RFC 6349 figures (see the module docstring); None without one."""
    ids = conversation_ids(df, later_fragments=False)
    found = _main_conversation(df, ids)
    if found is None:
        return None
    conv, forward = found
    flags = tcp_analysis(df) if flags is None else flags
    mine = (ids["conv"] == conv).to_numpy()
    data_mask = mine & (ids["a_to_b"] == forward).to_numpy() & (df["payload_len"].fillna(0) > 0).to_numpy()
    ack_mask = mine & (ids["a_to_b"] != forward).to_numpy() & ((df["tcp_flags"].fillna(0).astype(int) & ACK) > 0).to_numpy()
    data, acks = df[data_mask], df[ack_mask]
    again = flags["retransmission"][data_mask]
    transmitted = int(data["payload_len"].sum())
    resent = int(data["payload_len"][again.to_numpy()].sum())
    samples = ack_rtt_samples(data, acks, again)
    handshake = _handshake(df[mine])
    baseline = handshake if handshake else (min(r for _, r in samples) if samples else None)
    out = {"src": data["src"].iloc[0], "dst": data["dst"].iloc[0], "transmitted_bytes": transmitted,
           "retransmitted_bytes": resent, "unique_bytes": transmitted - resent,
           "transfer_s": float(data["time"].iloc[-1] - data["time"].iloc[0]), "rtt_samples": len(samples),
           "tcp_efficiency_pct": rfc.tcp_efficiency(transmitted, resent), "baseline_rtt_s": baseline}
    if samples:
        out["average_rtt_s"] = rfc.average_rtt_during_transfer(samples)
        if baseline:
            out["buffer_delay_pct"] = rfc.buffer_delay(out["average_rtt_s"], baseline)
    if achievable_bps and out["transfer_s"] > 0:
        out["ideal_transfer_s"] = rfc.ideal_transfer_time(out["unique_bytes"], achievable_bps)
        out["transfer_time_ratio"] = rfc.transfer_time_ratio(out["transfer_s"], out["ideal_transfer_s"])
    return out
