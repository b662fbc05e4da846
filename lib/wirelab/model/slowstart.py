"""A TCP transfer's start: initial window, slow start over a link of finite rate,
and what the first loss costs.

Loss-free: Kurose & Ross, *Computer Networking*, "TCP latency modeling" (§3.7 in
the 2nd-5th editions): windows of 1, 2, 4 … segments; after window k the sender
idles [S/R + RTT − 2^(k−1)·S/R]⁺ waiting for the first ACK, so
latency = 2·RTT + O/R + P·(RTT + S/R) − (2^P − 1)·S/R with P = min(Q, K − 1)
stalls (K windows cover the object, Q = ⌊log₂(1 + RTT·R/S)⌋ + 1 for an infinite
one). Here generalised to an initial window IW (RFC 6928), a growth factor γ per
round and a window cap W_max; ``kurose_ross_latency`` is their formula as printed.

With loss: Cardwell, Savage & Anderson, "Modeling TCP latency", INFOCOM 2000,
equations 4, 5, 11, 15-20, on top of PFTK (Padhye et al., SIGCOMM 1998).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..errors import ModelError

__all__ = ["initial_window", "LINUX_INITIAL_WINDOW", "LINUX_SYN_RTO", "SlowStart", "slow_start_send",
           "kurose_ross_latency", "handshake_time", "retransmission_delay",
           "expected_slow_start_segments", "expected_segments_before_loss", "expected_slow_start_window", "cardwell_slow_start_time",
           "timeout_probability", "backoff_factor", "expected_timeout", "expected_loss_recovery"]

#: Linux counts its initial window in segments: TCP_INIT_CWND = 10 (include/net/tcp.h).
LINUX_INITIAL_WINDOW = 10
#: Initial retransmission timeout before any RTT sample, 1 s (RFC 6298 §2.1; Linux TCP_TIMEOUT_INIT).
LINUX_SYN_RTO = 1.0


def _any_lost(loss: float, packets: float) -> float:
    """1 − (1 − p)^n, accurate for tiny p (expm1/log1p)."""
    return -math.expm1(packets * math.log1p(-loss))


def initial_window(mss_bytes: int) -> int:
    """IW in segments: min(10·MSS, max(2·MSS, 14600)) bytes (RFC 6928 §2, eq. 1)."""
    if not mss_bytes >= 1:
        raise ModelError(f"MSS must be at least 1 byte, not {mss_bytes!r}", "e.g. 1448")
    return int(min(10 * mss_bytes, max(2 * mss_bytes, 14600)) // mss_bytes)


def _windows(segments: float, iw: float, gamma: float, max_window: float | None):
    """(window size, segments still to send before it) for each round until ``segments`` are sent."""
    sent, window = 0.0, float(iw)
    while sent < segments:
        w = window if max_window is None else min(window, max_window)
        yield w, segments - sent
        sent += w
        window *= gamma


class SlowStart(NamedTuple):
    """Seconds at the sender: ``send`` = segments·S/R + ``idle``; ``window_idle`` is the
    part of ``idle`` spent with the window at its cap W_max (the window, not slow start, binds)."""
    send: float
    idle: float
    window_idle: float = 0.0


def slow_start_send(segments: float, segment_time_s: float, rtt_s: float, *, iw: float = 10,
                    gamma: float = 2.0, max_window: float | None = None,
                    loss: float = 0.0) -> SlowStart:
    """Send time, idle time and capped idle at the sender for ``segments`` segments of
    ``segment_time_s`` each (S/R) in slow start: send time = segments·S/R + Σ idle, idle after window k
    = [S/R + RTT − w_k·S/R]⁺ for every window but the last (Kurose & Ross, generalised:
    w_k = min(IW·γ^(k−1), W_max)). Once a window fills the pipe nothing idles again.

    With ``loss`` p the idle is an expectation: slow start still runs after window k
    only if none of its first c_k segments was lost, so that idle counts (1 − p)^c_k
    (derived here; it makes Cardwell et al.'s slow start, eq. 15, pay for transmission
    and stay continuous in p)."""
    if segments < 0 or segment_time_s <= 0 or rtt_s < 0 or iw <= 0 or gamma < 1:
        raise ModelError("slow start needs segments ≥ 0, S/R > 0, RTT ≥ 0, IW > 0 and γ ≥ 1",
                         "e.g. 100 segments, 1.2 ms each, RTT 40 ms, IW 10, γ 2")
    if not 0 <= loss < 1:
        raise ModelError(f"loss must be in [0, 1), not {loss!r}", "e.g. 0.01")
    if gamma == 1:
        max_window = iw if max_window is None else min(iw, max_window)   # a static window
    survive = math.log1p(-loss)                     # log(1 − p): weights (1 − p)^c
    idle, sent = 0.0, 0.0
    for w, left in _windows(segments, iw, gamma, max_window):
        sent += w
        if left <= w:
            break                                   # the last window: nothing to wait for
        gap = segment_time_s + rtt_s - w * segment_time_s
        if gap <= 0:
            break                                   # this window fills the pipe, so will the rest
        if max_window is not None and w >= max_window:
            more = math.ceil(left / w - 1e-9) - 1   # capped: every window idles alike
            if loss == 0:
                capped = more * gap
            else:                                   # Σ_j (1 − p)^(sent + j·w), j = 0 … more − 1
                capped = gap * math.exp(sent * survive) * math.expm1(more * w * survive) / math.expm1(w * survive)
            return SlowStart(segments * segment_time_s + idle + capped, idle + capped, capped)
        idle += gap * math.exp(sent * survive)
    return SlowStart(segments * segment_time_s + idle, idle)


def kurose_ross_latency(object_bits: float, segment_bits: float, rate_bps: float, rtt_s: float) -> float:
    """Latency 2·RTT + O/R + P·(RTT + S/R) − (2^P − 1)·S/R, P = min(Q, K − 1),
    K = ⌈log₂(O/S + 1)⌉, Q = ⌊log₂(1 + RTT/(S/R))⌋ + 1 (Kurose & Ross, slow start
    from one segment, no loss; S/R and O/R in seconds)."""
    s = segment_bits / rate_bps
    k = math.ceil(math.log2(object_bits / segment_bits + 1) - 1e-12)
    q = math.floor(math.log2(1 + rtt_s / s)) + 1
    p = min(q, k - 1)
    return 2 * rtt_s + object_bits / rate_bps + p * (rtt_s + s) - (2 ** p - 1) * s


def retransmission_delay(loss: float, timeout_s: float) -> float:
    """Expected wait for one packet lost with probability p and resent after T, 2T, 4T …
    (exponential backoff): T·((1 − p)/(1 − 2p) − 1) (Cardwell et al. 2000, eq. 4, one direction)."""
    if not 0 <= loss < 0.5:
        raise ModelError(f"with exponential backoff the expected delay is infinite from 50 % loss "
                         f"(here {loss:.0%})", "use a loss below 50 %")
    return timeout_s * ((1 - loss) / (1 - 2 * loss) - 1)


def handshake_time(rtt_s: float, loss_forward: float = 0.0, loss_reverse: float = 0.0, *,
                   syn_timeout_s: float = LINUX_SYN_RTO) -> float:
    """Expected 3-way handshake, E[T_h] = RTT + T_s·((1−p_r)/(1−2p_r) + (1−p_f)/(1−2p_f) − 2)
    (Cardwell, Savage & Anderson, INFOCOM 2000, eq. 4; T_s = 1 s on Linux, RFC 6298)."""
    return (rtt_s + retransmission_delay(loss_forward, syn_timeout_s)
            + retransmission_delay(loss_reverse, syn_timeout_s))


def expected_slow_start_segments(segments: int, loss: float) -> float:
    """E[d_ss] = (1 − (1−p)^d)·(1−p)/p + 1 segments sent before the first loss
    (Cardwell et al. 2000, eq. 5); d when p = 0. Capped at d (eq. 5 gives 2 − p for d = 1)."""
    if loss <= 0:
        return float(segments)
    return min(float(segments), _any_lost(loss, segments) * (1 - loss) / loss + 1)


def expected_segments_before_loss(segments: int, loss: float) -> float:
    """E[min(J, d)] = (1 − (1−p)^d)/p, J the index of the first lost segment: eq. 5 of
    Cardwell et al. 2000 less the (1−p)^d it adds when nothing is lost (then all d
    segments go in slow start, not d + 1). Consistent with ``slow_start_send(loss=p)``."""
    if loss <= 0:
        return float(segments)
    return _any_lost(loss, segments) / loss


def expected_slow_start_window(slow_start_segments: float, iw: float = 10, gamma: float = 2.0) -> float:
    """E[W_ss] = E[d_ss]·(γ − 1)/γ + w₁/γ: the window when slow start ends (Cardwell et al. 2000, eq. 11)."""
    return slow_start_segments * (gamma - 1) / gamma + iw / gamma


def cardwell_slow_start_time(slow_start_segments: float, rtt_s: float, *, iw: float = 10,
                             gamma: float = 2.0, max_window: float | None = None) -> float:
    """E[T_ss] (Cardwell et al. 2000, eq. 15): RTT·log_γ(E[d_ss](γ−1)/w₁ + 1), or, when the
    window would pass W_max, RTT·(log_γ(W_max/w₁) + 1 + (E[d_ss] − (γW_max − w₁)/(γ − 1))/W_max).
    Rounds of one RTT each: no transmission time (our ``slow_start_send`` adds it)."""
    d, w1 = slow_start_segments, iw
    if max_window is not None and expected_slow_start_window(d, w1, gamma) > max_window:
        c = math.log(max_window / w1, gamma)
        return rtt_s * (c + 1 + (d - (gamma * max_window - w1) / (gamma - 1)) / max_window)
    return rtt_s * math.log(d * (gamma - 1) / w1 + 1, gamma)


def timeout_probability(loss: float, window: float) -> float:
    """Q̂(p, w) = min(1, (1 + (1−p)³(1 − (1−p)^(w−3))) / ((1 − (1−p)^w)/(1 − (1−p)³))):
    the chance a loss in a window of w ends in a timeout, not fast retransmit
    (PFTK 1998; Cardwell et al. 2000, eq. 17). 1 for w ≤ 3 (no three duplicate ACKs)."""
    if loss <= 0:
        return 0.0
    if window <= 3:
        return 1.0
    q = 1 - loss
    return min(1.0, (1 + q ** 3 * _any_lost(loss, window - 3)) * _any_lost(loss, 3) / _any_lost(loss, window))


def backoff_factor(loss: float) -> float:
    """G(p) = 1 + p + 2p² + 4p³ + 8p⁴ + 16p⁵ + 32p⁶ (PFTK 1998; Cardwell et al. 2000, eq. 19)."""
    p = loss
    return 1 + p + 2 * p ** 2 + 4 * p ** 3 + 8 * p ** 4 + 16 * p ** 5 + 32 * p ** 6


def expected_timeout(loss: float, rto_s: float) -> float:
    """E[Z^TO] = G(p)·T₀/(1 − p): a timeout sequence with backoff (Cardwell et al. 2000, eq. 18)."""
    return backoff_factor(loss) * rto_s / (1 - loss)


def expected_loss_recovery(segments: int, loss: float, round_s: float, rto_s: float,
                           slow_start_window: float) -> float:
    """E[T_loss] = l_ss·(Q̂(p, E[W_ss])·E[Z^TO] + (1 − Q̂)·RTT), l_ss = 1 − (1−p)^d: the
    first loss ends slow start with a timeout or a fast retransmit (Cardwell et al. 2000,
    eqs. 16 and 20)."""
    if loss <= 0:
        return 0.0
    in_slow_start = _any_lost(loss, segments)
    q = timeout_probability(loss, slow_start_window)
    return in_slow_start * (q * expected_timeout(loss, rto_s) + (1 - q) * round_s)
