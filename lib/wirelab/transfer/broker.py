"""Document 003's five nodes at the application layer: source, broker, routers, destination.

    s ──TCP── b ──UDP── r1 ──UDP── d        the broker sends message 0 via r1, 1 via r2,
                └─UDP── r2 ──UDP──┘         2 via r1, ...; each ACK returns the way it came

Every node is one small program (``python -m wirelab.transfer.broker ROLE ...``)
that stores and forwards fixed 32-byte messages: it reads a whole message,
then sends it on. The source keeps one message in flight: it sends message
i, waits for ACK i (at most ``--timeout`` s, then counts it lost), then sends
i + 1. It prints one JSON line per message with four timestamps::

    sent     source clock, when message i left the source
    dest_rx  destination clock, when it arrived at d
    dest_tx  destination clock, when d sent its ACK back
    acked    source clock, when the ACK arrived at the source

so RTT = acked − sent, and one-way delay = dest_rx − sent when both clocks
are one (namespaces on one machine share it). ``--clock-offset`` makes the
destination's clock run that many seconds off, as the document's nodes were
(about 4 s apart): then only an estimate of the offset gives one-way delay.

Why one select() loop per node rather than threads (the document's nodes
were multi-threaded): with one message in flight nothing happens at once,
and a loop reads top to bottom. Standard library only.

Each node prints ``ready HOST:PORT`` once listening (port 0: the system picks one).

    python -m wirelab.transfer.broker destination 127.0.0.1:5304
    python -m wirelab.transfer.broker router 127.0.0.1:5302 --next 127.0.0.1:5304
    python -m wirelab.transfer.broker router 127.0.0.1:5303 --next 127.0.0.1:5304
    python -m wirelab.transfer.broker broker 127.0.0.1:5301 --routers 127.0.0.1:5302 127.0.0.1:5303
    python -m wirelab.transfer.broker source 127.0.0.1:5301 --count 1000
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import sys
import time

__all__ = ["MESSAGE", "MESSAGE_BYTES", "MSG", "ACK", "Message", "pack", "unpack", "main"]

#: The whole wire format, one table (big-endian, no padding but the explicit 2 bytes):
#: kind u8 (MSG 1, ACK 2) · via u8 (router the broker chose: 1 or 2, 0 before) · 2 pad ·
#: seq u32 · sent f64 · dest_rx f64 · dest_tx f64  = 32 bytes.
MESSAGE = struct.Struct("!BBxxIddd")
MESSAGE_BYTES = MESSAGE.size
MSG, ACK = 1, 2


class Message:
    """One 32-byte message; ``kind`` is MSG on the way to d and ACK on the way back."""

    __slots__ = ("kind", "via", "seq", "sent", "dest_rx", "dest_tx")

    def __init__(self, kind: int, seq: int, sent: float = 0.0, via: int = 0,
                 dest_rx: float = 0.0, dest_tx: float = 0.0):
        self.kind, self.via, self.seq = kind, via, seq
        self.sent, self.dest_rx, self.dest_tx = sent, dest_rx, dest_tx


def pack(m: Message) -> bytes:
    return MESSAGE.pack(m.kind, m.via, m.seq, m.sent, m.dest_rx, m.dest_tx)


def unpack(raw: bytes) -> Message | None:
    """The message in ``raw``, or None when it is not exactly one of ours."""
    if len(raw) != MESSAGE_BYTES or raw[0] not in (MSG, ACK):
        return None
    kind, via, seq, sent, dest_rx, dest_tx = MESSAGE.unpack(raw)
    return Message(kind, seq, sent, via, dest_rx, dest_tx)


def address(text: str) -> tuple[str, int]:
    """"10.77.1.2:5300" → ("10.77.1.2", 5300)."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:5300")
    return host, int(port)


def udp_socket(bind: tuple[str, int]) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(bind)
    return sock


def ready(sock: socket.socket) -> None:
    """Tell whoever started us that our sockets are open: ``ready HOST:PORT`` on stdout
    (the port the system chose when we were given port 0)."""
    host, port = sock.getsockname()[:2]
    print(f"ready {host}:{port}", flush=True)


def read_exact(conn: socket.socket, n: int) -> bytes:
    """n bytes from a TCP stream, or b"" when the peer closed it."""
    data = b""
    while len(data) < n:
        try:
            chunk = conn.recv(n - len(data))
        except ConnectionError:
            return b""
        if not chunk:
            return b""
        data += chunk
    return data


# ------------------------------------------------------------------ the nodes
def destination(bind, clock_offset: float = 0.0) -> None:
    """d: stamp each message's arrival, answer with its ACK to whoever brought it."""
    sock = udp_socket(bind)
    ready(sock)
    while True:
        raw, sender = sock.recvfrom(64)
        arrived = time.time() + clock_offset
        m = unpack(raw)
        if m is None or m.kind != MSG:
            continue
        m.kind, m.dest_rx = ACK, arrived
        m.dest_tx = time.time() + clock_offset
        sock.sendto(pack(m), sender)


def router(bind, next_hop) -> None:
    """r1, r2: a message from upstream goes on to ``next_hop`` (d); an ACK from d goes back
    to the node that sent that message (the broker)."""
    sock = udp_socket(bind)
    upstream = {}                                  # seq -> who sent us that message
    ready(sock)
    while True:
        raw, sender = sock.recvfrom(64)
        m = unpack(raw)
        if m is None:
            continue
        if m.kind == MSG and sender != next_hop:
            upstream[m.seq] = sender
            sock.sendto(raw, next_hop)              # stored (a whole datagram), now forwarded
        elif m.kind == ACK and m.seq in upstream:
            sock.sendto(raw, upstream.pop(m.seq))


def broker(bind, routers) -> None:
    """b: one source at a time over TCP; message i goes to router i mod 2 over UDP;
    each ACK that comes back goes to the source over TCP."""
    listener = socket.create_server(bind)
    udp = udp_socket(listener.getsockname()[:2])   # same address and port number, UDP
    ready(listener)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # 32 B must not wait (Nagle)
        with conn:
            try:
                serve_source(conn, udp, routers)
            except ConnectionError:
                pass                               # the source went away: wait for the next one


def serve_source(conn: socket.socket, udp: socket.socket, routers) -> None:
    """The broker's work for one connected source, until it closes the connection."""
    turn = 0
    while True:
        readable, _, _ = select.select([conn, udp], [], [])
        if conn in readable:
            raw = read_exact(conn, MESSAGE_BYTES)
            if not raw:
                return                             # the source is done
            m = unpack(raw)
            if m is not None and m.kind == MSG:
                m.via = turn + 1
                udp.sendto(pack(m), routers[turn])
                turn = (turn + 1) % len(routers)
        if udp in readable:
            raw, _ = udp.recvfrom(64)
            m = unpack(raw)
            if m is not None and m.kind == ACK:
                conn.sendall(raw)


def source(broker_address, count: int, timeout: float, out=sys.stdout) -> int:
    """s: send ``count`` messages one at a time; one JSON line per message. Returns how many
    were acknowledged."""
    conn = socket.create_connection(broker_address, timeout=timeout)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    acked_count = 0
    with conn:
        for seq in range(count):
            sent = time.time()
            conn.sendall(pack(Message(MSG, seq, sent)))
            reply, deadline = None, time.monotonic() + timeout
            while reply is None and (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([conn], [], [], left)
                if not readable:
                    break
                raw = read_exact(conn, MESSAGE_BYTES)
                if not raw:
                    print(json.dumps({"seq": seq, "error": "the broker closed the connection"}),
                          file=out, flush=True)
                    return acked_count
                m = unpack(raw)
                if m is not None and m.kind == ACK and m.seq == seq:
                    reply = m                      # (a late ACK of an earlier message is skipped)
            row = {"seq": seq, "sent": sent}
            if reply is None:
                row["lost"] = True
            else:
                acked_count += 1
                row.update(acked=time.time(), via=reply.via, dest_rx=reply.dest_rx, dest_tx=reply.dest_tx)
            print(json.dumps(row), file=out, flush=True)
    return acked_count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wirelab.transfer.broker",
                                     description="Document 003's nodes: 32-byte messages, stored and "
                                                 "forwarded, one in flight.")
    roles = parser.add_subparsers(dest="role", required=True)
    p = roles.add_parser("destination", help="d: answer every message with its ACK")
    p.add_argument("bind", type=address, help="HOST:PORT to listen on (UDP)")
    p.add_argument("--clock-offset", type=float, default=0.0, help="seconds added to this node's clock")
    p = roles.add_parser("router", help="r1/r2: forward messages to --next, ACKs back")
    p.add_argument("bind", type=address, help="HOST:PORT to listen on (UDP)")
    p.add_argument("--next", type=address, required=True, help="the destination's HOST:PORT")
    p = roles.add_parser("broker", help="b: TCP from the source, UDP to the routers in turn")
    p.add_argument("bind", type=address, help="HOST:PORT to listen on (TCP and UDP)")
    p.add_argument("--routers", type=address, nargs="+", required=True, help="each router's HOST:PORT")
    p = roles.add_parser("source", help="s: send the messages, print one JSON line each")
    p.add_argument("broker", type=address, help="the broker's HOST:PORT")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for each ACK")
    args = parser.parse_args(argv)
    try:
        if args.role == "destination":
            destination(args.bind, args.clock_offset)
        elif args.role == "router":
            router(args.bind, args.next)
        elif args.role == "broker":
            broker(args.bind, args.routers)
        else:
            acked = source(args.broker, args.count, args.timeout)
            return 0 if acked == args.count else 1
    except KeyboardInterrupt:
        return 0
    except OSError as err:
        print(f"ERROR: {args.role}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
