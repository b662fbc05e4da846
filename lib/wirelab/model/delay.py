"""Delays: transmission, propagation, jitter, a store-and-forward path, one-way from a round trip.

Sources: Kurose & Ross, *Computer Networking* §1.4: the nodal delay of one
hop is d_proc + d_queue + d_trans + d_prop, with d_trans = L/R and
d_prop = d/s, and a packet that is stored and forwarded by every node pays
it on every hop: d_end-end = Σ over hops (eq. 1.2 for N equal hops:
N·(d_proc + d_trans + d_prop)); their worked example: L = 7.5 Mbit over two
1.5 Mbit/s links, no propagation, takes 2·L/R = 10 s. Document 003 (one-way
≈ RTT/2 when clocks differ, which assumes a symmetric path). Jitter: netem's
default is uniform in [D − J, D + J], and a packet whose delay comes out
negative is sent at once (``tabledist`` and ``time_to_send`` in the Linux
kernel's net/sched/sch_netem.c); wirelab's userspace link does the same.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError

__all__ = ["transmission_delay", "propagation_delay", "one_way_from_rtt", "mean_jittered_delay",
           "Hop", "hop_delays", "path_delay", "queueing_delay", "loaded_rtt", "SIGNAL_SPEED"]

#: Signal speed in copper or fibre, about 2/3 of c (Kurose & Ross §1.4).
SIGNAL_SPEED = 2e8


def transmission_delay(size_bytes: float, rate_bps: float) -> float:
    """d_trans = 8·S / C seconds (Kurose & Ross §1.4.1)."""
    if not rate_bps > 0 or size_bytes < 0:
        raise ModelError("size must be ≥ 0 and rate > 0", "e.g. 1500 B at 10mbit")
    return 8.0 * size_bytes / rate_bps


def propagation_delay(distance_m: float, speed_mps: float = SIGNAL_SPEED) -> float:
    """d_prop = distance / signal speed (Kurose & Ross §1.4.1)."""
    if distance_m < 0 or not speed_mps > 0:
        raise ModelError("distance must be ≥ 0 and speed > 0", "e.g. 1000 m at 2e8 m/s")
    return distance_m / speed_mps


def one_way_from_rtt(rtt_s: float) -> float:
    """One-way ≈ RTT / 2 (document 003): exact only when both directions are alike."""
    if rtt_s < 0:
        raise ModelError(f"RTT cannot be negative ({rtt_s})", "measure it again")
    return rtt_s / 2.0


def mean_jittered_delay(delay_s: float, jitter_s: float = 0.0) -> float:
    """Mean of max(D + U, 0) with U uniform in [−J, J] (netem's default jitter, sch_netem.c):
    D while D ≥ J, else (D + J)² / 4J, since the draws below zero are sent at once.
    E.g. 1 ms ± 5 ms averages 1.8 ms, not 1 ms."""
    if delay_s < 0 or jitter_s < 0:
        raise ModelError(f"delay and jitter cannot be negative ({delay_s}, {jitter_s})", "e.g. 20ms ± 5ms")
    if jitter_s == 0 or delay_s >= jitter_s:
        return delay_s
    return (delay_s + jitter_s) ** 2 / (4.0 * jitter_s)


@dataclass(frozen=True)
class Hop:
    """One link a message crosses (Kurose & Ross §1.4's nodal delay, per hop).

    ``rate_bps`` None: no rate limit, transmission takes no time the model counts.
    ``wire_bytes``: bytes this hop charges for the message (its headers differ hop by hop:
    TCP on one, UDP on another); None means the ``size_bytes`` given to ``path_delay``.
    ``processing_s``: the sending node's own time (reading, deciding, writing).
    ``queueing_s``: waiting behind other packets (0 with one message in flight)."""
    rate_bps: float | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    wire_bytes: float | None = None
    processing_s: float = 0.0
    queueing_s: float = 0.0


def _hop(hop) -> Hop:
    if isinstance(hop, Hop):
        return hop
    rate, delay, *rest = hop                      # (rate, delay[, jitter]) as in older callers
    return Hop(rate, delay, *(rest[:1]))


def hop_delays(size_bytes: float, hops) -> list[dict]:
    """Each hop's terms (seconds): processing, queueing, transmission, propagation (mean,
    jitter included) and their sum ``nodal`` (Kurose & Ross §1.4)."""
    if size_bytes < 0:
        raise ModelError(f"message size cannot be negative ({size_bytes})", "e.g. 32 B")
    out = []
    for hop in map(_hop, hops):
        size = size_bytes if hop.wire_bytes is None else hop.wire_bytes
        trans = transmission_delay(size, hop.rate_bps) if hop.rate_bps else 0.0
        prop = mean_jittered_delay(hop.delay_s, hop.jitter_s)
        if hop.processing_s < 0 or hop.queueing_s < 0:
            raise ModelError("processing and queueing delays cannot be negative", "give 0 or more seconds")
        out.append({"processing_s": hop.processing_s, "queueing_s": hop.queueing_s,
                    "transmission_s": trans, "propagation_s": prop,
                    "nodal_s": hop.processing_s + hop.queueing_s + trans + prop})
    return out


def path_delay(size_bytes: float, hops) -> float:
    """Store-and-forward end-to-end delay: Σ over hops of d_proc + d_queue + 8·S/C_i + d_i
    (Kurose & Ross §1.4.3). ``hops``: ``Hop`` objects or (rate bit/s or None, delay s[,
    jitter s]) tuples; a jittered delay counts with its mean (``mean_jittered_delay``)."""
    return sum(h["nodal_s"] for h in hop_delays(size_bytes, hops))


def queueing_delay(queue_bytes: float, rate_bps: float) -> float:
    """d_queue of a full tail-drop queue: 8·Q / C, the time its last byte waits for the line
    (Kurose & Ross §1.4.2: d_queue = L·a/R at full load; tc-tbf(8): ``limit`` bytes wait at most
    limit ÷ rate; what Gettys & Nichols call the bloat of a buffer, "Bufferbloat: Dark Buffers in
    the Internet", CACM 55(1), 2012). Q and C count the same bytes (the wire's charge per frame)."""
    if not rate_bps > 0 or queue_bytes < 0:
        raise ModelError("queue must be ≥ 0 B and rate > 0", "e.g. 150 kB at 10mbit")
    return 8.0 * queue_bytes / rate_bps


def loaded_rtt(base_rtt_s: float, queue_bytes: float, rate_bps: float) -> float:
    """RTT under load: the base round trip plus a full queue's delay on the loaded direction,
    base + 8·Q / C (a loss-based TCP keeps a tail-drop queue near full: RFC 8033 §1 and RFC 8289
    §1 describe the standing queue this builds; flent's RRUL measures it with a ping beside
    the bulk flows)."""
    if base_rtt_s < 0:
        raise ModelError(f"base RTT cannot be negative ({base_rtt_s})", "measure it unloaded first")
    return base_rtt_s + queueing_delay(queue_bytes, rate_bps)
