"""A student's PPCB client and server (notebooks/ppcb-protocol.md), standard library only.

    ppcbs <tcp|udp> PORT                  received bytes -> stdout
    ppcbc <tcp|udp|udpr> HOST PORT < file exit 0 after RCVD
MAX_WAIT and MAX_RETRANSMITS come from the environment (PPCB_MAX_WAIT,
PPCB_MAX_RETRANSMITS), as the assignment says.
"""
import os
import select
import socket
import struct
import sys
import time

MAX_WAIT = float(os.environ.get("PPCB_MAX_WAIT", "5"))
MAX_RETRANSMITS = int(os.environ.get("PPCB_MAX_RETRANSMITS", "5"))
CHUNK = 1000
CONN, CONACC, CONRJT, DATA, ACC, RJT, RCVD = range(1, 8)
HEADER = {CONN: 18, CONACC: 9, CONRJT: 9, DATA: 21, ACC: 17, RJT: 17, RCVD: 9}
PROTO = {"tcp": 1, "udp": 2, "udpr": 3}


class Error(Exception):
    pass


def short(kind, sid):
    return struct.pack(">B8s", kind, sid)


def numbered(kind, sid, no):
    return struct.pack(">B8sQ", kind, sid, no)


def data_packet(sid, no, body):
    return struct.pack(">B8sQI", DATA, sid, no, len(body)) + body


def parse(raw):
    """(type, sid, fields) of a whole datagram, or None when it is malformed."""
    if not raw or raw[0] not in HEADER or len(raw) < HEADER[raw[0]]:
        return None
    kind, sid = raw[0], raw[1:9]
    if kind == CONN:
        proto, total = struct.unpack(">BQ", raw[9:18])
        return (kind, sid, (proto, total)) if len(raw) == 18 else None
    if kind == DATA:
        no, size = struct.unpack(">QI", raw[9:21])
        ok = 1 <= size <= 64000 and len(raw) == 21 + size
        return (kind, sid, (no, raw[21:])) if ok else (kind, sid, (no, None))
    if kind in (ACC, RJT):
        return (kind, sid, struct.unpack(">Q", raw[9:17])[0]) if len(raw) == 17 else None
    return (kind, sid, None) if len(raw) == 9 else None


def err(message):
    print(f"ERROR: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ client
def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        try:
            part = sock.recv(n - len(buf))
        except socket.timeout:
            raise Error("timeout waiting for the server")
        except OSError as e:
            raise Error(f"connection closed ({e.strerror})")
        if not part:
            raise Error("connection closed by the server")
        buf += part
    return buf


def tcp_client(host, port, data, sid):
    sock = socket.create_connection((host, port), timeout=MAX_WAIT)
    sock.sendall(struct.pack(">B8sBQ", CONN, sid, 1, len(data)))
    reply = recv_exact(sock, 9)
    if reply[0] != CONACC:
        raise Error(f"server answered type {reply[0]} to CONN")
    try:
        for no, off in enumerate(range(0, len(data), CHUNK)):
            sock.sendall(data_packet(sid, no, data[off:off + CHUNK]))
    except OSError:
        pass                                   # the server hung up: read why below
    first = recv_exact(sock, 1)
    rest = recv_exact(sock, HEADER.get(first[0], 9) - 1)
    if first[0] != RCVD:
        raise Error(f"server answered type {first[0]} instead of RCVD")
    del rest


def wait_packet(sock, sid, deadline, accept):
    """The next packet of our session that ``accept`` likes before ``deadline``; None on timeout."""
    while True:
        left = deadline - time.monotonic() if deadline else None
        if left is not None and left <= 0:
            return None
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return None
        packet = parse(sock.recv(65535))
        if packet is None or packet[1] != sid:
            continue
        if packet[0] == CONRJT:
            raise Error("server refused the connection (CONRJT)")
        if packet[0] == RJT:
            raise Error(f"server rejected packet {packet[2]} (RJT)")
        if accept(packet):
            return packet


def exchange(sock, raw, sid, accept, what, reliable):
    """Send ``raw`` and wait for a packet ``accept`` likes; udpr resends on timeout."""
    for _ in range(1 + (MAX_RETRANSMITS if reliable else 0)):
        sock.send(raw)
        packet = wait_packet(sock, sid, time.monotonic() + MAX_WAIT, accept)
        if packet is not None:
            return packet
    raise Error(f"timeout waiting for {what}")


def udp_client(host, port, data, sid, reliable):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect((host, port))
    conn = struct.pack(">B8sBQ", CONN, sid, 3 if reliable else 2, len(data))
    exchange(sock, conn, sid, lambda p: p[0] == CONACC, "CONACC", reliable)
    done = False
    for no, off in enumerate(range(0, len(data), CHUNK)):
        raw = data_packet(sid, no, data[off:off + CHUNK])
        if reliable:
            reply = exchange(sock, raw, sid, lambda p, n=no: (p[0] == ACC and p[2] == n) or p[0] == RCVD,
                             f"ACC {no}", True)
            done = reply[0] == RCVD
        else:
            sock.send(raw)
    if not done and wait_packet(sock, sid, time.monotonic() + MAX_WAIT, lambda p: p[0] == RCVD) is None:
        raise Error("timeout waiting for RCVD")


def client_main(argv):
    if len(argv) != 3 or argv[0] not in PROTO:
        print("usage: ppcbc <tcp|udp|udpr> HOST PORT < file", file=sys.stderr)
        return 2
    data, sid = sys.stdin.buffer.read(), os.urandom(8)
    try:
        if argv[0] == "tcp":
            tcp_client(argv[1], int(argv[2]), data, sid)
        else:
            udp_client(argv[1], int(argv[2]), data, sid, argv[0] == "udpr")
    except (Error, OSError) as e:
        err(e)
        return 1
    return 0


# ------------------------------------------------------------------ server
def tcp_session(conn, out):
    conn.settimeout(MAX_WAIT)
    first = recv_exact(conn, 1)
    raw = first + recv_exact(conn, HEADER.get(first[0], 1) - 1)
    if raw[0] != CONN:
        raise Error("connection did not start with CONN")
    sid, (proto, total) = raw[1:9], struct.unpack(">BQ", raw[9:18])
    if proto != 1:
        conn.sendall(short(CONRJT, sid))
        raise Error(f"protocol {proto} on a tcp server")
    conn.sendall(short(CONACC, sid))
    got, expected = 0, 0
    while got < total:
        first = recv_exact(conn, 1)
        if first[0] != DATA:
            conn.sendall(numbered(RJT, sid, expected))
            raise Error(f"packet of type {first[0]} instead of DATA")
        head = first + recv_exact(conn, 20)
        no, size = struct.unpack(">QI", head[9:21])
        if head[1:9] != sid or no != expected or not 1 <= size <= min(64000, total - got):
            conn.sendall(numbered(RJT, sid, no))
            raise Error(f"bad DATA {no} (expected {expected})")
        out.write(recv_exact(conn, size))
        got, expected = got + size, expected + 1
    out.flush()
    conn.sendall(short(RCVD, sid))


def tcp_server(port, out):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("", port))
    listener.listen(8)
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                tcp_session(conn, out)
            except (Error, OSError) as e:
                out.flush()
                err(e)


class Session:
    def __init__(self, sid, addr, total, reliable):
        self.sid, self.addr, self.total, self.reliable = sid, addr, total, reliable
        self.got, self.expected, self.resends = 0, 0, 0
        self.last = short(CONACC, sid)
        self.last_sent = time.monotonic()


def udp_server(port, out):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("", port))
    s = None
    while True:
        timeout = None if s is None else max(s.last_sent + MAX_WAIT - time.monotonic(), 0)
        ready, _, _ = select.select([sock], [], [], timeout)
        if not ready:                                   # MAX_WAIT of silence
            if s.reliable and s.resends < MAX_RETRANSMITS:
                sock.sendto(s.last, s.addr)
                s.resends, s.last_sent = s.resends + 1, time.monotonic()
            else:
                err(f"timeout: client went silent, session {s.sid.hex()} dropped")
                s = None
            continue
        raw, addr = sock.recvfrom(65535)
        packet = parse(raw)
        if packet is None:
            if s is not None and addr == s.addr and raw[:1] == bytes([DATA]) and raw[1:9] == s.sid:
                sock.sendto(numbered(RJT, s.sid, s.expected), addr)
                err("invalid DATA")
                s = None
            continue
        kind, sid, fields = packet
        if s is None:
            if kind == CONN and fields[0] in (2, 3):
                s = Session(sid, addr, fields[1], fields[0] == 3)
                sock.sendto(s.last, addr)
                if s.total == 0:
                    sock.sendto(short(RCVD, sid), addr)
                    s = None
            continue
        if kind == CONN:
            if sid != s.sid:
                sock.sendto(short(CONRJT, sid), addr)
            continue                                    # our own CONN again: a duplicate
        if kind != DATA:
            continue
        no, body = fields
        if sid != s.sid or addr != s.addr:
            sock.sendto(numbered(RJT, sid, no), addr)
            continue
        if body is not None and no < s.expected and s.reliable:
            continue                                    # a duplicate: ignore
        if body is None or no != s.expected or len(body) > s.total - s.got:
            sock.sendto(numbered(RJT, sid, no), addr)
            err(f"packet {no} rejected (expected {s.expected})")
            s = None
            continue
        out.write(body)
        s.got, s.expected = s.got + len(body), s.expected + 1
        if s.reliable:
            s.last, s.resends = numbered(ACC, sid, no), 0
            sock.sendto(s.last, addr)
        s.last_sent = time.monotonic()
        if s.got == s.total:
            out.flush()
            sock.sendto(short(RCVD, sid), addr)
            s = None


def server_main(argv):
    if len(argv) != 2 or argv[0] not in ("tcp", "udp"):
        print("usage: ppcbs <tcp|udp> PORT > received", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    try:
        (tcp_server if argv[0] == "tcp" else udp_server)(int(argv[1]), out)
    except KeyboardInterrupt:
        return 0
    return 0
