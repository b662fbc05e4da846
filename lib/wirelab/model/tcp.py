"""TCP goodput: the smallest of the link, the window and the loss limits.

All results in bit/s; sizes in bytes, times in seconds, loss as a fraction.
"""
from __future__ import annotations

import math

from ..errors import ModelError

__all__ = ["link_limited", "window_limited", "bdp_bytes", "mathis", "padhye",
           "default_rto", "tcp_limits", "binding_limit"]

#: Linux's smallest retransmission timeout (TCP_RTO_MIN, include/net/tcp.h).
LINUX_RTO_MIN = 0.2


def _positive(name: str, value: float) -> None:
    if value is None or not value > 0 or not math.isfinite(value):
        raise ModelError(f"{name} must be a positive number, not {value!r}", f"give a {name} above zero")


def link_limited(rate_bps: float, eta: float) -> float:
    """Goodput = η · C: the link carries headers too (document 002)."""
    _positive("rate", rate_bps)
    return eta * rate_bps


def window_limited(window_bytes: float, rtt_s: float) -> float:
    """Goodput ≤ W / RTT: at most one window per round trip (RFC 1323 §1.1)."""
    _positive("window", window_bytes)
    _positive("RTT", rtt_s)
    return 8.0 * window_bytes / rtt_s


def bdp_bytes(rate_bps: float, rtt_s: float) -> float:
    """Bandwidth-delay product C · RTT, the window that fills the pipe (RFC 1323 §1.1)."""
    _positive("rate", rate_bps)
    _positive("RTT", rtt_s)
    return rate_bps * rtt_s / 8.0


def mathis(mss_bytes: float, rtt_s: float, loss: float, acked_per_ack: int = 1) -> float:
    """Goodput ≈ (MSS/RTT) · √(3/(2b)) / √p (Mathis, Semke, Mahdavi & Ott,
    CCR 1997, eq. 3; b = segments acknowledged per ACK, C = √(3/2) for b = 1)."""
    _positive("MSS", mss_bytes)
    _positive("RTT", rtt_s)
    _positive("loss", loss)
    return 8.0 * mss_bytes / rtt_s * math.sqrt(3.0 / (2.0 * acked_per_ack)) / math.sqrt(loss)


def default_rto(rtt_s: float) -> float:
    """RTO ≈ RTT + 200 ms on Linux: RFC 6298's SRTT + 4·RTTVAR with RTTVAR
    floored so that the variance term is at least TCP_RTO_MIN."""
    return rtt_s + LINUX_RTO_MIN


def padhye(mss_bytes: float, rtt_s: float, loss: float, *, rto_s: float | None = None,
           max_window_bytes: float | None = None, acked_per_ack: int = 1) -> float:
    """PFTK: B = min(W_max/RTT, 1 / (RTT·√(2bp/3) + T₀·min(1, 3·√(3bp/8))·p·(1 + 32p²)))
    segments/s, times MSS (Padhye, Firoiu, Towsley & Kurose, SIGCOMM 1998, eq. 33)."""
    _positive("MSS", mss_bytes)
    _positive("RTT", rtt_s)
    _positive("loss", loss)
    rto = default_rto(rtt_s) if rto_s is None else rto_s
    _positive("RTO", rto)
    b, p = acked_per_ack, loss
    denominator = (rtt_s * math.sqrt(2 * b * p / 3)
                   + rto * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p))
    segments_per_s = 1.0 / denominator if denominator > 0 else math.inf   # underflow: no limit
    if max_window_bytes is not None:
        segments_per_s = min(segments_per_s, max_window_bytes / mss_bytes / rtt_s)
    return 8.0 * mss_bytes * segments_per_s


def tcp_limits(rate_bps: float, eta: float, mss_bytes: float, *, rtt_s: float | None = None,
               loss: float = 0.0, window_bytes: float | None = None, rto_s: float | None = None,
               acked_per_ack: int = 1) -> dict[str, float]:
    """Every limit that applies, by name, in bit/s: ``link`` always; ``window``
    with a window and an RTT; ``mathis`` and ``padhye`` with loss and an RTT."""
    limits = {"link": link_limited(rate_bps, eta)}
    if window_bytes is not None and rtt_s:
        limits["window"] = window_limited(window_bytes, rtt_s)
    if loss > 0 and rtt_s:
        limits["mathis"] = mathis(mss_bytes, rtt_s, loss, acked_per_ack)
        limits["padhye"] = padhye(mss_bytes, rtt_s, loss, rto_s=rto_s,
                                  max_window_bytes=window_bytes, acked_per_ack=acked_per_ack)
    return limits


def binding_limit(limits: dict[str, float]) -> tuple[str, float]:
    """The limit that binds: the smallest (name, bit/s)."""
    if not limits:
        raise ModelError("no limit to choose from", "give at least a link rate")
    name = min(limits, key=limits.__getitem__)
    return name, limits[name]
