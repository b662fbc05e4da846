"""What random loss costs a Linux TCP sender after slow start: RACK-TLP, and the window's
way down from slow start's size to the steady state's.

Cardwell, Savage & Anderson (2000) build on PFTK (Padhye et al., SIGCOMM 1998),
which assumes *correlated* loss: "if a packet is lost, all packets that follow it in
the same round are also lost" (PFTK §2.1, a drop-tail queue overflowing). Then a loss
with fewer than three segments behind it ends in a timeout (Q̂, eq. 17) and the
window restarts from the steady state at once. An emulated link with random loss
(iptables ``statistic``, netem, wirelab's link) drops packets *independently*, and
Linux detects loss by time and SACK, not by three duplicate ACKs:

* **RACK-TLP** (RFC 8985, Linux's default since 4.18): any later segment that
  arrives marks a lost one for fast recovery (§6); a loss with nothing behind it is
  probed after PTO = 2·SRTT (§7.2; Linux adds 2 jiffies, ``tcp_schedule_loss_probe``)
  and repaired by fast recovery too. An RTO (RFC 6298, backoff as PFTK's G(p)) is
  left for a lost retransmission, probability p.
* **Fast recovery costs no idle of its own**: with PRR (RFC 6937) the sender keeps
  sending during recovery, β·W segments in the round, which is the first round of the
  epochs below (their time counts its idle); a loss in the last flight costs the round
  its retransmission takes instead (``transfer_time``). Charging the recovery round's
  idle [round − β·W·S/R]⁺ on top counted that round twice: at 100 ms one-way a first
  loss in slow start cost the runs 0.13-0.16 s, the model charged it 0.2 s more.
* **The window comes down by epochs** (derived here, a mean-field version of
  Mathis et al. 1997's sawtooth): between two losses the sender delivers 1/p
  segments, its window growing α′ per round and its rate capped at the pipe; each
  loss multiplies the window by β. Starting from β·E[W_ss] (Cardwell eq. 11), the
  epochs converge to the AIMD fixed point, whose mean window is
  √(α′(1 + β)/(2(1 − β)p)) segments; α′ = 2p(1 − β)T²/(1 + β) makes it the steady
  state's T (RFC 9438 CUBIC, or Reno's PFTK, see ``congestion``): the long run is the
  cited steady state, the way there is derived. (For CUBIC's Reno-friendly region α′ is
  its own α = 3(1 − β)/(1 + β), RFC 9438 §4.3, within 4 %.) Where the link binds, the
  algorithm's own α (RFC 5681 §3.1: 1; RFC 9438 §4.3), its window above the pipe.

So a short transfer whose first loss came late rides its large window down over
several epochs, faster than the steady state, as measured here.

Not modelled: Linux cuts from the window when the loss is *seen*, slow start having grown
it by the segments ACKed and SACKed meanwhile (ss -ti, CUBIC, 10 Mbit/s, 15 ms, 1 %: a loss
in the window of 20 cut from 30, ssthresh 21). Taken in (about 1.5·w), it moved 200 kB at
100 ms from 1.70 to 1.45 of the prediction but 15 ms, 2 % from 0.95 to 0.78: the mean-field
epochs are optimistic on the way down, and the two errors offset.
Nor CUBIC's concave regrowth towards W_max after each cut on the way down (RFC 9438 §4.2,
W_cubic(t) = C(t − K)³ + W_max): ss -ti of 10 MB at 40 ms one-way and 0.5 % (3 runs) grew
0.7-1.7 segment a round between the first cuts (windows 25-180, as that curve says), α′ is
0.43 here; the runs delivered 710-1513 segments in their first 2 s (the model 780) and ran at
the chain's rate after 6 s: in these runs the model's shortfall is all in this start. Run by
run (tcp_cubic.c's rules against a constant α) it is worth +5 % on 10 MB at 40 ms, 0.5 %,
and within ±2 % elsewhere at 5-40 ms; carrying the epochs through ``window_chain`` instead of
this mean field moved 10 MB at 40 ms by 1 % at most but 200 kB at 15 ms by 2-4 %: neither taken in.
Nor in these epochs themselves (growth max(α′, the curve towards W_max), W_max after §4.7's
fast convergence, t one round ahead and at most ½·cwnd a round as tcp_cubic.c): over the stored
CUBIC runs at 0.5-2 % (200 kB-10 MB) the geometric mean of measured/predicted at 40 ms one-way
went from 1.069 to 1.060, at 5 and 15 ms by 0.1 % at most: not taken in.
"""
from __future__ import annotations

import math

from ..errors import ModelError
from .slowstart import backoff_factor

__all__ = ["probe_timeout", "rack_tlp_cost", "expected_rto", "epoch_alpha", "loss_epochs", "first_loss_transfer"]

#: Linux adds TCP_TIMEOUT_MIN (2 jiffies, 2 ms at HZ = 1000) to the probe timeout.
TLP_EXTRA_S = 0.002


def probe_timeout(round_s: float) -> float:
    """PTO = 2·SRTT (RFC 8985 §7.2) + Linux's 2 jiffies (``tcp_schedule_loss_probe``)."""
    return 2.0 * round_s + TLP_EXTRA_S


def rack_tlp_cost(loss: float, round_s: float, rto_s: float, window: float) -> float:
    """Expected extra time of one loss with independent loss, SACK and RACK-TLP, the window
    ``window`` when it happened: a probe timeout when no segment follows the lost one in its
    flight (p^((W − 1)/2), the lost one at a random place), and an RTO with backoff when the
    retransmission is lost too (p·G(p)·RTO/(1 − p), PFTK / Cardwell eq. 18). The recovery
    round itself is in the epochs (module docstring)."""
    if not 0 < loss < 1 or round_s <= 0 or window <= 0:
        raise ModelError("loss in (0, 1), a positive round and window please", "e.g. p = 0.01, round 31 ms, W 40")
    alone = loss ** max((window - 1.0) / 2.0, 0.0)
    return alone * probe_timeout(round_s) + expected_rto(loss, rto_s)


def expected_rto(loss: float, rto_s: float) -> float:
    """p·G(p)·RTO/(1 − p): the retransmission of a loss is lost too, and RACK cannot see it
    (PFTK 1998; Cardwell et al. 2000, eq. 18)."""
    return loss * backoff_factor(loss) * rto_s / (1.0 - loss)


def epoch_alpha(target: float, loss: float, beta: float, own_alpha: float, *, loss_bound: bool = True,
                pipe: float | None = None) -> float:
    """α′ = 2p(1 − β)T²/(1 + β): the growth per round whose AIMD fixed point has mean window
    ``target`` segments, so that the epochs end in the steady state the loss model gives
    (module docstring). When the sawtooth's top would pass the ``pipe`` (the rate is capped
    there), α′ is raised until the capped fixed point's rate is the target (bisection). Where
    the link or a window binds instead (``loss_bound`` False), the algorithm's own
    ``own_alpha``: its window then stays above the pipe."""
    if not loss_bound:
        return own_alpha
    alpha = 2.0 * loss * (1.0 - beta) * target * target / (1.0 + beta)
    if pipe is None or 2.0 * target / (1.0 + beta) <= pipe or target >= pipe:
        return alpha
    low, high = alpha, alpha
    while _fixed_point_rate(high, loss, beta, pipe) < target and high < alpha * 1e6:
        low, high = high, high * 2.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        if _fixed_point_rate(mid, loss, beta, pipe) < target:
            low = mid
        else:
            high = mid
    return high


def _fixed_point_rate(alpha: float, loss: float, beta: float, pipe: float) -> float:
    """Segments per round once the epochs have settled (window growth ``alpha``, cap ``pipe``)."""
    w, per_epoch = 1.0, 1.0 / loss
    rounds = 1.0
    for _ in range(500):
        rounds, end = _epoch(per_epoch, w, alpha, pipe)
        nxt = beta * end
        if abs(nxt - w) <= 1e-9 * max(w, 1.0):
            break
        w = nxt
    return per_epoch / rounds


def _epoch(segments: float, start: float, alpha: float, pipe: float) -> tuple[float, float]:
    """(rounds, window at the end) to send ``segments`` from window ``start`` growing ``alpha``
    per round, the rate capped at ``pipe`` segments per round (the window grows on above it)."""
    start = max(start, 1e-9)
    if start >= pipe:
        rounds = segments / pipe
        return rounds, start + alpha * rounds
    ramp = (pipe - start) / alpha
    in_ramp = ramp * (start + pipe) / 2.0
    if segments <= in_ramp:
        rounds = (math.sqrt(start * start + 2.0 * alpha * segments) - start) / alpha
    else:
        rounds = ramp + (segments - in_ramp) / pipe
    return rounds, start + alpha * rounds


def loss_epochs(segments: float, window: float, loss: float, *, beta: float, alpha: float,
                pipe: float) -> float:
    """Expected rounds to send ``segments`` after the first loss left ``window`` (β·W_ss),
    one loss per 1/p segments, each multiplying the window by β (module docstring)."""
    if segments <= 0:
        return 0.0
    if not 0 < loss < 1 or not 0 < beta < 1 or alpha <= 0 or pipe <= 0:
        raise ModelError("loss in (0, 1), 0 < β < 1, α > 0 and a positive pipe please",
                         "e.g. p = 0.01, β = 0.7, α = 0.53, pipe = 26 segments")
    per_epoch, rounds, w = 1.0 / loss, 0.0, window
    for _ in range(100_000):                       # converges geometrically (×β per epoch)
        if segments <= 0:
            break
        chunk = min(per_epoch, segments)
        spent, end = _epoch(chunk, w, alpha, pipe)
        rounds += spent
        segments -= chunk
        nxt = beta * end
        if abs(nxt - w) <= 1e-9 * max(w, 1.0) and segments > 0:   # the fixed point: the rest alike
            rounds += spent * segments / chunk
            break
        w = nxt
    else:
        rounds += segments / min(w, pipe)
    return rounds


def _slow_start_windows(segments: float, iw: float, cap: float | None):
    """(window, segments sent before it) of slow start until ``segments`` are sent; once the
    window reaches ``cap`` the rest is one last group of equal windows (returned with its count)."""
    sent, w = 0.0, float(iw)
    while sent < segments:
        if cap is not None and w >= cap:
            yield cap, sent, math.ceil((segments - sent) / cap - 1e-9)
            return
        yield w, sent, 1
        sent += w
        w *= 2.0


def first_loss_transfer(segments: float, *, segment_s: float, round_s: float, loss: float, iw: float,
                        cap: float | None, beta: float, alpha: float, pipe: float,
                        rto_s: float) -> dict[str, float]:
    """Expected data-phase seconds of ``segments`` segments, by cause, summed over the slow-start
    window k in which the first loss falls (probability (1 − p)^(c_k) − (1 − p)^(c_k + w_k)),
    or none (all sent in slow start): before it, slow start's windows and idle
    [S/R + RTT − w·S/R]⁺ (Kurose & Ross; ``round_s`` is the ACK clock's S/R + RTT + ACK/R); then ``rack_tlp_cost`` for window w_k and the
    epochs from β·w_k (``loss_epochs``) for what is left. Derived here, on Cardwell et al.'s
    structure (slow start until the first loss, eqs. 5-16), the expectation taken over where
    that loss falls instead of at E[d_ss] (inside a run of windows held at ``cap``, at its
    expected place). Keys: ``send`` (every segment's own time), ``slow_start`` and ``window``
    (idle), ``loss_recovery``, ``excess`` (the epochs' time beyond their segments' own), and
    ``variance`` (s²) of the time over where the first loss falls: the spread of one run."""
    survive = math.log1p(-loss)
    out = {"send": segments * segment_s, "slow_start": 0.0, "window": 0.0, "loss_recovery": 0.0, "excess": 0.0}
    idle = {"slow_start": 0.0, "window": 0.0}          # idle before the window at hand
    moments = [0.0, 0.0]                               # Σ P·T and Σ P·T² of the time beyond ``send``

    def branch(probability: float, seconds: float) -> None:
        moments[0] += probability * seconds
        moments[1] += probability * seconds * seconds

    def lost_in(probability: float, window: float, left: float, idle_now: dict) -> None:
        if probability <= 0:
            return
        rounds = loss_epochs(left, beta * window, loss, beta=beta, alpha=alpha, pipe=pipe)
        recovery = rack_tlp_cost(loss, round_s, rto_s, window)
        excess = max(rounds * round_s - left * segment_s, 0.0)
        out["loss_recovery"] += probability * recovery
        out["excess"] += probability * excess
        for name, seconds in idle_now.items():
            out[name] += probability * seconds
        branch(probability, recovery + excess + sum(idle_now.values()))

    for w, before, count in _slow_start_windows(segments, iw, cap):
        gap = max(0.0, round_s - w * segment_s)           # round_s = S/R + RTT + ACK/R
        reach = math.exp(before * survive)                 # no loss before this window
        if count == 1:
            end = min(before + w, segments)
            lost_in(reach * -math.expm1((end - before) * survive), w, segments - end, idle)
            if end < segments:
                idle["slow_start"] += gap
            continue
        # a run of ``count`` windows held at the cap: the loss at its expected place in the run
        block = segments - before
        lost = reach * -math.expm1(block * survive)
        place = -math.expm1(block * survive) / loss if loss else block       # E[min(J, block)]
        windows_before = min(math.floor(place / w), count - 1)
        lost_in(lost, w, max(block - (windows_before + 1) * w, 0.0),
                {**idle, "window": idle["window"] + windows_before * gap})
        idle["window"] += (count - 1) * gap
    tail = math.exp(segments * survive)                    # no loss at all
    for name, seconds in idle.items():
        out[name] += tail * seconds
    branch(tail, sum(idle.values()))
    out["variance"] = max(moments[1] - moments[0] ** 2, 0.0)
    return out
