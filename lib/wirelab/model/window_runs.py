"""A file over TCP at random loss, run by run: the window chain's rules, CUBIC's own curve and
HyStart, simulated with the run's own loss process (seeded), so a prediction is a distribution.

``window_chain`` carries the *expected* window round by round; a file's transfer time is not
a function of the expected window (a run whose first loss came at 15 segments and a run that
left slow start at 130 differ five-fold at 60 ms: measured, 1 MB at 20 Mbit/s, 30 ms one way,
0.5 %: 0.63-3.27 s). So the same rules run here for every one of ``RUNS`` runs at once, each
with its own losses, and each run's time to deliver the file's segments is kept (derived here;
each rule cited):

* rounds of R0 = S/R + RTT + ACK/R; a round sends ⌊w⌋·R0/round(w) segments, at most the
  link's R0·R/S, with round(w) the ACK clock with delayed ACKs in congestion avoidance
  (``ackclock``; RFC 5681 §4.2) and the pairs aligned in slow start and recovery;
* slow start from IW (RFC 6928; RFC 5681 §3.1: cwnd grows by each segment ACKed);
* **HyStart** (CUBIC only, Linux's default ``hystart_detect`` = 3; Ha & Rhee, "Taming the
  elephants", 2011; net/ipv4/tcp_cubic.c ``hystart_update``), from a window of 16
  (``hystart_low_window``): the ACK train, when ACKs of two segments come at most 2 ms apart
  (``hystart_ack_delta_us``; so only above 2·S·8/2 ms ≈ 12 Mbit/s with 1514 B frames) and the
  round's train lasts (min RTT + ``hystart_ack_delay`` ≤ 1 ms)/2: slow start ends with
  ssthresh = cwnd at that ACK; the delay increase, when the queue the window keeps adds
  clamp(min RTT/8, 4 ms, 16 ms) to the round;
* each segment lost with probability p, independently (iptables ``statistic``, the userspace
  link); a loss is seen a round later (RFC 8985 §6: a later segment's SACK), what else is lost
  meanwhile is the same episode (RFC 6675 §5); the cut leaves max(⌊β·⌊w⌋⌋, 2) (``window_chain.
  ssthresh_after_loss``), one round of recovery without growth (RFC 6937 PRR; Linux grows only in
  the Open state); lost segments are resent in the next round, and a loss of the last segment
  sent waits the probe timeout (RFC 8985 §7.2, ``recovery.probe_timeout``) instead;
* growth in congestion avoidance: Reno 1 segment a round (RFC 5681 §3.1); CUBIC the larger of
  W_cubic(t) = C(t − K)³ + W_max (RFC 9438 §4.2, t one min RTT ahead, K from W_max and β,
  fast convergence §4.7) and the Reno-friendly W_est (§4.3, α = 3(1 − β)/(1 + β)), at most half
  the window a round (tcp_cubic.c); after HyStart W_max is the window itself (K = 0);
* a flight (the window, or what is left of the file) beyond the pipe plus the bottleneck's queue
  overflows it: a loss (tail drop);
* BBR v1 (Cardwell et al., ACM Queue 2016; Linux tcp_bbr.c): no cut on random loss; start-up is
  paced (``bbr_startup``: its rules run without loss, cut into rounds), each round sending its ramp
  round's segments until one carries the link's worth, except the first round of each recovery
  episode (packet conservation: the round is sent again), an episode lasting about a round; after
  the ramp the flight is cwnd_gain·BDP (2, +3 quanta).

A file's *data time* is from its first segment sent to its last delivered: the rounds before
the last, then the last flight's segments at S/R each and the one-way delay. Its mean, spread
and quantiles are the prediction's; ``FileRuns.mean_interval`` is the interval of a setting's
mean of n runs (the model's), which shrinks with n.

Not modelled: retransmission timeouts (a lost retransmission: ``recovery.expected_rto`` is added
to the mean by ``transfer_time``), receive-window autotuning, BBR's pacing gains and ProbeRTT (its
flight is its window: behind a queue shallower than the pipe it overflows every round),
reordering. Measured (BBR files at 0.6-2.8 % loss, 15 settings, 3-6 runs each): these runs' mean
time 0.84-1.01 of the measured (the earlier "start-up runs on through loss": 0.68-1.0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import ModelError
from .ackclock import delayed_ack_round
from .bbr_startup import LONGEST, ramp_rounds
from .congestion import ALPHA, BETA, CUBIC_C
from .recovery import probe_timeout
from .window_chain import ssthresh_after_loss

__all__ = ["FileRuns", "file_runs", "timed_runs", "RUNS", "SEED", "HYSTART_LOW_WINDOW", "HYSTART_ACK_DELTA_S"]

#: Runs simulated per prediction: the mean's own sampling error is then σ/√2000 ≈ 2 % of σ.
RUNS = 2000
#: One fixed seed: the same parameters always give the same prediction.
SEED = 2000_0503
#: tcp_cubic.c: HyStart acts from this window, its ACK train breaks at gaps above 2 ms.
HYSTART_LOW_WINDOW = 16
HYSTART_ACK_DELTA_S = 0.002
#: tcp_cubic.c: hystart_ack_delay is at most 1 ms (USEC_PER_MSEC).
HYSTART_ACK_DELAY_S = 0.001
#: tcp_cubic.c: the delay threshold clamp(min RTT/8, 4 ms, 16 ms).
HYSTART_DELAY_MIN_S, HYSTART_DELAY_MAX_S = 0.004, 0.016
#: Rounds a file may take at most before the model gives up (a stuck setting, not a prediction).
_MAX_ROUNDS = 200_000

SS, CA, SEEN_SS, SEEN_CA, RECOVERY = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class FileRuns:
    """Each simulated run's data time (seconds, sorted) for one file, and the mean time by cause:
    ``link`` (every segment sent, resent ones included, at S/R), ``slow_start`` and ``cc`` (the
    rounds' idle in slow start and after it, named by the congestion control), ``window`` (idle
    with the window at its cap), ``loss_recovery`` (probe timeouts for tail losses) and
    ``propagation`` (the last byte's one-way delay); they add up to the mean."""
    data_times_s: np.ndarray
    rounds_max: int
    terms: dict

    @property
    def mean_s(self) -> float:
        return float(self.data_times_s.mean())

    @property
    def fastest_s(self) -> float:
        return float(self.data_times_s[0])

    @property
    def std_s(self) -> float:
        return float(self.data_times_s.std(ddof=1))

    def quantile(self, q: float) -> float:
        """One run's data time at quantile ``q`` (0.05: a fast run; 0.95: a slow one)."""
        return float(np.quantile(self.data_times_s, q))

    def mean_interval(self, runs: int, level: float = 0.95) -> tuple[float, float]:
        """The interval that holds the mean of ``runs`` runs with probability ``level``: the
        simulated runs resampled ``runs`` at a time (bootstrap; skewed tails kept, not a normal
        approximation), a fixed seed."""
        if runs < 1:
            raise ModelError(f"an interval needs at least one run, not {runs}", "e.g. runs=3")
        rng = np.random.default_rng(SEED + runs)
        means = rng.choice(self.data_times_s, size=(4000, runs), replace=True).mean(axis=1)
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(means, [tail, 1.0 - tail])
        return float(low), float(high)


def _cubic_step(w, cwnd, share, clocked, rtt_s, state):
    """CUBIC's window after ``share`` of a round in congestion avoidance (tcp_cubic.c
    ``bictcp_update``: the larger of the cubic curve one min RTT ahead and W_est, at most half
    the window a round)."""
    origin, k, est, age = state["origin"], state["k"], state["est"], state["age"]
    est += ALPHA["cubic"] * share
    target = origin + CUBIC_C * (age + share * clocked + rtt_s - k) ** 3
    state["est"], state["age"] = est, age + share * clocked
    return w + np.minimum(np.maximum(np.maximum(target, est) - w, 0.0), cwnd / 2) * share


def _epoch(start, w, state, last_max):
    """A new CUBIC epoch where ``start`` (RFC 9438 §4.2: K from W_max; K = 0 when the window is
    already at W_max, as after HyStart)."""
    state["k"] = np.where(start, np.cbrt(np.maximum(last_max - w, 0.0) / CUBIC_C), state["k"])
    state["origin"] = np.where(start, np.maximum(last_max, w), state["origin"])
    state["est"] = np.where(start, w, state["est"])
    state["age"] = np.where(start, 0.0, state["age"])


@lru_cache(maxsize=128)          # a sweep asks again for every repetition
def file_runs(*, segments: int, loss: float, cc: str, segment_s: float, base_s: float, rtt_s: float,
              iw: int = 10, queue: float | None = None, cap: float | None = None, runs: int = RUNS,
              seed: int = SEED, hystart: bool = True) -> FileRuns:
    """Simulate ``runs`` transfers of ``segments`` full segments (module docstring). ``segment_s``
    S/R, ``base_s`` R0, ``rtt_s`` the propagation round trip; ``queue`` segments the bottleneck
    holds beyond the pipe (None: no overflow); ``cap`` the largest window (a socket buffer)."""
    if segments < 1:
        raise ModelError(f"a file of at least one segment please, not {segments}", "e.g. 690 segments")
    done, rounds, terms, _ = _simulate(segments, None, loss=loss, cc=cc, segment_s=segment_s, base_s=base_s,
                                       rtt_s=rtt_s, iw=iw, queue=queue, cap=cap, runs=runs, seed=seed,
                                       hystart=hystart)
    return FileRuns(np.sort(done), rounds, terms)


@lru_cache(maxsize=128)
def timed_runs(*, start_s: float, duration_s: float, loss: float, cc: str, segment_s: float, base_s: float,
               rtt_s: float, iw: int = 10, queue: float | None = None, cap: float | None = None,
               runs: int = RUNS, seed: int = SEED, hystart: bool = True) -> np.ndarray:
    """Segments each of ``runs`` timed runs delivers from ``start_s`` to ``start_s + duration_s`` after
    its first byte (iperf3's -O and -t), sorted: the same rules as ``file_runs`` with no end to the data
    (each round's segments counted as delivered evenly over the round, as ``window_chain`` counts them)."""
    if not duration_s > 0 or start_s < 0:
        raise ModelError("a timed run needs a positive duration and a start ≥ 0", "e.g. -t 5 -O 1")
    _, _, _, seen = _simulate(None, (start_s, duration_s), loss=loss, cc=cc, segment_s=segment_s, base_s=base_s,
                              rtt_s=rtt_s, iw=iw, queue=queue, cap=cap, runs=runs, seed=seed, hystart=hystart)
    return np.sort(seen)


def _simulate(segments, window, *, loss, cc, segment_s, base_s, rtt_s, iw, queue, cap, runs, seed, hystart):
    """The rules of the module docstring for ``runs`` runs at once: a file of ``segments`` (each run's
    data time, the rounds, the mean time by cause), or a timed run's ``window`` (start, duration): the
    segments each run delivers in it."""
    if cc not in ("reno", "cubic", "bbr"):
        raise ModelError(f"no run-by-run rules for congestion control {cc!r}", "use reno, cubic or bbr")
    if not 0 <= loss < 1 or not 0 < segment_s < base_s or rtt_s < 0:
        raise ModelError("loss in [0, 1) and 0 < S/R < R0 please",
                         "e.g. 690 segments, p = 0.005, S/R = 0.6 ms, R0 = 60.7 ms")
    timed = segments is None
    until = window[0] + window[1] if timed else math.inf
    in_window = np.zeros(runs)
    rng = np.random.default_rng(seed)
    beta = BETA.get(cc, 0.5)
    link = base_s / segment_s
    top = link + queue if queue is not None else math.inf
    w = np.full(runs, float(iw))
    phase = np.full(runs, SS)
    left = np.full(runs, math.inf if timed else float(segments))   # to deliver, lost ones included
    elapsed = np.zeros(runs)                      # time of each run's current round's start
    done = np.full(runs, np.nan)
    last_max = np.zeros(runs)
    state = {name: np.zeros(runs) for name in ("origin", "k", "est", "age")}
    train = hystart and cc == "cubic" and 2 * segment_s <= HYSTART_ACK_DELTA_S
    train_s = (base_s + HYSTART_ACK_DELAY_S) / 2.0
    delay_rise = min(max(base_s / 8.0, HYSTART_DELAY_MIN_S), HYSTART_DELAY_MAX_S)
    pto = probe_timeout(base_s)
    active = np.ones(runs, dtype=bool)
    spent = {name: np.zeros(runs) for name in ("link", "slow_start", cc, "window", "loss_recovery")}
    pace = _Paced(segment_s, base_s, iw, cap, until / segment_s if timed else segments, runs) if cc == "bbr" else None
    rounds = 0
    while active.any():
        rounds += 1
        if rounds > _MAX_ROUNDS:
            raise ModelError(f"{segments} segments take more than {_MAX_ROUNDS} rounds in the model",
                             "a smaller file or less loss")
        if timed and elapsed.min() >= until:
            break
        cwnd, clocked, rate, sent, lost, overflow = _send(w, phase, left, rng, loss=loss, base_s=base_s,
                                                          segment_s=segment_s, link=link, top=top,
                                                          paced=pace.round(link) if pace else None)
        if timed:
            overlap = np.clip(np.minimum(elapsed + base_s, until) - np.maximum(elapsed, window[0]), 0.0, None)
            in_window += (sent - lost) * overlap / base_s
        finished = active & (lost == 0) & (sent >= left - 1e-9)
        last_at = pace.last_at(left, sent * segment_s) if pace else sent * segment_s   # the file's end in its round
        done = np.where(finished, elapsed + last_at + rtt_s / 2, done)
        # the last segment of the file's last flight lost: nothing behind it to be SACKed, the probe
        # timeout finds it (RFC 8985 §7.2) instead of the next round
        tail = (sent >= left - 1e-9) & (lost > 0) & (rng.random(runs) < lost / np.maximum(sent, 1.0))
        elapsed = elapsed + np.where(tail, np.maximum(sent * segment_s + pto, base_s), base_s)
        going = active & ~finished                   # this round's idle counts: another follows
        idle = np.where(going, base_s - sent * segment_s, 0.0)
        at_cap = (cwnd >= math.floor(cap + 1e-9)) if cap is not None else np.zeros(runs, dtype=bool)
        _account(spent, cc, phase, active, going, at_cap, tail, sent * segment_s, idle, pto, base_s)
        spent["slow_start"] += np.where(finished, last_at - sent * segment_s, 0.0)   # a paced last round's gaps
        left = left - (sent - lost)
        active &= ~finished
        # the window's next round
        acked = sent - lost
        if cc == "bbr":
            w = pace.next_window(w, lost, acked, link)
        else:
            # slow start grows by every segment ACKed; in a round with a loss, only until the loss is
            # seen (a later segment's SACK, RFC 8985 §6): by the segments before the first lost one, at a
            # uniform place in the flight (ss -ti here: a loss in the window of 20 cut from 30)
            first_lost = np.where(lost > 0, rng.random(runs), 1.0)
            hystart_exit, exit_at = _hystart(phase, cwnd, w, w + acked * first_lost, sent, lost, overflow,
                                             hystart=hystart and cc == "cubic", train=train, train_s=train_s,
                                             delay_rise=delay_rise, link=link, segment_s=segment_s)
            w, phase, last_max = _next_window(cc, phase, w, cwnd, w + acked * first_lost, hystart_exit, exit_at,
                                              (lost > 0) | overflow, rate, clocked, rtt_s, beta, state, last_max,
                                              cap)
        if cap is not None:
            w = np.minimum(w, cap)
    if cc == "bbr":                              # BBR's is its paced start-up (bbr_startup), not slow start
        spent["startup"] = spent.pop("slow_start")
    terms = {name: float(v.mean()) for name, v in spent.items() if v.any()}
    terms["propagation"] = rtt_s / 2
    return done, rounds, terms, in_window


def _send(w, phase, left, rng, *, loss, base_s, segment_s, link, top, paced=None):
    """One round's sending (module docstring): (whole window, the ACK clock's round, segments the
    round carries, those sent, those lost, whether the flight overflowed the queue). ``paced``:
    BBR's start-up, (segments this round, its largest flight) where a run is still in it (NaN after)."""
    cwnd = np.floor(w + 1e-9)
    clocked = np.where((phase == CA) | (phase == SEEN_CA), delayed_ack_round(base_s, segment_s, cwnd),
                       base_s + segment_s / 2)
    rate = np.minimum(cwnd * base_s / np.maximum(clocked, cwnd * segment_s), link)
    if paced is not None:
        rate = np.where(np.isnan(paced[0]), rate, paced[0])
    sent = np.minimum(rate, left)                 # a rate of segments: no rounding to whole ones
    # each sent segment lost with probability p (a fraction of one counts as one, that often)
    whole = np.floor(sent) + (rng.random(len(w)) < sent - np.floor(sent)) if loss > 0 else sent
    lost = np.minimum(rng.binomial(whole.astype(np.int64), loss), sent) if loss > 0 else np.zeros(len(w))
    # a flight beyond the pipe and the queue: the queue drops what does not fit (tail drop); the
    # flight is the window, or what is left of the file when that is less
    flight = np.minimum(cwnd, np.ceil(left - 1e-9))
    if paced is not None:
        flight = np.where(np.isnan(paced[1]), flight, paced[1])
    overflow = flight > top + 1e-9
    lost = np.where(overflow, np.minimum(np.maximum(lost, flight - np.floor(top)), sent), lost)
    return cwnd, clocked, rate, sent, lost, overflow


class _Paced:
    """BBR v1's start-up in rounds (``bbr_startup.ramp_rounds``: its pacing rules run without loss)
    for each run: a run sends its ramp round's segments, its flight the pipe plus the queue that
    round builds; a round held by packet conservation is sent again; past the ramp the window rules."""

    def __init__(self, segment_s, base_s, iw, cap, segments, runs):
        self.ramp = ramp_rounds(segment_s, base_s, iw, cap, int(min(math.ceil(segments), LONGEST)))
        self.segment_s = segment_s
        self.at = np.zeros(runs, dtype=np.int64)         # each run's ramp round
        self.held = np.zeros(runs, dtype=bool)           # this round held by packet conservation

    def round(self, link):
        """(segments, flight) this round for runs in the ramp, NaN for the others."""
        if not len(self.ramp.counts):                   # the initial window fills the pipe
            return np.full(len(self.at), np.nan), np.full(len(self.at), np.nan)
        inside = self.at < len(self.ramp.counts)
        at = np.minimum(self.at, len(self.ramp.counts) - 1)
        return (np.where(inside, self.ramp.counts[at], np.nan),
                np.where(inside, link + self.ramp.queued[at], np.nan))

    def last_at(self, left, busy):
        """When the file's last segment leaves in a round that ends it: its paced place in the ramp
        round (less the part of a segment the file lacks), else after the round's ``busy`` time."""
        if not len(self.ramp.counts):
            return busy
        inside = self.at < len(self.ramp.counts)
        at = np.minimum(self.at, len(self.ramp.counts) - 1)
        whole = np.clip(np.ceil(left - 1e-9), 1, self.ramp.counts[at]).astype(np.int64)
        paced = self.ramp.within[np.minimum(self.ramp.starts[at] + whole - 1, len(self.ramp.within) - 1)]
        paced = paced - (whole - np.minimum(left, whole)) * self.segment_s
        return np.where(inside & np.isfinite(left), np.maximum(paced, busy), busy)

    def next_window(self, w, lost, acked, link):
        """BBR v1 (tcp_bbr.c): no cut on loss; the first round of each recovery episode holds the window
        and repeats its ramp round (packet conservation, bbr_set_cwnd_to_recover_or_restore), an episode
        lasting about a round, so at most every other round; else the window grows by what was ACKed up
        to cwnd_gain·BDP (2, +3 quanta) and the ramp moves on."""
        hold = (lost > 0) & ~self.held
        self.held = hold
        self.at += ~hold
        return np.where(hold, w, np.minimum(w + acked, 2.0 * link + 3.0))


def _account(spent, cc, phase, active, going, at_cap, tail, busy, idle, pto, base_s) -> None:
    """Add one round to the mean time by cause (``FileRuns``): ``busy`` the link's share, ``idle``
    the rest of a round another follows, named by what held the window."""
    slow_start = (phase == SS) | (phase == SEEN_SS)
    spent["link"] += np.where(active, busy, 0.0)
    spent["window"] += np.where(at_cap, idle, 0.0)
    spent["slow_start"] += np.where(~at_cap & slow_start, idle, 0.0)
    spent[cc] += np.where(~at_cap & ~slow_start, idle, 0.0)
    spent["loss_recovery"] += np.where(going & tail, np.maximum(busy + pto, base_s) - base_s, 0.0)


def _hystart(phase, cwnd, w, grown_ss, sent, lost, overflow, *, hystart, train, train_s, delay_rise, link,
             segment_s):
    """Where HyStart ends slow start this round (module docstring; tcp_cubic.c ``hystart_update``):
    (which runs, the window they leave with)."""
    if not hystart:
        return np.zeros(len(w), dtype=bool), grown_ss
    ss_now = (phase == SS) & (cwnd >= HYSTART_LOW_WINDOW)
    exit_train = ss_now & train & (sent * segment_s > train_s)
    exit_delay = ss_now & ((grown_ss - link) * segment_s >= delay_rise)   # passed during the round
    exit_at = np.where(exit_train, np.minimum(grown_ss, w + train_s / segment_s), grown_ss)
    exit_at = np.where(exit_delay & ~exit_train, np.minimum(grown_ss, link + delay_rise / segment_s), exit_at)
    return (exit_train | exit_delay) & (lost == 0) & ~overflow, exit_at


def _next_window(cc, phase, w, cwnd, grown_ss, hystart_exit, exit_at, hit, rate, clocked, rtt_s, beta, state,
                 last_max, cap):
    """Reno's or CUBIC's window and phase for the next round (module docstring): slow start, HyStart's
    exit, congestion avoidance, the cut a round after a loss, the recovery round. Returns (window,
    phase, W_max)."""
    seen = (phase == SEEN_SS) | (phase == SEEN_CA)
    share = rate / np.maximum(cwnd, 1.0)
    grown_ca = _cubic_step(w, cwnd, share, clocked, rtt_s, state) if cc == "cubic" else w + share
    if cc == "cubic":             # W_max, with fast convergence (RFC 9438 §4.7)
        last_max = np.where(seen, np.where(cwnd < last_max, cwnd * (1 + beta) / 2, cwnd), last_max)
    nxt = np.where(phase == SS, np.where(hystart_exit, exit_at, grown_ss),
                   np.where((phase == CA) | (phase == SEEN_CA), grown_ca, w))
    w_next = np.where(seen, ssthresh_after_loss(cwnd, beta), nxt)
    if cap is not None:
        w_next = np.minimum(w_next, cap)
    new_phase = np.select(
        [seen, phase == RECOVERY, hit & (phase == SS), hit, hystart_exit],
        [RECOVERY, np.where(hit, SEEN_CA, CA), SEEN_SS, SEEN_CA, CA], phase)
    if cc == "cubic":
        _epoch(((phase == RECOVERY) & ~hit) | hystart_exit, w_next, state, np.where(hystart_exit, w_next, last_max))
    return w_next, new_phase, last_max
