"""Document 001 §5: clients and servers that misbehave. Each program fails cleanly,
within its bounds, and a server always goes on to serve the next client."""
import socket
import threading
import time

import pytest

import ppcb_raw as raw
from ppcb_raw import recv_exact, recv_within, wait_for
from wirelab.transfer import HashSink, make_data, send_tcp, send_udp, start_server

W, R = 0.2, 2


@pytest.fixture(params=["tcp", "udp"])
def server(request):
    sink = HashSink()
    port, stop, thread, results = start_server(request.param, out=sink, max_wait=W, max_retransmits=R)
    yield request.param, port, results
    stop.set()
    thread.join(3)
    assert not thread.is_alive()


def send(kind, port, data, proto=None, **kw):
    if kind == "tcp":
        return send_tcp("127.0.0.1", port, data, max_wait=W, **kw)
    return send_udp("127.0.0.1", port, data, proto=proto or "udpr", max_wait=W, max_retransmits=R, **kw)


def test_client_dies_mid_transfer_then_next_client_is_served(server):
    kind, port, results = server
    if kind == "tcp":
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(raw.conn(proto=1, total=3000) + raw.data(0, b"x" * 1000))
        c.close()
    else:
        c = raw.udp_peer(port)
        c.send(raw.conn(proto=3, total=3000))
        assert c.recv(100) == raw.conacc()
        c.send(raw.data(0, b"x" * 1000))
        assert c.recv(100) == raw.acc(0)
        c.close()                                          # and never comes back
    assert wait_for(lambda: results, timeout=W * (R + 3))
    assert not results[0].ok and results[0].bytes_delivered == 1000
    assert send(kind, port, b"next one").ok


def test_client_connects_and_sends_nothing(server):
    kind, port, results = server
    if kind == "tcp":
        c = socket.create_connection(("127.0.0.1", port))
        assert recv_exact(c, 1, timeout=W * 5) == b""       # the server hangs up after MAX_WAIT
        c.close()
        assert wait_for(lambda: results) and "timeout" in results[0].receiver_error
    else:
        c = raw.udp_peer(port)                              # udp: "connects" = CONN, then silence
        c.send(raw.conn(proto=2, total=10))
        assert c.recv(100) == raw.conacc()
        assert wait_for(lambda: results, timeout=W * 5) and "timeout" in results[0].receiver_error
    assert send(kind, port, b"next").ok


def test_second_client_while_one_is_served(server):
    kind, port, results = server
    if kind == "tcp":                                      # tcp: the second one waits its turn
        first = socket.create_connection(("127.0.0.1", port))
        first.sendall(raw.conn(proto=1, total=1))
        assert recv_exact(first, 9) == raw.conacc()
        box = []
        t = threading.Thread(target=lambda: box.append(send_tcp("127.0.0.1", port, b"2", max_wait=3)))
        t.start()
        first.sendall(raw.data(0, b"1"))
        assert recv_exact(first, 9) == raw.rcvd()
        first.close()
        t.join(5)
        assert box[0].ok
    else:                                                  # udp: CONRJT with its own session id
        first = raw.udp_peer(port)
        first.send(raw.conn(proto=3, total=1))
        assert first.recv(100) == raw.conacc()
        second = send(kind, port, b"2")
        assert not second.ok and "CONRJT" in second.error
        first.send(raw.data(0, b"1"))
        assert first.recv(100) == raw.acc(0) and first.recv(100) == raw.rcvd()


def test_foreign_data_gets_rjt_while_the_served_client_completes():
    sink = HashSink()
    port, stop, thread, results = start_server("udp", out=sink, max_wait=1.0, max_retransmits=R)
    data = make_data(3_000_000, seed=1)
    box = []
    try:
        client = threading.Thread(target=lambda: box.append(
            send_udp("127.0.0.1", port, data, proto="udpr", max_wait=1.0, chunk=1000)))
        client.start()
        intruder = raw.udp_peer(port)
        rjts, n, deadline = 0, 0, time.monotonic() + 20
        while not box and time.monotonic() < deadline:     # keep knocking while the client is served
            intruder.send(raw.data(n, b"evil", sid=raw.OTHER))
            rjts += (recv_within(intruder, 0.02) or b"")[:9] == raw.rjt(n, raw.OTHER)[:9]
            n += 1
        client.join(10)
    finally:
        stop.set()
        thread.join(3)
    assert rjts >= 1
    assert box[0].ok and sink.bytes == len(data) and results[0].ok


def test_tcp_server_dies_mid_transfer():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    box = []
    t = threading.Thread(target=lambda: box.append(
        send_tcp("127.0.0.1", s.getsockname()[1], make_data(2_000_000), max_wait=W)))
    t.start()
    c, _ = s.accept()
    sid = recv_exact(c, 18)[1:9]
    c.sendall(raw.conacc(sid))
    recv_exact(c, 5000)
    c.close()                                              # dies
    s.close()
    t.join(5)
    assert not box[0].ok and ("closed" in box[0].error or "connection" in box[0].error)


def test_udpr_server_dies_mid_transfer_client_fails_within_its_bound():
    s = raw.udp_peer()
    box = []
    t = threading.Thread(target=lambda: box.append(send_udp(
        "127.0.0.1", s.getsockname()[1], b"x" * 5000, proto="udpr", max_wait=W, max_retransmits=R)))
    started = time.monotonic()
    t.start()
    msg, addr = s.recvfrom(100)
    sid = msg[1:9]
    s.sendto(raw.conacc(sid), addr)
    s.recvfrom(2000)
    s.sendto(raw.acc(0, sid), addr)
    s.recvfrom(2000)
    s.close()                                              # dies before ACC(1)
    t.join(W * (R + 1) + 3)
    assert box and not box[0].ok
    assert time.monotonic() - started < W * (R + 1) + 2


def test_malformed_packets_never_stop_the_server(server):
    kind, port, results = server
    junk = [b"", b"\x00", b"\x04" + bytes(10), raw.data(0, b"abc", data_len=99), b"\xff" * 30,
            raw.conn(proto=3)[:17], raw.data(0, b"", data_len=0), raw.acc(0) + b"tail"]
    for blob in junk:
        if kind == "tcp":
            with socket.create_connection(("127.0.0.1", port)) as c:
                c.sendall(blob)
                c.shutdown(socket.SHUT_WR)
                recv_exact(c, 100, timeout=W * 5)
        else:
            c = raw.udp_peer(port)
            c.send(blob)
            c.close()
    for _ in range(2):
        assert send(kind, port, make_data(20_000)).ok


def test_fuzzed_datagrams_and_streams_never_stop_the_servers():
    """Random bytes, random PPCB-looking headers and broken measurement HELLOs."""
    from hypothesis import HealthCheck, given, settings, strategies as st
    udp_port, udp_stop, udp_thread, _ = start_server("udp", max_wait=0.2, max_retransmits=1)
    tcp_port, tcp_stop, tcp_thread, _ = start_server("tcp", max_wait=0.2)
    first = st.sampled_from([0, 1, 2, 4, 5, 7, 0x80, 0x82, 0x83, 0x85, 0xFF])
    hellos = st.sampled_from([b'\x80\x00\x00\x00\x02[]', b'\x80\x00\x00\x00\x0e{"packet":"x"}',
                              b'\x80\x00\x00\x00\x0d{"packet":-5}', b'\x80\xff\xff\xff\xff{}',
                              b'\x80\x00\x00\x00\x16{"packet":40,"gro":1}'])
    blobs = st.one_of(hellos, st.tuples(first, st.binary(max_size=80)).map(lambda t: bytes([t[0]]) + t[1]))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(blob=blobs)
    def poke(blob):
        u = raw.udp_peer(udp_port)
        u.send(blob)
        u.close()
        with socket.create_connection(("127.0.0.1", tcp_port), timeout=2) as c:
            c.sendall(blob)
            c.shutdown(socket.SHUT_WR)
            recv_exact(c, 1 << 16, timeout=1.0)
    try:
        poke()
        assert udp_thread.is_alive() and tcp_thread.is_alive()
        assert send_udp("127.0.0.1", udp_port, b"still here", proto="udpr", max_wait=1.0).ok
        assert send_tcp("127.0.0.1", tcp_port, b"still here", max_wait=1.0).ok
    finally:
        udp_stop.set()
        tcp_stop.set()
        udp_thread.join(3)
        tcp_thread.join(3)
