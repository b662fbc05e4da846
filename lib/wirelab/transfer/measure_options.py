"""What one measurement is asked to do: the options of ``measure_client.measure``, and their checks.

    MeasureOptions(mode="load", rate_bps=40e6, packet=1400, time_s=2)

A frozen record, so one set of options can be kept, compared, and reused with a change
(``dataclasses.replace(options, packet=500)``). ``measure`` takes one, or the same names as
keywords (``measure("udp", host, port, mode="load", rate_bps=40e6)``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from . import measure_wire as wire
from .pacing import PACINGS

__all__ = ["MeasureOptions", "MODES"]

#: bulk, offered load, echo rounds (RTT), ping(8)-style rounds on a timer (udp)
MODES = ("bulk", "load", "echo", "ping")


@dataclass(frozen=True)
class MeasureOptions:
    """The options of one measurement (the modes: ``measure_client``'s docstring).

    ``same_clock``: both ends read one clock (None: when the host is loopback). Otherwise
    ``offset_rounds`` ECHO exchanges before and after the records give the receiver's clock
    offset and drift (a line fitted over time, ``clock.py``), and every one-way delay is
    corrected by the line at its send time. ``echo_interval_s``: spread echo rounds this far
    apart (a fit over time needs time). ``clock_offset_s`` and ``clock_drift_ppm``: this end's
    clock is made that wrong on purpose (a lab's known skew).
    ``size_bytes`` (load mode over udp): send exactly this many bytes at ``rate_bps``, however
    long that takes, instead of ``time_s`` of records. ``end_markers`` (udp): that many of
    nttcp's 4-byte end markers ``end_marker_gap_s`` apart follow the records.
    ``pacing`` (load mode): "even" spaces the records evenly; "tick" sends each second's
    records back to back at a 1 s timer tick, as document 000's sender (``pacing.TickPacer``).
    ``read_bytes`` (tcp): the receiver reads at most this many bytes per recv (iperf 2's ``-l``
    at the server; by default it reads a record at a time).
    """
    # what is sent
    mode: str = "bulk"
    time_s: float = 1.0
    rate_bps: float | None = None
    packet: int = 1400
    count: int = 100
    size_bytes: int | None = None
    pacing: str = "even"
    # waiting and the sockets
    max_wait: float = 5.0
    max_retransmits: int = 5
    sndbuf: int | None = None
    rcvbuf: int | None = None
    congestion: str | None = None
    gso: bool = False
    read_bytes: int | None = None
    # the clocks and the echo rounds
    offset_rounds: int = 16
    same_clock: bool | None = None
    echo_interval_s: float = 0.0
    clock_offset_s: float = 0.0
    clock_drift_ppm: float = 0.0
    # nttcp's ending (udp)
    end_markers: int = 0
    end_marker_gap_s: float = wire.END_MARKER_GAP_S

    def check(self, proto: str) -> None:
        """Raise UsageError, naming the fix, for options that cannot run over ``proto``."""
        if proto not in ("tcp", "udp"):
            raise UsageError(f"measurement modes run over tcp or udp, not {proto!r}", "use tcp or udp")
        mode, packet = self.mode, self.packet
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}", "use bulk, load, echo or ping")
        if mode == "ping" and (proto != "udp" or not self.echo_interval_s > 0):
            raise UsageError(f"ping over {proto} every {self.echo_interval_s:g} s",
                             "ping is udp echo rounds on a timer: give echo_interval_s > 0, e.g. 0.02")
        if mode == "load" and not self.rate_bps:
            raise UsageError("offered load needs a rate", "e.g. --rate 5MB/s")
        read = self.read_bytes
        if read is not None and (proto != "tcp" or not 1 <= read <= 1 << 24):
            raise UsageError(f"a reader's length of {read} B over {proto}", "read_bytes is for tcp: 1 B..16 MiB")
        if self.pacing not in PACINGS or (self.pacing != "even" and mode != "load"):
            raise UsageError(f"pacing {self.pacing!r} in {mode} mode", "pacing is 'even' or 'tick', for load mode only")
        if not wire.MIN_PACKET <= packet <= (65507 if proto == "udp" else 1 << 24):
            raise UsageError(f"packet size {packet} B", f"use {wire.MIN_PACKET}..65507 B for udp")
        if self.gso and (proto != "udp" or mode != "bulk"):
            raise UsageError("GSO is for udp bulk only", "drop --gso")
        markers, gap = self.end_markers, self.end_marker_gap_s
        if markers and (proto != "udp" or mode == "echo" or not 0 < markers <= 255 or gap < 0):
            raise UsageError(f"{markers} end markers {gap:g} s apart after {proto} {mode}",
                             "end markers follow udp records: 1..255 of them, a gap of 0 s or more (nttcp: 3, 2 s)")
        size = self.size_bytes
        if size is not None and (mode != "load" or proto != "udp" or size < wire.MIN_PACKET):
            raise UsageError(f"a byte budget ({size} B) is for udp load of at least {wire.MIN_PACKET} B",
                             "drop size_bytes, or use mode='load' over udp")
