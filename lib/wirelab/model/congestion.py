"""Steady-state TCP goodput that knows the congestion control: Reno, CUBIC, BBR.

Each algorithm answers "how fast once the transfer has settled?" for random,
independent packet loss p on one flow. Sources (one per algorithm):

reno   Mathis, Semke, Mahdavi & Ott, CCR 1997, eq. 3, and Padhye, Firoiu,
       Towsley & Kurose (PFTK), SIGCOMM 1998, eq. 33 (see ``tcp``).
cubic  RFC 9438 §5 eq. 5: AVG_W_cubic = (C(3+β)/(4(1−β)))^¼ · RTT^¾ / p^¾ segments,
       and its Reno-friendly region (§4.3): CUBIC never runs below Reno's average
       window, 1.2/√p (RFC 3649 §5, the "Reno" column of RFC 9438 Tables 1-2).
       Linux: C = 0.4, β = 0.7 (net/ipv4/tcp_cubic.c), Reno-friendliness on.
       As Linux runs it (``cc="cubic"`` in ``steady_state``): its window does not grow
       during the round of fast recovery that follows each loss (RFC 5681 §3.2,
       RFC 6937; Linux calls cong_avoid only in the Open state), so a cycle of the
       AIMD(α = 3(1 − β)/(1 + β), β) sawtooth has one round more than it grows
       (``aimd_window``, derived): −2.5 % of the window at 0.5 % loss, −11 % at 5 %.
       No timeouts: with independent loss Linux's RACK-TLP (RFC 8985) repairs almost every
       loss by fast recovery (measured here, TcpExtTCPTimeouts in 5 s runs: 1 in 12 runs at
       0.5 %, 1 in 16 at 2 %, 0 in 12 at 5 %). A timed run's few seconds: ``window_chain``;
       ``predict``'s steady state at random loss (Reno's too) is that chain's long run of
       this response: delayed ACKs, whole segments and a window that jumps at random put
       it 3-30 % below (measured, CUBIC 10 MB at 5-15 ms: 0.94-1.02 of it, 0.76-0.96 of this).
bbr    Cardwell, Cheng, Gunn, Hassas Yeganeh & Jacobson, "BBR: Congestion-Based
       Congestion Control", ACM Queue 14(5), 2016 (Fig. 10 and its text): BBR v1
       does not slow down on random loss; "the maximum possible throughput is the
       link rate times fraction delivered (= 1 − lossRate). BBR meets this limit up
       to a 5 % loss and is close up to 15 %". Above 20 % its bandwidth probe
       (gain 1.25) can no longer refresh its estimate, 1.25·(1 − p) < 1 (N. Cardwell,
       bbr-dev list, 2017), and throughput collapses: **not modelled** above 20 %;
       between 15 and 20 % the prediction is flagged as optimistic.

What we assume for all three, and say in every prediction's notes:
  * the loss is applied after the bottleneck (iptables at the receiver, wirelab's
    userspace link), so the link also carries every retransmission: at most
    η·C·(1 − p) of goodput ("link" below). With netem before tbf it is η·C.
  * the bottleneck queue keeps the link busy at equilibrium (≥ BDP·(1 − β)/β);
    queue overflow losses are not modelled.
  * ``rtt_s`` is the round of the ACK clock: propagation plus one segment's and
    one ACK's transmission (``predict`` adds them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ModelError
from .tcp import link_limited, mathis, padhye, window_limited

__all__ = ["CONGESTION_CONTROLS", "CUBIC_C", "CUBIC_BETA", "ALPHA", "BETA", "BBR_LOSS_LIMIT", "reno_average_window", "aimd_window",
           "cubic_average_window", "cubic", "bbr", "SteadyState", "steady_state"]

CONGESTION_CONTROLS = ("reno", "cubic", "bbr")
#: RFC 9438 §4.6 and §4.5 (SHOULD values), as Linux's tcp_cubic.c uses them.
CUBIC_C, CUBIC_BETA = 0.4, 0.7
#: BBR v1 holds its rate while 1.25·(1 − p) ≥ 1 (bbr-dev, 2017); the ACM Queue
#: article saw it close to the limit up to 15 %.
BBR_LOSS_LIMIT, BBR_CLOSE_LIMIT = 0.20, 0.15
#: Window kept after a loss: Reno ½ (RFC 5681 §3.1), CUBIC 0.7 (RFC 9438 §4.6).
BETA = {"reno": 0.5, "cubic": CUBIC_BETA}
#: Growth per round in congestion avoidance: Reno 1 segment (RFC 5681 §3.1); CUBIC at
#: least its Reno-friendly α = 3(1 − β)/(1 + β) (RFC 9438 §4.3).
ALPHA = {"reno": 1.0, "cubic": 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA)}


def _loss(p: float) -> None:
    if not 0 < p < 1:
        raise ModelError(f"loss must be between 0 and 1 (exclusive) here, not {p!r}", "e.g. 0.01 for 1 %")


def reno_average_window(loss: float) -> float:
    """Reno's average window 1.2/√p segments (RFC 3649 §5; RFC 9438 Tables 1-2, "Reno")."""
    _loss(loss)
    return 1.2 / math.sqrt(loss)


def cubic_average_window(rtt_s: float, loss: float, *, c: float = CUBIC_C, beta: float = CUBIC_BETA,
                         reno_friendly: bool = True) -> float:
    """CUBIC's average window in segments: RFC 9438 §5 eq. 5
    (C(3+β)/(4(1−β)))^¼ · RTT^¾/p^¾, at least Reno's 1.2/√p in the
    Reno-friendly region (RFC 9438 §4.3, §5.1 Tables 1-2)."""
    _loss(loss)
    if not rtt_s > 0:
        raise ModelError(f"RTT must be positive, not {rtt_s!r}", "e.g. 0.04")
    window = (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * rtt_s ** 0.75 / loss ** 0.75
    return max(window, reno_average_window(loss)) if reno_friendly else window


def aimd_window(loss: float, alpha: float, beta: float, *, recovery_rounds: float = 1.0) -> float:
    """Mean segments per round of an AIMD(α, β) sawtooth with one loss per 1/p segments whose
    window does not grow for ``recovery_rounds`` after each loss (derived, module docstring):
    W_max solves (1 − β²)W²/(2α) + r·β·W = 1/p, and the mean is (1/p)/((1 − β)W/α + r).
    With r = 0 it is √(α(1 + β)/(2(1 − β)p)) (Floyd, Handley & Padhye 2000; RFC 9438 §4.3)."""
    _loss(loss)
    a, b, per_cycle = (1 - beta * beta) / (2 * alpha), recovery_rounds * beta, 1.0 / loss
    top = (-b + math.sqrt(b * b + 4 * a * per_cycle)) / (2 * a)
    return per_cycle / ((1 - beta) * top / alpha + recovery_rounds)


def cubic(mss_bytes: float, rtt_s: float, loss: float, *, linux: bool = False, **kwargs) -> float:
    """CUBIC goodput in bit/s: AVG_W_cubic · MSS / RTT (RFC 9438 §5, eq. 5 and §5.1); ``linux``:
    its Reno-friendly region as Linux runs it, no growth in the recovery round (``aimd_window``)."""
    window = cubic_average_window(rtt_s, loss, **kwargs)
    if linux:
        beta = kwargs.get("beta", CUBIC_BETA)
        own = (kwargs.get("c", CUBIC_C) * (3 + beta) / (4 * (1 - beta))) ** 0.25 * rtt_s ** 0.75 / loss ** 0.75
        window = max(own, aimd_window(loss, 3 * (1 - beta) / (1 + beta), beta))
    return 8.0 * mss_bytes * window / rtt_s


def bbr(rate_bps: float, eta: float, loss: float) -> float:
    """BBR v1 goodput in bit/s: η·C·(1 − p), "link rate times fraction delivered"
    (Cardwell et al., ACM Queue 14(5) 2016, Fig. 10); valid up to 20 % loss."""
    if not 0 <= loss <= BBR_LOSS_LIMIT:
        raise ModelError(f"BBR v1 is not modelled above {BBR_LOSS_LIMIT:.0%} loss (here {loss:.1%})",
                         "its bandwidth probe fails there (1.25·(1 − p) < 1); use a lower loss")
    return link_limited(rate_bps, eta) * (1.0 - loss)


@dataclass(frozen=True)
class SteadyState:
    """The steady state of one congestion control: every limit by name (bit/s)."""
    cc: str
    limits: dict[str, float]
    binding: str
    goodput_bps: float
    covered: bool = True                 # False: the model does not cover this case (see notes)
    notes: tuple[str, ...] = field(default_factory=tuple)
    retransmissions_on_link: bool = True # the link limit is η·C·(1 − p) (False: the classic η·C)


def steady_state(cc: str, rate_bps: float, eta: float, mss_bytes: float, *, rtt_s: float,
                 loss: float = 0.0, window_bytes: float | None = None,
                 rto_s: float | None = None) -> SteadyState:
    """Limits of ``cc`` ("reno", "cubic" or "bbr") on a link of ``rate_bps`` with
    efficiency ``eta``; ``rtt_s`` is the ACK-clock round (> 0). The binding limit
    is the smallest; on a tie the algorithm's own name wins over "link"."""
    if cc not in CONGESTION_CONTROLS:
        raise ModelError(f"unknown congestion control {cc!r}", f"use one of {', '.join(CONGESTION_CONTROLS)}")
    if not 0 <= loss < 1:
        raise ModelError(f"loss must be in [0, 1) for TCP, not {loss!r}", "e.g. 0.01 for 1 %")
    notes: list[str] = []
    link = link_limited(rate_bps, eta) * (1.0 - loss)
    limits: dict[str, float] = {}
    covered = True
    if cc == "bbr":
        if loss > BBR_LOSS_LIMIT:
            covered = False
            notes.append(f"BBR v1 above {BBR_LOSS_LIMIT:.0%} loss is not modelled: its throughput collapses")
        elif loss > 0:
            limits["bbr"] = bbr(rate_bps, eta, loss)
            notes.append("BBR v1 ignores random loss: link rate × fraction delivered (ACM Queue 2016)")
            if loss > BBR_CLOSE_LIMIT:
                notes.append(f"above {BBR_CLOSE_LIMIT:.0%} loss BBR v1 falls short of η·C·(1 − p): optimistic")
    limits["link"] = link
    if loss > 0:
        notes.append("the link also carries the retransmissions: η·C·(1 − p)")
    if window_bytes is not None:
        limits["window"] = window_limited(window_bytes, rtt_s)
    if loss > 0 and cc == "reno":
        limits["mathis"] = mathis(mss_bytes, rtt_s, loss)
        limits["padhye"] = padhye(mss_bytes, rtt_s, loss, rto_s=rto_s, max_window_bytes=window_bytes)
    elif loss > 0 and cc == "cubic":
        limits["cubic"] = cubic(mss_bytes, rtt_s, loss, linux=True)
    binding = min(limits, key=limits.__getitem__)
    goodput = limits[binding] if covered else math.nan
    return SteadyState(cc, limits, binding if covered else cc, goodput, covered, tuple(notes))
