"""What a timed TCP run at random loss delivers, in expectation: the window as a Markov chain.

A few seconds of a loss-bound transfer are a handful of loss events, so their
goodput is an *expectation over random windows*, not the window of an average
run: the mean-field way down from slow start (``recovery.loss_epochs``) put the
first seconds above what the runs measured, and a loss-free sawtooth is not a
window that jumps at random (Altman, Avrachenkov & Barakat, SIGCOMM 2000, make the
same point for the steady state). So the window's *distribution* is carried forward
one base round R0 at a time (derived here; each rule cited):

* a state is (window w, phase): slow start from IW (RFC 6928, RFC 5681 §3.1:
  cwnd grows by each segment acknowledged), congestion avoidance (growth α per
  window's worth of ACKs: RFC 9438 §4.3 Reno-friendly α = 3(1 − β)/(1 + β), or the
  α whose sawtooth averages the cited steady state, ``chain_alpha``), the round a
  loss takes to be seen (RFC 8985 §6: a later segment's SACK; the window goes on
  growing, and what else is lost in it is the same episode), and one round of
  recovery without growth (Linux grows only in the Open state; RFC 6937 PRR);
* the kernel's window is whole segments: a state sends ⌊w⌋ per round, and a cut
  leaves max(⌊β·⌊w⌋⌋, 2) (``ssthresh_after_loss``; RFC 9438 §4.6 β = 0.7, RFC 5681
  β = ½; one reduction per episode, RFC 6675 §5);
* per base round a state sends ⌊w⌋·R0/round(w) segments, at most the link's R0·R/S
  (a queue holds the rest: the round stretches to ⌊w⌋·S/R); each is lost with
  probability p independently; a window beyond pipe + queue overflows the
  tail-drop queue: a cut too;
* round(w) is the ACK clock's round with delayed ACKs (``ackclock``): a window-bound
  rate is w/round(w), not w/R0;
* the expected segments delivered per round, summed over the measured interval,
  give its expected goodput (iperf3's -O and -t: from ``start`` for ``duration``).

A seeded Monte Carlo of these rules agrees within 3 % (tests). Measured on the
userspace link (10 Mbit/s, 20 ms each way, CUBIC, iperf3 -O 1): 5 s runs at 0.1, 0.5,
1, 2 and 5 % loss read 1.03, 0.91, 0.89 (another seed set 0.98), 0.98 and 1.05 of
the chain; 30 s runs 0.95 at 2 % and 0.99 at 5 %.

Not modelled: retransmission timeouts (a lost retransmission RACK cannot see: 1 in
16 runs of 5 s at 2 % here; above ``CHAIN_LOSS_LIMIT`` they shape the run and the
chain is not used), HyStart (it leaves slow start on delay, after random loss has
ended it here), receive-window autotuning, and CUBIC's own curve: the chain grows by a
constant α, where tcp_cubic.c takes the larger of W_cubic(t) = C(t − K)³ + W_max (RFC 9438
§4.2, t one min-RTT ahead, fast convergence §4.7) and the Reno-friendly W_est (§4.3). Run
by run with that rule instead (tests), the long run moves by −2 to +0.5 % at 30 and 80 ms
RTT and 0.5-2 % loss (the Reno-friendly line binds there), but +13 % at 200 ms and 1 %:
left out. Linux keeps α where §4.3 raises it to 1 above cwnd_prior: ss -ti of 10 MB at 0.5 %
(3 runs at 15 and at 40 ms one-way) grew 0.50 and 0.49 segment an srtt below cwnd_prior, 0.38
and 0.39 above. The same runs after their first 6 s (3 s at 15 ms): at 40 ms 15.4 segments per
R0 against a long run of 15.6, one cut per 210 segments (the rules run by run: 218), ssthresh 0.68
of cwnd; at 15 ms 12.8 against 15.5, srtt 35.2 ms where ``ackclock`` has 32.5 (40 ms: 85.8, 83.9):
the receiver's wait, the pair's queue and the hosts' own time (``ackclock``, measured by capture).
At 5 ms one-way and 1 % (2 MB, 4 runs captured, after 0.5 s) the runs sent 7.5-9.3 Mbit/s of
payload, 8.42 on average, against a long run of 8.60 (the bottleneck busy 0.80-0.97 run by run).
Windows live on a grid (1/16 segment up to 64, then 0.5 % apart); a move between grid
points splits its probability so the expected window is kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..errors import ModelError
from .ackclock import LINUX_DELACK_MIN_S, aligned_round, delayed_ack_round
from .congestion import ALPHA, BETA, SteadyState, aimd_window

__all__ = ["TimedRun", "timed_run", "long_run", "chain_alpha", "chain_setting", "settled_state",
           "ssthresh_after_loss", "CHAIN_LOSS_LIMIT"]

#: Above this loss a retransmission is lost often enough (probability p) that timeouts, which
#: the chain leaves out, shape the run: ``predict`` does not use the chain there, and says so.
CHAIN_LOSS_LIMIT = 0.10

#: Grid step below 64 segments: integer windows fall on grid points, and splitting a move
#: between points blurs ⌊w⌋ by at most this much.
_FINE = 1.0 / 16.0
#: Past this many rounds a run is taken to have settled once its distribution stops changing.
_SETTLE_TOL = 1e-10
#: Base rounds a long run is followed for at most (it stops once settled): at 0.01 % loss and a
#: 300 ms round a loss-bound chain settles in about 2200.
_LONG_RUN_ROUNDS = 4000


@dataclass(frozen=True)
class TimedRun:
    """Expected segments delivered per base round, and the mean round, from the first data byte."""
    step_s: float
    delivered: np.ndarray          # expected new segments delivered in each base round
    mean_round_s: np.ndarray       # E[round(w)] in each base round (delayed ACKs included)
    settled_after: int | None      # the chain stopped changing here; later rounds repeat the last

    def _weights(self, start_s: float, duration_s: float) -> np.ndarray:
        edges = np.arange(len(self.delivered) + 1) * self.step_s
        lo, hi = np.clip(edges[:-1], start_s, start_s + duration_s), np.clip(edges[1:], start_s, start_s + duration_s)
        return (hi - lo) / self.step_s

    def segments(self, start_s: float, duration_s: float) -> float:
        """Expected segments delivered between ``start_s`` and ``start_s + duration_s``."""
        return float(self._weights(start_s, duration_s) @ self.delivered) + self._tail(start_s, duration_s,
                                                                                        self.delivered)

    def round_s(self, start_s: float, duration_s: float) -> float:
        """Mean ACK-clock round over the interval (what the sender's srtt is compared with)."""
        w = self._weights(start_s, duration_s)
        tail_rounds = self._tail(start_s, duration_s, np.ones_like(self.mean_round_s))
        total = float(w.sum()) + tail_rounds
        return (float(w @ self.mean_round_s) + tail_rounds * float(self.mean_round_s[-1])) / total

    def _tail(self, start_s: float, duration_s: float, per_round: np.ndarray) -> float:
        end = len(self.delivered) * self.step_s
        if start_s + duration_s <= end:
            return 0.0
        return (start_s + duration_s - max(start_s, end)) / self.step_s * float(per_round[-1])


def ssthresh_after_loss(cwnd, beta: float):
    """The window after a loss in whole segments: max(⌊β·cwnd⌋, 2) (Linux's integer arithmetic:
    tcp_cubic.c ``max((cwnd * beta) / BICTCP_BETA_SCALE, 2U)``, β = 717/1024; tcp_reno_ssthresh
    ``max(cwnd >> 1, 2)``). ``cwnd`` may be an array."""
    return np.maximum(np.floor(beta * np.floor(np.asarray(cwnd, dtype=float) + 1e-9) + 1e-9), 2.0)


def _grid(top: float) -> np.ndarray:
    fine = np.arange(1.0, min(top, 64.0) + _FINE, _FINE)
    if top <= 64.0:
        return fine
    return np.concatenate([fine, np.geomspace(64.0 * 1.005, top * 1.005, int(math.log(top / 64.0) / math.log(1.005)) + 1)])


def _split(grid: np.ndarray, where: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For moves to windows ``where``: the grid points either side and the share of the upper one
    (splitting a move linearly keeps its expected window)."""
    where = np.clip(where, grid[0], grid[-1])
    hi = np.clip(np.searchsorted(grid, where), 1, len(grid) - 1)
    lo = hi - 1
    return lo, hi, (where - grid[lo]) / (grid[hi] - grid[lo])


def _scatter(split, mass: np.ndarray, n: int) -> np.ndarray:
    """Probability ``mass`` moved along a precomputed ``_split``."""
    lo, hi, share = split
    return np.bincount(lo, mass * (1 - share), minlength=n) + np.bincount(hi, mass * share, minlength=n)


@lru_cache(maxsize=256)          # a sweep asks again for every repetition and plot point
def timed_run(*, loss: float, beta: float, alpha: float, segment_s: float, base_s: float, until_s: float,
              iw: float = 10.0, pipe: float | None = None, queue: float | None = None,
              cap: float | None = None, delayed_acks: bool = True,
              delack_s: float = LINUX_DELACK_MIN_S, from_window: float | None = None) -> TimedRun:
    """The chain (module docstring) from the first data byte to ``until_s``. ``segment_s`` is S/R,
    ``base_s`` R0 = S/R + RTT + ACK/R; ``pipe`` new segments per R0 at most (default R0·R/S·(1 − p));
    ``queue`` segments the bottleneck holds beyond it (None: no overflow); ``cap`` the largest
    window (a socket buffer); ``alpha`` growth per round in congestion avoidance; ``from_window``:
    start in congestion avoidance at that window, not in slow start from IW (a long run forgets its start)."""
    if not 0 < loss < 1 or not 0 < beta < 1 or not alpha > 0 or not 0 < segment_s < base_s or until_s < 0:
        raise ModelError("loss in (0, 1), 0 < β < 1, α > 0, 0 < S/R < R0 and a time ≥ 0 please",
                         "e.g. p = 0.02, β = 0.7, α = 0.53, S/R = 1.2 ms, R0 = 41.3 ms")
    link = base_s / segment_s                                  # segments the link carries per R0
    pipe = link * (1 - loss) if pipe is None else pipe
    top = max(2.0 * iw, link + queue) if queue is not None else max(4.0 * link, 2.0 * iw, 16.0)
    top = min(top, cap) if cap is not None else top
    grid = _grid(max(top, 2.0))
    survive = math.log1p(-loss)
    # the round of each window, by phase: slow start and recovery keep the pairing (aligned)
    cwnd = np.floor(grid + 1e-9)                                # the kernel's window is whole segments
    stretch = cwnd * segment_s                                 # a window beyond the pipe waits in the queue
    ca_round = np.maximum(delayed_ack_round(base_s, segment_s, cwnd, delack_s=delack_s)
                          if delayed_acks else np.full_like(grid, base_s), stretch)
    paired = np.maximum(aligned_round(base_s, segment_s) if delayed_acks else base_s, stretch)
    # phases: slow start, congestion avoidance, the round a loss takes to be seen (from either), recovery
    rounds = {"ss": paired, "ca": ca_round, "dss": paired, "dca": ca_round, "rec": paired}
    sent = {ph: np.minimum(cwnd * base_s / r, link) for ph, r in rounds.items()}
    overflow = grid >= top - 1e-9 if queue is not None else np.zeros_like(grid, dtype=bool)
    cut_p = {ph: np.where(overflow, 1.0, -np.expm1(s * survive)) for ph, s in sent.items()}
    cut_to = ssthresh_after_loss(cwnd, beta)
    zero = np.zeros_like(grid)
    mass = {ph: zero for ph in rounds}
    n = len(grid)
    slow = from_window is None                                  # started in congestion avoidance: never in slow start
    first = "ss" if slow else "ca"
    mass[first] = _scatter(_split(grid, np.array([float(iw if from_window is None else from_window)])),
                           np.array([1.0]), n)
    steps = max(1, math.ceil(until_s / base_s))
    delivered, mean_round, settled = np.zeros(steps), np.zeros(steps), None
    grown = {"ss": np.minimum(grid + sent["ss"] * (1 - loss), top),
             "ca": np.minimum(grid + alpha * sent["ca"] / cwnd, top)}
    to_ss, to_ca, to_cut = _split(grid, grown["ss"]), _split(grid, grown["ca"]), _split(grid, cut_to)
    for k in range(steps):
        delivered[k] = sum(float(m @ sent[ph]) for ph, m in mass.items()) * (1 - loss)
        mean_round[k] = sum(float(m @ rounds[ph]) for ph, m in mass.items())
        move = lambda ph, to, share: _scatter(to, mass[ph] * share, n) if slow or ph not in ("ss", "dss") \
            else zero                                                    # noqa: E731
        nxt = {"ss": move("ss", to_ss, 1 - cut_p["ss"]),
               "ca": move("ca", to_ca, 1 - cut_p["ca"]) + mass["rec"] * (1 - cut_p["rec"]),
               # a loss is seen a round later (RFC 8985 §6: a later segment's SACK); the window
               # goes on growing until then, and what else is lost in that round is the same episode
               "dss": move("ss", to_ss, cut_p["ss"]),
               "dca": move("ca", to_ca, cut_p["ca"]) + mass["rec"] * cut_p["rec"],
               "rec": move("dss", to_cut, 1.0) + move("dca", to_cut, 1.0)}
        change = sum(float(np.abs(nxt[ph] - mass[ph]).sum()) for ph in mass)
        mass = nxt
        if change < _SETTLE_TOL and k > 10:
            settled = k + 1
            delivered, mean_round = delivered[:k + 1], mean_round[:k + 1]
            break
    return TimedRun(base_s, delivered, mean_round, settled)


def chain_alpha(target: float, loss: float, beta: float) -> float:
    """The growth per round whose AIMD sawtooth, one recovery round without growth per loss,
    averages ``target`` segments per round (``congestion.aimd_window``, solved by bisection).
    For CUBIC's Reno-friendly region it is RFC 9438's own α = 3(1 − β)/(1 + β) (the steady
    state *is* that sawtooth); where CUBIC's own window (eq. 5) or PFTK binds, the α that
    makes the chain's long run the cited steady state."""
    if not target > 0:
        raise ModelError(f"a positive target window please, not {target!r}", "e.g. 7.9 segments")
    low, high = 1e-6, 1e6
    for _ in range(200):
        mid = math.sqrt(low * high)
        if aimd_window(loss, mid, beta) < target:
            low = mid
        else:
            high = mid
        if high / low < 1 + 1e-12:
            break
    return math.sqrt(low * high)


def long_run(*, loss: float, beta: float, alpha: float, segment_s: float, base_s: float, iw: float = 10.0,
             queue: float | None = None, cap: float | None = None) -> float:
    """Segments delivered per base round R0 once the chain has settled: the steady state of a
    loss-bound Linux sender (``predict`` takes it as the steady state, so that a long transfer,
    a long timed run and the steady state are one number). It is RFC 9438's response (eq. 5, or
    the Reno-friendly AIMD of §4.3; Mathis / PFTK for Reno) carried through what those leave out
    and Linux does (module docstring): a window that jumps at random instead of a periodic
    sawtooth, whole segments, delayed ACKs, the recovery round, a rate capped at the link with the
    round stretched by the queue. Arguments as ``timed_run``."""
    pipe = base_s / segment_s * (1 - loss)
    run = timed_run(loss=loss, beta=beta, alpha=alpha, segment_s=segment_s, base_s=base_s,
                    until_s=_LONG_RUN_ROUNDS * base_s, iw=iw, queue=queue, cap=cap,
                    from_window=pipe if cap is None else min(pipe, cap))
    return float(run.delivered[-1])


#: A loss response this many times the pipe (or the window cap) keeps the window above it even
#: after the cuts random loss brings: the chain's long run is then the link (or window) limit
#: within 0.1 % (measured on the chain: 0.9994 of the link at 4.2 times, 0.997 at 2.4).
_SURELY_ABOVE = 3.0
#: The cited loss responses the chain carries (``congestion``).
_RESPONSES = ("cubic", "mathis", "padhye")


def chain_setting(cited: SteadyState, rate_bps, eta, mss, header, rtt_s, loss, window_bytes,
                   queue_bytes) -> dict:
    """``timed_run``'s arguments for a cited steady state (``congestion``): S/R, R0 =
    S/R + RTT + ACK/R, β, α, the queue and the cap in segments. CUBIC's α is the one whose sawtooth
    averages RFC 9438's response (eq. 5 where it is above the Reno-friendly α = 3(1 − β)/(1 + β),
    ``chain_alpha``); Reno's is RFC 5681's 1 segment a round: PFTK's timeouts are those RACK-TLP
    (RFC 8985) avoids at random loss (``congestion``). The chain caps the rate at the link and the
    window at ``window_bytes`` itself."""
    segment = 8.0 * mss / (eta * rate_bps)
    base = rtt_s + segment + 8.0 * header / rate_bps
    beta = BETA[cited.cc]
    alpha = ALPHA["reno"] if cited.cc == "reno" else chain_alpha(cited.limits["cubic"] * base / (8.0 * mss),
                                                                 loss, beta)
    return dict(loss=loss, beta=beta, alpha=alpha, segment_s=segment, base_s=base,
                queue=None if queue_bytes is None else queue_bytes * eta / mss,            # wire bytes mss/η each
                cap=None if window_bytes is None else max(window_bytes / mss, 2.0))


def settled_state(cited: SteadyState, setting: dict, mss: int, iw: int) -> SteadyState:
    """The steady state of a loss-based cc at random loss: the window chain's long run
    (``long_run``), the limit "chain" in place of the cited responses it carries
    (named in the notes); where it is within 0.1 % of the link or window limit, that one binds."""
    pipe = setting["base_s"] / setting["segment_s"] * (1 - setting["loss"])
    sawtooth = aimd_window(setting["loss"], setting["alpha"], setting["beta"])      # segments a round, no cap
    if sawtooth >= _SURELY_ABOVE * min(pipe, setting["cap"] or pipe):
        return cited
    chain = 8.0 * mss * long_run(iw=iw, **setting) / setting["base_s"]
    responses = {k: v for k, v in cited.limits.items() if k in _RESPONSES}
    limits = {k: v for k, v in cited.limits.items() if k not in _RESPONSES}
    others = min(limits.values())
    limits["chain"] = chain
    binding = "chain" if chain < others * (1 - 1e-3) else min(limits, key=limits.__getitem__)
    cited_text = ", ".join(f"{k} {v / 1e6:.3f}" for k, v in responses.items())
    notes = cited.notes + (f"steady state: the cited response ({cited_text} Mbit/s) as Linux runs it at random loss "
                           f"(window_chain's long run): {chain / 1e6:.3f} Mbit/s",)
    return replace(cited, limits=limits, binding=binding, goodput_bps=min(chain, others), notes=notes)
