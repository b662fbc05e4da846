"""Delays: transmission, propagation, and one-way delay from a round trip.

Source: Kurose & Ross, *Computer Networking* §1.4 (d_trans = L/R,
d_prop = d/s, end-to-end = Σ over hops); document 003 (one-way ≈ RTT/2 when
clocks differ, which assumes a symmetric path).
"""
from __future__ import annotations

from ..errors import ModelError

__all__ = ["transmission_delay", "propagation_delay", "one_way_from_rtt", "path_delay"]

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


def path_delay(size_bytes: float, hops: list[tuple[float, float]]) -> float:
    """Store-and-forward end-to-end delay Σ (8·S/C_i + d_i) over hops given as
    (rate bit/s, one-way delay s) (Kurose & Ross §1.4.3), no queueing."""
    return sum(transmission_delay(size_bytes, rate) + prop for rate, prop in hops)
