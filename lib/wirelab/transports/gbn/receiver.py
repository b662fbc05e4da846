"""Go-Back-N over UDP: the receiver (notebooks/ppcb-protocol.md, "Go-Back-N").

A receiver window of one: only the next packet in order is taken.

    idle ──CONN(4)──▶ CONACC, expect packet 0          ──CONN(other protocol)──▶ CONRJT
    busy ──DATA n, n the one expected──▶ deliver; ACC n; after the last: ACC, RCVD ─▶ idle
         ──DATA n, any other n──▶ discard; ACC of the last packet taken in order (none yet: nothing)
         ──CONN, other session──▶ CONRJT(that session)    ──DATA, other session──▶ RJT(it)
         ──an invalid DATA of ours──▶ RJT; the session ends
         ──MAX_WAIT of silence──▶ the last CONACC/ACC again (≤ MAX_RETRANSMITS), then idle

As udpr's server (``transfer.udp_server``), for a while after a session ends a DATA of it
(its RCVD was lost, so the sender sends its last DATA again) is answered with ACC and RCVD.

    python -m wirelab.transports.gbn.receiver 5000 > received.bin
"""
from __future__ import annotations

import select
import socket
import sys
import threading
import time

from ...errors import ProtocolError
from ...transfer import ppcb
from ...transfer.result import Result
from ...transfer.sockets import DEFAULT_HOST, Meter, buffer_sizes, hand_over, waiting_on
from ...transfer.udp_server import MAX_DATAGRAM, listen_udp
from .. import gbn

__all__ = ["listen_gbn", "serve_gbn", "serve_session"]

#: A Go-Back-N server's socket is a udp one (``udp_server.listen_udp``).
listen_gbn = listen_udp
DATA = bytes([ppcb.CODES["DATA"]])


def serve_gbn(sock: socket.socket, *, out=None, max_wait: float = 5.0, max_retransmits: int = 5,
              sessions: int | None = None, stop: threading.Event | None = None,
              on_result=None, log=None, progress=None) -> int:
    """Serve Go-Back-N clients one after another until ``stop`` is set or ``sessions`` sessions
    ended (the arguments of ``udp_server.serve_udp``; ``progress`` is accepted for its shape:
    a file transfer is counted by its sender)."""
    served, linger = 0, None         # linger: (session id, address, last packet_no, until)
    while not (stop and stop.is_set()):
        lingering = linger is not None and time.monotonic() < linger[3]
        if sessions is not None and served >= sessions and not lingering:
            break
        ready, _, _ = select.select(waiting_on(sock, stop), [], [], 0.1)   # idle: wait for CONN, no limit
        if sock not in ready:
            continue
        raw, addr = sock.recvfrom(MAX_DATAGRAM)
        try:
            packet = ppcb.unpack(raw)
        except ProtocolError:
            continue                                   # idle: garbage is ignored
        if _answer_linger(sock, packet, addr, linger) or packet.kind != "CONN":
            continue                                   # idle: only CONN starts a session
        if sessions is not None and served >= sessions:
            continue                                   # served enough: only lingering
        if not gbn.is_ours(packet):
            sock.sendto(ppcb.pack("CONRJT", packet.session_id), addr)
            continue
        try:
            result = serve_session(sock, packet, addr, out=out, max_wait=max_wait,
                                   max_retransmits=max_retransmits, stop=stop)
        except Exception as err:        # noqa: BLE001 - a client must never stop the server
            result = Result(gbn.NAME, receiver_error=f"internal error on this client: {err!r}")
        if result.ok and result.receive_times_s:
            linger = (packet.session_id, addr, len(result.receive_times_s) - 1,
                      time.monotonic() + max_wait * (max_retransmits + 1))
        hand_over(result, addr, log, on_result)
        served += 1
    return served


def _answer_linger(sock, packet: ppcb.Packet, addr, linger) -> bool:
    """A finished session's DATA again (its RCVD was lost): ACC of the last packet and RCVD again."""
    if linger is None or time.monotonic() >= linger[3] or packet.kind != "DATA" \
            or (packet.session_id, addr) != linger[:2]:
        return False
    sock.sendto(gbn.acc(packet.session_id, linger[2]), addr)
    sock.sendto(ppcb.pack("RCVD", packet.session_id), addr)
    return True


def serve_session(sock: socket.socket, conn: ppcb.Packet, client, *, out, max_wait: float,
                  max_retransmits: int, stop=None) -> Result:
    """One Go-Back-N session, its CONN already received from ``client``."""
    session = _Session(sock, conn, client, out)
    result = session.result
    result.max_wait_s, result.max_retransmits = max_wait, max_retransmits
    session.send(session.last_reply)                # CONACC
    heard, resends = time.monotonic(), 0            # silence is counted from the last packet heard or sent
    while session.received < session.total:
        left = heard + max_wait - time.monotonic()
        if left <= 0:                                          # MAX_WAIT of silence
            if resends < max_retransmits:
                session.send(session.last_reply)
                heard, resends = time.monotonic(), resends + 1
                continue
            result.receiver_error = (f"timeout: no packet {session.expected} within {max_wait:g} s "
                                     f"and {resends} resends")
            result.metadata["first_missing_packet"] = session.expected
            break
        if stop is not None and stop.is_set():
            result.receiver_error = "server stopped"
            break
        ready, _, _ = select.select([sock], [], [], min(left, 0.25))
        session.meter.call()
        if not ready:
            continue
        raw, sender = sock.recvfrom(MAX_DATAGRAM)
        session.meter.call()
        before = session.expected
        if session.datagram(raw, sender):
            break                                               # refused: the error is in the result
        if sender == client and raw[:1] == DATA and ppcb.session_of(raw) == conn.session_id:
            heard = time.monotonic()                            # (a repeated CONN is not heard: the timer
                                                                # must resend a lost CONACC)
            if session.expected > before:                       # progress: the resends count again
                resends = 0
    else:
        result.receiver_end_time_s = time.time()
        flush = getattr(out, "flush", None)
        if flush is not None:
            flush()
        session.send(ppcb.pack("RCVD", conn.session_id))
        result.ok = True
    result.bytes_delivered = session.received
    if result.receiver_end_time_s is None:
        result.receiver_end_time_s = time.time()
    result.receiver_cpu_s, result.receiver_syscalls = session.meter.stop(), session.meter.calls
    return result


class _Session:
    """What one session has taken in order, and what it said last (the silence timer repeats it)."""

    def __init__(self, sock, conn: ppcb.Packet, client, out):
        self.sock, self.client, self.out = sock, client, out
        self.id, self.total = conn.session_id, conn.total_length
        self.expected = self.received = 0           # next packet_no; bytes delivered (never allocate `total`)
        self.last_reply = ppcb.pack("CONACC", self.id)
        self.meter = Meter()
        self.result = Result(gbn.NAME, bytes_received=0, bytes_delivered=0, packets_received=0, duplicates=0,
                             out_of_order=0, receiver_start_time_s=time.time(),
                             metadata={"session_id": self.id.hex()})
        self.result.sndbuf_granted_bytes, self.result.rcvbuf_granted_bytes = buffer_sizes(sock)

    def send(self, raw: bytes, to=None) -> None:
        self.sock.sendto(raw, to or self.client)
        self.meter.call()

    def datagram(self, raw: bytes, sender) -> bool:
        """One datagram arrived; True when it ends the session (the reason in ``result``)."""
        try:
            packet = ppcb.unpack(raw)
        except ProtocolError as err:
            if sender == self.client and ppcb.session_of(raw) == self.id:   # an invalid DATA of ours: RJT, end
                self.send(ppcb.pack("RJT", self.id, packet_no=self.expected))
                self.result.receiver_error = f"invalid packet: {err}"
                return True
            return False
        if packet.kind == "CONN":
            if packet.session_id != self.id:
                self.send(ppcb.pack("CONRJT", packet.session_id), sender)     # busy: someone else
            return False                                                     # our CONN again: the timer answers
        if packet.kind != "DATA":
            return False
        if packet.session_id != self.id or sender != self.client:
            self.send(ppcb.pack("RJT", packet.session_id, packet_no=packet.packet_no), sender)
            return False
        return self.take(packet)

    def take(self, packet: ppcb.Packet) -> bool:
        """A DATA of ours: delivered if it is the next in order, else discarded (Go-Back-N)."""
        result = self.result
        result.packets_received += 1
        result.bytes_received += len(packet.data)
        if packet.packet_no != self.expected:           # discard it, name the last one taken in order
            if packet.packet_no < self.expected:
                result.duplicates += 1
            else:
                result.out_of_order += 1
            if self.expected:
                self.send(gbn.acc(self.id, self.expected - 1))
            return False
        if len(packet.data) > self.total - self.received:
            self.send(ppcb.pack("RJT", self.id, packet_no=packet.packet_no))
            result.receiver_error = (f"packet {packet.packet_no} carries {len(packet.data)} B, "
                                     f"only {self.total - self.received} B were left to send")
            return True
        if self.out is not None:
            self.out.write(packet.data)
        result.receive_times_s.append(time.time())
        self.received += len(packet.data)
        self.expected += 1
        self.last_reply = gbn.acc(self.id, packet.packet_no)
        self.send(self.last_reply)
        return False


def main(argv: list[str] | None = None) -> int:
    """``PORT [HOST]``: serve Go-Back-N clients (on loopback unless HOST), received bytes to stdout."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: python -m wirelab.transports.gbn.receiver PORT [HOST] > received", file=sys.stderr)
        return 2
    sock = listen_gbn(argv[1] if len(argv) == 2 else DEFAULT_HOST, int(argv[0]))
    try:
        serve_gbn(sock, out=sys.stdout.buffer, log=lambda line: print(line, file=sys.stderr))
    except KeyboardInterrupt:
        return 0
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
