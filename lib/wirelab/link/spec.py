"""What a link does, described before anything is built: a frozen ``LinkSpec``.

A link has two directions, ``forward`` (a → b) and ``reverse`` (b → a); each
has a rate, a delay, a jitter, a loss and the rarer duplication and
reordering probabilities. MTU, queue limit and burst belong to the link.
Everything is SI inside (bit/s, seconds, bytes, fractions); ``LinkSpec.parse``
reads what people type ("10mbit", "20ms", "1%")::

    >>> spec = LinkSpec.parse(rate="10mbit", delay="20ms", loss="1%", loss_reverse=0)
    >>> spec.forward.loss, spec.reverse.loss, spec.rtt_s
    (0.01, 0.0, 0.04)

What a link *charges* per packet is the skb length a Linux qdisc sees: the IP
packet plus the 14 B Ethernet header (``wirelab.model`` calls this the
"emulated" wire), whichever backend carries it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from .. import units
from ..errors import UsageError
from ..model import predict
from ..wire.headers import ETHERNET_HEADER, frame_bytes

__all__ = ["Direction", "LinkSpec", "DEFAULT_QUEUE_S"]

#: Default queue: this much time at the link rate (tbf's "latency"), at least 4 frames.
DEFAULT_QUEUE_S = 0.1


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
    """A two-way link: per-direction shaping plus MTU, queue limit and burst (bytes).

    ``queue_bytes`` is the tail-drop queue in front of the rate limiter (tbf's
    ``limit``); default: ``DEFAULT_QUEUE_S`` worth of the rate, at least 4
    frames. ``burst_bytes`` is tbf's bucket; default: 2 frames or rate/250 Hz.
    """
    forward: Direction = field(default_factory=Direction)
    reverse: Direction = field(default_factory=Direction)
    mtu: int = 1500
    queue_bytes: int | None = None
    burst_bytes: int | None = None

    def __post_init__(self):
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or not 576 <= self.mtu <= 65535:
            raise UsageError(f"MTU must be a whole number from 576 to 65535 B, not {self.mtu!r}", "e.g. mtu=1500")
        for name in ("queue_bytes", "burst_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < self.frame_bytes):
                raise UsageError(f"{name[:-6]} of {value!r} B cannot hold one {self.frame_bytes} B frame",
                                 f"give at least {self.frame_bytes} B (MTU + {ETHERNET_HEADER})")

    # -- reading what people type -------------------------------------------------------
    @classmethod
    def parse(cls, rate=None, delay=0, jitter=0, loss=0, duplicate=0, reorder=0, *, mtu=1500,
              queue=None, burst=None, **reverse) -> "LinkSpec":
        """Both directions alike; ``rate_reverse=``, ``loss_reverse=`` (etc.) set b → a apart."""
        names = ("rate", "delay", "jitter", "loss", "duplicate", "reorder")
        unknown = set(reverse) - {f"{n}_reverse" for n in names}
        if unknown:
            raise UsageError(f"unknown link option(s) {', '.join(sorted(unknown))}",
                             f"use {', '.join(names)} and their *_reverse forms")
        given = dict(zip(names, (rate, delay, jitter, loss, duplicate, reorder)))
        back = {n: reverse.get(f"{n}_reverse", given[n]) for n in names}
        return cls(_direction(**given), _direction(**back), mtu=int(units.parse_size(mtu)),
                   queue_bytes=None if queue is None else int(units.parse_size(queue)),
                   burst_bytes=None if burst is None else int(units.parse_size(burst)))

    def with_changes(self, **changes) -> "LinkSpec":
        """The same spec with fields replaced, e.g. ``spec.with_changes(mtu=1400)``."""
        return replace(self, **changes)

    # -- derived quantities -------------------------------------------------------------
    @property
    def frame_bytes(self) -> int:
        """Largest frame the link charges for: MTU + 14 B Ethernet header."""
        return frame_bytes(self.mtu)

    @property
    def rtt_s(self) -> float:
        """Base round-trip time the link adds (both delays, no queueing)."""
        return self.forward.delay_s + self.reverse.delay_s

    @property
    def needs_delay_line(self) -> bool:
        return self.forward.needs_delay_line or self.reverse.needs_delay_line

    def queue_for(self, direction: Direction) -> int:
        if self.queue_bytes is not None:
            return self.queue_bytes
        if direction.rate_bps is None:
            return 1000 * self.frame_bytes   # like netem's default limit of 1000 packets
        return max(4 * self.frame_bytes, int(direction.rate_bps * DEFAULT_QUEUE_S / 8))

    def burst_for(self, direction: Direction) -> int:
        if self.burst_bytes is not None:
            return self.burst_bytes
        return max(2 * self.frame_bytes, int((direction.rate_bps or 0) / 8 / 250))

    def predict(self, proto: str = "tcp", **kwargs):
        """``wirelab.model.predict`` for this link's forward direction, emulated wire."""
        if self.forward.rate_bps is None:
            raise UsageError("an unlimited link has no rate to predict from", "give the spec a rate")
        kwargs.setdefault("rtt_s", self.rtt_s or None)
        kwargs.setdefault("loss", self.forward.loss)
        if proto == "udpr":
            kwargs.setdefault("loss_reverse", self.reverse.loss)
        return predict(proto, self.forward.rate_bps, mtu=self.mtu, wire="emulated", **kwargs)

    def describe(self) -> str:
        text = f"a→b: {self.forward.describe()}"
        if self.reverse != self.forward:
            text += f"; b→a: {self.reverse.describe()}"
        return text + f"; MTU {self.mtu} B"

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
