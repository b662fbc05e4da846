"""RFC 6349's metrics of the main TCP transfer in a capture (``model.rfc6349`` for the formulas).

    metrics = rfc6349_from_capture(read_capture("run.pcapng"), achievable_bps=9.41e6)
    rfc6349_of(frames, flags, conv, a_to_b)        # on numpy columns (``wirelab analyze``: no pandas)
    rfc6349_of_dataset(ds, achievable_bps=9.41e6)   # a dataset: only the main conversation is read

From the data direction of the biggest TCP conversation:

* transmitted bytes: the payload of every data segment, retransmissions included, and
  retransmitted bytes: the payload of those Wireshark flags as retransmissions
  (``tcp_sequence``: fast and spurious ones are retransmissions too) (§4.2);
* RTT samples as Wireshark's ``tcp.analysis.ack_rtt``: an ACK whose number is exactly the
  end of a data segment sent once gives the time from that segment to it (Karn's rule: a
  retransmitted segment gives none); the baseline is the handshake's round trip (SYN to
  SYN/ACK, or SYN/ACK to ACK), else the smallest sample (§4.3). These are round trips *as
  seen where the capture was taken*: at the sender the path's RTT, at the receiver (where
  wirelab captures) only the receiver's ACK delay, and the buffer delay then says little;
* the actual transfer time: first to last data segment; the ideal one, with
  ``achievable_bps`` (the model's goodput for the link), the unique bytes at that rate (§4.1).

RFC 6349 measures a bulk transfer over a path whose unloaded RTT is known. On a
capture of something else the buffer delay can read −97 % or 2,000,000 %; then
``buffer_delay_note`` says why (``buffer_delay_notes``): too few samples, an average
below the baseline (the handshake took longer than the transfer's round trips), a
baseline seen beside one end, or a conversation that is not a bulk transfer (its
round trips include the application's pauses).
"""
from __future__ import annotations

import numpy as np

from ..model import rfc6349 as rfc
from .reader.frames import Frames
from .tcp_sequence import ACK, SYN, tcp_flags_of

__all__ = ["rfc6349_of", "rfc6349_from_capture", "rfc6349_of_dataset", "ack_rtt_samples", "buffer_delay_notes"]

SEQ_SPACE = 1 << 32
#: fewer round-trip samples than this: an average of little weight
FEW_SAMPLES = 10
#: a baseline shorter than this is a round trip seen beside one end (a host's own delay)
BESIDE_ONE_END_S = 1e-3
#: in a bulk transfer at least this share of the data segments is full-sized
BULK_FULL_SHARE = 0.5


def ack_rtt_samples(seq, length, times, again, acks, ack_times) -> list[tuple[float, float]]:
    """(time of the ACK, RTT) for every ACK that acknowledges exactly the end of a data segment
    sent once (Wireshark's ``tcp.analysis.ack_rtt``, Karn's rule), each segment once. The data
    segments' ``seq``, ``length``, ``times`` and ``again`` (retransmitted?), then the ACKs'."""
    sent: dict[int, float] = {}
    for start, size, t, resent in zip(seq, length, times, again):
        end = (int(start) + int(size)) % SEQ_SPACE
        if resent:
            sent.pop(end, None)               # sent more than once: its ACK times nothing certain
        elif end not in sent:
            sent[end] = float(t)
    out = []
    for number, t in zip(acks, ack_times):
        first = sent.pop(int(number), None)
        if first is not None and t >= first:
            out.append((float(t), float(t) - first))
    return out


def _handshake(flags: np.ndarray, times: np.ndarray) -> float | None:
    """The handshake's round trip at the capture point (one conversation's frames, in order):
    SYN → SYN/ACK, and SYN/ACK → ACK, the longer (the capture point sits nearer one end)."""
    kind = flags & (SYN | ACK)
    syn, synack = np.flatnonzero(kind == SYN), np.flatnonzero(kind == (SYN | ACK))
    if not syn.size or not synack.size:
        return None
    first = float(times[synack[0]] - times[syn[0]])
    after = np.flatnonzero((np.arange(kind.size) > synack[0]) & (kind == ACK))
    return max(first, float(times[after[0]] - times[synack[0]])) if after.size else first


def rfc6349_of(f: Frames, flags: dict, conv: np.ndarray, a_to_b: np.ndarray, *,
               achievable_bps: float | None = None) -> dict | None:
    """The main TCP transfer's RFC 6349 figures (see the module docstring) from a capture's
    columns and ``tcp_flags_of``'s answer; None without a TCP transfer."""
    payload = np.maximum(f.payload_len, 0)
    tcp = f.protocol("tcp") & (conv >= 0)
    if not (tcp & (payload > 0)).any():
        return None
    key = np.where(tcp, conv * 2 + a_to_b.astype(np.int64), -1)
    totals = np.bincount(key[tcp], weights=payload[tcp])
    main = int(np.argmax(totals))
    mine, forward = tcp & (conv == main // 2), bool(main % 2)
    data = np.flatnonzero(mine & (a_to_b == forward) & (payload > 0))
    acks = np.flatnonzero(mine & (a_to_b != forward) & ((np.maximum(f.tcp_flags, 0) & ACK) > 0))
    again = flags["retransmission"][data]
    transmitted, resent = int(payload[data].sum()), int(payload[data][again].sum())
    samples = ack_rtt_samples(f.tcp_seq[data], payload[data], f.time[data], again, f.tcp_ack[acks], f.time[acks])
    rows = np.flatnonzero(mine)
    handshake = _handshake(np.maximum(f.tcp_flags[rows], 0), f.time[rows])
    baseline = handshake if handshake else (min(r for _, r in samples) if samples else None)
    out = {"src": f.addresses[f.src[data[0]]], "dst": f.addresses[f.dst[data[0]]], "transmitted_bytes": transmitted,
           "retransmitted_bytes": resent, "unique_bytes": transmitted - resent,
           "transfer_s": float(f.time[data[-1]] - f.time[data[0]]), "rtt_samples": len(samples),
           "tcp_efficiency_pct": rfc.tcp_efficiency(transmitted, resent), "baseline_rtt_s": baseline}
    if samples:
        out["average_rtt_s"] = rfc.average_rtt_during_transfer(samples)
        if baseline:
            out["buffer_delay_pct"] = rfc.buffer_delay(out["average_rtt_s"], baseline)
            notes = buffer_delay_notes(out, payload[data])
            if notes:
                out["buffer_delay_note"] = "; ".join(notes)
    if achievable_bps and out["transfer_s"] > 0:
        out["ideal_transfer_s"] = rfc.ideal_transfer_time(out["unique_bytes"], achievable_bps)
        out["transfer_time_ratio"] = rfc.transfer_time_ratio(out["transfer_s"], out["ideal_transfer_s"])
    return out


def buffer_delay_notes(metrics: dict, sizes: np.ndarray) -> list[str]:
    """Why the buffer delay of ``metrics`` may say nothing about the queues (empty: no reason
    known); ``sizes``: the payload of the transfer's data segments."""
    notes = []
    samples, average, baseline = metrics["rtt_samples"], metrics["average_rtt_s"], metrics["baseline_rtt_s"]
    if samples < FEW_SAMPLES:
        notes.append(f"only {samples} round-trip sample{'s' if samples != 1 else ''}")
    if average < baseline:
        notes.append(f"the average RTT ({average * 1e3:.3f} ms) is below the baseline ({baseline * 1e3:.3f} ms, "
                     "the handshake's round trip): the handshake took longer than the transfer's round trips "
                     "(a server slow to accept, or a first packet's path set-up), so it is no unloaded RTT")
    elif baseline < BESIDE_ONE_END_S and metrics["buffer_delay_pct"] > 1000:
        notes.append(f"the baseline ({baseline * 1e3:.3f} ms) is a round trip seen beside one end of the path "
                     "(the capture point sits next to it): the transfer's round trips hold the other end's "
                     "delays, far longer; measure the path's RTT unloaded (ping) for the baseline")
    full = float(np.mean(sizes == sizes.max())) if sizes.size else 0.0
    if sizes.size and full < BULK_FULL_SHARE:
        notes.append(f"not a bulk transfer: {full:.0%} of its {sizes.size} data segments are full-sized, so "
                     "its round trips include the application's pauses (requests, responses), not only queues")
    return notes


def rfc6349_from_capture(df, *, achievable_bps: float | None = None) -> dict | None:
    """``rfc6349_of`` for a DataFrame of ``read_capture``."""
    frames = Frames.of(df)
    return rfc6349_of(frames, *tcp_flags_of(frames), achievable_bps=achievable_bps)


def rfc6349_of_dataset(ds, *, achievable_bps: float | None = None) -> dict | None:
    """``rfc6349_of`` for a dataset (``capture.sql.dataset``): SQL finds the direction carrying the
    most TCP payload, and only its conversation (both directions) is read into memory, where
    the same code as for a file reads it: a conversation's analysis needs no other packet."""
    # start-up: pyarrow only when rfc6349_of_dataset() runs
    import pyarrow.dataset as pds

    main = ds.sql("""SELECT src, sport, dst, dport FROM packets
                     WHERE proto = 'tcp' AND payload_len > 0 AND sport IS NOT NULL
                     GROUP BY ALL ORDER BY sum(payload_len) DESC, min(time) LIMIT 1""")
    if main.empty:
        return None
    src, sport, dst, dport = main.iloc[0]
    f = pds.field

    def way(a, a_port, b, b_port):
        return (f("src") == a) & (f("sport") == int(a_port)) & (f("dst") == b) & (f("dport") == int(b_port))
    return rfc6349_from_capture(ds.frame((f("proto") == "tcp") & (way(src, sport, dst, dport) | way(dst, dport, src, sport))),
                                achievable_bps=achievable_bps)
