"""wirelab's measurement modes, served on the same port as PPCB (off the PPCB wire).

A measurement session starts with a HELLO whose first byte (0x80) is no
PPCB type, so a PPCB server sees it at once. Then, by mode:

    bulk  records as fast as possible for a time        (like nttcp / iperf)
    load  records paced at an offered rate (--rate --packet, document 000)
    echo  request/response for RTT samples              (document 003)

Every record carries a sequence number and the sender's send time (ns), so
the receiver counts loss, duplicates and reordering, and one-way delay:

    HELLO      0x80 · u32 len · JSON {mode, packet, ...}      (udp: answered by 0x81 HELLO_ACK)
    RECORD     0x82 · u64 seq · u64 send_ns · padding          (packet bytes in all)
    END        0x83 · u64 records sent · padding               (answered by 0x84 REPORT)
    REPORT     0x84 · u32 len · JSON: what the receiver saw
    ECHO       0x85 · u64 seq · u64 t1 · u64 t2 · u64 t3 · padding  (reply 0x86, t2/t3 filled)

One-way delay needs one clock: on one host that is given; across hosts the
client first runs ECHO rounds and estimates the offset of the receiver's
clock the NTP way, ((t2 − t1) + (t3 − t4)) / 2, median of the rounds.
"""
from __future__ import annotations

import json
from array import array
import socket
import struct
import time

from ..errors import ProtocolError, TransferError

__all__ = ["MAGIC", "Tally", "REC", "REC_STAMP", "serve_measure_tcp", "serve_measure_udp", "json_packet", "read_json",
           "RECORD", "ECHO", "END", "REPORT", "HELLO_ACK", "ECHO_REPLY", "MIN_PACKET", "same_host"]

MAGIC, HELLO_ACK, RECORD, END, REPORT, ECHO, ECHO_REPLY = 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86
REC = struct.Struct("!BQQ")          # type, seq, send_ns
REC_STAMP = struct.Struct("!QQ")     # just seq, send_ns (at offset 1): what a sender rewrites per record
ECHO_HDR = struct.Struct("!BQQQQ")   # type, seq, t1, t2, t3
END_HDR = struct.Struct("!BQ")       # type, records sent
MIN_PACKET = ECHO_HDR.size           # 33 B: every record must hold an ECHO header
#: At most this many delay samples travel in a UDP REPORT (it must fit one datagram).
REPORT_SAMPLES = 1500
#: A sequence number further than this past the highest seen is refused (no unbounded memory).
SEQ_WINDOW = 1 << 20


def json_packet(kind: int, obj: dict) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack("!BL", kind, len(body)) + body


def parse_json_packet(raw: bytes, kind: int) -> dict:
    if len(raw) < 5 or raw[0] != kind:
        raise ProtocolError(f"expected a {kind:#x} packet", "the peer is not a wirelab measurement end")
    (length,) = struct.unpack_from("!L", raw, 1)
    if length != len(raw) - 5:
        raise ProtocolError("JSON packet with a wrong length", "send the whole packet")
    try:
        return json.loads(raw[5:])
    except ValueError:
        raise ProtocolError("JSON packet that is not JSON", "the peer is not a wirelab measurement end") from None


def read_json(reader, kind: int, limit: int = 1 << 24) -> dict:
    """A JSON packet from a TCP ``StreamReader``."""
    head = reader.read(5)
    if head[0] != kind:
        raise ProtocolError(f"expected a {kind:#x} packet, got {head[0]:#x}", "check both ends are wirelab")
    (length,) = struct.unpack_from("!L", head, 1)
    if length > limit:
        raise ProtocolError(f"JSON packet of {length} B", f"at most {limit} B")
    return parse_json_packet(head + reader.read(length), kind)


def same_host(host: str) -> bool:
    """True when ``host`` is this machine's loopback (one clock for both ends)."""
    return host in ("localhost", "::1") or host.startswith("127.")


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
    from .result import Result
    result = Result(proto, mode=hello.get("mode", "bulk"), ok=error is None, receiver_error=error,
                    packet_bytes=hello.get("packet"))
    for key in ("bytes_received", "bytes_delivered", "packets_received", "duplicates", "out_of_order",
                "receiver_start_time_s", "receiver_end_time_s", "receiver_cpu_s", "receiver_syscalls",
                "rcvbuf_granted_bytes"):
        setattr(result, key, report.get(key))
    return result


# ----------------------------------------------------------------- TCP receiver
def serve_measure_tcp(conn: socket.socket, reader, meter, *, max_wait: float = 5.0):
    """One measurement client on an accepted TCP connection (HELLO not yet read)."""
    tally, hello, error = Tally(), {}, None
    try:
        hello, packet = check_hello(read_json(reader, MAGIC, limit=65536), 1 << 24)
        raw = bytearray(packet)
        view = memoryview(raw)
        while True:
            reader.read_into(view)
            kind = raw[0]
            if kind == RECORD:
                _, seq, send_ns = REC.unpack_from(raw)
                tally.add(seq, send_ns, packet, time.time_ns())
            elif kind == ECHO:
                conn.sendall(_echo_reply(raw, time.time_ns()))
                meter.call()
            elif kind == END:
                break
            else:
                raise ProtocolError(f"unknown record type {kind:#x}", "check both ends are wirelab")
    except (TransferError, OSError) as err:
        error = str(err)
    report = _finish(tally.report(), meter, conn)
    report["error"] = error
    try:
        conn.sendall(json_packet(REPORT, report))
        meter.call()
    except OSError:
        pass
    return _result("tcp", hello if isinstance(hello, dict) else {}, report, error)


# ----------------------------------------------------------------- UDP receiver
def serve_measure_udp(sock: socket.socket, hello_raw: bytes, client, *, max_wait: float = 5.0, stop=None):
    """One measurement client on the UDP server's socket. Returns (Result, REPORT
    datagram): the server keeps the REPORT to answer a repeated END while idle."""
    from .sockets import Meter
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
    records = array("Q")          # seq, send_ns, receive_ns, size per record; tallied at the end
    sent = None
    sock.settimeout(min(max_wait, 0.25))
    silent_since = time.monotonic()
    try:
        while sent is None:
            try:
                n, addr = sock.recvfrom_into(buf)
            except socket.timeout:
                if time.monotonic() - silent_since > max_wait:
                    error = f"timeout: nothing for {max_wait:g} s"
                    break
                if stop is not None and stop.is_set():
                    error = "server stopped"
                    break
                continue
            now_ns = time.time_ns()
            meter.call()
            if addr != client or n == 0:
                if n and buf[0] == 1:                 # a PPCB CONN while we are busy
                    sock.sendto(bytes([3]) + bytes(buf[1:9]), addr)
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
            elif kind == END and n >= END_HDR.size:
                sent = END_HDR.unpack_from(buf)[1]
            elif kind == MAGIC:                       # our HELLO_ACK was lost
                sock.sendto(json_packet(HELLO_ACK, {}), client)
    finally:
        sock.settimeout(None)
        if gro:
            enable_gro(sock, False)
    for i in range(0, len(records), 4):
        seq, send_ns, receive_ns, size = records[i:i + 4]
        tally.add(seq, send_ns, size, receive_ns)
    report = _finish(tally.report(REPORT_SAMPLES), meter, sock)
    report["error"] = error
    if sent is not None:
        report["lost"] = max(sent - tally.unique, 0)
    raw = json_packet(REPORT, report)
    if sent is not None:
        sock.sendto(raw, client)
    result = _result("udp", hello, report, error)
    result.lost = report.get("lost")
    return result, raw


def enable_gro(sock: socket.socket, on: bool = True) -> None:
    """Linux UDP GRO (the optional fast path, off in the teaching path)."""
    sock.setsockopt(socket.IPPROTO_UDP, 104, int(on))    # UDP_GRO
