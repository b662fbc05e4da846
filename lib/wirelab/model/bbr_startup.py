"""BBR v1's start-up, as Linux runs it: a paced ramp, not slow start's doubling bursts.

Slow start sends each round's window at once and then waits for its ACKs; BBR's STARTUP
paces. Its pacing rate is 2/ln 2 ≈ 2.885 times the largest delivery rate measured so far,
and a delivery rate is measured over a round trip that began a round earlier, so the rate
grows about twofold a round (Cardwell et al., "BBR: Congestion-Based Congestion Control",
ACM Queue 14(5), 2016: "the smallest gain that doubles the sending rate each round") but
spread over the round, where slow start's doubling is sent in a burst at its start. A file
that ends inside start-up therefore ends later than slow start would have it: at 20 Mbit/s
and 85 ms one way, 247 segments of BBR had left after 4.8 rounds where slow start's
10 + 20 + 40 + 80 + 160 had left after 4 (a capture, issue 32's grid).

This module runs those rules segment by segment on one bottleneck of ``segment_s`` a
segment, behind a round trip of ``rtt_s``, no loss; the sources, each rule as written there:

* Linux net/ipv4/tcp_bbr.c (BBR v1): ``bbr_init_pacing_rate_from_rtt`` (2.885 × the initial
  window / the handshake's RTT), ``bbr_set_pacing_rate`` (2.885 × max bandwidth, 1 % pacing
  margin, only upward until the pipe is full), ``bbr_set_cwnd`` (the window grows by what
  each ACK delivers while below 2.885 × bandwidth × min RTT plus three TSO bursts),
  ``bbr_update_bw`` (a new round when a packet sent after the last round began is ACKed)
  and ``bbr_check_full_bw_reached`` (three rounds without 25 % more bandwidth end start-up).
* Linux net/ipv4/tcp_rate.c: a delivery-rate sample is the packets delivered since the
  acknowledged packet was sent, over the longer of its send phase and its ACK phase; a
  sample shorter than the min RTT is discarded.
* Linux net/ipv4/tcp_output.c, ``tcp_update_skb_after_send``: the first 10 segments are
  not paced ("original sch_fq does not pace first 10 MSS").

* With ``queue`` (segments the bottleneck holds): start-up's overshoot, about twice the path's
  BDP in flight, overflows a shallower queue, which drops what does not fit (tail drop). A drop
  is found when the third segment sent after it is acknowledged, or in recovery the next one
  (RACK-TLP, RFC 8985, with Linux's reordering window, tcp_rack_reo_wnd: 0 once three are SACKed
  or in recovery), then sent again first; the first loss opens recovery, one round of packet conservation (the
  window held at what is in flight, tcp_bbr.c ``bbr_set_cwnd_to_recover_or_restore``), the
  window restored once every loss is repaired. A sender stops at its file's end: with drops the
  simulation is of the file's own segments (nothing of a longer file queues behind the resent).

Left out, and said where it is used: delayed ACKs (Linux acknowledges at once at the start),
the hosts' own time, random loss (``window_runs`` runs it, the ramp round by round). Once
start-up has filled the pipe with no loss left to repair (or the window's cap binds with the
link busy) the bottleneck stays busy to the end: DRAIN keeps its queue until in-flight falls to
the BDP, and PROBE_BW's gains cycle around it.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from .slowstart import SlowStart

__all__ = ["HIGH_GAIN", "PACING_MARGIN", "UNPACED_SEGMENTS", "Ramp", "bbr_departures", "bbr_startup_send",
           "bbr_startup_queue", "startup_terms", "with_random_loss", "RampRounds",
           "ramp_rounds"]

#: 2/ln 2, BBR's STARTUP pacing and window gain (tcp_bbr.c: bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1).
HIGH_GAIN = (256 * 2885 // 1000 + 1) / 256
#: tcp_bbr.c's bbr_pacing_margin_percent: pace 1 % below the estimate.
PACING_MARGIN = 0.01
#: tcp_output.c: the first 10 data segments are sent unpaced.
UNPACED_SEGMENTS = 10
#: Segments simulated at most; start-up has ended long before on any path the kit emulates.
LONGEST = 200_000
#: tcp_bbr.c: bbr_full_bw_thresh (25 % more) and bbr_full_bw_cnt (3 rounds).
FULL_BW_GROWTH, FULL_BW_ROUNDS = 1.25, 3


def bbr_startup_send(segments: float, segment_s: float, rtt_s: float, *, iw: int = 10,
                     max_window: float | None = None, mss_bytes: int = 1448, queue: float | None = None) -> SlowStart:
    """Seconds from the first segment's start on the bottleneck to the last one's end, for
    ``segments`` (fractional: the last one partial) sent by BBR v1 from its start-up, as
    ``slow_start_send`` gives them for slow start: send = segments·S/R + idle, where idle is
    the bottleneck's time without a segment of this flow (this module's docstring: the rules
    and their sources). ``max_window``: a cap on the window in segments (the receiver's);
    ``queue``: the segments the bottleneck holds (None: as many as come)."""
    if segments < 0 or not segment_s > 0 or rtt_s < 0 or iw < 1:
        raise ModelError("BBR's start-up needs segments ≥ 0, S/R > 0, RTT ≥ 0 and IW ≥ 1",
                         "e.g. 200 segments, 1.2 ms each, RTT 40 ms, IW 10")
    if segments == 0:
        return SlowStart(0.0, 0.0)
    whole = math.ceil(segments - 1e-9)
    ends = bbr_departures(segment_s, rtt_s, iw, max_window, mss_bytes, segments, queue).leaves
    last = ends[whole - 1] if whole <= len(ends) else ends[-1] + (whole - len(ends)) * segment_s
    if queue is None:                                   # (with a queue the simulation sent it short)
        last -= (whole - segments) * segment_s         # the last segment's missing part
    send = last
    return SlowStart(send, max(send - segments * segment_s, 0.0))


def bbr_startup_queue(segments: float, segment_s: float, rtt_s: float, *, iw: int = 10,
                      max_window: float | None = None, mss_bytes: int = 1448) -> float:
    """The most segments of the file's first ``segments`` waiting at the bottleneck during
    start-up, with a queue that holds them all (its overshoot: a shallower queue drops some)."""
    whole = max(math.ceil(segments - 1e-9), 1)
    return float(bbr_departures(segment_s, rtt_s, iw, max_window, mss_bytes, whole).queued[:whole].max())


def startup_terms(segments: float, segment_s: float, rtt_s: float, *, iw: int = 10,
                  max_window: float | None = None, queue: float | None = None) -> tuple[dict, list]:
    """A file's start-up time beyond its transmission, by cause, and what to say of it: ``startup``
    the paced ramp's idle, ``window`` what a window cap adds, ``queue_overflow`` what a queue too
    shallow for the overshoot adds (its drops found and resent)."""
    free = bbr_startup_send(segments, segment_s, rtt_s, iw=iw)
    capped = free if max_window is None else bbr_startup_send(segments, segment_s, rtt_s, iw=iw,
                                                              max_window=max_window)
    peak = bbr_startup_queue(segments, segment_s, rtt_s, iw=iw, max_window=max_window)
    shallow = queue if queue is not None and peak > queue + 1 else None
    terms = {"startup": float(free.idle), "window": float(max(capped.idle - free.idle, 0.0))}
    notes = ["BBR's start-up paced at 2.885× its delivery rate, segment by segment (Linux tcp_bbr.c, "
             "tcp_rate.c; model.bbr_startup)"]
    if shallow is not None:
        full = bbr_startup_send(segments, segment_s, rtt_s, iw=iw, max_window=max_window, queue=shallow)
        dropped = bbr_departures(segment_s, rtt_s, iw, max_window, segments=segments, queue=shallow).dropped
        terms["queue_overflow"] = float(max(full.idle - capped.idle, 0.0))
        notes.append(f"BBR's start-up queues up to {peak:.0f} segments at a bottleneck that holds {shallow:.0f}: "
                     f"{dropped} dropped there and resent (tail drop, RACK-TLP, a round of packet "
                     "conservation; model.bbr_startup)")
    return {name: seconds for name, seconds in terms.items() if seconds > 0}, notes


def with_random_loss(runs, calm, segments: float, segment_s: float, rtt_s: float, ack_s: float, *, iw: int,
                     max_window: float | None, queue: float, notes: list) -> tuple[dict, float]:
    """BBR at random loss where start-up overflows the bottleneck's queue: the loss-free file as this
    module runs it, drops and their repair segment by segment, plus what random loss adds in the
    runs (``runs``: ``window_runs.file_runs`` at that loss, less ``calm()``, the same runs without
    it; derived here: the two costs add). Returns (the data time's terms but the last byte's way,
    the shift of one run's time); the runs' own where nothing overflows."""
    if not bbr_departures(segment_s, rtt_s + ack_s, iw, max_window, segments=segments,
                          queue=queue).dropped:
        return runs.terms, 0.0
    without = calm()
    terms, said = startup_terms(segments, segment_s, rtt_s + ack_s, iw=iw, max_window=max_window, queue=queue)
    terms = {"link": segments * segment_s, **terms}
    loss_free = sum(terms.values()) + rtt_s / 2
    terms["loss_recovery"] = max(runs.mean_s - without.mean_s, 0.0)
    notes.extend(said + ["random loss's cost from the runs (at this loss less without it), added to the start-up's"])
    return terms, loss_free - without.mean_s


class Ramp(NamedTuple):
    """Per segment, in the order sent: when its last bit leaves the bottleneck (from the first
    one's start) and how many segments it found waiting there; ``full``: start-up filled the
    pipe at the last one (the bottleneck is busy from there on)."""
    leaves: np.ndarray
    queued: np.ndarray
    full: bool = False
    dropped: int = 0


@functools.lru_cache(maxsize=64)
def _departures(segment_s: float, rtt_s: float, iw: int, cap: float | None, mss_bytes: int, limit: int,
                queue: float | None, last_size: float) -> Ramp:
    out = _Startup(segment_s, rtt_s, iw, cap, mss_bytes, queue).run(limit, last_size)
    for column in out[:2]:
        column.flags.writeable = False
    return out


def bbr_departures(segment_s: float, rtt_s: float, iw: int = 10, cap: float | None = None,
                   mss_bytes: int = 1448, segments: float = LONGEST, queue: float | None = None) -> Ramp:
    """Each segment's departure from the bottleneck and the queue it met, until start-up has
    filled the pipe (or ``segments`` have left): after that the bottleneck is busy to the end.
    Cached per path: a timed run asks for many file sizes."""
    wanted = min(max(math.ceil(segments - 1e-9), 1), LONGEST)
    # without drops the first segments leave alike whatever follows them: cache by powers of two, so a
    # timed run's many sizes share one simulation; with drops the file's own end matters (a sender
    # with nothing more to send queues nothing behind its resent segments; a short last one fits a
    # queue a full one would not)
    if queue is None:
        limit, last_size = 1 << max(wanted - 1, 1).bit_length(), 1.0
    else:
        limit, last_size = wanted, min(max(segments - (wanted - 1), 1e-3), 1.0)
    return _departures(float(segment_s), float(rtt_s), int(iw), None if cap is None else float(cap),
                       int(mss_bytes), limit, None if queue is None else float(queue), float(last_size))


class _Startup:
    """One BBR v1 sender in STARTUP, segment by segment (all times in seconds, rates in
    segments a second). Each segment's ACK returns ``rtt_s`` after it leaves the bottleneck."""

    def __init__(self, segment_s: float, rtt_s: float, iw: int, cap: float | None, mss_bytes: int,
                 queue: float | None = None):
        self.segment_s, self.rtt_s, self.cap, self.mss = segment_s, rtt_s, cap, mss_bytes
        self.min_rtt = max(rtt_s, 1e-6)                    # the handshake's sample: tcp_min_rtt at init
        self.cwnd = float(iw) if cap is None else min(float(iw), cap)
        self.pacing = HIGH_GAIN * iw / self.min_rtt * (1 - PACING_MARGIN)   # bbr_init_pacing_rate_from_rtt
        self.bw = 0.0                                      # max delivery rate (segments/s)
        self.full_bw, self.full_bw_count, self.full = 0.0, 0, False
        self.delivered, self.delivered_at = 0, 0.0         # tp->delivered, tp->delivered_mstamp
        self.first_tx = 0.0                                # tp->first_tx_mstamp
        self.next_round_delivered = 0
        self.app_limited = True                            # tcp_init_sock: app_limited = ~0U until an ACK
        self.queue = queue                                 # segments the bottleneck holds (None: all)
        self.recovering = self.conserving = False
        self.prior_cwnd = 0.0
        self._scanned = 0
        self.missing: set[int] = set()                    # segments found lost, not yet delivered again

    def tso_goal(self) -> int:
        """Segments an skb carries: about 1 ms at the pacing rate, at least 2 (tcp_bbr.c
        bbr_tso_segs_goal; 1 below 1.2 Mbit/s), at most 127."""
        least = 1 if self.pacing * self.mss * 8 < 1.2e6 else 2
        return int(min(max(self.pacing * 1e-3, least), 127))

    def run(self, limit: int, last_size: float = 1.0) -> Ramp:
        """The first ``limit`` segments: when each has arrived whole (its last copy, and every
        segment before it: what a file of that many segments waits for) and the queue it met."""
        tx: list[list] = []                                # per transmission: id, sent, snapshot, leaves (None: dropped)
        done = np.full(limit, np.nan)                      # when each segment's delivered copy left the bottleneck
        queued = np.zeros(limit)
        resend: list[int] = []                             # segments marked lost, not yet sent again
        fresh = acked = lost_out = dropped = 0             # next new segment; transmissions ACKed, found lost, dropped
        now = wstamp = free = 0.0                          # tcp_wstamp_ns; when the bottleneck is next free
        arrived_count = 0
        while arrived_count < limit:
            while acked < len(tx) and tx[acked][3] is None:
                acked += 1                                 # a dropped one brings no ACK
            ack_due = tx[acked][3] + self.rtt_s if acked < len(tx) else math.inf
            flight = len(tx) - self.delivered - lost_out
            can_send = (resend or fresh < limit) and flight < self.cwnd
            send_due = max(now, wstamp) if can_send else math.inf
            if send_due == math.inf and ack_due == math.inf:
                break                                      # nothing left to happen (a lost tail with no ACK behind)
            if send_due <= ack_due:
                now = send_due
                burst = min(self.tso_goal(), max(int(self.cwnd - flight), 1), len(resend) or limit - fresh)
                if flight == 0:                            # nothing in flight: tcp_rate_skb_sent's restart
                    self.first_tx = self.delivered_at = now
                for _ in range(burst):
                    segment = resend.pop(0) if resend else fresh
                    fresh += segment == fresh
                    backlog = max(free - now, 0.0) / self.segment_s
                    if segment < limit and not queued[segment]:
                        queued[segment] = backlog
                    arrives = None
                    size = last_size if segment == limit - 1 else 1.0
                    if self.queue is None or backlog + size <= self.queue + 1e-9:   # the link's byte limit
                        free = max(free, now) + self.segment_s * size
                        arrives = free
                    else:
                        dropped += 1                       # tail drop at the bottleneck's queue
                    tx.append([segment, now, (self.first_tx, self.delivered_at, self.delivered, self.app_limited),
                               arrives])
                if len(tx) >= UNPACED_SEGMENTS:            # tcp_update_skb_after_send
                    gap = burst / self.pacing
                    late = max(now - wstamp, 0.0)          # "take into account OS jitter": up to half back
                    wstamp = max(wstamp, now) + gap - min(gap / 2, late)
            else:
                now = ack_due
                segment, sent_at, snapshot, arrived = tx[acked]
                if segment < limit and np.isnan(done[segment]):
                    done[segment] = arrived
                    arrived_count += 1
                self.missing.discard(segment)
                self._ack(now, sent_at, *snapshot)
                lost_out += self._detect(tx, acked, resend, lost_out)
                if self.recovering and not self.missing:   # every loss repaired: tcp_bbr.c restores the window
                    self.recovering, self.conserving = False, False
                    self.cwnd = max(self.cwnd, self.prior_cwnd)
                acked += 1
                if self.full and self.cap is None and not self.missing:
                    break                                  # the pipe is full, nothing to repair: busy from here on
        last = int(np.flatnonzero(~np.isnan(done))[-1]) + 1 if (~np.isnan(done)).any() else 0
        whole = np.fmax.accumulate(np.nan_to_num(done[:last], nan=np.inf)) if last else done[:0]
        return Ramp(whole, queued[:last], bool(self.full), dropped)

    def _detect(self, tx, at, resend, lost_out) -> int:
        """Losses found by this ACK (RACK-TLP, RFC 8985, as Linux's tcp_rack_reo_wnd sets its
        reordering window): before recovery a dropped transmission three or more before the one
        ACKed (three SACKed above it), in recovery (the window 0) any before it. The first opens
        recovery: one round of packet conservation (tcp_bbr.c bbr_set_cwnd_to_recover_or_restore)."""
        found = 0
        upto = at if self.recovering else max(at - 2, 0)
        for k in range(self._scanned, upto):
            if tx[k][3] is None:
                resend.append(tx[k][0])
                self.missing.add(tx[k][0])
                found += 1
        self._scanned = max(self._scanned, upto)
        if found:
            self.cwnd = max(self.cwnd - found, 1.0)              # rs->losses
            if not self.recovering:
                self.recovering, self.conserving = True, True
                self.prior_cwnd = self.cwnd + found
                self.next_round_delivered = self.delivered       # "start round now"
                self.cwnd = max(len(tx) - self.delivered - lost_out - found + 1, 1.0)
        return found

    def _ack(self, now: float, sent_at: float, first_tx: float, delivered_at: float, delivered: float,
             app_limited: float) -> None:
        """One segment ACKed: tcp_rate_gen's sample, then bbr_main (bandwidth and rounds, full
        pipe, pacing rate, window)."""
        self.delivered += 1
        self.delivered_at = now
        self.app_limited = False
        interval = max(sent_at - first_tx, now - delivered_at)
        self.first_tx = sent_at
        if interval >= self.min_rtt:                       # else tcp_rate_gen marks the sample invalid
            round_start = delivered >= self.next_round_delivered
            if round_start:
                self.next_round_delivered = self.delivered
                self.conserving = False                    # packet conservation lasts a round
            self.bw = max(self.bw, (self.delivered - delivered) / interval)
            if round_start and not app_limited and not self.full:
                if self.bw >= self.full_bw * FULL_BW_GROWTH:
                    self.full_bw, self.full_bw_count = self.bw, 0
                else:
                    self.full_bw_count += 1
                    self.full = self.full_bw_count >= FULL_BW_ROUNDS
        if not self.full:
            self.pacing = max(self.pacing, HIGH_GAIN * self.bw * (1 - PACING_MARGIN))
        target = math.ceil(self.bw * self.min_rtt * HIGH_GAIN) + 3 * self.tso_goal()
        target += target % 2                               # bbr_quantization_budget: round up to even
        if not self.conserving and (self.cwnd < target or self.delivered < 10):
            self.cwnd += 1
        if self.cap is not None:
            self.cwnd = min(self.cwnd, self.cap)


class RampRounds(NamedTuple):
    """The paced ramp cut into rounds of ``round_s`` (from the first segment's start): segments
    leaving the bottleneck in each round, each one's time within its round (flat, round by round
    from ``starts``), and the most segments queued at the bottleneck in each round."""
    counts: np.ndarray
    starts: np.ndarray
    within: np.ndarray
    queued: np.ndarray


@functools.lru_cache(maxsize=64)
def ramp_rounds(segment_s: float, round_s: float, iw: int = 10, cap: float | None = None,
                segments: int = LONGEST, mss_bytes: int = 1448) -> RampRounds:
    """``bbr_departures`` as ``window_runs`` counts time, in rounds of ``round_s`` (S/R + RTT +
    ACK/R: a segment's ACK returns ``round_s − segment_s`` after it leaves), up to the round in
    first round that carries the link's worth (the pipe is full from there on)."""
    # twice the file: a run at loss sends its resent segments too
    ramp = bbr_departures(segment_s, round_s - segment_s, iw, cap, mss_bytes, 2 * segments)
    index = np.floor((ramp.leaves - 1e-12) / round_s).astype(np.int64)
    if index[-1] > 0:                                # the last round is cut short where the sim stopped
        keep = index < index[-1]
        ramp, index = Ramp(ramp.leaves[keep], ramp.queued[keep], ramp.full), index[keep]
    counts = np.bincount(index)
    # from the first round that carries the link's worth the pipe is full: the window's rules take over
    at_link = np.flatnonzero(counts >= math.floor(round_s / segment_s + 1e-9))
    if at_link.size:
        keep = index < at_link[0]
        ramp, index, counts = Ramp(ramp.leaves[keep], ramp.queued[keep], True), index[keep], counts[:at_link[0]]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    queued = np.zeros(len(counts))
    np.maximum.at(queued, index, ramp.queued)
    within = ramp.leaves - index * round_s
    for column in (counts, starts, within, queued):
        column.flags.writeable = False
    return RampRounds(counts, starts, within, queued)
