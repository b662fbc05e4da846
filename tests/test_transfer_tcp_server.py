"""The tcp server's transitions (notebooks/ppcb-protocol.md, "What each side does": tcp), by hand-made packets."""
import socket
import threading

import pytest

import ppcb_raw as raw
from ppcb_raw import recv_exact, wait_for
from wirelab.transfer import send_tcp, start_server

W = 0.3


@pytest.fixture
def server():
    out = bytearray()

    class Sink:
        def write(self, b):
            out.extend(b)
    port, stop, thread, results = start_server("tcp", out=Sink(), max_wait=W)
    yield port, results, out
    stop.set()
    thread.join(3)
    assert not thread.is_alive()


def client(port):
    return socket.create_connection(("127.0.0.1", port), timeout=2)


def test_conn_conacc_data_rcvd_then_close(server):
    port, results, out = server
    with client(port) as c:
        c.sendall(raw.conn(proto=1, total=5))
        assert recv_exact(c, 9) == raw.conacc()
        c.sendall(raw.data(0, b"ab") + raw.data(1, b"cde"))   # sent without waiting
        assert recv_exact(c, 9) == raw.rcvd()
        assert c.recv(10) == b""                              # then the server closes
    assert wait_for(lambda: results) and results[0].ok and bytes(out) == b"abcde"


@pytest.mark.parametrize("bad,why", [
    (raw.data(0, b"ab", sid=raw.OTHER), "session"),
    (raw.data(1, b"ab"), "number"),
    (raw.acc(0) + bytes(4), "type"),
    (raw.data(0, b"abcdef"), "length beyond total"),
    (raw.data(0, b"", data_len=0), "length zero"),
])
def test_wrong_data_gets_rjt_and_close_then_next_client_served(server, bad, why):
    port, results, out = server
    with client(port) as c:
        c.sendall(raw.conn(proto=1, total=5))
        assert recv_exact(c, 9) == raw.conacc()
        c.sendall(bad)
        reply = recv_exact(c, 17)
        assert reply[:1] == b"\x06" and reply[1:9] == raw.SID, why
        assert c.recv(10) == b""
    assert wait_for(lambda: results) and not results[0].ok
    ok = send_tcp("127.0.0.1", port, b"next", max_wait=W)
    assert ok.ok and wait_for(lambda: len(results) == 2) and results[1].ok


def test_unknown_first_byte_closes_and_serves_next(server):
    port, results, _ = server
    with client(port) as c:
        c.sendall(b"\x42" + bytes(40))
        assert c.recv(10) == b""
    assert send_tcp("127.0.0.1", port, b"x", max_wait=W).ok


def test_udp_protocol_id_over_tcp_gets_conrjt(server):
    port, results, _ = server
    with client(port) as c:
        c.sendall(raw.conn(proto=3, total=5))
        assert recv_exact(c, 9) == raw.conrjt()


def test_silent_client_times_out_and_next_is_served(server):
    port, results, _ = server
    with client(port) as c:                               # connects, sends nothing
        assert recv_exact(c, 1, timeout=5 * W) == b""     # closed after MAX_WAIT
    assert wait_for(lambda: results) and "timeout" in results[0].receiver_error
    assert send_tcp("127.0.0.1", port, b"x", max_wait=W).ok


def test_stall_mid_data_times_out(server):
    port, results, _ = server
    with client(port) as c:
        c.sendall(raw.conn(proto=1, total=5))
        assert recv_exact(c, 9) == raw.conacc()
        c.sendall(raw.data(0, b"abc")[:10])                # half a header, then silence
        assert recv_exact(c, 1, timeout=5 * W) == b""
    assert wait_for(lambda: results) and "timeout" in results[0].receiver_error


def test_client_dies_mid_transfer_server_serves_next(server):
    port, results, _ = server
    with client(port) as c:
        c.sendall(raw.conn(proto=1, total=100) + raw.data(0, b"x" * 10))
        assert recv_exact(c, 9) == raw.conacc()
    assert wait_for(lambda: results) and "closed" in results[0].receiver_error
    assert send_tcp("127.0.0.1", port, b"after", max_wait=W).ok


def test_second_client_waits_while_one_is_served(server):
    port, results, out = server
    first = client(port)
    first.sendall(raw.conn(proto=1, total=2))
    assert recv_exact(first, 9) == raw.conacc()
    outcome = []
    second = threading.Thread(target=lambda: outcome.append(send_tcp("127.0.0.1", port, b"22", max_wait=2.0)))
    second.start()
    assert not wait_for(lambda: outcome, timeout=W / 2)   # still queued
    first.sendall(raw.data(0, b"11"))
    assert recv_exact(first, 9) == raw.rcvd()
    first.close()
    second.join(5)
    assert outcome and outcome[0].ok and bytes(out) == b"1122"


def test_huge_total_length_is_not_allocated(server):
    port, results, _ = server
    with client(port) as c:
        c.sendall(raw.conn(proto=1, total=2 ** 64 - 1))
        assert recv_exact(c, 9) == raw.conacc()
        c.sendall(raw.data(0, b"x"))
    assert wait_for(lambda: results) and results[0].bytes_delivered == 1
    assert send_tcp("127.0.0.1", port, b"x", max_wait=W).ok
