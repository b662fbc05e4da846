"""PPCB over UDP: one server for udp and udpr (notebooks/ppcb-protocol.md, "What each side does").

The server is a small state machine on one socket:

    idle ──CONN(2|3)──▶ CONACC, expect packet 0
    busy ──right next DATA──▶ deliver (udpr: ACC); after the last: RCVD, once → idle
         ──CONN, other session──▶ CONRJT(that session)      (served client goes on)
         ──DATA, other session──▶ RJT(that session)         (served client goes on)
         ──DATA out of order / invalid──▶ RJT; the session ends (the client quits on RJT too)
         ──duplicate (CONN again, lower DATA)──▶ ignored
         ──MAX_WAIT silence──▶ udpr: resend last CONACC/ACC (≤ MAX_RETRANSMITS), udp: drop

One wirelab addition (like TCP's TIME_WAIT): for a while after a udpr
session ends, a repeat of its last DATA (its ACC or RCVD was lost) is
answered with ACC and RCVD again instead of being ignored; a server asked
for ``sessions`` sessions stays that long after the last one to do so.

    python -m wirelab.transfer.udp_server 5000 > received.bin
"""
from __future__ import annotations

import select
import socket
import sys
import threading
import time

from .. import transports
from ..errors import ProtocolError
from . import ppcb
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
    """A finished udpr session's last DATA again (its ACC or RCVD was lost): ACC and RCVD again."""
    if not linger or time.monotonic() >= linger[3]:
        return False
    try:
        packet = ppcb.unpack(raw)
    except ProtocolError:
        return False
    if packet.kind != "DATA" or (packet.session_id, addr, packet.packet_no) != linger[:3]:
        return False
    sock.sendto(ppcb.pack("ACC", packet.session_id, packet_no=packet.packet_no), addr)
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
    proto, reliable = transport.name, transport.acked         # udpr: ACC each DATA, resend on silence
    session, total = conn.session_id, conn.total_length
    result = Result(proto, max_wait_s=max_wait, max_retransmits=max_retransmits, bytes_received=0,
                    bytes_delivered=0, packets_received=0, duplicates=0, out_of_order=0,
                    receiver_start_time_s=time.time(), metadata={"session_id": session.hex()})
    result.sndbuf_granted_bytes, result.rcvbuf_granted_bytes = buffer_sizes(sock)
    meter = Meter()

    def send(raw: bytes, to=client) -> None:
        sock.sendto(raw, to)
        meter.call()

    last_reply = ppcb.pack("CONACC", session)
    send(last_reply)
    last_sent, resends = time.monotonic(), 0
    expected, received = 0, 0          # next packet_no, bytes delivered (never allocate `total`)
    while received < total:
        left = last_sent + max_wait - time.monotonic()
        if left <= 0:                                     # MAX_WAIT of silence
            if reliable and resends < max_retransmits:
                send(last_reply)
                last_sent, resends = time.monotonic(), resends + 1
                continue
            result.receiver_error = (f"timeout: no packet {expected} within {max_wait:g} s"
                                     + (f" and {resends} resends" if reliable else ""))
            result.metadata["first_missing_packet"] = expected
            break
        if stop is not None and stop.is_set():
            result.receiver_error = "server stopped"
            break
        ready, _, _ = select.select([sock], [], [], min(left, 0.25))
        meter.call()
        if not ready:
            continue
        raw, sender = sock.recvfrom(MAX_DATAGRAM)
        meter.call()
        try:
            packet = ppcb.unpack(raw)
        except ProtocolError as err:
            if sender == client and ppcb.session_of(raw) == session:  # invalid DATA from our client → RJT, end
                send(ppcb.pack("RJT", session, packet_no=expected))
                result.receiver_error = f"invalid packet: {err}"
                break
            continue
        if packet.kind == "CONN":
            if packet.session_id != session:
                send(ppcb.pack("CONRJT", packet.session_id), sender)   # busy: someone else
            continue                                                   # our own CONN again: duplicate
        if packet.kind != "DATA":
            continue
        if packet.session_id != session or sender != client:
            send(ppcb.pack("RJT", packet.session_id, packet_no=packet.packet_no), sender)
            continue
        result.packets_received += 1
        result.bytes_received += len(packet.data)
        if packet.packet_no < expected:                   # a duplicate: ignore it
            result.duplicates += 1
            continue
        if packet.packet_no > expected or len(packet.data) > total - received:
            result.out_of_order += packet.packet_no > expected
            if packet.packet_no > expected:
                result.metadata["first_missing_packet"] = expected
            send(ppcb.pack("RJT", session, packet_no=packet.packet_no))
            result.receiver_error = (f"packet {packet.packet_no} arrived, expected {expected} "
                                     "(a datagram was lost or reordered)" if packet.packet_no > expected else
                                     f"packet {packet.packet_no} carries {len(packet.data)} B, "
                                     f"only {total - received} B were left to send")
            break
        if out is not None:
            out.write(packet.data)
        result.receive_times_s.append(time.time())
        received += len(packet.data)
        expected += 1
        if reliable:
            last_reply, resends = ppcb.pack("ACC", session, packet_no=packet.packet_no), 0
            send(last_reply)
        last_sent = time.monotonic()
    else:
        result.receiver_end_time_s = time.time()
        if out is not None and hasattr(out, "flush"):
            out.flush()
        send(ppcb.pack("RCVD", session))
        result.ok = True
    result.bytes_delivered = received
    if result.receiver_end_time_s is None:
        result.receiver_end_time_s = time.time()
    result.receiver_cpu_s, result.receiver_syscalls = meter.stop(), meter.calls
    return result


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
