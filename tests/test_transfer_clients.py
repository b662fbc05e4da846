"""The tcp, udp and udpr clients against hand-written servers (notebooks/ppcb-protocol.md)."""
import socket
import struct
import threading
import time

import pytest

import ppcb_raw as raw
from ppcb_raw import recv_exact, recv_within
from wirelab.transfer import send_tcp, send_udp

W = 0.15
R = 3


def in_thread(fn, *args, **kwargs):
    out = []
    t = threading.Thread(target=lambda: out.append(fn(*args, **kwargs)), daemon=True)
    t.start()
    return t, out


@pytest.fixture
def tcp_listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(2)
    s.settimeout(3)
    yield s, s.getsockname()[1]
    s.close()


@pytest.fixture
def udp_server():
    s = raw.udp_peer(timeout=3)
    yield s, s.getsockname()[1]
    s.close()


def read_conn_tcp(c):
    head = recv_exact(c, 18)
    kind, sid, proto, total = struct.unpack(">B8sBQ", head)
    return kind, sid, proto, total


def read_data_tcp(c):
    kind, sid, no, n = struct.unpack(">B8sQI", recv_exact(c, 21))
    return kind, sid, no, recv_exact(c, n)


# ----------------------------------------------------------------- tcp client
def test_tcp_client_speaks_the_spec(tcp_listener):
    s, port = tcp_listener
    t, out = in_thread(send_tcp, "127.0.0.1", port, b"0123456789", chunk=4, max_wait=2)
    c, _ = s.accept()
    kind, sid, proto, total = read_conn_tcp(c)
    assert (kind, proto, total) == (1, 1, 10)
    c.sendall(raw.conacc(sid))
    chunks = [read_data_tcp(c) for _ in range(3)]         # all DATA without waiting for anything
    assert [(k, s_, no) for k, s_, no, _ in chunks] == [(4, sid, 0), (4, sid, 1), (4, sid, 2)]
    assert b"".join(d for *_, d in chunks) == b"0123456789"
    c.sendall(raw.rcvd(sid))
    t.join(3)
    assert out[0].ok and out[0].packets_sent == 3
    c.close()


@pytest.mark.parametrize("answer,expected", [("conrjt", "CONRJT"), ("rjt", "RJT"), ("close", "closed"),
                                             ("silence", "timeout")])
def test_tcp_client_errors(tcp_listener, answer, expected):
    s, port = tcp_listener
    t, out = in_thread(send_tcp, "127.0.0.1", port, b"abc", max_wait=W)
    c, _ = s.accept()
    _, sid, _, _ = read_conn_tcp(c)
    if answer == "conrjt":
        c.sendall(raw.conrjt(sid))
    elif answer == "rjt":
        c.sendall(raw.conacc(sid))
        read_data_tcp(c)
        c.sendall(raw.rjt(0, sid))
    elif answer == "close":
        c.sendall(raw.conacc(sid))
        c.close()
    t.join(5)
    assert not out[0].ok and expected in out[0].error
    c.close()


def test_tcp_client_with_no_server_fails_cleanly():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    result = send_tcp("127.0.0.1", port, b"x", max_wait=W)
    assert not result.ok and "server running" in result.error


# ----------------------------------------------------------------- udp client
def test_udp_client_sends_everything_then_waits_rcvd(udp_server):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abcdefg", proto="udp", chunk=3, max_wait=2)
    msg, addr = s.recvfrom(100)
    kind, sid, proto, total = struct.unpack(">B8sBQ", msg)
    assert (kind, proto, total) == (1, 2, 7)
    s.sendto(raw.conacc(sid), addr)
    got = [s.recvfrom(100)[0] for _ in range(3)]          # no ACC needed between them
    assert got == [raw.data(0, b"abc", sid), raw.data(1, b"def", sid), raw.data(2, b"g", sid)]
    s.sendto(raw.rcvd(sid), addr)
    t.join(3)
    assert out[0].ok


@pytest.mark.parametrize("reply", ["conrjt", "rjt"])
def test_udp_client_rjt_or_conrjt_is_an_error(udp_server, reply):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abc", proto="udp", max_wait=2)
    msg, addr = s.recvfrom(100)
    sid = msg[1:9]
    if reply == "conrjt":
        s.sendto(raw.conrjt(sid), addr)
    else:
        s.sendto(raw.conacc(sid), addr)
        s.recvfrom(100)
        s.sendto(raw.rjt(0, sid), addr)
    t.join(3)
    assert not out[0].ok and reply.upper() in out[0].error


def test_udp_client_does_not_resend_conn(udp_server):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abc", proto="udp", max_wait=W, max_retransmits=R)
    assert s.recvfrom(100)[0][9] == 2
    assert recv_within(s, 3 * W) is None
    t.join(3)
    assert not out[0].ok and "CONACC" in out[0].error


# ----------------------------------------------------------------- udpr client
def test_udpr_client_resends_conn_then_stops_and_waits_per_packet(udp_server):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abcdef", proto="udpr", chunk=3,
                       max_wait=W, max_retransmits=R)
    first, addr = s.recvfrom(100)
    assert first[0] == 1 and first[9] == 3
    again, _ = s.recvfrom(100)                            # no CONACC: CONN again after MAX_WAIT
    assert again == first
    sid = first[1:9]
    s.sendto(raw.conacc(sid), addr)
    assert s.recvfrom(100)[0] == raw.data(0, b"abc", sid)
    assert recv_within(s, W / 3) is None                  # stop-and-wait: nothing more yet
    s.sendto(raw.conacc(sid), addr)                       # a repeated CONACC: ignored
    s.sendto(raw.acc(0, sid), addr)
    assert s.recvfrom(100)[0] == raw.data(1, b"def", sid)
    s.sendto(raw.acc(0, sid), addr)                       # an older ACC: ignored, DATA 1 resent later
    assert s.recvfrom(100)[0] == raw.data(1, b"def", sid)
    s.sendto(raw.acc(1, sid), addr)
    s.sendto(raw.rcvd(sid), addr)
    t.join(3)
    assert out[0].ok and out[0].retransmissions == 1 and out[0].packets_sent == 3


def test_udpr_client_fails_after_max_retransmits_max_wait_apart(udp_server):
    """A server that stops acking: one send plus MAX_RETRANSMITS resends, MAX_WAIT apart."""
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abc", proto="udpr", max_wait=W, max_retransmits=R)
    conn, addr = s.recvfrom(100)
    sid = conn[1:9]
    s.sendto(raw.conacc(sid), addr)
    times = []
    while (msg := recv_within(s, 6 * W)) is not None:
        assert msg == raw.data(0, b"abc", sid)
        times.append(time.monotonic())
    t.join(3)
    assert len(times) == R + 1
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(0.8 * W < g < 5 * W for g in gaps), gaps          # MAX_WAIT apart (wide: shared CPUs)
    assert not out[0].ok and out[0].error.startswith("timeout") and out[0].retransmissions == R


def test_udpr_client_rjt_is_an_error(udp_server):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abc", proto="udpr", max_wait=1)
    conn, addr = s.recvfrom(100)
    s.sendto(raw.conacc(conn[1:9]), addr)
    s.recvfrom(100)
    s.sendto(raw.rjt(0, conn[1:9]), addr)
    t.join(3)
    assert not out[0].ok and "RJT" in out[0].error


def test_udpr_client_accepts_rcvd_when_the_last_acc_was_lost(udp_server):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abc", proto="udpr", max_wait=1)
    conn, addr = s.recvfrom(100)
    sid = conn[1:9]
    s.sendto(raw.conacc(sid), addr)
    s.recvfrom(100)
    s.sendto(raw.rcvd(sid), addr)                         # ACC(0) lost, RCVD arrives
    t.join(3)
    assert out[0].ok


def test_client_ignores_packets_of_other_sessions_and_garbage(udp_server):
    s, port = udp_server
    t, out = in_thread(send_udp, "127.0.0.1", port, b"abc", proto="udpr", max_wait=1)
    conn, addr = s.recvfrom(100)
    sid = conn[1:9]
    s.sendto(raw.conrjt(raw.OTHER), addr)                 # not ours
    s.sendto(b"\x09junk", addr)
    s.sendto(raw.conacc(sid), addr)
    s.recvfrom(100)
    s.sendto(raw.acc(0, sid), addr)
    s.sendto(raw.rcvd(sid), addr)
    t.join(3)
    assert out[0].ok
