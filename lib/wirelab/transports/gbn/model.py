"""Go-Back-N: goodput and a whole file's time, window-limited and under loss, with the kit's timer.

Notation: T a DATA's transmission time (its wire bytes ÷ C: ``model.packetization``), A an ACC's,
RTT the round trip without transmission (propagation, processing), c = T + RTT + A the
stop-and-wait cycle (``model.stopwait.cycle_time``), N the window, T₀ = MAX_WAIT, s = P(a DATA
arrives) = (1 − p_f)^k for k fragments, r = 1 − p_r = P(an ACC, CONACC or RCVD arrives).

**Without loss** (Stallings, *Data and Computer Communications*, ch. 7: sliding-window flow control,
§7.1, and its performance, appendix 7A, U = 1 for N ≥ 2a + 1, else N/(2a + 1); Kurose & Ross,
*Computer Networking*, §3.4.2-3.4.3): the window sends N DATA per
cycle unless the link is busier, so the efficiency is U = min(1, N·T / c) and the goodput
min(1, N·T/c)·η·C (η·C: ``packetization.efficiency``, document 002). DATA k leaves at
σ_k = max(σ_(k−1) + T, σ_(k−N) + c), i.e. σ_k = k·T when N·T ≥ c, else ⌊k/N⌋·c + (k mod N)·T; the
last byte is delivered at σ_(n−1) + T + RTT/2. With N = 1 this is stop-and-wait's cycle.

**Under loss** the textbook form (Stallings, appendix 7A, go-back-N ARQ; Bertsekas & Gallager,
*Data Networks*, 2nd ed., §2.4, go back n ARQ) charges each error the K frames sent again before it is noticed:
U = (1 − P)/(1 + 2aP) for N ≥ 2a + 1 and N(1 − P)/((2a + 1)(1 − P + NP)) otherwise (a = propagation
÷ T; a worked example: K. J. Christensen, USF, "Example U problem for GBN with errors", 2003,
U = 15.74 %, a test). The kit's sender notices a loss only when its one timer expires, T₀ after the oldest
unacknowledged DATA was sent, and then sends the window again, which flows on as a fresh
start. Derived from those rules (a seeded simulation of them is in tests/test_transport_gbn.py; the rules:
``transports/gbn``: ``__init__``, ``sender``, ``receiver``):

* **A DATA lost in its turn** (every packet before it arrived): the receiver discards all after it,
  re-ACCing the one before; the sender's timer expires T₀ after that DATA's send and the window
  restarts from it, so every later delivery comes exactly T₀ later (σ_(k+N) − σ_k = c, or N·T
  when the link binds, before and after the restart). A DATA is in its turn until it arrives:
  (1 − s)/s such losses per DATA, each T₀. Losses among the discarded DATA cost nothing more.
* **Every acknowledgement of a window lost**: cumulative ACCs make one lost ACC harmless while a
  later one arrives. The timer expires only when base b's ACC and those of the N − 1 DATA after
  it are all lost (all N DATA arrived: s^(N−1)(1 − r)^N), once per base the window reaches
  (the ACC before it arrived: ρ = r, or ρ = 1 when N = 1, which never skips a base). Then the
  window is sent again: it fails again when no re-ACC comes back, g = (1 − s·r)^N − r·(1 − s)^N
  (the second term: the window lost whole, the receiver's own MAX_WAIT timer resends its ACC).
  Per DATA: h = ρ·s^(N−1)(1 − r)^N / (1 − g) stalls of T₀; for N = 1, h = (1 − r)/r.
The timer runs from a DATA's send, not from its leaving the queue: a DATA that waited w behind
others stalls the flow T₀ − w only. After a start or a restart the window leaves as one burst
(DATA i of it waits i·T), so the DATA whose loss ends a run of arrivals waited on average
E[w] = T·Σ_(i<N) i·s^i(1 − s) + s^N·max(0, N·T − c) (``queued_at_loss``; 0 for N = 1).
So, per DATA, E[time] = max(T, c/N) + (T₀ − E[w])·((1 − s)/s + h): with T₀ = c, r = 1, E[w] = 0 this is
Stallings's two forms above (P = 1 − s), and with N = 1 it is stop-and-wait's
c + T₀·((1 − s)/s + (1 − r)/r) (``model.stopwait``). For a file of n DATA, the stalls of the last
window (RCVD acknowledges too: one more loss, (1 − r)^(M+1) for M DATA left) come after the last
delivery and go to the final term with RCVD's own loss (as udpr: T₀/(s·r) + c, ``stopwait``).
Not modelled: a meter's bucket (tbf; ``stopwait`` has it for N = 1), second-order coincidences
(a DATA and the ACC before it both lost make the timer start one DATA earlier).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import ModelError
from ...model.headers import PPCB_HEADER, HeaderStack
from ...model.packetization import packetize
from ...model.prediction import Prediction, finish
from ...model.stopwait import acc_wire_bytes, cycle_time, exchange_time, give_up_probability
from ...model.tcp import binding_limit
from ...model.transfer_time import TransferTime
from ...wire.headers import UDP_HEADER

__all__ = ["GoBackN", "go_back_n", "GbnTransfer", "gbn_transfer", "window_efficiency", "last_send_s",
           "ack_stalls", "queued_at_loss", "gbn_model", "as_transfer_time", "SOURCES"]

#: Where each formula comes from (shown beside a prediction).
SOURCES = {
    "window": "min(1, N·T/(T + RTT + A))·η·C: Stallings, Data and Computer Communications, appendix 7A; "
              "Kurose & Ross §3.4.3",
    "go_back_n": "Go-Back-N under loss with the kit's timer (T₀ per stall), generalising Stallings, "
                 "appendix 7A, and Bertsekas & Gallager §2.4 (transports/gbn/model.py)",
}


def window_efficiency(window: int, transmission_s: float, cycle_s: float) -> float:
    """U = min(1, N·T / c) (Stallings, appendix 7A: N/(2a + 1) below 1, with c = T + RTT + A = (2a + 1)·T)."""
    return min(1.0, window * transmission_s / cycle_s)


def last_send_s(packets: int, window: int, transmission_s: float, cycle_s: float) -> float:
    """σ_(n−1): when the last of ``packets`` DATA leaves after the first, without loss (module docstring)."""
    k = packets - 1
    if k <= 0:
        return 0.0
    if window * transmission_s >= cycle_s:
        return k * transmission_s
    return (k // window) * cycle_s + (k % window) * transmission_s


def queued_at_loss(window: int, arrive: float, transmission_s: float, cycle_s: float) -> float:
    """E[w]: how long the DATA whose loss stops the flow waited in the link's queue after its send.
    The timer runs from the send, so that stall costs T₀ − w. After a start or a restart the window
    leaves as one burst, DATA i of it waiting i·T; the first loss is DATA i of it with s^i(1 − s),
    else (s^N) one of the steady flow's, which waits max(0, N·T − c) (module docstring)."""
    s, n, t = arrive, window, transmission_s
    burst = sum(i * s ** i for i in range(1, n)) * (1 - s) * t
    return burst + s ** n * max(0.0, n * t - cycle_s)


def ack_stalls(window: int, arrive: float, answered: float, *, final: bool = False) -> tuple[float, float]:
    """(mean, variance) of the timer's expiries at one base with every acknowledgement lost (module
    docstring): first ρ·s^(N−1)(1 − r)^N, again g each time. ``final``: the window holds the last DATA,
    whose RCVD is one more acknowledgement and whose receiver has ended (no MAX_WAIT timer of its own)."""
    s, r, n = arrive, answered, window
    reach = 1.0 if n == 1 else r
    if final:
        first = reach * s ** (n - 1) * (1 - r) ** (n + 1)
        again = (1 - s * (1 - (1 - r) ** 2)) ** n
    else:
        first = reach * s ** (n - 1) * (1 - r) ** n
        again = (1 - s * r) ** n - r * (1 - s) ** n
    mean = first / (1 - again)
    return mean, first * (1 + again) / (1 - again) ** 2 - mean ** 2


@dataclass(frozen=True)
class GoBackN:
    """The steady state of Go-Back-N with window N for one DATA size on one link."""
    window: int
    data_bytes: int
    transmission_s: float           # T: one DATA on the wire
    cycle_s: float                  # c = T + RTT + A
    efficiency: float               # U = min(1, N·T/c), lossless
    link_bps: float                 # η·C
    stalls_per_packet: float        # (1 − s)/s + h: timer expiries per DATA
    time_per_packet_s: float        # max(T, c/N) + T₀·stalls
    goodput_bps: float
    give_up_probability: float      # per DATA: MAX_RETRANSMITS + 1 tries of a window, all failed

    @property
    def binding(self) -> str:
        """"link" when the window covers the cycle, else "window"; "go_back_n" when stalls cost more."""
        lossless = max(self.transmission_s, self.cycle_s / self.window)
        if self.time_per_packet_s - lossless > lossless:
            return "go_back_n"
        return "link" if self.efficiency >= 1.0 else "window"


def _check(window, rate_bps, rtt_s, timeout_s, max_retransmits, loss_forward, loss_reverse) -> None:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ModelError(f"the window is a whole number of DATA ≥ 1, not {window!r}", "e.g. --window 8")
    if not rate_bps > 0:
        raise ModelError(f"rate must be positive, not {rate_bps!r}", "e.g. 10mbit")
    if rtt_s < 0 or timeout_s <= 0 or max_retransmits < 0:
        raise ModelError("RTT and MAX_RETRANSMITS cannot be negative, MAX_WAIT must be positive",
                         "e.g. rtt 20ms, MAX_WAIT 5s, MAX_RETRANSMITS 5")
    for name, p in (("forward loss", loss_forward), ("reverse loss", loss_reverse)):
        if not 0 <= p < 1:
            raise ModelError(f"{name} must be in [0, 1), not {p!r}", "e.g. 0.01 for 1 %")


def go_back_n(data_bytes: int, rate_bps: float, rtt_s: float = 0.0, *, window: int,
              stack: HeaderStack | None = None, loss_forward: float = 0.0, loss_reverse: float = 0.0,
              timeout_s: float = 5.0, max_retransmits: int = 5, loss_unit: str = "packet") -> GoBackN:
    """Go-Back-N's steady goodput for DATA of ``data_bytes`` (module docstring). ``stack``: PPCB over
    UDP (``HeaderStack("udpr")``: Go-Back-N's packets are PPCB's); ``rtt_s`` without transmission."""
    stack = stack or HeaderStack("udpr")
    _check(window, rate_bps, rtt_s, timeout_s, max_retransmits, loss_forward, loss_reverse)
    data = packetize(stack, data_bytes)
    transmission = 8.0 * data.wire_bytes / rate_bps
    cycle = cycle_time(data.wire_bytes, acc_wire_bytes(stack), rate_bps, rtt_s)
    s, r = data.delivery_probability(loss_forward, loss_unit), 1.0 - loss_reverse
    stalls = (1 - s) / s + ack_stalls(window, s, r)[0]
    queued = queued_at_loss(window, s, transmission, cycle) if stalls else 0.0
    per_packet = max(transmission, cycle / window) + (timeout_s - queued) * stalls
    tries = max_retransmits + 1
    give_up = (1 - s) ** tries + (1 - r) ** window * ((1 - s * r) ** window) ** (tries - 1)
    return GoBackN(window, data_bytes, transmission, cycle, window_efficiency(window, transmission, cycle),
                   data.efficiency * rate_bps, stalls, per_packet, 8.0 * data_bytes / per_packet, min(1.0, give_up))


@dataclass(frozen=True)
class GbnTransfer:
    """A whole file over Go-Back-N: CONN/CONACC, the DATA, RCVD (seconds, expected)."""
    size_bytes: int
    packets: int
    window: int
    handshake_s: float              # CONN → CONACC, its losses as udpr's (``stopwait.exchange_time``)
    link_s: float                   # every DATA's first transmission
    window_s: float                 # the sender idle, its window full, waiting for ACC (σ_(n−1) − (n−1)·T)
    propagation_s: float            # the last DATA's way to the receiver: RTT/2
    timeouts_s: float               # T₀ − E[w] per stall before the last delivery
    rcvd_s: float                   # the last delivery → RCVD at the sender (its losses, the last window's stalls)
    std_s: float                    # standard deviation of the total (the stalls' counts)
    give_up_probability: float      # the sender gives up somewhere on the way

    @property
    def data_time_s(self) -> float:
        """First DATA sent → last byte delivered (the goodput's time, ``transfer.measures``)."""
        return self.link_s + self.window_s + self.propagation_s + self.timeouts_s

    @property
    def total_s(self) -> float:
        return self.handshake_s + self.data_time_s + self.rcvd_s

    @property
    def goodput_bps(self) -> float:
        return 8.0 * self.size_bytes / self.data_time_s if self.data_time_s > 0 else math.nan


def gbn_transfer(size_bytes: int, rate_bps: float, rtt_s: float = 0.0, *, window: int, chunk_bytes: int = 1000,
                 stack: HeaderStack | None = None, loss_forward: float = 0.0, loss_reverse: float = 0.0,
                 timeout_s: float = 5.0, max_retransmits: int = 5, loss_unit: str = "packet") -> GbnTransfer:
    """Expected time for ``size_bytes`` in DATA of ``chunk_bytes`` (the last may be shorter) with
    window ``window``, from CONN to RCVD; ``data_time_s`` is the goodput's (module docstring)."""
    stack = stack or HeaderStack("udpr")
    if size_bytes < 0 or chunk_bytes < 1:
        raise ModelError("size must be ≥ 0 B and chunks ≥ 1 B", "e.g. 1MB in 1000 B chunks")
    _check(window, rate_bps, rtt_s, timeout_s, max_retransmits, loss_forward, loss_reverse)
    frame = lambda ppcb_bytes: stack.frame(stack.l3 + UDP_HEADER + ppcb_bytes)     # noqa: E731
    ack = acc_wire_bytes(stack)
    r, tries = 1.0 - loss_reverse, max_retransmits + 1
    handshake, variance = exchange_time(cycle_time(frame(PPCB_HEADER["CONN"]), frame(PPCB_HEADER["CONACC"]),
                                                   rate_bps, rtt_s), timeout_s, 1.0 - loss_forward, r)
    arrived = 1.0 - give_up_probability(1.0 - loss_forward, r, tries)
    full, rest = divmod(size_bytes, chunk_bytes)
    count = full + (1 if rest else 0)
    if count == 0:
        return GbnTransfer(0, 0, window, handshake, 0.0, 0.0, 0.0, 0.0, rtt_s + 8.0 * frame(PPCB_HEADER["RCVD"])
                           / rate_bps, math.sqrt(variance), 1.0 - arrived)
    steady = go_back_n(chunk_bytes if full else rest, rate_bps, rtt_s, window=window, stack=stack,
                       loss_forward=loss_forward, loss_reverse=loss_reverse, timeout_s=timeout_s,
                       max_retransmits=max_retransmits, loss_unit=loss_unit)
    last = packetize(stack, rest or chunk_bytes)
    s = packetize(stack, chunk_bytes if full else rest).delivery_probability(loss_forward, loss_unit)
    t, c = steady.transmission_s, steady.cycle_s
    last_t = 8.0 * last.wire_bytes / rate_bps
    idle = last_send_s(count, window, t, c) - (count - 1) * t
    # before the last delivery: every DATA's own losses, and the ACC stalls of every window but the last
    middle = max(0, count - window)
    data_mean, data_var = count * (1 - s) / s, count * (1 - s) / s ** 2
    ack_mean, ack_var = ack_stalls(window, s, r)
    stalls, stall_var = data_mean + middle * ack_mean, data_var + middle * ack_var
    queued = queued_at_loss(window, s, t, c) if stalls else 0.0
    # after it: the last window's stalls (RCVD acknowledges too), then RCVD itself lost (as udpr)
    after = after_var = 0.0
    for left in range(1, min(window, count) + 1):
        m, v = ack_stalls(left, s, r, final=True)
        after, after_var = after + m, after_var + v
    lost_rcvd = r * loss_reverse * (timeout_s / (s * r) + c)
    rcvd = rtt_s / 2 + 8.0 * (ack + frame(PPCB_HEADER["RCVD"])) / rate_bps + timeout_s * after + lost_rcvd
    variance += timeout_s ** 2 * (stall_var + after_var) + r * loss_reverse * (1 - r * loss_reverse) * \
        (timeout_s / (s * r) + c) ** 2
    arrived *= (1.0 - steady.give_up_probability) ** count
    return GbnTransfer(size_bytes, count, window, handshake, (count - 1) * t + last_t, idle, rtt_s / 2,
                       (timeout_s - queued) * stalls, rcvd, math.sqrt(variance), 1.0 - arrived)


def gbn_model(stack, packets, rate_bps, *, notes, rtt_s, loss, loss_reverse, size, loss_unit, max_wait_s,
              max_retransmits, meter_bytes=None, window_packets=8, window_bytes=None, **_) -> Prediction:
    """min(η·C, N DATA per cycle, Go-Back-N under loss), and with ``size`` the whole file's time."""
    reverse = loss if loss_reverse is None else loss_reverse
    if loss >= 1 or reverse >= 1:
        raise ModelError(f"{stack.proto} cannot deliver anything at 100 % loss", "use a loss below 100 %")
    if rtt_s is None:
        notes.append("no --rtt given: Go-Back-N's cycle assumes zero propagation delay")
    if window_bytes is not None and window_bytes != window_packets:    # (the CLI's --window gives both)
        notes.append(f"window_bytes is TCP's socket window: Go-Back-N's window is counted in DATA "
                     f"(window_packets), here {window_packets}")
    if meter_bytes is not None:
        notes.append("the link is a meter (tbf): Go-Back-N is predicted as on a wire (its bucket not modelled)")
    args = dict(window=window_packets, stack=stack, loss_forward=loss, loss_reverse=reverse, timeout_s=max_wait_s,
                max_retransmits=max_retransmits, loss_unit=loss_unit)
    steady = go_back_n(packets.payload_bytes, rate_bps, rtt_s or 0.0, **args)
    link = packets.efficiency * rate_bps
    limits = {"link": link, "window": 8.0 * window_packets * packets.payload_bytes / steady.cycle_s}
    if loss or reverse:
        limits["go_back_n"] = steady.goodput_bps
    binding, goodput = binding_limit(limits)
    notes.append(f"Go-Back-N, window {window_packets}: {SOURCES['window']}"
                 + (f"; under loss {SOURCES['go_back_n']}" if loss or reverse else ""))
    transfer = None
    if size is not None:
        transfer = as_transfer_time(gbn_transfer(size, rate_bps, rtt_s or 0.0, chunk_bytes=packets.payload_bytes,
                                                 **args))
    return finish(stack.proto, rate_bps, stack, packets, limits, binding, goodput, notes, rtt_s=rtt_s, loss=loss,
                  transfer=transfer, sources={name: SOURCES[name] for name in ("window", "go_back_n")})


def as_transfer_time(t: GbnTransfer) -> TransferTime:
    """A ``gbn_transfer`` by phase and cause, as every transport's transfer time is shown."""
    data = {name: seconds for name, seconds in (("link", t.link_s), ("window", t.window_s),
                                                ("propagation", t.propagation_s), ("timeouts", t.timeouts_s))
            if seconds > 0}
    return TransferTime("gbn", t.size_bytes, {"conn": t.handshake_s}, data, {"rcvd": t.rcvd_s},
                        std_s=t.std_s, extras={"datagrams": t.packets, "window_packets": t.window,
                                               "give_up_probability": t.give_up_probability})
