"""wirelab's measurement modes, served on the same port as PPCB (off the PPCB wire).

A measurement session starts with a HELLO whose first byte (0x80) is no
PPCB type, so a PPCB server sees it at once. Then, by mode:

    bulk  records as fast as possible for a time        (like nttcp / iperf)
    load  records paced at an offered rate (--rate --packet, document 000)
    echo  request/response for RTT samples              (document 003)

Every record carries a sequence number and the sender's send time (ns), so
the receiver counts loss, duplicates and reordering, and one-way delay. The
packets are one table in ``measure_wire.py``.

One-way delay needs one clock: on one host that is given; across hosts the
client runs ECHO rounds before and after the data, takes the offset of the
receiver's clock in each the NTP way, ((t2 − t1) + (t3 − t4)) / 2, and fits
a line over time: offset and drift (``clock.py``).
"""
from __future__ import annotations

from array import array
import socket
import time

from ..errors import ProtocolError, TransferError
from . import ppcb
from .arrivals import DatagramReceiver
from .measure_wire import (ECHO, ECHO_HDR, ECHO_REPLY, END, END_HDR, END_MARK, END_MARK_HDR, HELLO_ACK, MAGIC,
                           MIN_PACKET, REC,
                           RECORD, REPORT, REPORT_SAMPLES, SEQ_WINDOW, json_packet, parse_json_packet, read_json)
from .result import Result
from .sockets import Meter

__all__ = ["Tally", "serve_measure_tcp", "serve_measure_udp", "enable_gro"]


class Tally:
    """What a receiver counts: records, bytes, duplicates, reordering, delays, times."""

    def __init__(self):
        self.seen = bytearray()     # one byte per sequence number seen
        self.highest = -1
        self.unique = self.bytes = self.received = self.duplicates = self.out_of_order = self.invalid = 0
        self.first_s = self.last_s = None
        self.delays_s: list[float] = []

    def add(self, seq: int, send_ns: int, size: int, now_ns: int) -> None:
        self.received += 1
        if seq >= len(self.seen):
            if seq > self.highest + SEQ_WINDOW:
                self.invalid += 1
                return
            self.seen.extend(bytes(seq + 1024 - len(self.seen)))
        if self.seen[seq]:
            self.duplicates += 1
            return
        self.seen[seq] = 1
        if seq < self.highest:
            self.out_of_order += 1
        self.highest = max(self.highest, seq)
        self.unique += 1
        self.bytes += size
        now_s = now_ns / 1e9
        self.first_s = self.first_s or now_s
        self.last_s = now_s
        self.delays_s.append((now_ns - send_ns) / 1e9)

    def report(self, sample_limit: int | None = None) -> dict:
        delays = self.delays_s
        if sample_limit and len(delays) > sample_limit:
            step = len(delays) / sample_limit
            delays = [delays[int(i * step)] for i in range(sample_limit)]
        return {"bytes_received": self.bytes, "bytes_delivered": self.bytes,
                "packets_received": self.unique, "duplicates": self.duplicates,
                "out_of_order": self.out_of_order, "invalid": self.invalid,
                "receiver_start_time_s": self.first_s, "receiver_end_time_s": self.last_s,
                "raw_delays_s": [round(d, 9) for d in delays], "delays_sampled": len(delays) < len(self.delays_s)}


def check_hello(hello, limit: int) -> tuple[dict, int]:
    """The HELLO's parameters, checked: (hello, record size). Raises ProtocolError."""
    if not isinstance(hello, dict):
        raise ProtocolError("HELLO is not a JSON object", "check both ends are wirelab")
    try:
        packet = int(hello.get("packet") or 0)
    except (TypeError, ValueError):
        raise ProtocolError(f"HELLO packet size {hello.get('packet')!r}", "send a whole number of bytes") from None
    if not MIN_PACKET <= packet <= limit:
        raise ProtocolError(f"record size {packet} B", f"use {MIN_PACKET} to {limit} B")
    return hello, packet


def _echo_reply(raw, t2_ns: int) -> bytes:
    _, seq, t1, _, _ = ECHO_HDR.unpack_from(raw)
    return ECHO_HDR.pack(ECHO_REPLY, seq, t1, t2_ns, time.time_ns()) + bytes(raw[ECHO_HDR.size:])


def _finish(report: dict, meter, sock) -> dict:
    report["receiver_cpu_s"], report["receiver_syscalls"] = meter.stop(), meter.calls
    report["rcvbuf_granted_bytes"] = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    return report


def _result(proto: str, hello: dict, report: dict, error: str | None):
    result = Result(proto, mode=hello.get("mode", "bulk"), ok=error is None, receiver_error=error,
                    packet_bytes=hello.get("packet"))
    for key in ("bytes_received", "bytes_delivered", "packets_received", "duplicates", "out_of_order",
                "receiver_start_time_s", "receiver_end_time_s", "receiver_cpu_s", "receiver_syscalls",
                "rcvbuf_granted_bytes"):
        setattr(result, key, report.get(key))
    return result


# ----------------------------------------------------------------- TCP receiver
def serve_measure_tcp(conn: socket.socket, reader, meter, *, max_wait: float = 5.0, progress=None):
    """One measurement client on an accepted TCP connection (HELLO not yet read). ``progress``:
    a ``progress.Progress`` that reads the bytes received so far while the session runs.

    A timed client (HELLO ``interval_s``) is measured as iperf3 measures: the records that arrive
    within ``interval_s`` of the first one, on this end's clock; the REPORT goes back the moment
    the interval ends, not after an END queued behind everything the sender's socket still holds
    (on a loss-limited link that drain takes seconds). The session then stays only to answer
    ECHO rounds until the client closes."""
    tally, hello, error, interval = Tally(), {}, None, None
    if progress is not None:
        progress.count = lambda: tally.bytes
    try:
        hello, packet = check_hello(read_json(reader, MAGIC, limit=65536), 1 << 24)
        most = hello.get("read")                            # the reader's length: bytes per recv
        most = most if isinstance(most, int) and 0 < most <= 1 << 24 else None
        interval = _interval(hello)
        raw = bytearray(packet)
        view = memoryview(raw)
        ends_ns = None                                      # the interval's end (this end's clock)
        while True:
            if ends_ns is not None and (left := (ends_ns - time.time_ns()) / 1e9) < max_wait:
                conn.settimeout(max(left, 1e-3))            # the interval ends even if nothing comes
            try:
                reader.read_into(view, most)
            except TransferError:
                if ends_ns is not None and time.time_ns() >= ends_ns:
                    break                                   # silence past the end: the interval is over
                raise
            kind = raw[0]
            if kind == RECORD:
                now_ns = time.time_ns()
                if ends_ns is not None and now_ns >= ends_ns:
                    break                                   # the first record after the interval
                _, seq, send_ns = REC.unpack_from(raw)
                tally.add(seq, send_ns, packet, now_ns)
                if interval and ends_ns is None:
                    ends_ns = now_ns + int(interval * 1e9)
            elif kind == ECHO:
                conn.sendall(_echo_reply(raw, time.time_ns()))
                meter.call()
            elif kind == END:
                break
            else:
                raise ProtocolError(f"unknown record type {kind:#x}", "check both ends are wirelab")
    except (TransferError, OSError) as err:
        error = str(err)
    conn.settimeout(max_wait)
    report = _finish(tally.report(), meter, conn)
    report["error"] = error
    if interval and error is None:
        report["interval_s"] = interval
    try:
        conn.sendall(json_packet(REPORT, report))
        meter.call()
    except OSError:
        pass
    result = _result("tcp", hello if isinstance(hello, dict) else {}, report, error)
    if interval and error is None:
        result.interval_s = interval
        result.metadata["bytes_after_interval"] = _after_interval(conn, reader, packet, most, meter)
    return result


def _interval(hello: dict) -> float | None:
    """The seconds a timed client asks to be measured over (HELLO ``interval_s``), or None."""
    value = hello.get("interval_s")
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 86400
    return float(value) if ok else None


def _after_interval(conn, reader, packet: int, most, meter) -> int:
    """After the REPORT: answer ECHO rounds (a client fitting clock drift sends them after the data)
    and drop the records that come, until the client ends the connection. Returns the bytes dropped
    (what the sender's socket still held: they arrived after the interval)."""
    raw = bytearray(packet)
    view, dropped = memoryview(raw), 0
    try:
        while True:
            reader.read_into(view, most)
            if raw[0] == RECORD:
                dropped += packet
            elif raw[0] == ECHO:
                conn.sendall(_echo_reply(raw, time.time_ns()))
                meter.call()
            else:                                           # END, or anything else: the session is over
                break
    except (TransferError, OSError):                        # the client closed (a reset): its right now
        pass
    return dropped


# ----------------------------------------------------------------- UDP receiver
def serve_measure_udp(sock: socket.socket, hello_raw: bytes, client, *, max_wait: float = 5.0, stop=None,
                      progress=None):
    """One measurement client on the UDP server's socket. Returns (Result, REPORT
    datagram): the server keeps the REPORT to answer a repeated END while idle. ``progress``:
    as ``serve_measure_tcp``'s (it adds up the records kept so far, never slowing the loop)."""
    meter, tally, error = Meter(), Tally(), None
    try:
        hello, packet = check_hello(parse_json_packet(hello_raw, MAGIC), 65507)
        gro = bool(hello.get("gro"))
        if gro:
            enable_gro(sock)
    except (ProtocolError, OSError) as err:
        return _result("udp", {}, {}, str(err)), None
    sock.sendto(json_packet(HELLO_ACK, {"rcvbuf_granted_bytes":
                                        sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)}), client)
    buf = bytearray(65536)
    receive = DatagramReceiver(sock, buf)
    records = array("Q")          # seq, send_ns, receive_ns, size per record; tallied at the end
    if progress is not None:
        progress.count = _running_total(records)
    markers: list[tuple[int, int]] = []   # nttcp's end markers: (its number, when it arrived, ns)
    sent = None
    # nttcp's end markers leave gaps of their own in the traffic: the silence allowed covers them
    silence_s = max(2 * max_wait, _number(hello.get("end_marker_gap_s")) + max_wait)
    sock.settimeout(min(max_wait, 0.25))
    silent_since = time.monotonic()
    try:
        while sent is None:
            try:
                n, addr, now_ns = receive()
            except socket.timeout:
                # twice MAX_WAIT: a client whose HELLO_ACK was lost resends its HELLO after
                # MAX_WAIT; the session must still be here to answer it
                if time.monotonic() - silent_since > silence_s:
                    error = f"timeout: nothing for {silence_s:g} s (2 × MAX_WAIT, or a marker gap + MAX_WAIT)"
                    break
                if stop is not None and stop.is_set():
                    error = "server stopped"
                    break
                continue
            meter.call()
            if addr != client or n == 0:
                if n and buf[0] == ppcb.CODES["CONN"]:          # a PPCB CONN while we are busy
                    sock.sendto(bytes([ppcb.CODES["CONRJT"]]) + ppcb.session_of(buf), addr)
                continue
            silent_since = time.monotonic()
            kind = buf[0]
            if kind == RECORD and n >= REC.size:
                if gro:                               # GRO hands us several records at once
                    for offset in range(0, n - REC.size + 1, packet):
                        _, seq, send_ns = REC.unpack_from(buf, offset)
                        records.extend((seq, send_ns, now_ns, min(packet, n - offset)))
                else:                                 # the common case: count later, keep up now
                    _, seq, send_ns = REC.unpack_from(buf)
                    records.extend((seq, send_ns, now_ns, n))
            elif kind == ECHO and n >= ECHO_HDR.size:
                sock.sendto(_echo_reply(memoryview(buf)[:n], now_ns), client)
                meter.call()
            elif kind == END_MARK and n == END_MARK_HDR.size:
                markers.append((END_MARK_HDR.unpack_from(buf)[1], now_ns))
            elif kind == END and n >= END_HDR.size:
                sent = END_HDR.unpack_from(buf)[1]
            elif kind == MAGIC:                       # our HELLO_ACK was lost
                sock.sendto(json_packet(HELLO_ACK, {}), client)
    finally:
        sock.settimeout(None)
        if gro:
            enable_gro(sock, False)
        drops = receive.drops
    report = _udp_report(tally, records, meter, sock, error=error, drops=drops, sent=sent,
                         markers=markers if hello.get("end_markers") else None)
    raw = json_packet(REPORT, report)
    if sent is not None:
        sock.sendto(raw, client)
    result = _result("udp", hello, report, error)
    result.lost = report.get("lost")
    return result, raw


def _udp_report(tally: Tally, records: array, meter, sock, *, error, drops, sent, markers) -> dict:
    """The REPORT of a UDP session: its records tallied (only now: the loop kept up instead), the
    datagrams the socket dropped, those the sender's END says were lost, nttcp's end markers."""
    for i in range(0, len(records), 4):
        seq, send_ns, receive_ns, size = records[i:i + 4]
        tally.add(seq, send_ns, size, receive_ns)
    report = _finish(tally.report(REPORT_SAMPLES), meter, sock)
    report["error"] = error
    report["receiver_socket_drops"] = drops
    if sent is not None:
        report["lost"] = max(sent - tally.unique, 0)
    if markers is not None:
        # which ones: the first, sent just after the last record, meets a queue the records filled
        report.update(end_markers=len(markers), end_marker_first_s=markers[0][1] / 1e9 if markers else None,
                      end_marker_numbers=" ".join(str(number) for number, _ in markers))
    return report


def _running_total(records: array):
    """A function returning the bytes of the records kept so far (every 4th entry is a size),
    adding only what came since it was last asked."""
    state = [0, 0]                # entries added up, their bytes

    def total() -> int:
        end = len(records) - len(records) % 4
        state[1] += sum(records[state[0] + 3:end:4])
        state[0] = end
        return state[1]
    return total


def _number(value) -> float:
    """A HELLO's number, 0 when it is missing or not a number, at most 60 (the HELLO is the peer's)."""
    return min(float(value), 60.0) if isinstance(value, (int, float)) and value == value and value >= 0 else 0.0


def enable_gro(sock: socket.socket, on: bool = True) -> None:
    """Linux UDP GRO (the optional fast path, off in the teaching path)."""
    sock.setsockopt(socket.IPPROTO_UDP, 104, int(on))    # UDP_GRO
