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

    python -m wirelab.transfer.measure_client udp 127.0.0.1 5000 load 5MB/s 1400 2
"""
from __future__ import annotations

import errno
import select
import socket
import struct
import sys
import time

from ..errors import ProtocolError, TransferError, UsageError
from . import measure_wire as wire
from .clock import ClockFit, SkewedClock, echo_sample, fit_offset_drift
from .pacing import PACINGS, Pacer, TickPacer, pacer as make_pacer
from .result import Result
from .silence import await_answer, queued_bytes
from .sockets import Meter, buffer_sizes, congestion_control, open_socket
from .tcp import StreamReader

__all__ = ["measure"]

#: Linux UDP_SEGMENT (GSO): one send() carries up to this many datagrams.
GSO_SEGMENTS = 64


def measure(proto: str, host: str, port: int, *, mode: str = "bulk", time_s: float = 1.0,
            rate_bps: float | None = None, packet: int = 1400, count: int = 100,
            max_wait: float = 5.0, max_retransmits: int = 5, sndbuf: int | None = None,
            rcvbuf: int | None = None, congestion: str | None = None, gso: bool = False,
            offset_rounds: int = 16, same_clock: bool | None = None, echo_interval_s: float = 0.0,
            clock_offset_s: float = 0.0, clock_drift_ppm: float = 0.0, size_bytes: int | None = None,
            end_markers: int = 0, end_marker_gap_s: float = wire.END_MARKER_GAP_S,
            pacing: str = "even", read_bytes: int | None = None, progress=None) -> Result:
    """Run one measurement against a wirelab server (tcp or udp); return the joined Result.

    ``same_clock``: both ends read one clock (default: when ``host`` is loopback).
    Otherwise ``offset_rounds`` ECHO exchanges before and after the records give the
    receiver's clock offset and drift (a line fitted over time, ``clock.py``), and every
    one-way delay is corrected by the line at its send time. ``echo_interval_s``: spread
    echo rounds this far apart (a fit over time needs time). ``clock_offset_s`` and
    ``clock_drift_ppm``: this end's clock is made that wrong on purpose (a lab's known skew).
    ``size_bytes`` (load mode over udp): send exactly this many bytes at ``rate_bps``, however
    long that takes, instead of ``time_s`` of records. ``end_markers``: see the module docstring.
    ``pacing`` (load mode): "even" spaces the records evenly; "tick" sends each second's
    records back to back at a 1 s timer tick, as document 000's sender (``pacing.TickPacer``).
    ``read_bytes`` (tcp): the receiver reads at most this many bytes per recv (iperf 2's ``-l``
    at the server; by default it reads a record at a time).
    ``progress``: a ``progress.Progress`` that reports the records sent (and, over TCP, the
    kernel's view of the connection) every interval, and each echo round as it is answered.
    """
    if same_clock is None:
        same_clock = wire.same_host(host)
    if proto not in ("tcp", "udp"):
        raise UsageError(f"measurement modes run over tcp or udp, not {proto!r}", "use tcp or udp")
    if mode not in ("bulk", "load", "echo", "ping"):
        raise UsageError(f"unknown mode {mode!r}", "use bulk, load, echo or ping")
    if mode == "ping" and (proto != "udp" or not echo_interval_s > 0):
        raise UsageError(f"ping over {proto} every {echo_interval_s:g} s",
                         "ping is udp echo rounds on a timer: give echo_interval_s > 0, e.g. 0.02")
    if mode == "load" and not rate_bps:
        raise UsageError("offered load needs a rate", "e.g. --rate 5MB/s")
    if read_bytes is not None and (proto != "tcp" or not 1 <= read_bytes <= 1 << 24):
        raise UsageError(f"a reader's length of {read_bytes} B over {proto}", "read_bytes is for tcp: 1 B..16 MiB")
    if pacing not in PACINGS or (pacing != "even" and mode != "load"):
        raise UsageError(f"pacing {pacing!r} in {mode} mode", "pacing is 'even' or 'tick', for load mode only")
    if not wire.MIN_PACKET <= packet <= (65507 if proto == "udp" else 1 << 24):
        raise UsageError(f"packet size {packet} B", f"use {wire.MIN_PACKET}..65507 B for udp")
    if gso and (proto != "udp" or mode != "bulk"):
        raise UsageError("GSO is for udp bulk only", "drop --gso")
    if end_markers and (proto != "udp" or mode == "echo" or not 0 < end_markers <= 255 or end_marker_gap_s < 0):
        raise UsageError(f"{end_markers} end markers {end_marker_gap_s:g} s apart after {proto} {mode}",
                         "end markers follow udp records: 1..255 of them, a gap of 0 s or more (nttcp: 3, 2 s)")
    if size_bytes is not None and (mode != "load" or proto != "udp" or size_bytes < wire.MIN_PACKET):
        raise UsageError(f"a byte budget ({size_bytes} B) is for udp load of at least {wire.MIN_PACKET} B",
                         "drop size_bytes, or use mode='load' over udp")
    result = Result(proto, mode=mode, packet_bytes=packet, max_wait_s=max_wait, max_retransmits=max_retransmits,
                    sndbuf_requested_bytes=sndbuf, rcvbuf_requested_bytes=rcvbuf,
                    metadata={"server": f"{host}:{port}", "gso": gso})
    meter = Meter()
    clock = SkewedClock(clock_offset_s, clock_drift_ppm)
    if clock_offset_s or clock_drift_ppm:
        result.metadata["clock_configured"] = {"offset_s": clock_offset_s, "drift_ppm": clock_drift_ppm}
    # a timed TCP run is measured over its time at the receiver, which reports when it is over
    timed = proto == "tcp" and mode == "bulk"
    sock = open_socket(proto, sndbuf=sndbuf, rcvbuf=rcvbuf, congestion=congestion)
    try:
        sock.settimeout(max_wait)
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
            if mode not in ("echo", "ping"):         # echo rounds report themselves, one by one
                progress.start()
        end = _Session(sock, proto, packet, max_wait, max_retransmits, meter, result, clock, progress)
        end.hello({"mode": mode, "packet": packet, "time_s": time_s, "rate_bps": rate_bps, "gro": gso,
                   **({"interval_s": time_s} if timed else {}),
                   **({"read": int(read_bytes)} if read_bytes else {}),
                   **({"end_markers": end_markers, "end_marker_gap_s": end_marker_gap_s} if end_markers else {})})
        report = None
        if mode == "ping":
            end.ping(count, echo_interval_s)
        elif mode == "echo":
            end.echo(count, echo_interval_s)
        elif not same_clock:        # offset rounds are not data: keep their RTTs, not their count
            end.echo(offset_rounds, echo_interval_s)
            result.packets_sent, result.lost = 0, None
        if mode not in ("echo", "ping"):
            pacer = make_pacer(pacing, rate_bps, packet) if mode == "load" else None
            sizes = record_sizes(packet, size_bytes, time_s, pacer)
            result.first_data_time_s = time.time()
            end.records(time_s, pacer, gso, sizes, whole=size_bytes is not None)
            result.last_data_time_s = time.time()
            if end_markers:
                end.end_markers(end_markers, end_marker_gap_s)
            # offered: the records planned (a paced sender that falls behind sends fewer)
            result.bytes_offered = sum(sizes) if sizes else result.bytes_sent
            if pacer:
                result.metadata["late_packets"] = pacer.late
                result.metadata["pacing"] = pacer.kind
                if isinstance(pacer, TickPacer):      # a tick cut short at 1 s: never sent
                    result.metadata["skipped_packets"] = pacer.skipped
            if timed:
                report = end.interval_report()
            # a second batch after the data: the line spans the run (not after an END: the session is over)
            if not same_clock and "interval" not in result.metadata:
                lost, sent = result.lost, result.packets_sent
                end.echo(offset_rounds, echo_interval_s)
                result.lost, result.packets_sent = lost, sent
        if report is None:
            report = end.finish()
        result.sender_end_time_s = clock.time_ns() / 1e9
        _fold(result, report, same_clock, end.samples and fit_offset_drift(end.samples), end.span)
        if mode in ("echo", "ping"):
            result.metadata["echo_rounds"] = [list(r) for r in end.rounds(clock)]
    except (TransferError, ProtocolError) as err:
        result.error = str(err)
    except socket.timeout:
        result.error = f"timeout: the server did not answer within {max_wait:g} s: is it running?"
    except OSError as err:
        if err.errno == errno.ENOBUFS and proto == "udp":     # the datagram cannot fit the socket
            result.error = (f"{err.strerror}: a {packet} B datagram does not fit the "
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


def _discard(sock: socket.socket) -> None:
    """Close discarding what the socket still holds (SO_LINGER 0: a reset, tcp(7)): those bytes
    belong to no interval, and a kernel sending them on after close() would load the link
    under the next run."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass


def record_sizes(packet: int, size_bytes: int | None, time_s: float,
                 pacer: Pacer | TickPacer | None) -> list[int] | None:
    """The sizes of the records a paced sender plans: one per slot of ``time_s``, or as many as
    ``size_bytes`` takes, the last carrying what is left (every record holds at least
    ``MIN_PACKET``: a short rest borrows from the one before it). None: not paced."""
    if pacer is None:
        return None
    if size_bytes is None:
        return [packet] * pacer.slots(time_s)
    full, rest = divmod(size_bytes, packet)
    sizes = [packet] * full + ([rest] if rest else [])
    if 0 < rest < wire.MIN_PACKET and full:
        sizes[-2:] = [packet + rest - wire.MIN_PACKET, wire.MIN_PACKET]
    return sizes


def _span(report: dict) -> float | None:
    """The receiver's first to last record counted (its own clock), or None."""
    first, last = report.get("receiver_start_time_s"), report.get("receiver_end_time_s")
    return last - first if first is not None and last is not None and last > first else None


def _fold(result: Result, report: dict, same_clock: bool, fit: ClockFit | None, span) -> None:
    """Put the receiver's REPORT into the Result; one-way delay with the clock method named.
    ``span``: (first, last) send time of the records on this end's clock: the delay samples
    are spread evenly over it, so each is corrected by the fitted θ at about its send time."""
    for key in ("bytes_received", "bytes_delivered", "packets_received", "duplicates", "out_of_order",
                "receiver_start_time_s", "receiver_end_time_s", "receiver_cpu_s", "receiver_syscalls",
                "rcvbuf_granted_bytes"):
        setattr(result, key, report.get(key))
    result.receiver_error = report.get("error")
    result.lost = report.get("lost", 0 if result.proto == "tcp" else None)
    raw = report.get("raw_delays_s") or []
    if fit:
        result.clock_offset_s = fit.offset_s
        result.metadata.update(clock_drift_ppm=fit.drift_ppm, clock_fit_residual_s=fit.residual_s,
                               clock_rounds_used=fit.used, clock_t0_s=fit.t0_s)
    if same_clock:
        result.one_way_delays_s, result.delay_method = raw, "same host clock"
        result.clock = "one clock"
    elif fit:
        first, last = span or (fit.t0_s, fit.t0_s)
        step = (last - first) / max(len(raw), 1)
        result.one_way_delays_s = [d - fit.at(first + (i + 0.5) * step) for i, d in enumerate(raw)]
        result.delay_method = ("ntp-style offset and drift: a line fitted to echo rounds before and after "
                               "the data (RFC 5905 offsets, least squares over the smallest-RTT half)")
        # goodput's last instant is the end of the data: the receiver's clock, corrected there
        result.clock_offset_s, result.clock = fit.at(last), "offset estimate"
    if report.get("delays_sampled"):
        result.metadata["delays_sampled"] = True
    if "end_markers" in report:          # nttcp's: how many arrived, the first one's time
        result.metadata.update(end_markers_received=report["end_markers"],
                               end_marker_first_s=report.get("end_marker_first_s"))
    result.ok = result.error is None and result.receiver_error is None


class _Session:
    """The client's half of one measurement session over tcp or udp."""

    def __init__(self, sock, proto, packet, max_wait, max_retransmits, meter, result, clock, progress=None):
        self.sock, self.proto, self.packet, self.progress = sock, proto, packet, progress
        self.max_wait, self.max_retransmits, self.meter, self.result = max_wait, max_retransmits, meter, result
        self.reader = StreamReader(sock, meter) if proto == "tcp" else None
        self.clock = clock
        self.stamps: list[tuple[int, int, int, int]] = []   # (t1, t2, t3, t4) of each echo round
        self.span: tuple[float, float] | None = None        # first and last record's send time (s)
        self.echo_seq = 0

    @property
    def samples(self) -> list[tuple[float, float, float]]:
        """(t1 s, θ s, RTT s) of every echo round answered (``clock.echo_sample``)."""
        return [echo_sample(*stamps) for stamps in self.stamps]

    def rounds(self, clock) -> list[tuple]:
        """Each echo round as (t1 s, θ s, RTT s, and, when this end's clock was skewed on purpose,
        the true one-way delays a→b and b→a: known only because the lab made the skew)."""
        out = []
        for (t1, t2, t3, t4), sample in zip(self.stamps, self.samples):
            out.append(sample + ((t2 - clock.true_ns(t1)) / 1e9, (clock.true_ns(t4) - t3) / 1e9))
        return out

    def send(self, raw) -> None:
        (self.sock.sendall if self.proto == "tcp" else self.sock.send)(raw)
        self.meter.call()

    def request(self, raw: bytes, kind: int) -> bytes:
        """udp: send, wait for a datagram of ``kind``; resend up to MAX_RETRANSMITS times."""
        for _ in range(self.max_retransmits + 1):
            self.send(raw)
            deadline = time.monotonic() + self.max_wait
            while (left := deadline - time.monotonic()) > 0:
                self.sock.settimeout(left)
                try:
                    reply = self.sock.recv(65535)
                except socket.timeout:
                    break
                self.meter.call()
                if reply[:1] == bytes([kind]):
                    return reply
                if reply[:1] == b"\x03":
                    raise TransferError("server is busy (CONRJT)", "try again when it is free")
        raise TransferError(f"timeout: no answer after {self.max_retransmits} resends "
                            f"{self.max_wait:g} s apart", "is a wirelab server running there?")

    def hello(self, params: dict) -> None:
        raw = wire.json_packet(wire.MAGIC, params)
        if self.proto == "tcp":
            self.send(raw)
        else:
            self.request(raw, wire.HELLO_ACK)

    def echo(self, rounds: int, interval_s: float = 0.0) -> None:
        """``rounds`` ECHO exchanges, one every ``interval_s`` at most: RTT samples into the
        Result, the four time stamps of each into ``stamps``."""
        pad = bytes(self.packet - wire.ECHO_HDR.size)
        due = time.monotonic()
        for seq in range(self.echo_seq, self.echo_seq + rounds):   # numbers never reused: a late
            self.echo_seq = seq + 1                                 # reply cannot pass for a new one
            while (left := due - time.monotonic()) > 0:
                time.sleep(left)                # pacing the rounds, not waiting for anyone
            due += interval_s
            t1 = self.clock.time_ns()
            self.send(wire.ECHO_HDR.pack(wire.ECHO, seq, t1, 0, 0) + pad)
            reply = self._echo_reply(seq)
            t4 = self.clock.time_ns()
            if reply is None:
                self.result.lost = (self.result.lost or 0) + 1
                continue
            _, _, _, t2, t3 = reply
            self.result.rtts_s.append(((t4 - t1) - (t3 - t2)) / 1e9)
            self.stamps.append((t1, t2, t3, t4))
            if self.progress is not None:
                self.progress.event("rtt", rtt_s=self.result.rtts_s[-1], round=seq)
        self.result.packets_sent += rounds

    def ping(self, rounds: int, interval_s: float) -> None:
        """``rounds`` echo rounds, one every ``interval_s`` on a timer, each reply matched by its
        number as it comes (udp); a round unanswered ``max_wait`` after the last was sent is lost."""
        pad = bytes(self.packet - wire.ECHO_HDR.size)
        waiting: dict[int, int] = {}                   # number → t1 of the rounds not yet answered
        first, due, last_due = self.echo_seq, time.monotonic(), None
        numbers = iter(range(first, first + rounds))
        self.echo_seq += rounds
        number = next(numbers, None)
        while number is not None or waiting:
            now = time.monotonic()
            if number is not None and now >= due:
                t1 = self.clock.time_ns()
                self.send(wire.ECHO_HDR.pack(wire.ECHO, number, t1, 0, 0) + pad)
                waiting[number] = t1
                due += interval_s
                number = next(numbers, None)
                if number is None:
                    last_due = time.monotonic() + self.max_wait
                continue
            until = due if number is not None else last_due
            if until <= now:
                break                                  # the last rounds' replies did not come
            self.sock.settimeout(until - now)          # a timer: the next round, or the last wait
            try:
                raw = self.sock.recv(65535)
            except socket.timeout:
                continue
            self.meter.call()
            t4 = self.clock.time_ns()
            if raw[0] != wire.ECHO_REPLY or len(raw) < wire.ECHO_HDR.size:
                continue
            _, seq, _, t2, t3 = wire.ECHO_HDR.unpack_from(raw)
            t1 = waiting.pop(seq, None)
            if t1 is None:
                continue                               # a duplicate, or a round given up
            self.result.rtts_s.append(((t4 - t1) - (t3 - t2)) / 1e9)
            self.stamps.append((t1, t2, t3, t4))
            if self.progress is not None:
                self.progress.event("rtt", rtt_s=self.result.rtts_s[-1], round=seq)
        self.result.lost = (self.result.lost or 0) + len(waiting)
        self.result.packets_sent += rounds

    def _echo_reply(self, seq: int):
        if self.proto == "tcp":
            if self.span is not None and not self.reader.buf:     # after the data: behind its queue
                await_answer(self.sock, self.max_wait, "an ECHO reply")
            raw = self.reader.read(self.packet)
            if raw[0] != wire.ECHO_REPLY:
                raise ProtocolError(f"expected ECHO_REPLY, got {raw[0]:#x}", "check both ends are wirelab")
            return wire.ECHO_HDR.unpack_from(raw)
        deadline = time.monotonic() + self.max_wait
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                raw = self.sock.recv(65535)
            except socket.timeout:
                return None
            self.meter.call()
            if raw[0] == wire.ECHO_REPLY and len(raw) >= wire.ECHO_HDR.size:
                fields = wire.ECHO_HDR.unpack_from(raw)
                if fields[1] == seq:
                    return fields
        return None

    def records(self, time_s: float, pacer: Pacer | TickPacer | None, gso: bool, sizes: list[int] | None = None,
                *, whole: bool = False) -> None:
        """Send RECORDs for ``time_s`` back to back; or, paced, the records ``sizes`` plans,
        each when ``pacer`` says, for ``time_s`` at most (``whole``: all of them, a file's)."""
        segments = GSO_SEGMENTS if gso else 1
        if gso:
            segments = max(1, min(GSO_SEGMENTS, 65000 // self.packet))
            self.sock.setsockopt(socket.IPPROTO_UDP, 103, self.packet)     # UDP_SEGMENT
        buf = bytearray(self.packet * segments)
        for i in range(segments):
            buf[i * self.packet] = wire.RECORD
        # The type byte never changes: per record only seq and the send time are rewritten.
        pack_into, now_ns, clock = wire.REC_STAMP.pack_into, self.clock.time_ns, time.monotonic
        first_ns = now_ns()
        send = self.sock.sendall if self.proto == "tcp" else self.sock.send
        # A socket with a timeout polls before every send: UDP, which never waits
        # long for buffer space, sends blocking (1.6x the packet rate); TCP keeps MAX_WAIT.
        self.sock.settimeout(self.max_wait if self.proto == "tcp" else None)
        seq, calls, end = 0, 0, clock() + time_s
        sent_bytes = None
        progress = self.progress
        if pacer is not None:                        # offered load: one record per slot
            view, sent_bytes = memoryview(buf), 0
            while seq < len(sizes) and (whole or clock() < end):
                if pacer.wait() >= end and not whole:     # a tick due at the end belongs to no run
                    break
                pack_into(buf, 1, seq, now_ns())
                send(view[:sizes[seq]])
                sent_bytes += sizes[seq]
                seq, calls = seq + 1, calls + 1
                if progress is not None:
                    progress.bytes = sent_bytes
        elif segments == 1:                          # bulk: 16 sends between looks at the clock
            while clock() < end:
                for seq in range(seq, seq + 16):
                    pack_into(buf, 1, seq, now_ns())
                    send(buf)
                seq, calls = seq + 1, calls + 16
                if progress is not None:
                    progress.bytes = seq * self.packet
        else:                                        # bulk with GSO: one send, many datagrams
            while clock() < end:
                stamp = now_ns()
                for i in range(segments):
                    pack_into(buf, i * self.packet + 1, seq + i, stamp)
                send(buf)
                seq, calls = seq + segments, calls + 1
                if progress is not None:
                    progress.bytes = seq * self.packet
        self.span = (first_ns / 1e9, now_ns() / 1e9)
        self.sock.settimeout(self.max_wait)
        self.meter.call(calls)
        self.result.packets_sent += seq
        self.result.bytes_sent = seq * self.packet if sent_bytes is None else sent_bytes
        self._sent = seq

    def end_markers(self, count: int, gap_s: float) -> None:
        """nttcp's ending: ``count`` 4-byte END_MARK datagrams, ``gap_s`` apart (spacing the
        markers is what they are for, not waiting for anyone)."""
        due = time.monotonic()
        for number in range(count):
            while (left := due - time.monotonic()) > 0:
                time.sleep(left)
            due += gap_s
            self.send(wire.END_MARK_HDR.pack(wire.END_MARK, number, 0))
        self.result.metadata["end_markers_sent"] = count
        self.result.metadata["end_marker_gap_s"] = gap_s

    def interval_report(self) -> dict:
        """A timed TCP run's REPORT, which the receiver sends when its interval ends (about a round
        trip after the last record was written here): nothing else is sent, nothing waited out.
        What this end's socket still holds then is recorded, and discarded at close."""
        result = self.result
        if not self.reader.buf and not select.select([self.sock], [], [], self.max_wait)[0]:
            # no REPORT: a server from before timed REPORTs waits for END (a stalled one answers neither:
            # finish says which it was)
            report = self.finish()
            if not report.get("interval_s"):
                result.metadata["interval"] = "the server predates timed REPORTs: END waited out the send buffer"
                return report
        else:
            report = wire.read_json(self.reader, wire.REPORT)
        result.interval_s = report.get("interval_s")
        result.report_wait_s = max(time.time() - result.last_data_time_s, 0.0)
        result.send_queue_bytes = queued_bytes(self.sock)
        span = _span(report)
        if result.send_queue_bytes is not None and span and report.get("bytes_received"):
            result.drain_s = result.send_queue_bytes / (report["bytes_received"] / span)
        return report

    def finish(self) -> dict:
        """END → the receiver's REPORT."""
        end = wire.END_HDR.pack(wire.END, getattr(self, "_sent", 0))
        if self.proto == "tcp":
            self.send(end + bytes(self.packet - len(end)))
            # END waits behind whatever this end still queues (a load above what the link carries)
            if not self.reader.buf:
                await_answer(self.sock, self.max_wait, "the REPORT")
            report = wire.read_json(self.reader, wire.REPORT)
            self.result.report_wait_s = max(time.time() - self.result.last_data_time_s, 0.0) \
                if self.result.last_data_time_s else None
            return report
        return wire.parse_json_packet(self.request(end, wire.REPORT), wire.REPORT)


def main(argv: list[str] | None = None) -> int:
    """``tcp|udp HOST PORT bulk|load|echo [RATE] [PACKET] [SECONDS]`` → one JSON Result."""
    from .. import units
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
