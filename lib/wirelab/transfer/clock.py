"""Two clocks: one that is off by a known offset and drift, and the fit that finds both.

One-way delay is receive time − send time, read on two clocks. When the
clocks differ, what the receiver computes is the delay *plus* θ(t), the
receiver's clock minus the sender's, which changes with time when one clock
runs faster (drift, in parts per million: 1 ppm = 1 µs per second = 86.4 ms
a day; cheap crystals drift tens of ppm). NTP's echo exchange measures θ:

    t1 = sender's clock when the request left   t2 = receiver's clock when it arrived
    t3 = receiver's clock when the reply left   t4 = sender's clock when it came back
    θ  = ((t2 − t1) + (t3 − t4)) / 2            RTT = (t4 − t1) − (t3 − t2)

(RFC 5905 §8; exact when both directions take equally long). One median of θ
(what a short run can do) misses the drift; echo rounds spread over time and
a straight line θ(t) = θ₀ + r·(t − t₀) fitted by least squares recover both
(the clock filter of RFC 5905 §10 keeps the rounds with the smallest RTT,
which suffered least from queueing; so does ``fit_offset_drift``).

``SkewedClock`` gives a program a clock that is deliberately wrong, so a lab
can configure an offset and a drift and check that the fit finds them.
Standard library only: this module is read by students.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import UsageError

__all__ = ["SkewedClock", "ClockFit", "echo_sample", "fit_offset_drift"]


class SkewedClock:
    """A clock that reads ``offset_s`` + ``drift_ppm`` µs per second ahead of the real one
    (``base``, ``time.time_ns``): after t seconds it is offset + drift·t wrong."""

    def __init__(self, offset_s: float = 0.0, drift_ppm: float = 0.0, base=time.time_ns):
        if abs(drift_ppm) >= 1e6:
            raise UsageError(f"drift of {drift_ppm} ppm is not a clock", "use e.g. 50 (ppm)")
        self.offset_ns, self.rate = int(round(offset_s * 1e9)), drift_ppm * 1e-6
        self.base = base
        self.start_ns = base()
        if not self.offset_ns and not self.rate:
            self.time_ns = base                 # an honest clock: the real one, nothing added

    def time_ns(self) -> int:
        true = self.base()        # integers throughout: a float of 1.7e18 ns keeps only 256 ns
        return true + self.offset_ns + round(self.rate * (true - self.start_ns))

    def true_ns(self, skewed_ns: int) -> float:
        """The real time at which this clock read ``skewed_ns`` (for checking a lab, not for use)."""
        return self.start_ns + (skewed_ns - self.offset_ns - self.start_ns) / (1.0 + self.rate)


def echo_sample(t1: int, t2: int, t3: int, t4: int) -> tuple[float, float, float]:
    """One echo round (ns stamps) → (t1 in s, θ in s, RTT in s) (RFC 5905 §8)."""
    theta = ((t2 - t1) + (t3 - t4)) / 2e9
    rtt = ((t4 - t1) - (t3 - t2)) / 1e9
    return t1 / 1e9, theta, rtt


@dataclass(frozen=True)
class ClockFit:
    """θ(t) = offset_s + drift · (t − t0_s): the receiver's clock minus the sender's."""
    offset_s: float        # θ at t0_s
    drift: float           # dθ/dt, dimensionless (× 1e6 = ppm)
    t0_s: float            # sender-clock time the offset refers to (the first round used)
    residual_s: float      # standard deviation of the rounds used around the line
    used: int              # rounds kept (smallest RTTs)
    rounds: int            # rounds given

    @property
    def drift_ppm(self) -> float:
        return self.drift * 1e6

    def at(self, t_s: float) -> float:
        """θ at sender-clock time ``t_s``."""
        return self.offset_s + self.drift * (t_s - self.t0_s)


def fit_offset_drift(samples, *, keep: float = 0.5) -> ClockFit:
    """Least-squares line through (t, θ) of the echo rounds whose RTT is among the smallest
    ``keep`` share (at least 3 rounds). ``samples``: (t_s, θ_s, rtt_s) as ``echo_sample``
    returns. With a single round (or all at one instant) the drift is 0 and the offset θ."""
    rounds = [tuple(map(float, s)) for s in samples]
    if not rounds:
        raise UsageError("no echo rounds to fit a clock offset to", "run some echo rounds first")
    if not 0 < keep <= 1:
        raise UsageError(f"keep must be in (0, 1], not {keep!r}", "e.g. keep=0.5")
    by_rtt = sorted(rounds, key=lambda s: s[2])
    used = sorted(by_rtt[:max(3, int(round(len(rounds) * keep)))], key=lambda s: s[0])
    t0 = used[0][0]
    xs = [t - t0 for t, _, _ in used]
    ys = [theta for _, theta, _ in used]
    n = len(used)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = 0.0 if sxx == 0 else sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
    intercept = mean_y - slope * mean_x
    residual = (sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys)) / max(n - 2, 1)) ** 0.5
    return ClockFit(intercept, slope, t0, residual, n, len(rounds))
