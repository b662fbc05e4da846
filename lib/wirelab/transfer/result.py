"""One ``Result`` record for every run, both ends, in SI units.

Each end fills in what it saw (``Result.sender(...)`` / the receiver's part)
and ``merge`` puts the two halves together. Names say their unit: ``*_bytes``,
``*_s`` (seconds; ``*_time_s`` are Unix epoch seconds), ``*_bps`` (bit/s).

Every measured figure is defined once, in ``measures.py`` (and its
``GLOSSARY``): the receiver's goodput (bytes delivered ÷ time from the first
byte sent to the last delivered, on one clock) is the one to trust; the
sender's view (bytes offered ÷ time to hand them to the kernel) is reported
too, labelled, like nttcp's two lines.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field, fields

from . import measures

__all__ = ["Result", "merge", "summarize"]


@dataclass
class Result:
    """What one transfer did, as seen by its sender and its receiver."""
    proto: str                                   # "tcp", "udp" or "udpr"
    mode: str = "file"                           # "file", "bulk", "load" or "echo"
    ok: bool = False                             # completed without error (both ends that reported)
    error: str | None = None                     # the sender's error, if any
    receiver_error: str | None = None            # the receiver's error, if any
    # bytes (application payload, no headers)
    bytes_offered: int = 0                       # what the application asked to send
    bytes_sent: int = 0                          # payload handed to the kernel, resends included
    bytes_received: int | None = None            # payload that reached the receiver, duplicates included
    bytes_delivered: int | None = None           # delivered in order, exactly once
    # times: Unix epoch seconds at each end (time.time()), one clock per host
    sender_start_time_s: float | None = None
    sender_end_time_s: float | None = None
    receiver_start_time_s: float | None = None   # the session starts at the receiver (CONN seen)
    receiver_end_time_s: float | None = None     # last byte delivered
    first_data_time_s: float | None = None       # first data byte sent (sender clock): set-up is over
    last_data_time_s: float | None = None        # last data byte handed to the kernel (sender clock)
    clock: str | None = None                     # how the two ends' instants meet: measures.CLOCKS
    # a timed TCP run, measured as iperf3 does (measures.GLOSSARY)
    interval_s: float | None = None              # the receiver counted what arrived within this many s
    report_wait_s: float | None = None           # last data byte handed over → the receiver's REPORT
    send_queue_bytes: int | None = None          # what the sender's socket still held then (discarded)
    drain_s: float | None = None                 # that queue at the run's goodput: the wait not waited
    # packets (PPCB DATA, datagrams or records)
    packet_bytes: int | None = None              # data per packet / write
    packets_sent: int = 0                        # resends included
    packets_received: int | None = None
    retransmissions: int = 0
    duplicates: int | None = None
    out_of_order: int | None = None
    lost: int | None = None
    # delay
    send_times_s: list[float] = field(default_factory=list)       # per packet: first send (sender clock)
    receive_times_s: list[float] = field(default_factory=list)    # per packet: delivery (receiver clock)
    one_way_delays_s: list[float] = field(default_factory=list)  # per packet, receiver − sender clock
    delay_method: str | None = None              # "same host clock", "ntp-style offset estimate", None
    clock_offset_s: float | None = None          # receiver clock − sender clock, if estimated
    rtts_s: list[float] = field(default_factory=list)             # round-trip samples
    ack_times_s: list[float] = field(default_factory=list)        # udpr: first send → its ACC, per packet
    # costs
    sender_cpu_s: float | None = None            # CPU time of the sending thread/process
    receiver_cpu_s: float | None = None
    sender_syscalls: int | None = None           # socket calls the program made (send, recv, select...)
    receiver_syscalls: int | None = None
    # settings
    sndbuf_requested_bytes: int | None = None
    sndbuf_granted_bytes: int | None = None      # what getsockopt says (Linux doubles the request)
    rcvbuf_requested_bytes: int | None = None
    rcvbuf_granted_bytes: int | None = None
    max_wait_s: float | None = None
    max_retransmits: int | None = None
    congestion_control: str | None = None        # TCP only: TCP_CONGESTION of the sender's socket
    metadata: dict = field(default_factory=dict)  # free-form: host, port, session id, backend notes

    # -- derived figures -------------------------------------------------
    # Each figure below is defined in measures.GLOSSARY.
    @property
    def sender_duration_s(self) -> float | None:
        if self.first_data_time_s is not None and self.last_data_time_s is not None:
            return _span(self.first_data_time_s, self.last_data_time_s)
        return _span(self.sender_start_time_s, self.sender_end_time_s)

    @property
    def receiver_duration_s(self) -> float | None:
        # from the first byte delivered (measures.GLOSSARY), not from CONN: set-up is not receiving
        first = self.receive_times_s[0] if self.receive_times_s else self.receiver_start_time_s
        return _span(first, self.receiver_end_time_s)

    @property
    def transfer_s(self) -> float | None:
        if self.clock in ("one clock", "offset estimate"):
            offset = self.clock_offset_s if self.clock == "offset estimate" else 0.0
            seconds = measures.transfer_time(self.first_data_time_s, self.receiver_end_time_s, offset_s=offset)
            if seconds is not None:
                return seconds
        return self.receiver_duration_s

    @property
    def completion_s(self) -> float | None:
        return _span(self.sender_start_time_s, self.sender_end_time_s)

    @property
    def setup_s(self) -> float | None:
        return _span(self.sender_start_time_s, self.first_data_time_s)

    @property
    def goodput_bps(self) -> float | None:
        return measures.goodput(self.bytes_delivered, self.transfer_s)

    @property
    def sender_goodput_bps(self) -> float | None:
        return measures.goodput(self.bytes_offered, self.sender_duration_s)

    @property
    def delivered_fraction(self) -> float | None:
        if self.bytes_delivered is None or not self.bytes_offered:
            return None
        return self.bytes_delivered / self.bytes_offered

    @property
    def goodput_clock(self) -> str:
        """Which clock the goodput stands on (``measures.CLOCKS``)."""
        if self.clock in ("one clock", "offset estimate") and self.first_data_time_s is not None:
            return self.clock
        return "receiver only"

    @property
    def loss_fraction(self) -> float | None:
        if self.lost is None or not self.packets_sent:
            return None
        return self.lost / max(self.packets_sent - self.retransmissions, 1)

    def to_dict(self, samples: bool = True) -> dict:
        """Every field plus the derived figures: JSON-ready. ``samples=False``
        leaves out the per-packet lists (their summaries stay)."""
        out = asdict(self)
        if not samples:
            for name in _SAMPLES:
                out.pop(name)
        for name in ("sender_duration_s", "receiver_duration_s", "transfer_s", "completion_s", "setup_s",
                     "goodput_bps", "sender_goodput_bps", "delivered_fraction", "goodput_clock",
                     "loss_fraction"):
            out[name] = getattr(self, name)
        out["one_way_delay"] = summarize(self.one_way_delays_s)
        out["rtt"] = summarize(self.rtts_s)
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict) -> "Result":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def summary(self) -> str:
        """Two lines a person reads, like nttcp's (receiver first: trust it)."""
        def rate(v):
            return "n/a" if v is None else f"{v / 1e6:.2f} Mbit/s"
        lines = [f"{self.proto} {self.mode}: {'ok' if self.ok else 'FAILED'}"
                 + (f" ({self.error or self.receiver_error})" if not self.ok else "")]
        if self.mode == "echo":
            rtt = summarize(self.rtts_s)
            if rtt:
                lines.append(f"  rtt: {rtt['count']} samples, median {rtt['median_s'] * 1e6:.1f} µs, "
                             f"min {rtt['min_s'] * 1e6:.1f} µs, p99 {rtt['p99_s'] * 1e6:.1f} µs")
            return "\n".join(lines)
        if self.bytes_delivered is not None:
            lines.append(f"  receiver: {self.bytes_delivered} B delivered in "
                         f"{self.transfer_s or 0:.4f} s = {rate(self.goodput_bps)} goodput ({self.goodput_clock})")
        if self.interval_s is not None:
            lines.append(f"  interval: what arrived within {self.interval_s:g} s (iperf3's count); "
                         + (f"{self.send_queue_bytes} B still queued at the sender then, discarded (about "
                            f"{self.drain_s or 0:.1f} s of drain not waited out)" if self.send_queue_bytes
                            else "nothing left queued at the sender"))
        lines.append(f"  sender:   {self.bytes_offered} B offered in {self.sender_duration_s or 0:.4f} s"
                     f" = {rate(self.sender_goodput_bps)} (sender's view), "
                     f"{self.packets_sent} packets, {self.retransmissions} resent")
        return "\n".join(lines)


_SAMPLES = ("send_times_s", "receive_times_s", "one_way_delays_s", "rtts_s", "ack_times_s")


def _span(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else max(end - start, 0.0)


def merge(sender: Result, receiver: Result, *, same_clock: bool = False) -> Result:
    """One record from the sender's half and the receiver's half.

    ``same_clock``: both ends read one clock (same host), so per-packet
    one-way delay is receive time − send time, packet by packet.
    """
    out = Result(**{f.name: getattr(sender, f.name) for f in fields(Result)})
    for name in ("bytes_received", "bytes_delivered", "receiver_start_time_s", "receiver_end_time_s",
                 "packets_received", "duplicates", "out_of_order", "lost", "receiver_cpu_s",
                 "receiver_syscalls", "rcvbuf_requested_bytes", "rcvbuf_granted_bytes",
                 "receive_times_s"):
        value = getattr(receiver, name)
        if value is not None:
            setattr(out, name, value)
    out.receiver_error = receiver.receiver_error or receiver.error
    out.ok = sender.ok and receiver.ok
    out.clock = "one clock" if same_clock else None
    out.metadata = {**receiver.metadata, **sender.metadata}
    if receiver.one_way_delays_s:
        out.one_way_delays_s, out.delay_method = receiver.one_way_delays_s, receiver.delay_method
    elif same_clock and out.send_times_s and out.receive_times_s:
        pairs = zip(out.send_times_s, out.receive_times_s)
        out.one_way_delays_s = [rx - tx for tx, rx in pairs]
        out.delay_method = "same host clock"
    return out


def summarize(samples: list[float]) -> dict | None:
    """count, mean, min, median, p99, max of a list of seconds (None when empty)."""
    if not samples:
        return None
    ordered = sorted(samples)
    return {"count": len(ordered), "mean_s": statistics.fmean(ordered), "min_s": ordered[0],
            "median_s": statistics.median(ordered),
            "p99_s": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], "max_s": ordered[-1]}
