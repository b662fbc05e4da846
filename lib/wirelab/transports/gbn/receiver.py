"""Go-Back-N over UDP: the receiver (notebooks/ppcb-protocol.md, "Go-Back-N").

A receiver window of one: only the next packet in order is taken.

    idle ──CONN(4)──▶ CONACC, expect packet 0          ──CONN(other protocol)──▶ CONRJT
    busy ──DATA n, n the one expected──▶ deliver; ACC n; after the last: ACC, RCVD ─▶ idle
         ──DATA n, any other n──▶ discard; ACC of the last packet taken in order (none yet: nothing)
         ──CONN, other session──▶ CONRJT(that session)    ──DATA, other session──▶ RJT(it)
         ──an invalid DATA of ours──▶ RJT; the session ends
         ──MAX_WAIT of silence──▶ the last CONACC/ACC again (≤ MAX_RETRANSMITS), then idle

One session's receiver: ``transfer.udp_server`` (``wirelab serve udp``) hands it a CONN asking for
protocol 4, and answers a finished session's late DATA itself (its linger, as for udpr).

    python -m wirelab.transfer.udp_server 5000 > received.bin      # udp, udpr and Go-Back-N
"""
from __future__ import annotations

import select
import socket
import time

from ...errors import ProtocolError
from ...transfer import ppcb
from ...transfer.result import Result
from ...transfer.sockets import Meter, buffer_sizes
from ...transfer.udp_server import MAX_DATAGRAM
from .. import gbn

__all__ = ["serve_session"]

DATA = bytes([ppcb.CODES["DATA"]])


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
