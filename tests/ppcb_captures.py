"""Captures of real PPCB transfers on loopback, and what each one sent (for the dissector's tests).

Every scenario runs wirelab's own server (and, where it can, wirelab's own
client) on 127.0.0.X while dumpcap captures; the misbehaving peers are built
by hand as in test_transfer_misbehaviour.py. ``expected`` lists, per
scenario, the PPCB packets in the order they were sent: (sender, type,
session id, fields). Fixed session ids make the committed capture
(captures/ppcb.pcapng) checkable too:

    python tests/ppcb_captures.py captures/ppcb.pcapng      # as root: remakes it
"""
from __future__ import annotations

import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppcb_raw as raw  # noqa: E402

HOST = "127.0.0.66"
SCENARIOS = ["tcp", "tcp-small-mss", "tcp-conrjt", "tcp-rjt", "udp", "udpr", "udp-conrjt", "udp-rjt"]
SMALL_MSS = 536
BODY = bytes(range(256)) * 8                      # 2048 B: a DATA longer than SMALL_MSS


def _c(kind, sid, **fields):
    return ("client", kind, sid.hex(), fields)


def _s(kind, sid, **fields):
    return ("server", kind, sid.hex(), fields)


def _file(sid, proto, sizes, acks):
    """CONN, CONACC, DATA (and ACC) for each size, RCVD."""
    out = [_c("CONN", sid, protocol_id=proto, total_length=sum(sizes)), _s("CONACC", sid)]
    for no, size in enumerate(sizes):
        out.append(_c("DATA", sid, packet_no=no, data_len=size))
        if acks:
            out.append(_s("ACC", sid, packet_no=no))
    return out + [_s("RCVD", sid)]


EXPECTED = {
    "tcp": _file(b"TCP-FILE", 1, [1000, 1000, 1000, 500], acks=False),
    "tcp-small-mss": _file(b"TCP-MSS5", 1, [2048, 2048, 2048], acks=False),
    "tcp-conrjt": [_c("CONN", b"TCP-UDPR", protocol_id=3, total_length=10), _s("CONRJT", b"TCP-UDPR")],
    "tcp-rjt": [_c("CONN", b"TCP-SKIP", protocol_id=1, total_length=2000), _s("CONACC", b"TCP-SKIP"),
                _c("DATA", b"TCP-SKIP", packet_no=1, data_len=1000), _s("RJT", b"TCP-SKIP", packet_no=1)],
    "udp": _file(b"UDP-FILE", 2, [1000, 1000, 1000, 500], acks=False),
    "udpr": _file(b"UDPRFILE", 3, [1000, 1000, 1000, 500], acks=True),
    "udp-conrjt": [_c("CONN", b"UDPFIRST", protocol_id=3, total_length=5), _s("CONACC", b"UDPFIRST"),
                   _c("CONN", b"UDP-LATE", protocol_id=3, total_length=6), _s("CONRJT", b"UDP-LATE"),
                   _c("DATA", b"UDPFIRST", packet_no=0, data_len=5), _s("ACC", b"UDPFIRST", packet_no=0),
                   _s("RCVD", b"UDPFIRST")],
    "udp-rjt": [_c("CONN", b"UDP-GAPS", protocol_id=3, total_length=4), _s("CONACC", b"UDP-GAPS"),
                _c("DATA", b"UDP-INTR", packet_no=5, data_len=4), _s("RJT", b"UDP-INTR", packet_no=5),
                _c("DATA", b"UDP-GAPS", packet_no=0, data_len=4), _s("ACC", b"UDP-GAPS", packet_no=0),
                _s("RCVD", b"UDP-GAPS")],
}


def _tcp_peer(port, mss=None):
    sock = socket.socket()
    if mss:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
    sock.settimeout(5)
    sock.connect((HOST, port))
    return sock


def _udp_peer(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(5)
    sock.connect((HOST, port))
    return sock


def run_scenarios() -> dict[str, object]:
    """Run every scenario against wirelab's servers; returns each client's Result (or replies)."""
    from wirelab.transfer import make_data, send_tcp, send_udp, start_server

    out, servers, PORTS = {}, [], {}
    for name in SCENARIOS:
        # MAX_WAIT 5 s, the protocol's default: no scenario waits on a timeout, and a loaded
        # machine must not turn a slow reply into a resent CONACC/ACC that nobody sent on purpose
        servers.append(start_server("tcp" if name.startswith("tcp") else "udp", host=HOST,
                                    max_wait=5.0, max_retransmits=3))
        PORTS[name] = servers[-1][0]
    try:
        data = make_data(3500)
        out["tcp"] = send_tcp(HOST, PORTS["tcp"], data, chunk=1000, session_id=b"TCP-FILE", max_wait=5)
        out["udp"] = send_udp(HOST, PORTS["udp"], data, proto="udp", chunk=1000, session_id=b"UDP-FILE",
                              max_wait=5)
        out["udpr"] = send_udp(HOST, PORTS["udpr"], data, proto="udpr", chunk=1000, session_id=b"UDPRFILE",
                               max_wait=5)
        # a client whose packets TCP cuts into 536-byte segments: the dissector must reassemble
        with _tcp_peer(PORTS["tcp-small-mss"], mss=SMALL_MSS) as c:
            c.sendall(raw.conn(b"TCP-MSS5", proto=1, total=3 * len(BODY))
                      + b"".join(raw.data(n, BODY, sid=b"TCP-MSS5") for n in range(3)))
            out["tcp-small-mss"] = raw.recv_exact(c, 18)
        with _tcp_peer(PORTS["tcp-conrjt"]) as c:             # protocol_id udpr on a tcp server
            c.sendall(raw.conn(b"TCP-UDPR", proto=3, total=10))
            out["tcp-conrjt"] = raw.recv_exact(c, 9)
        with _tcp_peer(PORTS["tcp-rjt"]) as c:                # packet 1 where 0 is due
            c.sendall(raw.conn(b"TCP-SKIP", proto=1, total=2000))
            assert raw.recv_exact(c, 9) == raw.conacc(b"TCP-SKIP")
            c.sendall(raw.data(1, b"x" * 1000, sid=b"TCP-SKIP"))
            out["tcp-rjt"] = raw.recv_exact(c, 17)
        with _udp_peer(PORTS["udp-conrjt"]) as first:         # a second client while one is served
            first.send(raw.conn(b"UDPFIRST", proto=3, total=5))
            assert first.recv(100) == raw.conacc(b"UDPFIRST")
            out["udp-conrjt"] = send_udp(HOST, PORTS["udp-conrjt"], b"me too", proto="udpr",
                                         session_id=b"UDP-LATE", max_wait=2.0, max_retransmits=0)
            first.send(raw.data(0, b"hello", sid=b"UDPFIRST"))
            assert first.recv(100) == raw.acc(0, b"UDPFIRST") and first.recv(100) == raw.rcvd(b"UDPFIRST")
        with _udp_peer(PORTS["udp-rjt"]) as c, _udp_peer(PORTS["udp-rjt"]) as intruder:
            c.send(raw.conn(b"UDP-GAPS", proto=3, total=4))   # DATA of another session → RJT to it
            assert c.recv(100) == raw.conacc(b"UDP-GAPS")
            intruder.send(raw.data(5, b"late", sid=b"UDP-INTR"))
            out["udp-rjt"] = intruder.recv(100)
            c.send(raw.data(0, b"abcd", sid=b"UDP-GAPS"))
            assert c.recv(100) == raw.acc(0, b"UDP-GAPS") and c.recv(100) == raw.rcvd(b"UDP-GAPS")
    finally:
        for _port, stop, thread, _results in servers:
            stop.set()
            thread.join(5)
    return out


def capture(path) -> dict[str, object]:
    """Run the scenarios while dumpcap captures ``HOST`` on lo into ``path``; returns their outcomes."""
    from wirelab.capture import LiveCapture

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind((HOST, 0))                                   # probes land here: no ICMP noise
    try:
        with LiveCapture("lo", path, capture_filter=f"host {HOST}",
                         probe=lambda: probe.sendto(b"probe", sink.getsockname())):
            return run_scenarios()
    finally:
        probe.close()
        sink.close()


def decoded(packets, name: str) -> list[tuple]:
    """The dissector's rows of one scenario (its session ids) in the form of EXPECTED; the
    server is the address and port the first CONN went to."""
    sessions = {sid for _, _, sid, _ in EXPECTED[name]}
    rows = packets[packets["session_id"].isin(sessions)]
    if rows.empty:
        return []
    first = rows[rows["type"] == "CONN"].iloc[0]
    server = (first["dst"], first["dport"])
    out = []
    for row in rows.itertuples():
        fields = {f: int(getattr(row, f)) for f in ("protocol_id", "total_length", "packet_no", "data_len")
                  if not _missing(getattr(row, f))}
        out.append(("server" if (row.src, row.sport) == server else "client", row.type, row.session_id, fields))
    return out


def by_sender(entries: list[tuple]) -> dict[str, list[tuple]]:
    """Each end's packets in the order it sent them (the two directions of a TCP connection,
    or a client and a server, interleave as timing has it; each one's own order is fixed)."""
    return {end: [e for e in entries if e[0] == end] for end in ("client", "server")}


def without_the_conn(path, out, packets) -> int:
    """Write ``path`` from the frame after TCP-FILE's CONN on into ``out`` (editcap): a stream seen
    from its middle. ``packets``: ``path``'s PPCB rows; returns the server's port."""
    import subprocess
    tcp = packets[packets["session_id"] == b"TCP-FILE".hex()]
    conn_frame, port = int(tcp["frame"].iloc[0]), int(tcp["dport"].iloc[0])
    subprocess.run(["editcap", "-r", str(path), str(out), f"{conn_frame + 1}-1000000"], check=True,
                   capture_output=True, timeout=60)
    return port


def _missing(value) -> bool:
    import pandas as pd
    return value is None or pd.isna(value)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "captures/ppcb.pcapng")
    results = capture(target)
    print(f"wrote {target}")
    for name, outcome in results.items():
        print(f"  {name}: {getattr(outcome, 'ok', outcome)}")
