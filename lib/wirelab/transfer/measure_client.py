"""The sending side of wirelab's measurement modes (the wire is ``measure_wire.py``, the receiver ``measure_server.py``).

    measure("udp", "127.0.0.1", 5000, mode="load", rate_bps=40e6, packet=1400, time_s=2)

bulk: records back to back for ``time_s`` (the kernel's pace; over TCP measured as iperf3
measures: the receiver counts what arrives within ``time_s`` of the first record and reports at
once, and what this end's socket still holds is discarded, not waited out); load: paced
at ``rate_bps`` (offered load), for ``time_s`` or for exactly ``size_bytes``
(a file's bytes: the last record carries what is left); echo: ``count``
request/response rounds for RTT; ping (udp): ``count`` echo rounds sent every
``echo_interval_s`` whether or not the one before was answered, like ping(8) (a
probe beside other traffic: a lost round costs no time). At the end the receiver's REPORT is folded
into the same Result. The bytes offered are the records the sender planned,
so what arrives is never more than what was offered.

With ``end_markers`` (udp) the records are followed by nttcp's end markers:
that many 4-byte datagrams ``end_marker_gap_s`` apart (nttcp: 3, 2 s; document
002 saw them as "Len=4" in Wireshark and as the 3 extra calls of nttcp's sender).

The parts, each a module of its own: the options and their checks (``measure_options.py``),
the client's half of the session's messages (``measure_session.py``), the receiver's REPORT
folded into the Result (``measure_report.py``); this one opens the socket, runs the phases
in order and closes it.

    python -m wirelab.transfer.measure_client udp 127.0.0.1 5000 load 5MB/s 1400 2
"""
from __future__ import annotations

import errno
import socket
import struct
import sys
import time
from dataclasses import replace

from ..errors import ProtocolError, TransferError
from . import measure_wire as wire
from .. import units
from .clock import SkewedClock, fit_offset_drift
from .measure_options import MeasureOptions
from .measure_report import fold_report
from .measure_session import GSO_SEGMENTS, Session, record_sizes
from .pacing import TickPacer, pacer as make_pacer
from .result import Result
from .sockets import Meter, buffer_sizes, congestion_control, open_socket

# record_sizes and GSO_SEGMENTS lived here first: still importable from here
__all__ = ["measure", "MeasureOptions", "record_sizes", "GSO_SEGMENTS"]


def measure(proto: str, host: str, port: int, options: MeasureOptions | None = None, *,
            progress=None, **keywords) -> Result:
    """Run one measurement against a wirelab server (tcp or udp); return the joined Result.

    ``options``: a ``MeasureOptions`` (its docstring says what each one does), or its names as
    keywords, alone or changing ``options``: ``measure("udp", host, port, mode="echo", count=10)``.
    ``progress``: a ``progress.Progress`` that reports the records sent (and, over TCP, the
    kernel's view of the connection) every interval, and each echo round as it is answered.
    """
    o = replace(options or MeasureOptions(), **keywords)        # the options, the keywords' changes made
    same_clock = wire.same_host(host) if o.same_clock is None else o.same_clock
    o.check(proto)
    result = Result(proto, mode=o.mode, packet_bytes=o.packet, max_wait_s=o.max_wait,
                    max_retransmits=o.max_retransmits, sndbuf_requested_bytes=o.sndbuf,
                    rcvbuf_requested_bytes=o.rcvbuf, metadata={"server": f"{host}:{port}", "gso": o.gso})
    meter = Meter()
    clock = SkewedClock(o.clock_offset_s, o.clock_drift_ppm)
    if o.clock_offset_s or o.clock_drift_ppm:
        result.metadata["clock_configured"] = {"offset_s": o.clock_offset_s, "drift_ppm": o.clock_drift_ppm}
    # a timed TCP run is measured over its time at the receiver, which reports when it is over
    timed = proto == "tcp" and o.mode == "bulk"
    sock = open_socket(proto, sndbuf=o.sndbuf, rcvbuf=o.rcvbuf, congestion=o.congestion)
    try:
        sock.settimeout(o.max_wait)
        # the client's start and end bracket its whole exchange, HELLO and REPORT included
        # (``completion_s``: what a user waits; on a 40 ms RTT they are 80 ms of it)
        result.sender_start_time_s = clock.time_ns() / 1e9
        sock.connect((host, port))
        if proto == "tcp":
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            result.congestion_control = congestion_control(sock)
        result.sndbuf_granted_bytes, _ = buffer_sizes(sock)
        if progress is not None:
            progress.watch(sock)
            if o.mode not in ("echo", "ping"):         # echo rounds report themselves, one by one
                progress.start()
        end = Session(sock, proto, o.packet, o.max_wait, o.max_retransmits, meter, result, clock, progress)
        end.hello({"mode": o.mode, "packet": o.packet, "time_s": o.time_s, "rate_bps": o.rate_bps, "gro": o.gso,
                   **({"interval_s": o.time_s} if timed else {}),
                   **({"read": int(o.read_bytes)} if o.read_bytes else {}),
                   **({"end_markers": o.end_markers, "end_marker_gap_s": o.end_marker_gap_s}
                      if o.end_markers else {})})
        report = _exchange(end, o, timed, same_clock)
        if report is None:
            report = end.finish()
        result.sender_end_time_s = clock.time_ns() / 1e9
        fold_report(result, report, same_clock, end.samples and fit_offset_drift(end.samples), end.span)
        if o.mode in ("echo", "ping"):
            result.metadata["echo_rounds"] = [list(r) for r in end.rounds(clock)]
    except (TransferError, ProtocolError) as err:
        result.error = str(err)
    except socket.timeout:
        result.error = f"timeout: the server did not answer within {o.max_wait:g} s: is it running?"
    except OSError as err:
        if err.errno == errno.ENOBUFS and proto == "udp":     # the datagram cannot fit the socket
            result.error = (f"{err.strerror}: a {o.packet} B datagram does not fit the "
                            f"{result.sndbuf_granted_bytes} B send buffer: raise sndbuf")
        else:
            result.error = f"{err.strerror or err}: is a wirelab server running on {host}:{port}?"
    finally:
        if progress is not None:         # its last record reads the socket: before it closes
            result.metadata["progress"] = progress.stop()
        if timed:
            _discard(sock)
        sock.close()
    if result.sender_end_time_s is None:
        result.sender_end_time_s = clock.time_ns() / 1e9
    result.sender_cpu_s, result.sender_syscalls = meter.stop(), meter.calls
    return result


def _exchange(end: Session, o: MeasureOptions, timed: bool, same_clock: bool) -> dict | None:
    """The session between HELLO and its REPORT: the echo rounds of echo and ping; otherwise the
    records, with offset rounds before and after them unless both ends read one clock.
    A timed TCP run's REPORT (its interval ended the session), or None: END asks for it."""
    result = end.result
    if o.mode == "ping":
        end.ping(o.count, o.echo_interval_s)
        return None
    if o.mode == "echo":
        end.echo(o.count, o.echo_interval_s)
        return None
    if not same_clock:        # offset rounds are not data: keep their RTTs, not their count
        end.echo(o.offset_rounds, o.echo_interval_s)
        result.packets_sent, result.lost = 0, None
    pacer = make_pacer(o.pacing, o.rate_bps, o.packet) if o.mode == "load" else None
    sizes = record_sizes(o.packet, o.size_bytes, o.time_s, pacer)
    result.first_data_time_s = time.time()
    end.records(o.time_s, pacer, o.gso, sizes, whole=o.size_bytes is not None)
    result.last_data_time_s = time.time()
    if o.end_markers:
        end.end_markers(o.end_markers, o.end_marker_gap_s)
    # offered: the records planned (a paced sender that falls behind sends fewer)
    result.bytes_offered = sum(sizes) if sizes else result.bytes_sent
    if pacer:
        result.metadata["late_packets"] = pacer.late
        result.metadata["pacing"] = pacer.kind
        if isinstance(pacer, TickPacer):      # a tick cut short at 1 s: never sent
            result.metadata["skipped_packets"] = pacer.skipped
    report = end.interval_report() if timed else None
    # a second batch after the data: the line spans the run (not after an END: the session is over)
    if not same_clock and "interval" not in result.metadata:
        lost, sent = result.lost, result.packets_sent
        end.echo(o.offset_rounds, o.echo_interval_s)
        result.lost, result.packets_sent = lost, sent
    return report


def _discard(sock: socket.socket) -> None:
    """Close discarding what the socket still holds (SO_LINGER 0: a reset, tcp(7)): those bytes
    belong to no interval, and a kernel sending them on after close() would load the link
    under the next run."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """``tcp|udp HOST PORT bulk|load|echo [RATE] [PACKET] [SECONDS]`` → one JSON Result."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    proto, host, port, mode, *rest = argv
    rate = units.parse_rate(rest.pop(0)) if mode == "load" and rest else None
    packet = int(rest.pop(0)) if rest else 1400
    seconds = float(rest.pop(0)) if rest else 1.0
    result = measure(proto, host, int(port), mode=mode, rate_bps=rate, packet=packet, time_s=seconds)
    print(result.to_json(indent=1))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
