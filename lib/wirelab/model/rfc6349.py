"""RFC 6349's three TCP throughput metrics (Framework for TCP Throughput Testing, §4), pure.

    ideal = ideal_transfer_time(100e6, max_achievable_throughput(100e6))   # §4.1.2
    transfer_time_ratio(actual_s=12.0, ideal_s=8.0)                          # 1.5
    tcp_efficiency(transmitted_bytes=102_000, retransmitted_bytes=2_000)     # 98.04 %
    buffer_delay(average_rtt_s=0.032, baseline_rtt_s=0.025)                  # 28 %

* **TCP Transfer Time Ratio** (§4.1): actual ÷ ideal transfer time; the ideal moves the
  data at the Maximum Achievable TCP Throughput, (MTU − 40) × 8 × the link's frames per
  second (§4.1.1: FPS = rate ÷ ((MTU + layer-2 bytes) × 8), whole frames).
* **TCP Efficiency** (§4.2): (transmitted − retransmitted) ÷ transmitted bytes × 100, where
  transmitted counts the original and every retransmitted byte.
* **Buffer Delay Percentage** (§4.3): (average RTT during the transfer − baseline RTT) ÷
  baseline RTT × 100; the average is the sum of the RTTs measured each second divided by
  the transfer's seconds (one RTT a second), the baseline the path's RTT when it is not
  congested (§3.2.1).

Each function is checked against the RFC's own worked numbers (tests/test_model_rfc6349.py).
"""
from __future__ import annotations

import math

from ..errors import ModelError

__all__ = ["frames_per_second", "max_achievable_throughput", "ideal_transfer_time", "transfer_time_ratio",
           "tcp_efficiency", "average_rtt_during_transfer", "buffer_delay", "ETHERNET_L2", "T3_L2"]

#: Layer-2 bytes per frame RFC 6349 §4.1.1 counts on Ethernet: header 14, CRC32 4, IFG 12,
#: preamble 7, SFD 1 (MTU 1500 → 1538 B on the wire) ...
ETHERNET_L2 = 38
#: ... and on a T3 (PPP 4, flags 2, CRC16 2).
T3_L2 = 8


def frames_per_second(rate_bps: float, mtu: int = 1500, l2_bytes: int = ETHERNET_L2) -> int:
    """Whole full-size frames the link carries each second: ⌊rate ÷ ((MTU + L2) × 8)⌋ (RFC 6349
    §4.1.1: 3664 on a 44.21 Mbit/s T3, 8127 on 100 Mbit/s Ethernet)."""
    if not rate_bps > 0 or mtu <= 40:
        raise ModelError("rate must be > 0 and the MTU above 40 B", "e.g. 100 Mbit/s, MTU 1500")
    return math.floor(rate_bps / ((mtu + l2_bytes) * 8))


def max_achievable_throughput(rate_bps: float, mtu: int = 1500, l2_bytes: int = ETHERNET_L2,
                              tcp_ip_bytes: int = 40) -> float:
    """Maximum Achievable TCP Throughput (bit/s): (MTU − 40) × 8 × FPS (RFC 6349 §4.1.1: 42.8 Mbit/s
    on a T3, 94.9 Mbit/s on 100 Mbit/s Ethernet). ``tcp_ip_bytes``: 20 + 20 (no options)."""
    return (mtu - tcp_ip_bytes) * 8 * frames_per_second(rate_bps, mtu, l2_bytes)


def ideal_transfer_time(size_bytes: float, achievable_bps: float) -> float:
    """Ideal TCP Transfer Time (s): the data's bits ÷ the Maximum Achievable TCP Throughput
    (RFC 6349 §4.1.2)."""
    if not achievable_bps > 0 or size_bytes < 0:
        raise ModelError("size must be ≥ 0 and the achievable throughput > 0", "e.g. 100 MB at 94.9 Mbit/s")
    return 8.0 * size_bytes / achievable_bps


def transfer_time_ratio(actual_s: float, ideal_s: float) -> float:
    """TCP Transfer Time Ratio: actual ÷ ideal TCP transfer time (RFC 6349 §4.1; its example:
    12 s for an ideal 8 s is 1.5)."""
    if not ideal_s > 0 or actual_s < 0:
        raise ModelError("the ideal time must be > 0 and the actual ≥ 0", "e.g. 12 s against 8 s")
    return actual_s / ideal_s


def tcp_efficiency(transmitted_bytes: float, retransmitted_bytes: float) -> float:
    """TCP Efficiency %: (transmitted − retransmitted) ÷ transmitted × 100, transmitted counting
    every retransmission too (RFC 6349 §4.2; its example: 102,000 B with 2,000 resent is 98.03 %)."""
    if not transmitted_bytes > 0 or not 0 <= retransmitted_bytes <= transmitted_bytes:
        raise ModelError(f"{retransmitted_bytes} B resent of {transmitted_bytes} B sent",
                         "transmitted must be > 0 and include the retransmitted bytes")
    return 100.0 * (transmitted_bytes - retransmitted_bytes) / transmitted_bytes


def average_rtt_during_transfer(samples) -> float:
    """Average RTT during the transfer: one RTT per second (the mean of that second's samples),
    summed and divided by the seconds (RFC 6349 §4.3). ``samples``: (time s, RTT s) pairs."""
    seconds: dict[int, list[float]] = {}
    pairs = sorted((t, r) for t, r in samples if r is not None and r == r)
    if not pairs:
        raise ModelError("no RTT was measured during the transfer", "record RTT samples while it runs")
    start = pairs[0][0]
    for t, rtt in pairs:
        seconds.setdefault(int(t - start), []).append(rtt)
    per_second = [sum(v) / len(v) for v in seconds.values()]
    return sum(per_second) / len(per_second)


def buffer_delay(average_rtt_s: float, baseline_rtt_s: float) -> float:
    """Buffer Delay Percentage: (average RTT during transfer − baseline RTT) ÷ baseline RTT × 100
    (RFC 6349 §4.3; its example: 25 ms rising to 32 ms is 28 %)."""
    if not baseline_rtt_s > 0:
        raise ModelError(f"baseline RTT {baseline_rtt_s!r} s", "measure the path's RTT unloaded first")
    return 100.0 * (average_rtt_s - baseline_rtt_s) / baseline_rtt_s
