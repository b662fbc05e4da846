"""UDPR: stop-and-wait goodput and a whole file's transfer time, with loss both ways.

Source: Bertsekas & Gallager, *Data Networks* (2nd ed.) §2.4.2, and Kurose &
Ross, *Computer Networking* §3.4.2 (rdt3.0): one packet per cycle
DATA/C + RTT + ACK/C, a lost packet costs a timeout T₀ (PPCB's MAX_WAIT).

What a loss costs in PPCB (notebooks/ppcb-protocol.md), derived here as a two-state chain:
  * DATA lost (probability 1 − s, s = (1 − p_f)^k for k IP fragments): the client
    resends it T₀ after sending it; the server's own timeout meanwhile resends the
    previous ACC, which the client ignores. Each try costs T₀.
  * DATA arrived, ACC lost (1 − r, r = 1 − p_r): the server has delivered the data
    and ignores the client's duplicate, but its own MAX_WAIT timer resends the ACC,
    T₀ after the first one; a server that re-ACKs the duplicate answers at the same
    moment (the duplicate arrives T₀ after the first DATA did). Each try costs T₀.
So failures before success are geometric twice over:
    E[time per packet] = cycle + T₀·((1 − s)/s + (1 − r)/r)
    Var = T₀²·((1 − s)/s² + (1 − r)/r²)
On a meter (tbf, the namespaces and hosts backends' rate: tc-tbf(8)) a packet is not
serialized: it leaves at once when the bucket of b bytes holds its length, else when the
rate has earned what is missing. A DATA of D wire bytes (all its fragments) sent one
round trip after the last leaves with min(b, C·RTT) in the bucket, and the ACC (far smaller
than the reverse bucket, refilled within a cycle) leaves at once:
    cycle = RTT + max(0, D − min(b, C·RTT))/C = max(D/C, RTT + max(0, D − b)/C)
(derived from tbf's dequeue rule; the full bucket at the start saves at most b/C once).
CONN/CONACC is the same exchange (k = 1). After the last ACC the server sends RCVD
at once; a lost RCVD (p_r) makes the client wait T₀, then resend the last DATA
until DATA and RCVD both get through (each try s·r, T₀ apart).
The client gives up after 1 + MAX_RETRANSMITS tries of one exchange.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ModelError
from .packetization import packetize
from ..wire.headers import UDP_HEADER
from .headers import PPCB_HEADER, HeaderStack
from ..transports.udpr import NAME as UDPR

__all__ = ["StopAndWait", "stop_and_wait", "cycle_time", "exchange_time", "give_up_probability",
           "UdprTransfer", "udpr_transfer", "acc_wire_bytes", "ACC_WIRE_BYTES"]


def acc_wire_bytes(stack: HeaderStack | None = None) -> int:
    """Bytes one ACC puts on the wire of ``stack`` (default: udpr on a real Ethernet): the link
    layer's, IP's and UDP's headers and PPCB's 17 B ACC (notebooks/ppcb-protocol.md: type, session_id,
    packet_no u64), never fragmented."""
    stack = stack or HeaderStack(UDPR)
    return stack.frame(stack.l3 + UDP_HEADER + PPCB_HEADER["ACC"])


#: An ACC on the emulated wire (tbf, the userspace link, the relays): Ethernet header 14 +
#: IPv4 20 + UDP 8 + PPCB ACC 17 = 59 bytes.
ACC_WIRE_BYTES = acc_wire_bytes(HeaderStack(UDPR, wire="emulated"))


@dataclass(frozen=True)
class StopAndWait:
    """The stop-and-wait prediction for one DATA size on one link."""
    data_bytes: int
    cycle_s: float                  # DATA/C + RTT + ACC/C, no loss (``cycle_time``)
    success_probability: float      # q = s·r: DATA and its first ACC both arrive
    expected_transmissions: float   # DATA sends per packet: 1 + (1 − s)/s + (1 − r)/r
    time_per_packet_s: float        # cycle + T₀·((1 − s)/s + (1 − r)/r)
    goodput_bps: float
    failure_probability: float      # the client gives up on this packet (1 + MAX_RETRANSMITS tries)
    std_per_packet_s: float = 0.0   # T₀·√((1 − s)/s² + (1 − r)/r²)

    @property
    def expected_retransmissions(self) -> float:
        return self.expected_transmissions - 1.0


def cycle_time(data_wire_bytes: float, answer_wire_bytes: float, rate_bps: float, rtt_s: float,
                meter_bytes: float | None = None) -> float:
    """One request/answer cycle: DATA/C + RTT + ACC/C on a wire (Bertsekas & Gallager §2.4.2);
    with ``meter_bytes`` (tbf's bucket b) max(D/C, RTT + max(0, D − b)/C) (module docstring)."""
    if meter_bytes is None:
        return 8.0 * (data_wire_bytes + answer_wire_bytes) / rate_bps + rtt_s
    return max(8.0 * data_wire_bytes / rate_bps, rtt_s + 8.0 * max(0.0, data_wire_bytes - meter_bytes) / rate_bps)


def _check(rate_bps, rtt_s, timeout_s, max_retransmits, losses) -> None:
    if not rate_bps > 0:
        raise ModelError(f"rate must be positive, not {rate_bps!r}", "e.g. 10mbit")
    if rtt_s < 0 or timeout_s <= 0 or max_retransmits < 0:
        raise ModelError("RTT and MAX_RETRANSMITS cannot be negative, MAX_WAIT must be positive",
                         "e.g. rtt 40ms, MAX_WAIT 5s, MAX_RETRANSMITS 5")
    for name, p in losses:
        if not 0 <= p < 1:
            raise ModelError(f"{name} must be in [0, 1), not {p!r}", "e.g. 0.01 for 1 %")


def exchange_time(cycle_s: float, timeout_s: float, arrive: float, answered: float) -> tuple[float, float]:
    """(mean, variance) of one request/answer exchange: cycle + T₀·((1−s)/s + (1−r)/r),
    T₀²·((1−s)/s² + (1−r)/r²) with s = ``arrive``, r = ``answered`` (module docstring)."""
    s, r = arrive, answered
    mean = cycle_s + timeout_s * ((1 - s) / s + (1 - r) / r)
    return mean, timeout_s ** 2 * ((1 - s) / s ** 2 + (1 - r) / r ** 2)


def give_up_probability(arrive: float, answered: float, tries: int) -> float:
    """P(no answer within ``tries`` tries): the request first gets through on try j
    (s(1 − s)^(j−1)), then the answer on one of the tries j..n (1 − (1 − r)^(n−j+1))."""
    s, r = arrive, answered
    done = sum(s * (1 - s) ** (j - 1) * (1 - (1 - r) ** (tries - j + 1)) for j in range(1, tries + 1))
    return max(0.0, 1.0 - done)


def stop_and_wait(data_bytes: int, rate_bps: float, rtt_s: float = 0.0, *,
                  stack: HeaderStack | None = None, loss_forward: float = 0.0,
                  loss_reverse: float = 0.0, timeout_s: float = 5.0,
                  max_retransmits: int = 5, loss_unit: str = "packet",
                  meter_bytes: float | None = None) -> StopAndWait:
    """Predict UDPR for DATA packets of ``data_bytes`` (see module docstring).

    ``rtt_s`` is the round trip without transmission time (propagation and
    processing); ``timeout_s`` is MAX_WAIT; ``loss_unit``: "packet" (each IP
    fragment lost alone) or "datagram" (a DATA's fragments share one draw);
    ``meter_bytes``: the link is a meter with this bucket (tbf), not a wire.
    """
    stack = stack or HeaderStack(UDPR)
    if not stack.transport.acked:
        raise ModelError(f"stop-and-wait models a transport that waits for each ACC, not {stack.proto}",
                         "use HeaderStack('udpr', ...)")
    _check(rate_bps, rtt_s, timeout_s, max_retransmits,
           (("forward loss", loss_forward), ("reverse loss", loss_reverse)))
    data = packetize(stack, data_bytes)
    cycle = cycle_time(data.wire_bytes, acc_wire_bytes(stack), rate_bps, rtt_s, meter_bytes)
    s, r = data.delivery_probability(loss_forward, loss_unit), 1.0 - loss_reverse
    per_packet, variance = exchange_time(cycle, timeout_s, s, r)
    sends = 1.0 + (1 - s) / s + (1 - r) / r
    return StopAndWait(data_bytes, cycle, s * r, sends, per_packet, 8.0 * data_bytes / per_packet,
                       give_up_probability(s, r, max_retransmits + 1), math.sqrt(variance))


@dataclass(frozen=True)
class UdprTransfer:
    """A whole file over UDPR: CONN/CONACC, every DATA/ACC, the final RCVD (seconds)."""
    size_bytes: int
    packets: int
    handshake_s: float              # CONN → CONACC, with its own MAX_WAIT retries
    link_s: float                   # every DATA's and ACC's transmission, first tries
    round_trips_s: float            # waiting one RTT per packet: stop-and-wait itself
    timeouts_s: float               # MAX_WAIT spent on lost DATA or ACC
    rcvd_s: float                   # after the last ACC until RCVD arrives
    std_s: float                    # standard deviation of the total
    give_up_probability: float      # the client gives up somewhere on the way

    @property
    def total_s(self) -> float:
        return self.handshake_s + self.link_s + self.round_trips_s + self.timeouts_s + self.rcvd_s


def udpr_transfer(size_bytes: int, rate_bps: float, rtt_s: float = 0.0, *, chunk_bytes: int = 1000,
                  stack: HeaderStack | None = None, loss_forward: float = 0.0,
                  loss_reverse: float = 0.0, timeout_s: float = 5.0,
                  max_retransmits: int = 5, loss_unit: str = "packet",
                  meter_bytes: float | None = None) -> UdprTransfer:
    """Expected time for ``size_bytes`` in DATA packets of ``chunk_bytes`` (the last may be
    shorter), from sending CONN to receiving RCVD; ``std_s`` lets a deadline be set,
    e.g. total + 4·std (module docstring for the derivation; ``meter_bytes`` there too)."""
    stack = stack or HeaderStack(UDPR)
    if size_bytes < 0 or chunk_bytes < 1:
        raise ModelError("size must be ≥ 0 B and chunks ≥ 1 B", "e.g. 1MB in 1000 B chunks")
    _check(rate_bps, rtt_s, timeout_s, max_retransmits,
           (("forward loss", loss_forward), ("reverse loss", loss_reverse)))
    frame = lambda ppcb_bytes: stack.frame(stack.l3 + UDP_HEADER + ppcb_bytes)     # noqa: E731
    r = 1.0 - loss_reverse
    tries = max_retransmits + 1
    if meter_bytes is None:
        conn_cycle = cycle_time(frame(PPCB_HEADER["CONN"]), frame(PPCB_HEADER["CONACC"]), rate_bps, rtt_s)
    else:                   # the meter's bucket is full at the start: CONN leaves at once
        conn_cycle = rtt_s + 8.0 * max(0.0, frame(PPCB_HEADER["CONN"]) - meter_bytes) / rate_bps
    handshake, variance = exchange_time(conn_cycle, timeout_s, 1.0 - loss_forward, r)
    arrived = 1.0 - give_up_probability(1.0 - loss_forward, r, tries)
    full, rest = divmod(size_bytes, chunk_bytes)
    sizes = [(chunk_bytes, full)] + ([(rest, 1)] if rest else [])
    link = waiting = timeouts = 0.0
    s_last, last_cycle = 1.0, 0.0
    for data_bytes, count in sizes:
        if not count:
            continue
        sw = stop_and_wait(data_bytes, rate_bps, rtt_s, stack=stack, loss_forward=loss_forward,
                           loss_reverse=loss_reverse, timeout_s=timeout_s, max_retransmits=max_retransmits,
                           loss_unit=loss_unit, meter_bytes=meter_bytes)
        link += count * (sw.cycle_s - rtt_s)
        waiting += count * rtt_s
        timeouts += count * (sw.time_per_packet_s - sw.cycle_s)
        variance += count * sw.std_per_packet_s ** 2
        arrived *= (1.0 - sw.failure_probability) ** count
        s_last, last_cycle = sw.success_probability / r, sw.cycle_s
    rcvd = 0.0 if meter_bytes is not None else 8.0 * frame(PPCB_HEADER["RCVD"]) / rate_bps   # a meter: at once
    if size_bytes and loss_reverse:
        # RCVD lost: wait T₀, then resend the last DATA until DATA and RCVD both arrive.
        retry = timeout_s + timeout_s * (1 / (s_last * r) - 1) + last_cycle
        rcvd += loss_reverse * retry
        variance += loss_reverse * (1 - loss_reverse) * retry ** 2
    return UdprTransfer(size_bytes, full + (1 if rest else 0), handshake, link, waiting, timeouts,
                        rcvd, math.sqrt(variance), 1.0 - arrived)
