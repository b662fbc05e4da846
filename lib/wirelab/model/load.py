"""Offered load against a link: what arrives, what does not, how long a packet takes.

Sources: document 000 (a rate-paced sender: received = offered until the link
is full; at most ~96 % of 1 Gbit/s is data); document 002 (goodput = η·C);
Kent & Mogul, "Fragmentation considered harmful" (1987): one lost fragment
loses the datagram; Kurose & Ross §1.4 (transmission delay L/R, queueing
delay = backlog / R); Linux skb accounting (a receive buffer is charged each
packet's *truesize*, about 2304 B for a frame of up to 1500 B: a 2 KB data
area plus the sk_buff, include/net/sock.h TCP_SKB_MIN_TRUESIZE).

    >>> received_rate(80e6, 0.95, 100e6)             # below capacity: all of it arrives
    80000000.0
    >>> received_rate(200e6, 0.95, 100e6)            # above: η·C
    95000000.0
"""
from __future__ import annotations

import math

from ..errors import ModelError

__all__ = ["received_rate", "undelivered_fraction", "packet_delay", "burst_delay", "udp_datagrams_buffered",
           "TRUESIZE_PER_PACKET"]

#: Bytes a receive buffer is charged per IP packet of up to 1500 B (2 KB data + sk_buff).
TRUESIZE_PER_PACKET = 2304


def _positive(name: str, value: float) -> None:
    if not value > 0 or not math.isfinite(value):
        raise ModelError(f"{name} must be positive, not {value!r}", f"give a {name} above zero")


def received_rate(offered_bps: float, efficiency: float, rate_bps: float, *, fragments: int = 1,
                  independent: bool = False) -> float:
    """Payload bit/s that arrive when ``offered_bps`` of payload meets a link of ``rate_bps``:
    min(offered, η·C) (documents 000, 002). Above capacity the link drops a share
    q = η·C / offered of the IP packets; if those drops hit the ``fragments`` of a datagram
    ``independent``-ly, a datagram survives only with q^k (Kent & Mogul 1987) and the
    received rate is offered · q^k: the floor under a tail-drop queue, which drops
    fragments in runs and so keeps nearer η·C."""
    _positive("efficiency", efficiency)
    _positive("rate", rate_bps)
    if offered_bps < 0:
        raise ModelError(f"offered load must be ≥ 0, not {offered_bps!r}", "e.g. 10e6")
    capacity = efficiency * rate_bps
    if offered_bps <= capacity:
        return float(offered_bps)
    if not independent:
        return capacity
    share = capacity / offered_bps
    return offered_bps * share ** max(int(fragments), 1)


def undelivered_fraction(offered_bps: float, efficiency: float, rate_bps: float, **kwargs) -> float:
    """1 − received / offered: what the link could not carry (UDP loses it; a TCP sender
    is held back and never sends it, which document 000 also counted as loss)."""
    if offered_bps <= 0:
        return 0.0
    return 1.0 - received_rate(offered_bps, efficiency, rate_bps, **kwargs) / offered_bps


def packet_delay(wire_bytes: float, rate_bps: float, *, propagation_s: float = 0.0,
                 queue_bytes: float = 0.0) -> float:
    """One packet's delay, first bit sent to last bit received: transmission of all its
    ``wire_bytes`` (every fragment: reassembly waits for the last, store and forward,
    Kurose & Ross §1.4.1) + the backlog ahead of it (``queue_bytes``: the whole queue when
    offered load exceeds the link) / C + propagation."""
    _positive("rate", rate_bps)
    if wire_bytes < 0 or queue_bytes < 0 or propagation_s < 0:
        raise ModelError("sizes and delays must be ≥ 0", "e.g. packet_delay(1538, 1e9)")
    return propagation_s + 8.0 * (wire_bytes + queue_bytes) / rate_bps


def burst_delay(packets: int, wire_bytes: float, rate_bps: float, *, backlog_bytes: float = math.inf) -> float:
    """Mean delay of the ``packets`` of one burst handed to a FIFO of ``rate_bps`` at once (a
    sender that sends each second's data back to back at a timer tick, document 000): packet i
    waits for the i before it, i · ``wire_bytes`` / C, then its own transmission (batch arrival
    at a deterministic server, Kleinrock, Queueing Systems vol. 1, §4; backlog / R, Kurose &
    Ross §1.4.2). A sender whose socket holds at most ``backlog_bytes`` blocks beyond it, and
    its packets, stamped before the blocking send, wait at most that backlog:
    mean of min(i · w, backlog) · 8 / C over i, plus w · 8 / C."""
    _positive("rate", rate_bps)
    if packets < 1 or wire_bytes <= 0 or not backlog_bytes >= 0:
        raise ModelError("a burst needs packets, their size and a backlog ≥ 0", "e.g. burst_delay(714, 1466, 1e9)")
    full = min(packets, math.floor(backlog_bytes / wire_bytes) + 1) if math.isfinite(backlog_bytes) else packets
    # the first `full` packets wait i·w (a sum of 0..full-1), the rest the whole backlog
    waited = wire_bytes * full * (full - 1) / 2 + (packets - full) * min(backlog_bytes, packets * wire_bytes)
    return 8.0 * (waited / packets + wire_bytes) / rate_bps


def udp_datagrams_buffered(rcvbuf_granted: float, ip_packets: int, *,
                           truesize: int = TRUESIZE_PER_PACKET) -> int:
    """About how many datagrams a UDP receive buffer of ``rcvbuf_granted`` bytes holds
    while the receiving program is not reading: each datagram is charged the truesize of
    every IP packet (fragment) it came in (on loopback 212992 B held 92 datagrams of
    1400 B). A burst longer than this, arriving while the reader sleeps, is lost."""
    _positive("receive buffer", rcvbuf_granted)
    if ip_packets < 1:
        raise ModelError(f"a datagram travels in at least one IP packet, not {ip_packets!r}", "e.g. 1")
    return max(1, int(rcvbuf_granted // (ip_packets * truesize)))
