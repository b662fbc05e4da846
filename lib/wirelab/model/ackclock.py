"""The ACK clock's round with delayed ACKs: how long a segment holds its place in the window.

A window-bound TCP sender delivers W segments per *round*, the mean time from a
segment's first bit leaving to the ACK that frees its place (Little's law: rate =
W / round). Without delayed ACKs the round is R0 = S/R + RTT + ACK/R (+ the host's
own processing): every segment is acknowledged when it has arrived.

A receiver that delays ACKs acknowledges "at least every second full-sized
segment" and holds a lone one at most a timer (RFC 5681 §4.2, RFC 1122 §4.2.3.2:
< 0.5 s; Linux: ``TCP_DELACK_MIN`` = 40 ms, include/net/tcp.h). With an ACK clock
that releases two segments per ACK, segments arrive in pairs S/R apart, the pairs
2·round/W apart. Derived here:

* **aligned** (each ACK covers one pair): the first of a pair waits S/R for the
  second; the mean segment waits S/(2R): round = R0 + S/(2R).
* **shifted** (each ACK covers the second segment of one pair and the first of the
  next): half the segments wait the gap to the next pair, g = 2·round/W − S/R
  (at least S/R, at most the timer D): round = R0 + g/2, which solves to
  round = (R0 − S/(2R))·W/(W − 1) while S/R ≤ g ≤ D, else R0 + D/2.
* Every window increase of one segment (CUBIC's Reno-friendly α ≈ 0.53 per round,
  RFC 9438 §4.3) sends an odd segment and flips the pairing, so the clock spends
  half its time in each: **round = ½(aligned + shifted)**.

At W = 8 on a 40 ms path at 10 Mbit/s this is 44.2 ms against R0 = 41.3 ms; measured
here (userspace link, CUBIC at 2 % loss, cwnd ≈ 8) the sender's srtt was 44-46 ms,
and 41.5 ms with the receiver's delayed ACKs off (``ip route … quickack 1``), which
also raised goodput by 5-6 % on the same loss patterns.
During loss recovery (out-of-order data) and in slow start (four segments released
per ACK of two) the pairing holds: those rounds are ``aligned`` (quickack) or R0.

Where a round goes, measured segment by segment (CUBIC, 2 MB, 1 %, 10 Mbit/s, userspace
link; a capture at the sender, the bottleneck's departures rebuilt from the send times
at S/R a frame; segments ACKed without SACK after slow start): the mean time a segment
held its place against this module's round at the same flights (max(round, W·S/R)):

* 5 ms each way (4 runs, after 1 s): 15.6 ms against 15.7. The window (flight 12) is
  above the pipe (9.3 segments): 3.4 ms of standing queue, which the stretch W·S/R has.
* 15 ms (7 runs, after 2 s): 35.1 ms against 32.9 (R0 31.3, flight 12): 2.3 ms waiting
  at the receiver for the ACK's newest segment (93 % of ACKs covered two segments, this
  module's pairing gives 1.6), 0.87 ms in the bottleneck's queue, 0.62 ms the hosts'
  and the link's own time (per ACK 0.25 ms, median 0.15 ms).
* 40 ms (3 runs, after 2 s): 86.9-87.9 ms against 85.6-86.1 (R0 81.3): the receiver
  ACKed 38-45 % of segments alone and its 40 ms timer fired on some (1.7 % of ACKs came
  40 ms after their newest segment, none at 15 ms); below 10 segments the rounds were shorter than here,
  above 14 longer.

The queue at 15 ms is left out here: each ACK of two releases two segments back to back
(Linux paces TCP itself only when the congestion control asks, as BBR does:
include/net/tcp.h ``tcp_needs_internal_pacing``), so the second waits S/R behind the
first even with the window far below the pipe (48 % of segments were sent right behind
another; they waited 1.59 ms). Taken in, this *pair's queue* is this same clock on a
base S/(2R) longer: aligned R0 + S/R, shifted R0·W/(W − 1) (tests). The hosts' own time
is left out as for every TCP round (``experiment.prediction``); the link's lateness is
not it: its worst of a run (``late_s_max``) was 0.01-5 ms, rare. So the 2-3 ms a round
that ss -ti's srtt showed over this module at 15 ms (35.2 ms against 32.5) is the
receiver's wait, the pair's queue and the hosts, not the link's processing; and at 5 ms
the round is right: the 5 ms rows' shortfall (0.85-0.99) is not in the round. (Linux's
srtt times the *oldest* segment an ACK covers, tcp_clean_rtx_queue's first_ackt, so it
reads longer than the mean hold.)

The pair's queue is not taken in: on the stored CUBIC runs at random loss (200 kB-10 MB,
0.5-2 %) the geometric mean of measured/predicted moved from 0.942, 0.983 and 1.070 at
5, 15 and 40 ms one-way to 0.954, 0.996 and 1.076, and with CUBIC's regrowth on the way
down (``recovery``) to 0.954, 0.994 and 1.065: the pattern stays, and at 15 ms 2 MB at 1
and 2 % and 10 MB at 1 % moved away by 2-2.6 % (1.077 to 1.097, 1.028 to 1.050, 1.023 to
1.049). Taken alone it would trade settings against each other, not remove the pattern.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError

__all__ = ["LINUX_DELACK_MIN_S", "aligned_round", "shifted_round", "delayed_ack_round"]

#: Linux's shortest delayed-ACK timeout (TCP_DELACK_MIN = HZ/25).
LINUX_DELACK_MIN_S = 0.040


def _check(base_s, segment_s) -> None:
    if not base_s > 0 or not segment_s > 0:
        raise ModelError("a positive round and segment time please", "e.g. round 41.3 ms, S/R 1.2 ms")


def aligned_round(base_s: float, segment_s: float) -> float:
    """R0 + S/(2R): the first of every pair waits for the second (module docstring)."""
    _check(base_s, segment_s)
    return base_s + segment_s / 2.0


def shifted_round(base_s: float, segment_s: float, window, *, delack_s: float = LINUX_DELACK_MIN_S):
    """Round when each ACK covers two pairs' halves: R0 + g/2 with g = 2·round/W − S/R clamped to
    [S/R, ``delack_s``] (module docstring). ``window`` in segments (≥ 2; an array is fine)."""
    _check(base_s, segment_s)
    w = np.maximum(np.asarray(window, dtype=float), 2.0)
    free = (base_s - segment_s / 2.0) * w / (w - 1.0)          # the gap within [S/R, D]
    gap = 2.0 * free / w - segment_s
    out = np.where(gap > delack_s, base_s + delack_s / 2.0, free)
    out = np.where(gap < segment_s, base_s + segment_s / 2.0, out)
    return out if out.ndim else float(out)


def delayed_ack_round(base_s: float, segment_s: float, window, *, delack_s: float = LINUX_DELACK_MIN_S):
    """Mean round of an ACK clock whose receiver delays ACKs: ½(aligned + shifted), the pairing
    flipped by every window increase (module docstring; RFC 5681 §4.2, derived)."""
    shifted = shifted_round(base_s, segment_s, window, delack_s=delack_s)
    return 0.5 * (aligned_round(base_s, segment_s) + shifted)
