"""PPCB over UDP: one server for udp and udpr (notebooks/ppcb-protocol.md, "What each side does").

The server is a small state machine on one socket:

    idle ──CONN(2|3)──▶ CONACC, expect packet 0       (CONN(4): Go-Back-N's session, transports/gbn/receiver.py)
    busy ──right next DATA──▶ deliver (udpr: ACC); after the last: RCVD, once → idle
         ──CONN, other session──▶ CONRJT(that session)      (served client goes on)
         ──DATA, other session──▶ RJT(that session)         (served client goes on)
         ──DATA out of order / invalid──▶ RJT; the session ends (the client quits on RJT too)
         ──duplicate (CONN again, lower DATA)──▶ ignored
         ──MAX_WAIT silence──▶ udpr: resend last CONACC/ACC (≤ MAX_RETRANSMITS), udp: drop

One wirelab addition (like TCP's TIME_WAIT): for a while after a udpr (or
Go-Back-N) session ends, a repeat of its DATA (its ACC or RCVD was lost) is
answered with the last ACC and RCVD again instead of being ignored; a server
asked for ``sessions`` sessions stays that long after the last one to do so.

    python -m wirelab.transfer.udp_server 5000 > received.bin
"""
from __future__ import annotations

import select
import socket
import sys
import threading
import time
from dataclasses import dataclass

from .. import transports
from ..errors import ProtocolError
from . import ppcb
from .arrivals import stamp_arrivals
from .result import Result
from .sockets import DEFAULT_HOST, Meter, bind, buffer_sizes, hand_over, open_socket, waiting_on

__all__ = ["listen_udp", "serve_udp", "MAX_DATAGRAM"]

#: Receive buffer for one datagram: the largest UDP payload.
MAX_DATAGRAM = 65535


def listen_udp(host: str = DEFAULT_HOST, port: int = 0, *, rcvbuf: int | None = None,
               sndbuf: int | None = None) -> socket.socket:
    """A bound UDP socket for ``serve_udp`` (port 0: any free port)."""
    sock = open_socket("udp", sndbuf=sndbuf, rcvbuf=rcvbuf)
    bind(sock, host, port)
    stamp_arrivals(sock)     # now, not per session: the kernel turns stamping on a moment after it is first asked
    return sock


def serve_udp(sock: socket.socket, *, out=None, max_wait: float = 5.0, max_retransmits: int = 5,
              sessions: int | None = None, stop: threading.Event | None = None,
              on_result=None, log=None, progress=None) -> int:
    """Serve udp and udpr clients one after another until ``stop`` is set or
    ``sessions`` sessions ended (see ``tcp.serve_tcp`` for the arguments)."""
    served = 0        # results are handed to on_result, never kept: a long-running server stays small
    # linger: (session id, address, last packet_no, until) of a finished udpr session;
    # last_report: (address, REPORT datagram) of the last measurement session.
    state: dict = {}
    while not (stop and stop.is_set()):
        done = sessions is not None and served >= sessions
        if done and not _lingering(state):
            break                  # the last session is over, and so is its linger
        ready, _, _ = select.select(waiting_on(sock, stop), [], [], 0.1)   # idle: wait for CONN, no limit
        if sock not in ready:
            continue
        raw, addr = sock.recvfrom(MAX_DATAGRAM)
        if done:                   # served enough: only a lost RCVD's resent last DATA is answered
            _answer_linger(sock, raw, addr, state.get("linger"))
            continue
        try:
            result = _dispatch(sock, raw, addr, state, out=out, max_wait=max_wait,
                               max_retransmits=max_retransmits, stop=stop, progress=progress)
        except Exception as err:       # noqa: BLE001 - a client must never stop the server
            result = Result("udp", receiver_error=f"internal error on this client: {err!r}")
        if result is None:
            continue
        hand_over(result, addr, log, on_result)
        served += 1
    return served


def _lingering(state: dict) -> bool:
    linger = state.get("linger")
    return bool(linger) and time.monotonic() < linger[3]


def _answer_linger(sock, raw: bytes, addr, linger) -> bool:
    """A finished session's DATA again (its ACC or RCVD was lost): the ACC of its last packet and
    RCVD again. udpr resends only its last DATA; Go-Back-N resends its whole window, and its ACC
    is cumulative, so any DATA of the session up to the last is answered the same way."""
    if not linger or time.monotonic() >= linger[3]:
        return False
    try:
        packet = ppcb.unpack(raw)
    except ProtocolError:
        return False
    session, client, last = linger[:3]
    if packet.kind != "DATA" or (packet.session_id, addr) != (session, client) or packet.packet_no > last:
        return False
    sock.sendto(ppcb.pack("ACC", packet.session_id, packet_no=last), addr)
    sock.sendto(ppcb.pack("RCVD", packet.session_id), addr)
    return True


def _dispatch(sock, raw: bytes, addr, state: dict, **kwargs) -> Result | None:
    """Idle: one datagram arrived. Start a session (its Result) or answer/ignore it (None)."""
    from .measure_server import serve_measure_udp   # wirelab's measurement modes, same port
    from .measure_wire import END, MAGIC
    max_wait, max_retransmits = kwargs["max_wait"], kwargs["max_retransmits"]
    progress = kwargs.pop("progress", None)         # a measurement's records are counted live
    last_report, linger = state.get("last_report"), state.get("linger")
    if raw[:1] == bytes([MAGIC]):
        result, report = serve_measure_udp(sock, raw, addr, max_wait=max_wait, stop=kwargs["stop"],
                                           progress=progress)
        state["last_report"] = (addr, report) if report else None
        return result
    if raw[:1] == bytes([END]) and last_report and last_report[0] == addr:
        sock.sendto(last_report[1], addr)             # the REPORT was lost: send it again
        return None
    try:
        packet = ppcb.unpack(raw)
    except ProtocolError:
        return None                                   # idle: garbage is ignored
    if _answer_linger(sock, raw, addr, linger):
        return None
    if packet.kind != "CONN":
        return None                                   # idle: only CONN starts a session
    transport = transports.by_protocol_id(packet.protocol_id)     # udp (2), udpr (3): wirelab.transports
    if transport is None or transport.socket != "udp":
        sock.sendto(ppcb.pack("CONRJT", packet.session_id), addr)
        return None
    result = transport.receiver(sock, packet, addr, **kwargs)       # serve_session below for udp and udpr
    if result.ok and transport.retransmits and result.receive_times_s:
        state["linger"] = (packet.session_id, addr, len(result.receive_times_s) - 1,
                           time.monotonic() + transport.give_up_s(max_wait, max_retransmits))
    return result


def serve_session(sock: socket.socket, conn: ppcb.Packet, client, *, out, max_wait: float,
                  max_retransmits: int, stop=None) -> Result:
    """One udp/udpr session, CONN already received from ``client``."""
    transport = transports.by_protocol_id(conn.protocol_id)
    result = _new_result(sock, transport.name, conn.session_id, max_wait, max_retransmits)
    s = _Session(sock, client, conn.session_id, conn.total_length, out, result, Meter(),
                 reliable=transport.acked, max_wait=max_wait, max_retransmits=max_retransmits,
                 last_reply=ppcb.pack("CONACC", conn.session_id))
    s.send(s.last_reply)
    s.last_sent = time.monotonic()
    while s.received < s.total:
        left = s.last_sent + max_wait - time.monotonic()
        if left <= 0:                                     # MAX_WAIT of silence
            if s.resend_on_silence():
                continue
            break
        if stop is not None and stop.is_set():
            result.receiver_error = "server stopped"
            break
        ready, _, _ = select.select([sock], [], [], min(left, 0.25))
        s.meter.call()
        if not ready:
            continue
        raw, sender = sock.recvfrom(MAX_DATAGRAM)
        s.meter.call()
        if not s.take(raw, sender):
            break
    else:
        s.complete()
    result.bytes_delivered = s.received
    if result.receiver_end_time_s is None:
        result.receiver_end_time_s = time.time()
    result.receiver_cpu_s, result.receiver_syscalls = s.meter.stop(), s.meter.calls
    return result


def _new_result(sock: socket.socket, proto: str, session: bytes, max_wait: float, max_retransmits: int) -> Result:
    """A session's Result before its first DATA: counters at zero, the socket's granted buffers."""
    result = Result(proto, max_wait_s=max_wait, max_retransmits=max_retransmits, bytes_received=0,
                    bytes_delivered=0, packets_received=0, duplicates=0, out_of_order=0,
                    receiver_start_time_s=time.time(), metadata={"session_id": session.hex()})
    result.sndbuf_granted_bytes, result.rcvbuf_granted_bytes = buffer_sizes(sock)
    return result


@dataclass
class _Session:
    """The state of one session being served (the module docstring's ``busy``): what it answers
    each datagram with, and what it resends on silence."""
    sock: socket.socket
    client: tuple
    session: bytes
    total: int                          # bytes the client announced (never allocated)
    out: object
    result: Result
    meter: Meter
    reliable: bool                      # udpr: ACC each DATA, resend on silence
    max_wait: float
    max_retransmits: int
    last_reply: bytes                   # CONACC, then the last ACC: what silence resends
    last_sent: float = 0.0
    resends: int = 0
    expected: int = 0                   # next packet_no
    received: int = 0                   # bytes delivered

    def send(self, raw: bytes, to=None) -> None:
        """A datagram to the client (or to ``to``), its system call counted."""
        self.sock.sendto(raw, self.client if to is None else to)
        self.meter.call()

    def resend_on_silence(self) -> bool:
        """MAX_WAIT of silence: udpr resends its last reply (True: go on); after the last resend,
        or over udp, the session ends with the first missing packet named (False)."""
        if self.reliable and self.resends < self.max_retransmits:
            self.send(self.last_reply)
            self.last_sent, self.resends = time.monotonic(), self.resends + 1
            return True
        self.result.receiver_error = (f"timeout: no packet {self.expected} within {self.max_wait:g} s"
                                      + (f" and {self.resends} resends" if self.reliable else ""))
        self.result.metadata["first_missing_packet"] = self.expected
        return False

    def take(self, raw: bytes, sender) -> bool:
        """One datagram while busy: answered, ignored or delivered (True), or it ends the session (False)."""
        try:
            packet = ppcb.unpack(raw)
        except ProtocolError as err:
            if sender == self.client and ppcb.session_of(raw) == self.session:  # invalid DATA from our client → RJT, end
                self.send(ppcb.pack("RJT", self.session, packet_no=self.expected))
                self.result.receiver_error = f"invalid packet: {err}"
                return False
            return True
        if packet.kind == "CONN":
            if packet.session_id != self.session:
                self.send(ppcb.pack("CONRJT", packet.session_id), sender)   # busy: someone else
            return True                                                     # our own CONN again: duplicate
        if packet.kind != "DATA":
            return True
        if packet.session_id != self.session or sender != self.client:
            self.send(ppcb.pack("RJT", packet.session_id, packet_no=packet.packet_no), sender)
            return True
        return self.data(packet)

    def data(self, packet: ppcb.Packet) -> bool:
        """Our client's DATA: a duplicate is ignored, the next one delivered (True); one out of
        order or too long ends the session with RJT (False)."""
        result = self.result
        result.packets_received += 1
        result.bytes_received += len(packet.data)
        if packet.packet_no < self.expected:              # a duplicate: ignore it
            result.duplicates += 1
            return True
        if packet.packet_no > self.expected or len(packet.data) > self.total - self.received:
            self.refuse(packet)
            return False
        if self.out is not None:
            self.out.write(packet.data)
        result.receive_times_s.append(time.time())
        self.received += len(packet.data)
        self.expected += 1
        if self.reliable:
            self.last_reply, self.resends = ppcb.pack("ACC", self.session, packet_no=packet.packet_no), 0
            self.send(self.last_reply)
        self.last_sent = time.monotonic()
        return True

    def refuse(self, packet: ppcb.Packet) -> None:
        """RJT a DATA out of order (a datagram lost or reordered) or longer than what is left, and say why."""
        expected, result = self.expected, self.result
        result.out_of_order += packet.packet_no > expected
        if packet.packet_no > expected:
            result.metadata["first_missing_packet"] = expected
        self.send(ppcb.pack("RJT", self.session, packet_no=packet.packet_no))
        result.receiver_error = (f"packet {packet.packet_no} arrived, expected {expected} "
                                 "(a datagram was lost or reordered)" if packet.packet_no > expected else
                                 f"packet {packet.packet_no} carries {len(packet.data)} B, "
                                 f"only {self.total - self.received} B were left to send")

    def complete(self) -> None:
        """Every byte delivered: the end time, the output flushed, RCVD sent once."""
        self.result.receiver_end_time_s = time.time()
        if self.out is not None and hasattr(self.out, "flush"):
            self.out.flush()
        self.send(ppcb.pack("RCVD", self.session))
        self.result.ok = True


def main(argv: list[str] | None = None) -> int:
    """``PORT [HOST]``: serve udp and udpr clients (on loopback unless HOST), received bytes to stdout."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: python -m wirelab.transfer.udp_server PORT [HOST] > received", file=sys.stderr)
        return 2
    sock = listen_udp(argv[1] if len(argv) == 2 else DEFAULT_HOST, int(argv[0]))
    try:
        serve_udp(sock, out=sys.stdout.buffer, log=lambda line: print(line, file=sys.stderr))
    except KeyboardInterrupt:
        return 0
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
