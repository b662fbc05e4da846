"""The client's half of one measurement session (``measure_client.measure`` drives it; the
wire is ``measure_wire.py``, the other half ``measure_server.py``).

In order: HELLO (the mode and its parameters); ECHO rounds (RTT, and the four time stamps
of each: the clock fit of ``clock.py``); the RECORDs, back to back, paced, or many
datagrams a send with GSO; nttcp's end markers (udp); then the REPORT: over TCP in a
timed run when the receiver's interval ends, otherwise asked for with END. Over udp every
request is resent until answered (``max_retransmits``); over tcp the stream is reliable.
"""
from __future__ import annotations

import select
import socket
import time

from ..errors import ProtocolError, TransferError
from . import measure_wire as wire
from .clock import echo_sample
from .measure_report import report_span
from .pacing import Pacer, TickPacer
from .silence import await_answer, queued_bytes
from .tcp import StreamReader

__all__ = ["Session", "record_sizes", "GSO_SEGMENTS"]

#: Linux UDP_SEGMENT (GSO): one send() carries up to this many datagrams.
GSO_SEGMENTS = 64


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


class Session:
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
        span = report_span(report)
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
