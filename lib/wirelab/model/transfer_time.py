"""How long a whole file takes: set-up, data, and the final RCVD, for TCP, UDP and UDPR.

A PPCB file transfer (notebooks/ppcb-protocol.md) runs, as the client sees it:

    TCP   SYN → SYN-ACK (connect returns) · CONN → CONACC · DATA … · wait RCVD
    UDP                                     CONN → CONACC · DATA … · wait RCVD
    UDPR                                    CONN ⇄ CONACC · DATA ⇄ ACC … · wait RCVD

The time is split three ways, each by cause (seconds):
  ``setup``  before the first data byte leaves: ``handshake`` (TCP's 3-way handshake,
             Cardwell et al. 2000 eq. 4, SYN timeout 1 s) and ``conn`` (CONN/CONACC;
             over TCP a lost one waits one RTO, with backoff, same equation).
  ``data``   first data byte sent → last data byte delivered (what receiver goodput
             divides by): ``link`` (transmission at η·C, retransmissions included),
             ``slow_start`` (the sender idle, its window smaller than the pipe:
             Kurose & Ross), ``loss_recovery`` (the first loss: Cardwell eq. 20),
             the steady-state limit's own name for the time beyond the link's
             (``cubic``, ``padhye``, ``window`` …: Cardwell eq. 24 with that
             algorithm's rate, see ``congestion``, reached from the window the loss
             left, β·E[W_ss], by α segments per round: derived here) and
             ``propagation`` (the last byte's one-way delay). With a named loss-based cc
             (Reno, CUBIC) at loss: Linux's rules run by run (``window_runs``), the idle
             after slow start named by the cc (``reno``, ``cubic``). BBR: ``startup``, its paced
             start-up (``bbr_startup``), runs on through random loss; a loss in the last flight
             costs a round (derived). UDPR: ``link``, ``stop_and_wait`` (an RTT a packet), ``timeouts`` (MAX_WAIT).
  ``final``  last byte delivered → RCVD at the client: ``rcvd``.

What is not modelled, and said in the notes: delayed ACKs of the first segment
(Linux acknowledges at once at the start, "quickack"), HyStart leaving slow start
early, receive-window autotuning, queue overflow in slow start, RACK-TLP repairing
a tail loss faster than the RTO that Cardwell's timeout term charges.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

from ..errors import ModelError
from .congestion import ALPHA, BETA, SteadyState
from .headers import PPCB_HEADER
from .slowstart import (LINUX_INITIAL_WINDOW, LINUX_SYN_RTO, expected_loss_recovery,
                        expected_segments_before_loss, expected_slow_start_window, handshake_time,
                        retransmission_delay, slow_start_send)
from .recovery import expected_rto
from .stopwait import UDPR, UdprTransfer
from .tcp import default_rto

__all__ = ["TransferTime", "tcp_transfer", "udp_transfer", "from_udpr", "stream_transfer", "timed_goodput",
           "BETA", "ALPHA", "regrowth_rounds"]

#: Segments of a file simulated run by run (``window_runs``); a longer file's rest runs at the
#: steady state those runs settle at (14.5 MB of 1448 B segments; beyond it the runs have settled).
LONGEST_SIMULATED = 10_000


def regrowth_rounds(segments: float, start: float, alpha: float, target: float) -> tuple[float, bool]:
    """(rounds, mostly ramping?) to send ``segments`` with a window that starts at ``start``
    and grows by ``alpha`` per round up to ``target`` segments per round, then stays there
    (additive increase, RFC 5681 §3.1; derived here for a continuous window:
    start·r + α·r²/2 segments in r rounds)."""
    if segments <= 0:
        return 0.0, False
    start = max(min(start, target), 1e-9)
    ramp = (target - start) / alpha                        # rounds to reach the target
    in_ramp = ramp * (start + target) / 2
    if segments <= in_ramp:
        return (math.sqrt(start * start + 2 * alpha * segments) - start) / alpha, True
    total = ramp + (segments - in_ramp) / target
    return total, ramp > total / 2


@dataclass(frozen=True)
class TransferTime:
    """The expected time of one file transfer, by phase and cause (seconds)."""
    proto: str
    size_bytes: int
    setup: dict[str, float]
    data: dict[str, float]
    final: dict[str, float]
    delivered_bytes: float | None = None     # expected bytes delivered (UDP loses some)
    std_s: float | None = None               # standard deviation of the total, where known
    extras: dict = field(default_factory=dict)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total_s(self) -> float:
        """From the client's first packet to RCVD in its hands."""
        return sum(self.setup.values()) + self.data_time_s + sum(self.final.values())

    @property
    def data_time_s(self) -> float:
        """First data byte sent → last data byte delivered."""
        return sum(self.data.values())

    @property
    def goodput_bps(self) -> float:
        """Receiver goodput: bytes delivered / data time."""
        delivered = self.size_bytes if self.delivered_bytes is None else self.delivered_bytes
        return 8.0 * delivered / self.data_time_s if self.data_time_s > 0 else math.nan

    @property
    def binding(self) -> str:
        """What limits the goodput: ``link`` while transmission takes at least
        ``LINK_BINDS`` of the data time (goodput within 10 % of η·C's share),
        else the longest other data-phase term."""
        return _dominant(self.data)

    @property
    def transfer_binding(self) -> str:
        """The same for the whole transfer, set-up and RCVD counted as ``handshake``."""
        return _dominant({**self.data, "handshake": sum(self.setup.values()) + sum(self.final.values())})

    def terms(self) -> dict[str, float]:
        """Every term by name (set-up, data, final), for a table or a stacked bar."""
        return {**self.setup, **self.data, **self.final}


#: The link binds while it takes this share of the time (the kit's ±10 % yardstick).
LINK_BINDS = 0.9


def _dominant(terms: dict[str, float]) -> str:
    total = sum(terms.values())
    others = {k: v for k, v in terms.items() if k != "link" and v > 0}
    if not others or terms.get("link", 0.0) >= LINK_BINDS * total:
        return "link"
    return max(others, key=others.__getitem__)


def _add(terms: dict, name: str, seconds: float) -> None:
    if seconds > 0:
        terms[name] = terms.get(name, 0.0) + seconds


@dataclass(frozen=True)
class _Segments:
    """One TCP transfer's segments and what each costs on this link (seconds): what every
    phase of ``tcp_transfer`` reads, computed once."""
    n: float                 # segments (the last may be short)
    d: int                   # segments, the short last one counted whole
    segment: float           # one full segment on the wire (S/R)
    ack: float               # one ACK on the wire
    round_s: float           # the ACK clock's round
    rtt_s: float
    iw: int
    cap: float | None        # the largest window in segments (a socket buffer), None: no cap
    loss: float
    resent: float            # the link's share spent on resending


def tcp_transfer(size_bytes: int, rate_bps: float, *, eta: float, mss_bytes: int, header_bytes: int,
                 rtt_s: float, steady: SteadyState, loss: float = 0.0, loss_reverse: float | None = None,
                 iw: int = LINUX_INITIAL_WINDOW, window_bytes: float | None = None,
                 rto_s: float | None = None, syn_timeout_s: float = LINUX_SYN_RTO,
                 recovery: str = "classic", queue_bytes: float | None = None) -> TransferTime:
    """PPCB over TCP: ``size_bytes`` of stream (PPCB framing included) in segments of
    ``mss_bytes``; ``eta`` of a full segment; ``header_bytes`` per frame without
    payload (an ACK); ``rtt_s`` propagation round trip; ``steady`` the congestion
    control's steady state (its ``goodput_bps`` runs the congestion-avoidance phase).
    ``recovery``: after the first loss, ``"classic"`` (Cardwell eq. 20 on PFTK's correlated
    loss, then the steady state at once) or ``"linux"`` (independent loss: for Reno and CUBIC
    Linux's rules run by run, ``window_runs``, with ``queue_bytes`` the bottleneck's tail-drop
    queue in wire bytes; the closed forms are the limit those runs reach for long files)."""
    if recovery not in ("classic", "linux"):
        raise ModelError(f"unknown recovery {recovery!r}", "use 'classic' or 'linux'")
    if size_bytes < 0 or not rate_bps > 0 or rtt_s < 0:
        raise ModelError("size ≥ 0, rate > 0 and RTT ≥ 0 please", "e.g. 200KB at 10mbit, RTT 40 ms")
    if not steady.covered:
        raise ModelError("; ".join(steady.notes) or "steady state not covered", "lower the loss")
    reverse = loss if loss_reverse is None else loss_reverse
    rto = default_rto(rtt_s) if rto_s is None else rto_s
    segment = 8.0 * mss_bytes / (eta * rate_bps)          # one full segment on the wire (S/R)
    ack = 8.0 * header_bytes / rate_bps
    setup, final = _tcp_exchange(rate_bps, header_bytes, rtt_s, loss, reverse, rto, syn_timeout_s, ack)
    n = size_bytes / mss_bytes
    s = _Segments(n=n, d=math.ceil(n - 1e-9), segment=segment, ack=ack, round_s=rtt_s + segment + ack,
                  rtt_s=rtt_s, iw=iw, cap=None if window_bytes is None else max(1.0, window_bytes / mss_bytes),
                  loss=loss, resent=loss if steady.retransmissions_on_link else 0.0)
    data: dict[str, float] = {}
    extras: dict[str, float] = {}
    std_s = None                                           # one run's spread, where derived
    notes = list(steady.notes)
    if loss <= 0 or (steady.cc == "bbr" and recovery != "linux"):
        queue = None if queue_bytes is None else queue_bytes * eta / mss_bytes    # wire bytes mss/η each
        _unstopped_slow_start(s, data, notes, steady.cc, queue)
    elif recovery == "linux" and (steady.cc in BETA or steady.cc == "bbr"):
        extras, std_s = _linux_runs(s, steady, eta=eta, mss_bytes=mss_bytes, rto=rto, queue_bytes=queue_bytes,
                                    data=data, notes=notes)
    else:
        _cardwell(s, steady, mss_bytes=mss_bytes, rto=rto, data=data, notes=notes)
    _add(data, "propagation", rtt_s / 2 if size_bytes else 0.0)
    return TransferTime("tcp", size_bytes, setup, data, final, notes=tuple(notes), std_s=std_s,
                        extras={"segments": s.d, "initial_window": iw, "rto_s": rto, **extras})


def _tcp_exchange(rate_bps: float, header_bytes: int, rtt_s: float, loss: float, reverse: float, rto: float,
                  syn_timeout_s: float, ack: float) -> tuple[dict[str, float], dict[str, float]]:
    """(setup, final): the handshake and CONN/CONACC before the data, RCVD after it; a lost
    one waits an RTO (Cardwell eq. 4 for the SYN's)."""
    wire = lambda payload: 8.0 * (header_bytes + payload) / rate_bps   # noqa: E731
    setup = {"handshake": handshake_time(rtt_s, loss, reverse, syn_timeout_s=syn_timeout_s) + 2 * ack,
             "conn": rtt_s + wire(PPCB_HEADER["CONN"]) + wire(PPCB_HEADER["CONACC"])
             + retransmission_delay(loss, rto) + retransmission_delay(reverse, rto)}
    final = {"rcvd": rtt_s / 2 + wire(PPCB_HEADER["RCVD"]) + retransmission_delay(reverse, rto)}
    return setup, final


def _unstopped_slow_start(s: _Segments, data: dict, notes: list, cc: str, queue: float | None) -> None:
    """The data phase when no loss stops slow start: loss-free, or BBR without Linux's rules
    (its startup does not stop at a random loss; ``bbr_startup.startup_terms``: paced)."""
    _add(data, "link", s.n * s.segment / (1.0 - s.resent))
    if cc == "bbr":
        from .bbr_startup import startup_terms   # numpy: only when BBR's start-up is predicted
        terms, said = startup_terms(s.n, s.segment, s.rtt_s + s.ack, iw=s.iw, max_window=s.cap, queue=queue)
        for name, seconds in terms.items():
            _add(data, name, seconds)
        notes.extend(said)
    else:
        start = slow_start_send(s.n, s.segment, s.rtt_s + s.ack, iw=s.iw, max_window=s.cap)
        _add(data, "slow_start", start.idle - start.window_idle)
        _add(data, "window", start.window_idle)
    if s.loss > 0:
        # Derived here: earlier losses are repaired under cover of new data (SACK); one in
        # the last flight delays the last byte by a round.
        flight = min(s.d, math.ceil(1 + s.rtt_s / s.segment))
        _add(data, "loss_recovery", -math.expm1(flight * math.log1p(-s.loss)) * s.round_s)
        notes.append("BBR: a loss in the last flight costs one round (derived, not published)")


def _linux_runs(s: _Segments, steady: SteadyState, *, eta: float, mss_bytes: int, rto: float,
                queue_bytes: float | None, data: dict, notes: list) -> tuple[dict[str, float], float]:
    """The data phase by Linux's own rules at independent loss, run by run (window_runs): the
    mean into ``data``; returns (extras, std_s) with the spread and quantiles of one run's data time."""
    from .window_runs import file_runs           # numpy: only when a transfer at loss is predicted
    queue = None if queue_bytes is None else queue_bytes * eta / mss_bytes    # wire bytes mss/η each
    simulated = min(max(s.d, 1), LONGEST_SIMULATED)
    runs = file_runs(segments=simulated, loss=s.loss, cc=steady.cc, segment_s=s.segment, base_s=s.round_s,
                     rtt_s=s.rtt_s, iw=s.iw, queue=queue, cap=s.cap)
    terms, shift = runs.terms, 0.0
    if steady.cc == "bbr" and queue is not None and s.d <= simulated:
        from .bbr_startup import with_random_loss    # beside window_runs: numpy already loaded
        calm = partial(file_runs, segments=simulated, loss=0.0, cc="bbr", segment_s=s.segment, base_s=s.round_s,
                       rtt_s=s.rtt_s, iw=s.iw, queue=queue, cap=s.cap)
        terms, shift = with_random_loss(runs, calm, s.n, s.segment, s.rtt_s, s.ack, iw=s.iw, max_window=s.cap,
                                        queue=queue, notes=notes)
    for name, seconds in terms.items():
        if name != "propagation":
            _add(data, name, seconds)
    if s.d > simulated:
        _beyond_simulated(s, steady, simulated, mss_bytes, data, notes)
    # the rare, long part of the mean: the first loss's retransmission lost too, an RTO (p a loss)
    lossy = -math.expm1(s.d * math.log1p(-s.loss))
    extras = {"expected_rto_s": lossy * expected_rto(s.loss, rto), "rto_run_probability": lossy * s.loss}
    _add(data, "loss_recovery", extras["expected_rto_s"])
    rto_run = extras["rto_run_probability"]
    rto_cost = extras["expected_rto_s"] / rto_run if rto_run > 0 else 0.0
    std_s = math.sqrt(runs.std_s ** 2 + rto_run * (1 - rto_run) * rto_cost ** 2)
    extras.update(data_time_q05_s=runs.quantile(0.05) + shift, data_time_q95_s=runs.quantile(0.95) + shift,
                  data_time_min_s=runs.fastest_s + shift, simulated_runs=len(runs.data_times_s))
    notes.append(_runs_note(steady.cc, runs))
    return extras, std_s


def _beyond_simulated(s: _Segments, steady: SteadyState, simulated: int, mss_bytes: int, data: dict,
                      notes: list) -> None:
    """The segments past ``LONGEST_SIMULATED`` at the rate the runs settle at: the steady state
    (window_chain's long run, the cited closed forms where the link or window binds), its time
    beyond the link's by name."""
    rest = (s.d - simulated) * 8.0 * mss_bytes / steady.goodput_bps
    on_link = (s.d - simulated) * s.segment / (1 - s.resent)
    _add(data, "link", on_link)
    _add(data, steady.cc if steady.binding not in ("link", "window") else steady.binding,
         max(rest - on_link, 0.0))
    notes.append(f"the first {simulated} segments run by run, the other {s.d - simulated} at the steady "
                 f"state ({steady.goodput_bps / 1e6:.3f} Mbit/s)")


def _runs_note(cc: str, runs) -> str:
    """What the run-by-run simulation modelled for ``cc``, and one run's 90 % range."""
    return (f"Linux's rules run by run ({len(runs.data_times_s)} seeded runs, model.window_runs: "
            + ("BBR's paced start-up (model.bbr_startup)" if cc == "bbr" else "IW10 slow start")
            + (", HyStart" if cc == "cubic" else "")
            + (", SACK/RACK-TLP, packet conservation's round, no cut" if cc == "bbr" else
               ", SACK/RACK-TLP, PRR's recovery round, "
               + ("CUBIC's curve and W_est" if cc == "cubic" else "Reno's AIMD"))
            + f"); one run's data time {runs.quantile(0.05):.3f}–{runs.quantile(0.95):.3f} s (90 %)")


def _cardwell(s: _Segments, steady: SteadyState, *, mss_bytes: int, rto: float, data: dict,
              notes: list) -> None:
    """The data phase by Cardwell et al. 2000 (classic recovery): slow start until the first
    loss, its recovery (eq. 20), then the steady state."""
    d_ss = expected_segments_before_loss(s.d, s.loss) * s.n / s.d if s.d else 0.0
    start = slow_start_send(s.n, s.segment, s.rtt_s + s.ack, iw=s.iw, max_window=s.cap, loss=s.loss)
    w_ss = expected_slow_start_window(d_ss, s.iw)
    if s.cap is not None:
        w_ss = min(w_ss, s.cap)
    # The rest runs at the steady state (Cardwell eq. 24), reached from the window the loss
    # left, β·E[W_ss], growing by α per round (derived here: a loss never helps).
    target = steady.goodput_bps * s.round_s / (8.0 * mss_bytes)          # segments per round
    beta, alpha = BETA.get(steady.cc, 0.5), ALPHA.get(steady.cc, 1.0)
    rounds, ramped = regrowth_rounds(max(s.n - d_ss, 0.0), beta * w_ss, alpha, target)
    steady_time = rounds * s.round_s
    link = s.n * s.segment + max(s.n - d_ss, 0.0) * s.segment * s.resent / (1 - s.resent)
    _add(data, "link", link)
    _add(data, "slow_start", start.idle - start.window_idle)
    _add(data, "window", start.window_idle)
    _add(data, "loss_recovery", expected_loss_recovery(s.d, s.loss, s.round_s, rto, w_ss))
    excess = steady_time - max(s.n - d_ss, 0.0) * s.segment / (1 - s.resent)
    loss_model = "cubic" if steady.cc == "cubic" else "padhye"
    _add(data, loss_model if ramped or steady.binding == "link" else steady.binding, excess)
    notes.append("Cardwell et al. 2000: slow start until the first loss, then the steady state")


def udp_transfer(size_bytes: int, rate_bps: float, *, datagram_payload: int, datagram_wire_bytes: int,
                 header_bytes: int, delivery_probability: float, rtt_s: float, loss: float = 0.0,
                 loss_reverse: float | None = None) -> TransferTime:
    """PPCB over plain UDP: CONN → CONACC, every DATA at once (no retransmission), RCVD.
    Each datagram arrives with probability q = (1 − p)^k (k fragments); of N datagrams
    N·(1 − q) are lost on average, all arrive with probability q^N (and the whole
    exchange, CONN, CONACC and RCVD too, with (1 − p)(1 − p_r)²·q^N), and a receiver that
    stops at the first gap (PPCB's udp server answers RJT and ends) delivers on average
    the fraction q(1 − q^N)/(N(1 − q)) (the expected length of the run before the first loss)."""
    if size_bytes < 0 or datagram_payload < 1:
        raise ModelError("size ≥ 0 and datagrams ≥ 1 B please", "e.g. 1MB in 1000 B datagrams")
    count = math.ceil(size_bytes / datagram_payload - 1e-9)
    q = delivery_probability
    wire = lambda payload: 8.0 * (header_bytes + payload) / rate_bps   # noqa: E731
    link = size_bytes / datagram_payload * 8.0 * datagram_wire_bytes / rate_bps
    setup = {"conn": rtt_s + wire(PPCB_HEADER["CONN"]) + wire(PPCB_HEADER["CONACC"])}
    data: dict[str, float] = {}
    _add(data, "link", link)
    _add(data, "propagation", rtt_s / 2 if size_bytes else 0.0)
    in_order = 1.0 if q >= 1 or count == 0 else q * (1 - q ** count) / (count * (1 - q))
    extras = {"datagrams": count, "expected_lost_datagrams": count * (1 - q), "delivered_fraction": q,
              "in_order_fraction": in_order, "complete_probability": q ** count,
              "exchange_probability": (1 - loss) * (1 - (loss if loss_reverse is None else loss_reverse)) ** 2
              * q ** count}
    notes = () if q >= 1 else ("plain UDP does not retransmit: expect an incomplete file",)
    return TransferTime("udp", size_bytes, setup, data, {"rcvd": rtt_s / 2 + wire(PPCB_HEADER["RCVD"])},
                        delivered_bytes=size_bytes * q, extras=extras, notes=notes)


def from_udpr(t: UdprTransfer, rtt_s: float) -> TransferTime:
    """A ``stopwait.udpr_transfer`` as a TransferTime (the last ACC's way back counts as final)."""
    data: dict[str, float] = {}
    _add(data, "link", t.link_s)
    _add(data, "stop_and_wait", t.round_trips_s - rtt_s / 2 if t.packets else 0.0)
    _add(data, "timeouts", t.timeouts_s)
    final = {"rcvd": t.rcvd_s + (rtt_s / 2 if t.packets else 0.0)}
    return TransferTime(UDPR, t.size_bytes, {"conn": t.handshake_s}, data, final, std_s=t.std_s,
                        extras={"datagrams": t.packets, "give_up_probability": t.give_up_probability})


def stream_transfer(size_bytes: int, rate_bps: float, *, eta: float, header_bytes: int,
                    delay_s: float) -> TransferTime:
    """PPCB over TCP through a relay that terminates TCP and paces the byte stream (wirelab's
    loopback ``TcpRelay``; derived from its rules, not from a TCP model): each end's TCP
    runs to the relay on this host, so no handshake crosses the link and there is no slow
    start, window or loss; the relay charges the stream as full segments at the rate (η·C)
    and holds every piece ``delay_s``. So: ``conn`` = 2·delay + CONN and CONACC on the wire,
    ``link`` = size·8/(η·C), ``propagation`` = delay, ``rcvd`` = delay + RCVD on the wire."""
    if size_bytes < 0 or not rate_bps > 0 or delay_s < 0 or not 0 < eta <= 1:
        raise ModelError("size ≥ 0, rate > 0, delay ≥ 0 and 0 < η ≤ 1 please", "e.g. 200KB at 10mbit, 10 ms")
    wire = lambda payload: 8.0 * (header_bytes + payload) / rate_bps   # noqa: E731
    data: dict[str, float] = {}
    _add(data, "link", 8.0 * size_bytes / (eta * rate_bps))
    _add(data, "propagation", delay_s if size_bytes else 0.0)
    return TransferTime("tcp", size_bytes, {"conn": 2 * delay_s + wire(PPCB_HEADER["CONN"])
                                            + wire(PPCB_HEADER["CONACC"])},
                        data, {"rcvd": delay_s + wire(PPCB_HEADER["RCVD"])},
                        notes=("a relay terminates TCP and paces its byte stream: no handshake across "
                               "the link, no slow start, no loss (derived from the relay's rules)",))


def timed_goodput(data_time, start_s: float, duration_s: float, most_bytes: float) -> float:
    """Goodput of a timed run measured from ``start_s`` to ``start_s + duration_s`` after its
    first byte (iperf3's -O and -t): 8·(N(start + duration) − N(start))/duration, N(t) the
    bytes delivered by t, found by inverting ``data_time(bytes)`` (a finite transfer's expected
    first-byte-to-last-delivered time, which grows with its size) up to ``most_bytes``.
    Derived here: a timed run is a long transfer seen through a window, so what the window
    sees of slow start and of the way down from its window (``recovery``) counts."""
    if duration_s <= 0 or start_s < 0:
        raise ModelError("a timed run needs a positive duration and a start ≥ 0", "e.g. -t 5 -O 1")

    def delivered_by(t: float) -> float:
        low, high = 0.0, most_bytes
        if t <= 0 or data_time(high) <= t:
            return 0.0 if t <= 0 else high
        for _ in range(60):
            mid = 0.5 * (low + high)
            if data_time(mid) <= t:
                low = mid
            else:
                high = mid
            if high - low < 1.0:
                break
        return low
    return 8.0 * (delivered_by(start_s + duration_s) - delivered_by(start_s)) / duration_s
