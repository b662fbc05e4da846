"""The arithmetic of one link direction, packet by packet: no sockets, no clock.

``Shaper.admit(nbytes, now)`` answers "when does this packet come out?":

1. **Queue + rate** (a serializer at C bit/s, like a cable; tbf, the kernel
   backends' rate, is a meter instead: ``link.meter_bytes``): the packet waits
   until the line is free, then takes ``nbytes·8/C`` to send. ``nbytes`` is
   what the link charges: the IP packet plus a 14 B Ethernet header (the
   model's "emulated" wire). If the bytes still waiting exceed the queue
   limit, the packet is dropped at the tail.
2. **Loss** after the line: a lost packet used its share of the capacity, as
   on a real wire (and as iptables' drop at the receiver). By default each
   packet (each IP fragment) is drawn alone; with ``loss_unit="datagram"`` the
   fragments of one datagram (``datagram_key``) share one draw, so a test of
   a protocol's retransmission loses its packets at the same rate whatever
   their size.
3. **Delay ± jitter** (uniform); a wire is FIFO, so a packet never overtakes
   the one before it, unless **reorder** sends it without the delay.
4. **Duplicate**: a second copy arrives with the first.

Given a seeded ``random.Random`` the answers are reproducible, which is how
the tests check every rule without root.
"""
from __future__ import annotations

import random
import struct
from collections import OrderedDict
from dataclasses import dataclass, field

from .spec import Direction

__all__ = ["Shaper", "Counters", "datagram_key"]

#: Datagrams whose fate a shaper remembers (their fragments arrive close together).
_FATES_KEPT = 4096


@dataclass
class Counters:
    """What one direction did, for the results' metadata."""
    packets: int = 0
    bytes: int = 0
    delivered: int = 0
    dropped_queue: int = 0
    dropped_loss: int = 0
    duplicated: int = 0
    reordered: int = 0
    late_s_max: float = 0.0      # worst lateness of the event loop (userspace link only)
    extra: dict = field(default_factory=dict)


class Shaper:
    """One direction of an emulated link (see the module docstring for the rules)."""

    def __init__(self, direction: Direction, queue_bytes: int, rng: random.Random | None = None,
                 loss_unit: str = "packet"):
        self.direction = direction
        self.queue_bytes = queue_bytes
        self.rng = rng or random.Random()
        self.loss_unit = loss_unit
        self._fates: OrderedDict = OrderedDict()     # datagram key → lost?
        self.line_free_at = 0.0      # when the serializer finishes its last packet
        self.last_arrival = 0.0      # FIFO: the latest delivery time given so far
        self.counters = Counters()

    def backlog_bytes(self, now: float) -> float:
        """Bytes waiting for the line at ``now`` (what the queue limit bounds)."""
        rate = self.direction.rate_bps
        if not rate:
            return 0.0
        return max(0.0, self.line_free_at - now) * rate / 8.0

    def admit(self, nbytes: int, now: float, datagram=None) -> list[float]:
        """Delivery times for one packet of ``nbytes`` offered at ``now``: [] if dropped,
        two entries if duplicated. ``datagram``: the key of the datagram a fragment belongs
        to (``datagram_key``), None for a whole one."""
        d, c = self.direction, self.counters
        c.packets += 1
        c.bytes += nbytes
        if d.rate_bps:
            if self.backlog_bytes(now) + nbytes > self.queue_bytes:
                c.dropped_queue += 1
                return []
            start = max(now, self.line_free_at)
            self.line_free_at = start + nbytes * 8.0 / d.rate_bps
            sent = self.line_free_at
        else:
            sent = now
        if d.loss and self._lost(datagram):
            c.dropped_loss += 1
            return []
        if d.reorder and self.rng.random() < d.reorder:
            c.reordered += 1
            times = [sent]                      # skips the delay: overtakes those in flight
        else:
            delay = d.delay_s + (self.rng.uniform(-d.jitter_s, d.jitter_s) if d.jitter_s else 0.0)
            arrival = max(sent + max(delay, 0.0), self.last_arrival)
            self.last_arrival = arrival
            times = [arrival]
        if d.duplicate and self.rng.random() < d.duplicate:
            c.duplicated += 1
            times.append(times[0])
        c.delivered += len(times)
        return times

    def _lost(self, datagram) -> bool:
        """One loss draw, or the draw the datagram's first fragment made."""
        if self.loss_unit != "datagram" or datagram is None:
            return self.rng.random() < self.direction.loss
        if datagram not in self._fates:
            self._fates[datagram] = self.rng.random() < self.direction.loss
            if len(self._fates) > _FATES_KEPT:
                self._fates.popitem(last=False)
        return self._fates[datagram]


def datagram_key(frame: bytes, offset: int = 14):
    """The datagram an IPv4 fragment belongs to (source, destination, protocol, identification:
    RFC 791 §3.2), or None for a packet that is a whole datagram (or not IPv4). ``offset``:
    where the IP header starts (14: after an Ethernet header)."""
    if len(frame) < offset + 20 or frame[offset] >> 4 != 4:
        return None
    (flags_fragment,) = struct.unpack_from("!H", frame, offset + 6)
    if not flags_fragment & 0x3FFF:              # neither "more fragments" nor an offset
        return None
    return bytes(frame[offset + 4:offset + 6]) + bytes(frame[offset + 9:offset + 10]) + \
        bytes(frame[offset + 12:offset + 20])
