"""What a link does, described before anything is built: a frozen ``LinkSpec``.

A link has two directions, ``forward`` (a → b) and ``reverse`` (b → a); each
has a rate, a delay, a jitter, a loss and the rarer duplication and
reordering probabilities. MTU, queue limit and burst belong to the link.
Everything is SI inside (bit/s, seconds, bytes, fractions); ``LinkSpec.parse``
reads what people type ("10mbit", "20ms", "1%")::

    >>> spec = LinkSpec.parse(rate="10mbit", delay="20ms", loss="1%", loss_reverse=0)
    >>> spec.forward.loss, spec.reverse.loss, spec.rtt_s
    (0.01, 0.0, 0.04)

What a link *charges* per frame is its ``wire``, whichever backend carries it:

* ``"emulated"`` (the default): the skb length a Linux qdisc sees, the IP packet
  plus the 14 B Ethernet header (``wirelab.model``'s "emulated" wire);
* ``"real"``: what a cable carries, 38 B per frame beyond the IP packet (preamble
  and SFD 8, header 14, FCS 4, inter-frame gap 12; IEEE 802.3) and never less than
  84 B (a 64 B minimum frame + 20), as document 002 counts it;
* ``pppoe=True`` adds PPPoE's 8 B per frame to either (RFC 2516) and makes the MTU
  1492 unless one is given (document 002's FTTC line).

    >>> LinkSpec.parse(rate="10mbit", wire="real").charge(1514)     # a full frame
    1538
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from .. import transports, units
from ..errors import UsageError
from ..model import predict
from ..model.headers import WIRES, ethernet_overhead, min_frame
from ..wire.headers import ETHERNET_HEADER, ETHERNET_MTU, PPPOE_MTU

__all__ = ["Direction", "LinkSpec", "DEFAULT_QUEUE_S", "TBF_SLACK_S", "QDISC_L2", "LOSS_UNITS"]

#: Bytes a qdisc sees per frame beyond the IP packet (the skb's Ethernet header).
QDISC_L2 = ETHERNET_HEADER
#: What one loss draw decides: a packet (each IP fragment alone: a wire) or a whole datagram
#: (its fragments share one draw: a test of a protocol's retransmission, whatever its packet size).
LOSS_UNITS = ("packet", "datagram")
#: Default queue: this much time at the link rate (tbf's "latency"), at least 4 frames.
DEFAULT_QUEUE_S = 0.1
#: tbf's bucket beyond one frame: what the rate earns in this time. tbf is a meter, not a wire
#: (tc-tbf(8)): a packet leaves the moment the bucket holds its length, so a full bucket lets its
#: bytes out at the interface's speed. A bucket of exactly one frame would pace like a wire (but
#: for the first frame of a busy period, which no meter can hold back), yet whenever the queue
#: runs dry a moment (a late timer, a sender slow to refill it) the tokens beyond the bucket are
#: lost: measured here on namespaces (2 shared cores), TCP and 64000 B UDP reached 0.977 of η·C
#: at 10 Mbit/s and 0.82-0.86 at 100 Mbit/s (``peakrate`` with a one-frame ``mtu`` the same,
#: 0.977); 0.5 ms more reached η·C at 10 and 100 Mbit/s (0.999-1.003) but TCP only 0.61-0.74 at
#: 1 Gbit/s, 1 ms more 0.98-1.005 there. The old default, 2 frames or rate/250 (4 ms), let
#: 5000 B out at once at 10 Mbit/s: a 600 kB UDPR transfer measured 9.48 Mbit/s, above η·C = 9.41.
TBF_SLACK_S = 1e-3
#: What holds the packets waiting for the line: None, tbf's own tail-drop queue of ``queue_bytes``
#: (the userspace link's and the relays' too); "pfifo", a tail-drop queue of whole packets under
#: tbf; "fq_codel", flow queueing with CoDel's 5 ms target (RFC 8290, RFC 8289) under tbf, both
#: where the kernel has them (``detect``); the last two need the namespaces backend.
QDISCS = (None, "pfifo", "fq_codel")


def _fraction(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"{name} must be between 0 and 100 %, not {value!r}", f"e.g. {name}=0.01 (1 %)")


@dataclass(frozen=True)
class Direction:
    """One direction of a link. ``rate_bps=None`` means "as fast as the path goes".

    Jitter is uniform in [−jitter, +jitter] around the delay (netem's default);
    a wire is FIFO, so jitter alone never reorders packets: ``reorder`` does,
    by sending that fraction of packets without the delay (as netem's reorder).
    """
    rate_bps: float | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    def __post_init__(self):
        if self.rate_bps is not None and not (self.rate_bps > 0 and math.isfinite(self.rate_bps)):
            raise UsageError(f"rate must be positive, not {self.rate_bps!r} bit/s", "e.g. rate='10mbit'")
        for name in ("delay_s", "jitter_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise UsageError(f"{name[:-2]} must be zero or more seconds, not {value!r}", "e.g. '20ms'")
        for name in ("loss", "duplicate", "reorder"):
            _fraction(name, getattr(self, name))
        if self.reorder and not self.delay_s:
            raise UsageError("reordering needs a delay to jump over", "give a delay, e.g. delay='20ms'")

    @property
    def needs_delay_line(self) -> bool:
        """True when only netem or the userspace link can do it (delay, jitter, dup, reorder)."""
        return bool(self.delay_s or self.jitter_s or self.duplicate or self.reorder)

    def describe(self) -> str:
        parts = [units.format_rate(self.rate_bps) if self.rate_bps else "unlimited rate"]
        if self.delay_s or self.jitter_s:
            parts.append(f"delay {units.format_time(self.delay_s)}"
                         + (f" ± {units.format_time(self.jitter_s)}" if self.jitter_s else ""))
        for name in ("loss", "duplicate", "reorder"):
            if getattr(self, name):
                parts.append(f"{name} {units.format_fraction(getattr(self, name))}")
        return ", ".join(parts)


@dataclass(frozen=True)
class LinkSpec:
    """A two-way link: per-direction shaping plus MTU, queue limit, burst (bytes) and
    how each frame is charged (``wire``, ``pppoe``: see the module docstring).

    ``queue_bytes`` is the tail-drop queue in front of the rate limiter (tbf's
    ``limit``); default: ``DEFAULT_QUEUE_S`` worth of the rate, at least 4
    frames; ``qdisc`` another discipline for that queue (``QDISCS``), limited to as
    many packets as ``queue_bytes`` holds full frames. ``burst_bytes`` is tbf's bucket; default:
    one frame and ``TBF_SLACK_S`` of the rate (``burst_for``). Both count charged bytes.
    """
    forward: Direction = field(default_factory=Direction)
    reverse: Direction = field(default_factory=Direction)
    mtu: int = 1500
    queue_bytes: int | None = None
    burst_bytes: int | None = None
    wire: str = "emulated"           # saved specs without it were all emulated
    pppoe: bool = False
    loss_unit: str = "packet"        # saved specs without it lost packets one by one
    qdisc: str | None = None         # saved specs without it queued in tbf's own FIFO

    def __post_init__(self):
        if self.qdisc not in QDISCS:
            raise UsageError(f"unknown queue discipline {self.qdisc!r}",
                             "use qdisc=None (tbf's own FIFO), 'pfifo' or 'fq_codel'")
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or not 576 <= self.mtu <= 65535:
            raise UsageError(f"MTU must be a whole number from 576 to 65535 B, not {self.mtu!r}", "e.g. mtu=1500")
        if self.wire not in WIRES:
            raise UsageError(f"unknown wire {self.wire!r}",
                             "use wire='emulated' (what a qdisc sees: +14 B a frame) or wire='real' (a cable: +38 B)")
        if self.loss_unit not in LOSS_UNITS:
            raise UsageError(f"unknown loss unit {self.loss_unit!r}",
                             "use loss_unit='packet' (each IP fragment alone) or 'datagram' (its fragments together)")
        if not isinstance(self.pppoe, bool):
            raise UsageError(f"pppoe is True or False, not {self.pppoe!r}", "e.g. pppoe=True")
        for name in ("queue_bytes", "burst_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < self.frame_bytes):
                raise UsageError(f"{name[:-6]} of {value!r} B cannot hold one {self.frame_bytes} B frame",
                                 f"give at least {self.frame_bytes} B (MTU + {self.l2_bytes})")

    # -- reading what people type -------------------------------------------------------
    @classmethod
    def parse(cls, rate=None, delay=0, jitter=0, loss=0, duplicate=0, reorder=0, *, mtu=None,
              queue=None, burst=None, wire="emulated", pppoe=False, loss_unit="packet", qdisc=None,
              **reverse) -> "LinkSpec":
        """Both directions alike; ``rate_reverse=``, ``loss_reverse=`` (etc.) set b → a apart.
        ``mtu``: default 1500, with ``pppoe`` 1492."""
        names = ("rate", "delay", "jitter", "loss", "duplicate", "reorder")
        unknown = set(reverse) - {f"{n}_reverse" for n in names}
        if unknown:
            raise UsageError(f"unknown link option(s) {', '.join(sorted(unknown))}",
                             f"use {', '.join(names)} and their *_reverse forms")
        given = dict(zip(names, (rate, delay, jitter, loss, duplicate, reorder)))
        back = {n: reverse.get(f"{n}_reverse", given[n]) for n in names}
        if mtu is None:
            mtu = PPPOE_MTU if pppoe else ETHERNET_MTU
        return cls(_direction(**given), _direction(**back), mtu=int(units.parse_size(mtu)),
                   queue_bytes=None if queue is None else int(units.parse_size(queue)),
                   burst_bytes=None if burst is None else int(units.parse_size(burst)),
                   wire=wire or "emulated", pppoe=bool(pppoe), loss_unit=loss_unit or "packet",
                   qdisc=qdisc or None)

    def with_changes(self, **changes) -> "LinkSpec":
        """The same spec with fields replaced, e.g. ``spec.with_changes(mtu=1400)``."""
        return replace(self, **changes)

    # -- derived quantities -------------------------------------------------------------
    @property
    def l2_bytes(self) -> int:
        """Bytes charged per frame beyond the IP packet: 14 (emulated) or 38 (real), + 8 with PPPoE."""
        return ethernet_overhead(self.wire, pppoe=self.pppoe)

    @property
    def overhead_bytes(self) -> int:
        """What the link adds to each frame's length as a qdisc sees it (tc-stab's ``overhead``)."""
        return self.l2_bytes - QDISC_L2

    @property
    def min_frame_bytes(self) -> int:
        """Least a frame is charged (tbf's ``mpu``): 84 B on a real wire, none when emulated."""
        return min_frame(self.wire)

    def charge(self, frame_bytes: int) -> int:
        """Bytes the link charges for a frame of ``frame_bytes`` as a qdisc sees it (IP packet
        + 14 B header): + ``overhead_bytes``, at least ``min_frame_bytes``."""
        return max(frame_bytes + self.overhead_bytes, self.min_frame_bytes)

    @property
    def frame_bytes(self) -> int:
        """Largest frame the link charges for: MTU + ``l2_bytes`` (1514 emulated, 1538 real)."""
        return self.mtu + self.l2_bytes

    @property
    def rtt_s(self) -> float:
        """Base round-trip time the link adds (both delays, no queueing)."""
        return self.forward.delay_s + self.reverse.delay_s

    @property
    def needs_delay_line(self) -> bool:
        return self.forward.needs_delay_line or self.reverse.needs_delay_line

    @property
    def needs_userspace(self) -> bool:
        """True when only wirelab's own link can do it: loss by whole datagrams (a qdisc or an
        iptables rule sees each fragment alone)."""
        return self.loss_unit == "datagram" and bool(self.forward.loss or self.reverse.loss)

    def queue_for(self, direction: Direction) -> int:
        if self.queue_bytes is not None:
            return self.queue_bytes
        if direction.rate_bps is None:
            return 1000 * self.frame_bytes   # like netem's default limit of 1000 packets
        return max(4 * self.frame_bytes, int(direction.rate_bps * DEFAULT_QUEUE_S / 8))

    def burst_for(self, direction: Direction) -> int:
        """tbf's bucket for ``direction``: the spec's ``burst_bytes``, else the largest frame and
        what the rate earns in ``TBF_SLACK_S`` (see there): all a full bucket lets out at once."""
        if self.burst_bytes is not None:
            return self.burst_bytes
        return self.frame_bytes + int((direction.rate_bps or 0) * TBF_SLACK_S / 8)

    def predict(self, proto: str = "tcp", **kwargs):
        """``wirelab.model.predict`` for this link's forward direction, on its own wire."""
        if self.forward.rate_bps is None:
            raise UsageError("an unlimited link has no rate to predict from", "give the spec a rate")
        kwargs.setdefault("rtt_s", self.rtt_s or None)
        kwargs.setdefault("loss", self.forward.loss)
        kwargs.setdefault("loss_unit", self.loss_unit)
        if transports.get(proto).acked:            # its ACCs travel the reverse direction
            kwargs.setdefault("loss_reverse", self.reverse.loss)
        return predict(proto, self.forward.rate_bps, mtu=self.mtu, wire=self.wire, pppoe=self.pppoe, **kwargs)

    def describe(self) -> str:
        text = f"a→b: {self.forward.describe()}"
        if self.reverse != self.forward:
            text += f"; b→a: {self.reverse.describe()}"
        text += f"; MTU {self.mtu} B"
        if self.wire != "emulated" or self.pppoe:
            text += f"; {self.wire} wire{' + PPPoE' if self.pppoe else ''} ({self.l2_bytes} B a frame)"
        if self.needs_userspace:
            text += "; loss by whole datagrams"
        if self.qdisc:
            text += f"; queue {self.qdisc}"
        return text

    @property
    def queue_packets(self) -> int:
        """Full frames the queue holds (a packet-limited discipline's ``limit``), at least 1."""
        return max(1, self.queue_for(self.forward) // self.frame_bytes)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "LinkSpec":
        data = dict(data)
        return cls(Direction(**data.pop("forward")), Direction(**data.pop("reverse")), **data)


def _direction(rate, delay, jitter, loss, duplicate, reorder) -> Direction:
    return Direction(rate_bps=None if rate in (None, 0, "") else units.parse_rate(rate),
                     delay_s=units.parse_time(delay), jitter_s=units.parse_time(jitter),
                     loss=units.parse_fraction(loss), duplicate=units.parse_fraction(duplicate),
                     reorder=units.parse_fraction(reorder))
