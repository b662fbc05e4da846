"""Every transition of the udp server's state machine (notebooks/ppcb-protocol.md), driven by
hand-made datagrams."""
import pytest

import ppcb_raw as raw
from ppcb_raw import recv_within, wait_for
from wirelab.transfer import start_server

W = 0.2        # MAX_WAIT in these tests
R = 2          # MAX_RETRANSMITS


@pytest.fixture
def server():
    class Sink:
        def __init__(self):
            self.data = bytearray()

        def write(self, b):
            self.data += b
    sink = Sink()
    port, stop, thread, results = start_server("udp", out=sink, max_wait=W, max_retransmits=R)
    yield port, results, sink
    stop.set()
    thread.join(2)
    assert not thread.is_alive()


def test_udpr_happy_path_conacc_acc_each_then_rcvd_once(server):
    port, results, sink = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=6))
    assert c.recv(100) == raw.conacc()
    c.send(raw.data(0, b"abc"))
    assert c.recv(100) == raw.acc(0)
    c.send(raw.data(1, b"def"))
    assert c.recv(100) == raw.acc(1)              # after the last DATA: its ACC, then RCVD
    assert c.recv(100) == raw.rcvd()
    assert recv_within(c, 2 * W) is None              # RCVD once, no resends: the server is idle
    assert wait_for(lambda: results)
    assert results[0].ok and results[0].proto == "udpr" and bytes(sink.data) == b"abcdef"


def test_udp_happy_path_no_acc_only_rcvd(server):
    port, results, sink = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=2, total=4))
    assert c.recv(100) == raw.conacc()
    c.send(raw.data(0, b"ab"))
    c.send(raw.data(1, b"cd"))
    assert c.recv(100) == raw.rcvd()
    assert wait_for(lambda: results) and results[0].ok and bytes(sink.data) == b"abcd"


def test_back_to_idle_after_rcvd_serves_the_next_client(server):
    port, results, _ = server
    for sid in (raw.SID, raw.OTHER):
        c = raw.udp_peer(port)
        c.send(raw.conn(sid, proto=3, total=1))
        assert c.recv(100) == raw.conacc(sid)
        c.send(raw.data(0, b"x", sid=sid))
        assert c.recv(100) == raw.acc(0, sid)
        assert c.recv(100) == raw.rcvd(sid)
    assert wait_for(lambda: len(results) == 2)


def test_idle_ignores_everything_but_conn(server):
    port, results, _ = server
    c = raw.udp_peer(port)
    for junk in (raw.data(0, b"x"), raw.acc(0), b"", b"\x09garbage", raw.conn()[:10]):
        c.send(junk)
    assert recv_within(c, 0.1) is None
    c.send(raw.conn(proto=2, total=1))
    assert c.recv(100) == raw.conacc()


def test_conn_from_another_session_while_busy_gets_conrjt_with_its_own_id(server):
    port, results, _ = server
    a, b = raw.udp_peer(port), raw.udp_peer(port)
    a.send(raw.conn(proto=3, total=2))
    assert a.recv(100) == raw.conacc()
    b.send(raw.conn(raw.OTHER, proto=3, total=2))
    assert b.recv(100) == raw.conrjt(raw.OTHER)
    a.send(raw.data(0, b"ok"))                      # the served client goes on
    assert a.recv(100) == raw.acc(0) and a.recv(100) == raw.rcvd()


def test_data_from_another_session_gets_rjt_and_the_served_client_goes_on(server):
    port, results, sink = server
    a, b = raw.udp_peer(port), raw.udp_peer(port)
    a.send(raw.conn(proto=3, total=2))
    assert a.recv(100) == raw.conacc()
    b.send(raw.data(0, b"zz", sid=raw.OTHER))
    assert b.recv(100) == raw.rjt(0, raw.OTHER)
    b.send(raw.data(0, b"zz", sid=raw.SID))          # our session id from a foreign address
    assert b.recv(100) == raw.rjt(0, raw.SID)
    a.send(raw.data(0, b"ok"))
    assert a.recv(100) == raw.acc(0) and a.recv(100) == raw.rcvd()
    assert bytes(sink.data) == b"ok"


@pytest.mark.parametrize("proto", [2, 3])
def test_out_of_order_data_gets_rjt_and_ends_the_session(server, proto):
    port, results, sink = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=proto, total=2))
    assert c.recv(100) == raw.conacc()
    c.send(raw.data(1, b"b"))
    assert c.recv(100) == raw.rjt(1)
    assert wait_for(lambda: results) and not results[0].ok and "expected 0" in results[0].receiver_error
    c.send(raw.data(0, b"a"))                        # the session is over: ignored
    assert recv_within(c, W / 2) is None
    d = raw.udp_peer(port)                            # and the server is idle again
    d.send(raw.conn(raw.OTHER, proto=proto, total=1))
    assert d.recv(100) == raw.conacc(raw.OTHER)
    assert bytes(sink.data) == b""


@pytest.mark.parametrize("bad", [raw.data(0, b"abc", data_len=9),        # data_len beyond the datagram
                                 raw.data(0, b"x" * 11),                  # more than total_length
                                 raw.data(0, b"", data_len=0)])           # empty DATA
def test_invalid_data_from_the_current_session_gets_rjt_and_ends_it(server, bad):
    port, results, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=10))
    assert c.recv(100) == raw.conacc()
    c.send(bad)
    assert c.recv(100) == raw.rjt(0)
    assert wait_for(lambda: results) and not results[0].ok


def test_udpr_duplicates_are_ignored(server):
    port, results, sink = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=2))
    assert c.recv(100) == raw.conacc()
    c.send(raw.conn(proto=3, total=2))                # repeated CONN: no answer
    assert recv_within(c, W / 2) is None
    c.send(raw.data(0, b"a"))
    assert c.recv(100) == raw.acc(0)
    c.send(raw.data(0, b"a"))                         # lower number: ignored
    assert recv_within(c, W / 2) is None
    c.send(raw.data(1, b"b"))
    assert c.recv(100) == raw.acc(1) and c.recv(100) == raw.rcvd()
    assert bytes(sink.data) == b"ab"
    assert wait_for(lambda: results) and results[0].duplicates == 1


def test_udpr_silence_resends_last_reply_max_retransmits_times_then_drops(server):
    port, results, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=2))
    assert c.recv(100) == raw.conacc()
    for _ in range(R):                                # CONACC again, MAX_WAIT apart
        assert recv_within(c, 3 * W) == raw.conacc()
    c.send(raw.data(0, b"a"))
    assert c.recv(100) == raw.acc(0)
    for _ in range(R):                                # now the last ACC is what gets resent
        assert recv_within(c, 3 * W) == raw.acc(0)
    assert recv_within(c, 3 * W) is None             # then the connection is dropped
    assert wait_for(lambda: results) and "timeout" in results[0].receiver_error
    c.send(raw.conn(raw.OTHER, proto=3, total=1))     # idle again
    assert c.recv(100) == raw.conacc(raw.OTHER)


def test_udp_silence_drops_the_connection_without_resending(server):
    port, results, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=2, total=2))
    assert c.recv(100) == raw.conacc()
    assert recv_within(c, 3 * W) is None
    assert wait_for(lambda: results) and "timeout" in results[0].receiver_error


def test_conn_for_tcp_over_udp_is_refused(server):
    port, _, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=1, total=2))
    assert c.recv(100) == raw.conrjt()


def test_empty_transfer_is_accepted_and_received_at_once(server):
    port, results, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=0))
    assert c.recv(100) == raw.conacc() and c.recv(100) == raw.rcvd()


def test_a_repeat_of_the_last_data_after_rcvd_is_answered_again(server):
    """wirelab's TIME_WAIT-like addition: the client's last ACC/RCVD may be lost."""
    port, results, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=1))
    assert c.recv(100) == raw.conacc()
    c.send(raw.data(0, b"a"))
    assert c.recv(100) == raw.acc(0) and c.recv(100) == raw.rcvd()
    c.send(raw.data(0, b"a"))
    assert c.recv(100) == raw.acc(0) and c.recv(100) == raw.rcvd()


def test_total_length_is_not_allocated(server):
    port, results, _ = server
    c = raw.udp_peer(port)
    c.send(raw.conn(proto=3, total=2 ** 64 - 1))      # a lie: the server must not allocate it
    assert c.recv(100) == raw.conacc()
    c.send(raw.data(0, b"x"))
    assert c.recv(100) == raw.acc(0)


def test_a_one_session_server_stays_to_answer_a_lost_rcvd_then_ends():
    port, stop, thread, results = start_server("udp", max_wait=W, max_retransmits=R, sessions=1)
    try:
        c = raw.udp_peer(port)
        c.send(raw.conn(proto=3, total=1))
        assert c.recv(100) == raw.conacc()
        c.send(raw.data(0, b"a"))
        assert c.recv(100) == raw.acc(0) and c.recv(100) == raw.rcvd()
        assert wait_for(lambda: len(results) == 1, 2)
        c.send(raw.data(0, b"a"))                    # as if that RCVD was lost
        assert c.recv(100) == raw.acc(0) and c.recv(100) == raw.rcvd()
        thread.join(W * (R + 1) + 1.0)               # the linger runs out: the server ends by itself
        assert not thread.is_alive()
    finally:
        stop.set()
        thread.join(2)
