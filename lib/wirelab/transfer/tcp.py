"""PPCB over TCP: the server and the client (notebooks/ppcb-protocol.md, "What each side does").

Client: connect → CONN(protocol 1) → wait CONACC → send every DATA without
waiting → wait RCVD. Server: one connection at a time (others wait in the
listen queue); each read is bounded by MAX_WAIT; a wrong DATA gets RJT and
the connection is closed; a client's error never stops the server.

    python -m wirelab.transfer.tcp serve 5000 > received.bin
    python -m wirelab.transfer.tcp send 127.0.0.1 5000 < file.bin
"""
from __future__ import annotations

import select
import socket
import sys
import threading
import time

from ..errors import ProtocolError, TransferError, UsageError
from . import ppcb
from .measure_wire import MAGIC
from .result import Result
from .silence import Snapshot, await_answer, snapshot, timeout_error
from .sockets import (DEFAULT_HOST, Meter, bind, buffer_sizes, congestion_control, hand_over, open_socket,
                      waiting_on)

__all__ = ["listen_tcp", "serve_tcp", "serve_tcp_connection", "send_tcp", "StreamReader", "read_packet",
           "TCP_LEAST_WAIT_S"]

#: The shortest MAX_WAIT that lets TCP recover a lost SYN: its initial RTO is 1 s (RFC 6298
#: §2.1) and the retransmitted SYN's doubles (§5.5), so 1 s + 2 s. A smaller MAX_WAIT turns one
#: lost packet, which TCP itself repairs, into a failed transfer.
TCP_LEAST_WAIT_S = 3.0


class StreamReader:
    """Reads exact byte counts from a TCP socket through one buffer (few recv calls).

    A wait that times out says whether the peer stalled or was still receiving what this end
    queued (``silence.py``): call ``mark()`` when a wait for an answer begins, after sending."""

    def __init__(self, sock: socket.socket, meter: Meter, prefix: bytes = b""):
        self.sock, self.meter, self.buf = sock, meter, bytearray(prefix)
        self.marked: Snapshot | None = None
        self.waiting_for: str | None = None

    def mark(self, waiting_for: str) -> None:
        """The peer's progress now: a later timeout compares against it (one getsockopt)."""
        self.marked, self.waiting_for = snapshot(self.sock), waiting_for

    def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            self.buf += self._receive(self.sock.recv, max(262144, n - len(self.buf)))
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read_into(self, view: memoryview, most: int | None = None) -> None:
        """Fill ``view`` exactly, receiving straight into it (no extra copy: the fast path), at
        most ``most`` bytes per recv (a reader's length, as iperf 2's ``-l`` at the server)."""
        have = min(len(self.buf), len(view))
        if have:
            view[:have] = self.buf[:have]
            del self.buf[:have]
        try:
            while have < len(view):
                have += self._receive(self.sock.recv_into, view[have:have + most] if most else view[have:])
        except TransferError:
            self.buf[:0] = view[:have]        # a part read stays readable: the stream keeps its framing
            raise

    def _receive(self, receive, arg):
        """One recv/recv_into; a timeout, an error or an empty read become TransferError."""
        try:
            got = receive(arg)
        except socket.timeout:
            after = snapshot(self.sock) if self.marked is not None else None
            raise timeout_error(self.sock.gettimeout() or 0.0, self.marked, after,
                                waiting_for=self.waiting_for) from None
        except OSError as err:
            raise TransferError(f"connection closed ({err.strerror})", "the peer went away") from None
        self.meter.call()
        if not got:
            raise TransferError("connection closed by the peer", "the peer went away mid-transfer")
        return got


def read_packet(reader: StreamReader, *, header_only: bool = False) -> ppcb.Packet:
    """One PPCB packet from the stream: the type byte says how much header follows.
    With ``header_only`` a DATA's body is left unread (``packet.data`` is None)."""
    first = reader.read(1)
    raw = first + reader.read(ppcb.header_size(first[0]) - 1)
    packet = ppcb.unpack(raw, stream=True)
    if packet.kind == "DATA" and not header_only:
        return ppcb.unpack(raw + reader.read(packet.data_len))
    return packet


# --------------------------------------------------------------------- server
def listen_tcp(host: str = DEFAULT_HOST, port: int = 0, *, rcvbuf: int | None = None,
               sndbuf: int | None = None, backlog: int = 8) -> socket.socket:
    """A listening socket (port 0: any free port; read it with ``getsockname()``)."""
    sock = open_socket("tcp", sndbuf=sndbuf, rcvbuf=rcvbuf)
    bind(sock, host, port)
    sock.listen(backlog)
    return sock


def serve_tcp(sock: socket.socket, *, out=None, max_wait: float = 5.0, sessions: int | None = None,
              stop: threading.Event | None = None, on_result=None, log=None, progress=None) -> int:
    """Serve clients one after another on a listening socket until ``stop`` is
    set or ``sessions`` clients were served. ``out``: a binary file (or None to
    discard) that receives each client's bytes. ``on_result(result)`` is called
    after each client; ``log(line)`` gets one line per client error. ``progress``: a
    ``progress.Progress`` a measurement session counts its records into (a file's
    bytes are counted by ``out``). Returns the number of clients served."""
    from .measure_server import serve_measure_tcp   # wirelab's measurement modes, same port
    served = 0        # results are handed to on_result, never kept: a long-running server stays small
    while (sessions is None or served < sessions) and not (stop and stop.is_set()):
        ready, _, _ = select.select(waiting_on(sock, stop), [], [], 0.1)   # wake up to notice `stop`
        if sock not in ready:
            continue
        try:
            conn, addr = sock.accept()
        except OSError:                    # the client gave up before we got to it
            continue
        with conn:
            conn.settimeout(max_wait)
            meter = Meter()
            reader = StreamReader(conn, meter)
            try:
                first = reader.read(1)
                reader.buf[:0] = first
                if first[0] == MAGIC:
                    result = serve_measure_tcp(conn, reader, meter, max_wait=max_wait, progress=progress)
                else:
                    result = serve_tcp_connection(conn, reader, meter, out=out, max_wait=max_wait)
            except TransferError as err:   # nothing at all arrived, or closed before CONN
                result = Result("tcp", receiver_error=str(err), max_wait_s=max_wait)
            except Exception as err:       # noqa: BLE001 - a client must never stop the server
                result = Result("tcp", receiver_error=f"internal error on this client: {err!r}")
        hand_over(result, addr, log, on_result)
        served += 1
    return served


def serve_tcp_connection(conn: socket.socket, reader: StreamReader, meter: Meter, *, out=None,
                         max_wait: float = 5.0) -> Result:
    """One client, from CONN to RCVD. Never raises for the client's mistakes:
    they end up in ``result.receiver_error``."""
    result = Result("tcp", max_wait_s=max_wait, bytes_received=0, bytes_delivered=0,
                    packets_received=0, duplicates=0, out_of_order=0)
    result.sndbuf_granted_bytes, result.rcvbuf_granted_bytes = buffer_sizes(conn)
    session, received = None, 0      # bytes so far (never allocate CONN's total_length)
    try:
        conn_packet = read_packet(reader)
        result.receiver_start_time_s = time.time()
        if conn_packet.kind != "CONN":
            raise ProtocolError(f"expected CONN, got {conn_packet.kind}", "start with CONN")
        session, total = conn_packet.session_id, conn_packet.total_length
        result.metadata["session_id"] = session.hex()
        if conn_packet.protocol_id != ppcb.PROTOCOL_IDS["tcp"]:
            conn.sendall(ppcb.pack("CONRJT", session))
            meter.call()
            raise ProtocolError(f"protocol_id {conn_packet.protocol_id} on a tcp server",
                                "use protocol_id 1 over TCP")
        conn.sendall(ppcb.pack("CONACC", session))
        meter.call()
        expected = 0                     # the next packet_no
        while received < total:
            try:
                header = read_packet(reader, header_only=True)
            except ProtocolError:                 # unknown type, data_len 0 or > 64000
                conn.sendall(ppcb.pack("RJT", session, packet_no=expected))
                meter.call()
                raise
            if (header.kind != "DATA" or header.session_id != session or header.packet_no != expected
                    or header.data_len > total - received):
                number = header.packet_no if header.packet_no is not None else expected
                conn.sendall(ppcb.pack("RJT", session, packet_no=number))
                meter.call()
                raise ProtocolError(f"bad DATA (kind {header.kind}, packet {header.packet_no}, "
                                    f"expected {expected}, {header.data_len} B with "
                                    f"{total - received} B left)", "the client sent RJT")
            data = reader.read(header.data_len)
            now = time.time()
            if out is not None:
                out.write(data)
            received += len(data)
            expected += 1
            result.receive_times_s.append(now)
        result.receiver_end_time_s = time.time()
        if out is not None and hasattr(out, "flush"):
            out.flush()
        conn.sendall(ppcb.pack("RCVD", session))
        meter.call()
        result.ok = True
    except (TransferError, ProtocolError) as err:
        result.receiver_error = str(err)
    except OSError as err:
        result.receiver_error = f"connection closed ({err.strerror})"
    meter.stop()
    result.packets_received = len(result.receive_times_s)
    result.bytes_received = result.bytes_delivered = received
    result.receiver_cpu_s, result.receiver_syscalls = meter.cpu_s, meter.calls
    if result.receiver_end_time_s is None:
        result.receiver_end_time_s = time.time()
    return result


# --------------------------------------------------------------------- client
def send_tcp(host: str, port: int, data: bytes, *, max_wait: float = 5.0, chunk: int = 1000,
             sndbuf: int | None = None, rcvbuf: int | None = None, congestion: str | None = None,
             session_id: bytes | None = None, progress=None) -> Result:
    """Send ``data`` to a PPCB tcp server; return the sender's Result (``ok`` after RCVD).
    ``progress``: a ``progress.Progress`` reporting the bytes sent and the kernel's view of
    the connection (TCP_INFO) every interval, from CONACC to RCVD."""
    if not 1 <= chunk <= ppcb.MAX_DATA:
        raise UsageError(f"chunk {chunk} B outside 1..{ppcb.MAX_DATA}", "use --packet 1000")
    session = session_id or ppcb.new_session_id()
    view = memoryview(data)
    result = Result("tcp", bytes_offered=len(data), packet_bytes=chunk, max_wait_s=max_wait,
                    sndbuf_requested_bytes=sndbuf, rcvbuf_requested_bytes=rcvbuf,
                    metadata={"session_id": session.hex(), "server": f"{host}:{port}"})
    meter = Meter()
    sock = open_socket("tcp", sndbuf=sndbuf, rcvbuf=rcvbuf, congestion=congestion)
    try:
        sock.settimeout(max_wait)
        result.sender_start_time_s = time.time()
        sock.connect((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # no Nagle delay on the last bytes
        result.congestion_control = congestion_control(sock)
        result.sndbuf_granted_bytes, result.rcvbuf_granted_bytes = buffer_sizes(sock)
        reader = StreamReader(sock, meter)
        sock.sendall(ppcb.pack("CONN", session, protocol_id=ppcb.PROTOCOL_IDS["tcp"], total_length=len(data)))
        meter.call()
        reply = read_packet(reader)
        if reply.kind != "CONACC" or reply.session_id != session:
            raise ProtocolError(f"expected CONACC, got {reply.kind}", "the server refused the connection")
        if progress is not None:
            progress.watch(sock)
            progress.count = lambda: result.bytes_sent
            progress.start()
        try:
            for number, offset in enumerate(range(0, len(data), chunk)):
                piece = view[offset:offset + chunk]
                result.send_times_s.append(time.time())
                sock.sendall(ppcb.data_header(session, number, len(piece)) + piece)
                meter.call()
                result.bytes_sent += len(piece)
                result.packets_sent += 1
            result.last_data_time_s = time.time()
        except OSError:                   # the server hung up: did it say why (RJT) first?
            sock.settimeout(0.1)
            try:
                reply = read_packet(reader)
            except TransferError:
                raise TransferError("connection closed by the server mid-transfer",
                                    "the server died or stopped reading") from None
            raise ProtocolError(f"server answered {reply.kind}"
                                + (f" for packet {reply.packet_no}" if reply.packet_no is not None else "")
                                + " and closed the connection", "the server rejected the transfer") from None
        # RCVD comes after every byte still queued here: MAX_WAIT bounds the peer's silence, and a
        # peer that keeps acknowledging them is not silent (silence.py: bounded by their drain)
        if not reader.buf:
            await_answer(sock, max_wait, "RCVD")
        reply = read_packet(reader)
        if reply.kind != "RCVD" or reply.session_id != session:
            raise ProtocolError(f"expected RCVD, got {reply.kind}"
                                + (f" for packet {reply.packet_no}" if reply.packet_no is not None else ""),
                                "the server rejected the transfer")
        result.ok = True
    except TransferError as err:
        result.error = str(err)
    except socket.timeout:
        result.error = "timeout: the server did not answer within MAX_WAIT: is it running and free?"
    except OSError as err:
        result.error = f"connection failed ({err.strerror}): is the server running on {host}:{port}?"
    finally:
        if progress is not None:         # its last record reads the socket: before it closes
            result.metadata["progress"] = progress.stop()
        sock.close()
    result.sender_end_time_s = time.time()
    result.first_data_time_s = result.send_times_s[0] if result.send_times_s else None
    result.sender_cpu_s, result.sender_syscalls = meter.stop(), meter.calls
    return result


def main(argv: list[str] | None = None) -> int:
    """``serve PORT [HOST]`` or ``send HOST PORT`` (stdin → server → stdout), as the assignment's programs."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"] and len(argv) in (2, 3):          # optional HOST: loopback by default
        sock = listen_tcp(argv[2] if len(argv) == 3 else DEFAULT_HOST, int(argv[1]))
        try:
            serve_tcp(sock, out=sys.stdout.buffer, log=lambda line: print(line, file=sys.stderr))
        except KeyboardInterrupt:
            return 0
        finally:
            sock.close()
    if argv[:1] == ["send"] and len(argv) == 3:
        result = send_tcp(argv[1], int(argv[2]), sys.stdin.buffer.read())
        if not result.ok:
            print(f"ERROR: {result.error}", file=sys.stderr)
        return 0 if result.ok else 1
    print("usage: python -m wirelab.transfer.tcp serve PORT [HOST] | send HOST PORT < file", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
