"""PPCB over UDP: the udp and udpr clients (notebooks/ppcb-protocol.md).

udp:  CONN(2) → wait CONACC → send every DATA at once → wait RCVD.
      No retransmission: a lost datagram makes the server answer RJT.
udpr: CONN(3) → wait CONACC → for each DATA i: send, wait ACC(i) → ... → wait RCVD.
      Stop-and-wait: every wait lasts at most MAX_WAIT; a packet is sent once
      plus at most MAX_RETRANSMITS times, MAX_WAIT apart, then the client gives up.
      Older ACCs and repeated CONACCs are ignored; RJT or CONRJT end the transfer.

    python -m wirelab.transfer.udp_client udpr 127.0.0.1 5000 < file.bin
"""
from __future__ import annotations

import select
import sys
import time

from .. import transports
from ..errors import ProtocolError, TransferError, UsageError
from . import ppcb
from .result import Result
from .sockets import Meter, buffer_sizes, open_socket

__all__ = ["send_udp"]


def send_udp(host: str, port: int, data: bytes, *, proto: str = "udpr", max_wait: float = 5.0,
             max_retransmits: int = 5, chunk: int = 1000, sndbuf: int | None = None,
             rcvbuf: int | None = None, session_id: bytes | None = None, progress=None) -> Result:
    """Send ``data`` with ``proto`` "udp" or "udpr"; return the sender's Result (``ok`` after RCVD).
    ``progress``: a ``progress.Progress`` reporting the bytes sent every interval."""
    if proto not in speaks():
        raise UsageError(f"send_udp speaks {' or '.join(speaks())}, not {proto!r}",
                         f"use {transports.get(proto).sender.target.partition(':')[2]} for {proto}")
    if not 1 <= chunk <= ppcb.MAX_DATA:
        raise UsageError(f"chunk {chunk} B outside 1..{ppcb.MAX_DATA}", "use --packet 1000")
    client = _Client(host, port, proto, max_wait, max_retransmits, sndbuf, rcvbuf,
                     session_id or ppcb.new_session_id())
    result = client.result
    result.bytes_offered, result.packet_bytes = len(data), chunk
    if progress is not None:
        progress.count = lambda: result.bytes_sent
        progress.start()
    try:
        client.run(data, chunk)
        result.ok = True
    except TransferError as err:
        result.error = str(err)
    except OSError as err:   # e.g. ICMP port unreachable reported on a connected socket
        result.error = f"{err.strerror or err}: is a udp server running on {host}:{port}?"
    finally:
        if progress is not None:
            result.metadata["progress"] = progress.stop()
        client.sock.close()
    result.sender_end_time_s = time.time()
    result.first_data_time_s = result.send_times_s[0] if result.send_times_s else None
    result.sender_cpu_s, result.sender_syscalls = client.meter.stop(), client.meter.calls
    return result


def speaks() -> tuple[str, ...]:
    """The transports whose sender this program is (udp and udpr: ``wirelab.transports``)."""
    # by the name a transport's module gives (this file runs as __main__ too: not __name__)
    return tuple(t.name for t in transports.transports() if t.sender.target == "wirelab.transfer.udp_client:send_udp")


class _Client:
    """The state of one udp/udpr transfer (kept in one place so ``run`` reads top to bottom)."""

    def __init__(self, host, port, proto, max_wait, max_retransmits, sndbuf, rcvbuf, session):
        self.proto, self.max_wait, self.max_retransmits, self.session = proto, max_wait, max_retransmits, session
        # udpr waits for each ACC and resends; udp does neither (its facts: wirelab.transports)
        self.stop_and_wait = transports.get(proto).acked
        self.meter = Meter()
        self.result = Result(proto, max_wait_s=max_wait, max_retransmits=max_retransmits,
                             sndbuf_requested_bytes=sndbuf, rcvbuf_requested_bytes=rcvbuf,
                             metadata={"session_id": session.hex(), "server": f"{host}:{port}"})
        self.address = (host, port)
        self.sock = open_socket("udp", sndbuf=sndbuf, rcvbuf=rcvbuf)
        self.sending_data = False

    def send(self, raw: bytes) -> None:
        self.sock.send(raw)
        self.meter.call()
        if self.sending_data and raw[0] == ppcb.CODES["DATA"]:    # the sender's view ends at its last DATA
            self.result.last_data_time_s = time.time()

    def receive(self, deadline: float) -> ppcb.Packet | None:
        """The next packet of our session before ``deadline`` (monotonic), or None.
        RJT and CONRJT raise: the server refused us."""
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.sock], [], [], left)
            self.meter.call()
            if not ready:
                break
            raw = self.sock.recv(65535)
            self.meter.call()
            try:
                packet = ppcb.unpack(raw)
            except ProtocolError:
                continue                               # garbage from the network: ignore
            if packet.session_id != self.session:
                continue
            if packet.kind == "CONRJT":
                raise TransferError("server refused the connection (CONRJT)",
                                    "it is serving another client; try again later")
            if packet.kind == "RJT":
                raise TransferError(f"server rejected packet {packet.packet_no} (RJT)",
                                    "a datagram was lost or reordered; udp cannot recover, use udpr")
            return packet
        return None

    def exchange(self, raw: bytes, accept, what: str) -> ppcb.Packet:
        """udpr: send ``raw`` and wait for a packet ``accept`` likes; resend on
        timeout up to MAX_RETRANSMITS times. Records RTT (first try only, Karn's rule)."""
        first = time.monotonic()
        for attempt in range(self.max_retransmits + 1):
            if attempt:
                self.result.retransmissions += 1
            sent = time.monotonic()
            self.send(raw)
            deadline = sent + self.max_wait
            while (packet := self.receive(deadline)) is not None:
                if accept(packet):
                    now = time.monotonic()
                    if attempt == 0:
                        self.result.rtts_s.append(now - sent)
                    self.result.ack_times_s.append(now - first)
                    return packet
                # an older ACC or a repeated CONACC: ignore, keep waiting
        raise TransferError(f"timeout: no {what} after {self.max_retransmits} resends "
                            f"{self.max_wait:g} s apart", "the server stopped answering or the link drops everything")

    def wait(self, accept, what: str) -> ppcb.Packet:
        """udp: wait MAX_WAIT for one packet ``accept`` likes, no resend."""
        deadline = time.monotonic() + self.max_wait
        while (packet := self.receive(deadline)) is not None:
            if accept(packet):
                return packet
        raise TransferError(f"timeout: no {what} within {self.max_wait:g} s", "is the server running?")

    def run(self, data: bytes, chunk: int) -> None:
        result, session = self.result, self.session
        self.sock.connect(self.address)       # only the server's datagrams reach us now
        result.sndbuf_granted_bytes, result.rcvbuf_granted_bytes = buffer_sizes(self.sock)
        conn = ppcb.pack("CONN", session, protocol_id=ppcb.PROTOCOL_IDS[self.proto], total_length=len(data))
        is_kind = lambda kind: (lambda p: p.kind == kind)            # noqa: E731
        result.sender_start_time_s = time.time()
        try:
            if self.stop_and_wait:
                self.exchange(conn, is_kind("CONACC"), "CONACC")
                result.ack_times_s.clear()                           # keep DATA's only
            else:
                self.send(conn)
                self.wait(is_kind("CONACC"), "CONACC")
        finally:
            result.metadata["conn_resends"] = result.retransmissions
        result.retransmissions = 0                                   # from here on: DATA resends
        try:
            self.send_data(data, chunk)
        finally:
            result.packets_sent = len(result.send_times_s) + result.retransmissions

    def send_data(self, data: bytes, chunk: int) -> None:
        result, session, view = self.result, self.session, memoryview(data)
        got_rcvd, last = False, None
        self.sending_data = True
        for number, offset in enumerate(range(0, len(data), chunk)):
            piece = view[offset:offset + chunk]
            last = ppcb.data_header(session, number, len(piece)) + piece
            result.send_times_s.append(time.time())
            if self.stop_and_wait:
                before = result.retransmissions
                reply = self.exchange(last, lambda p, n=number: (p.kind == "ACC" and p.packet_no == n)
                                      or p.kind == "RCVD", f"ACC for packet {number}")
                got_rcvd = reply.kind == "RCVD"                      # ACC lost, RCVD came: done too
                result.bytes_sent += len(piece) * (1 + result.retransmissions - before)
            else:
                self.send(last)
                result.bytes_sent += len(piece)
        self.sending_data = False              # a last DATA resent to recover a lost RCVD is not data
        if got_rcvd:
            return
        if not self.stop_and_wait or last is None:
            self.wait(lambda p: p.kind == "RCVD", "RCVD")
            return
        try:                                  # udpr: RCVD, or resend the last DATA if it got lost
            self.wait(lambda p: p.kind == "RCVD", "RCVD")
        except TransferError:
            result.retransmissions += 1
            self.exchange(last, lambda p: p.kind == "RCVD", "RCVD")


def main(argv: list[str] | None = None) -> int:
    """``udp|udpr HOST PORT`` with the input on stdin, as the assignment's client."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] not in speaks():
        print(f"usage: python -m wirelab.transfer.udp_client {{{'|'.join(speaks())}}} HOST PORT < file",
              file=sys.stderr)
        return 2
    result = send_udp(argv[1], int(argv[2]), sys.stdin.buffer.read(), proto=argv[0])
    if not result.ok:
        print(f"ERROR: {result.error}", file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
