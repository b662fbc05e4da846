"""wirelab.peers: crafted packets laid out by the one table, and every play the grader uses, run
against the kit's own programs on loopback (the lab's stage): the kit meets its own specification."""
import socket
import time

import pytest

import ppcb_raw as raw
from wirelab import link
from wirelab.grade import load_catalogue
from wirelab.labs.stage import KitStage
from wirelab.peers import PLAYS, Failed
from wirelab.peers.packets import OTHER, SID, build, matches, parse, read_stream, show
from wirelab.transfer import ppcb


def test_build_lays_out_what_transfer_ppcb_packs_and_what_it_refuses():
    assert build("CONN", SID, protocol_id=3, total_length=7) == raw.conn(SID, 3, 7)
    assert build("DATA", SID, b"abc", packet_no=2) == raw.data(2, b"abc", SID) == ppcb.pack("DATA", SID, b"abc",
                                                                                         packet_no=2)
    assert build("DATA", SID, b"abc", packet_no=0, data_len=99) == raw.data(0, b"abc", SID, data_len=99)
    assert build(9, SID) == bytes([9]) + SID                     # a type no packet has: type byte, session
    assert build("ACC", OTHER, packet_no=5) == raw.acc(5, OTHER) and build("RCVD", SID) == raw.rcvd(SID)


def test_parse_reads_what_the_header_says_and_show_says_it_in_words():
    lie = parse(raw.data(0, b"abc", SID, data_len=99))
    assert lie.kind == "DATA" and lie.data_len == 99 and lie.data == b"abc"
    assert parse(raw.acc(1) + b"tail").packet_no == 1
    assert parse(b"") is None and parse(b"\x09" + SID) is None and parse(raw.conn()[:10]) is None
    assert show(raw.rjt(2, SID)) == f"RJT(session {SID.hex()}, packet 2)" and show(None) == "nothing"
    assert show(b"\xff" * 3) == "a 3-byte datagram that is no PPCB packet (type byte 255)"
    assert matches(raw.acc(4, OTHER), "ACC", OTHER, 4) and not matches(raw.acc(4, OTHER), "ACC", SID)


def test_read_stream_cuts_a_tcp_stream_into_packets():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(raw.conacc() + raw.data(0, b"hello") + b"\x09" + raw.acc(3)[:5])
        assert read_stream(b, 1.0) == (raw.conacc(), False)
        assert read_stream(b, 1.0) == (raw.data(0, b"hello"), False)
        assert read_stream(b, 1.0) == (b"\x09", False)           # an unknown type ends the read
        a.close()
        assert read_stream(b, 1.0) == (raw.acc(3)[:5], True)     # cut short by the end of the stream


#: Every (play, protocol) the grader's catalogue sets against a student's programs.
USED = sorted({(t.scenario, t.proto) for t in load_catalogue().tests if t.scenario in PLAYS})


@pytest.mark.parametrize("name,proto", USED)
def test_every_play_the_grader_uses_passes_against_the_kit_programs(name, proto):
    kind = "tcp" if proto == "tcp" else "udp"
    with link.open(link.LinkSpec(), backend="loopback") as opened:
        stage = KitStage(opened, proto, opened.free_port("b", kind), max_wait=0.2, retransmits=2,
                         deadline=time.monotonic() + 30)
        try:
            seen = PLAYS[name](stage)
        finally:
            stage.close()
    assert isinstance(seen, dict)
    assert set(stage.readings) <= {"rjt_number", "overlong_tcp", "unknown_type_tcp", "malformed_data",
                                   "resend_count", "foreign_at_client", "error_exit"}


def test_a_play_says_in_words_where_the_program_breaks_the_specification():
    with link.open(link.LinkSpec(), backend="loopback") as opened:
        port = opened.free_port("b", "udp")
        stage = KitStage(opened, "udpr", port, max_wait=0.2, retransmits=2, deadline=time.monotonic() + 10)
        try:
            with pytest.raises(Failed, match="expected CONACC"):    # nobody listens: the play cannot go on
                PLAYS["duplicate_conn"](_without_server(stage))
        finally:
            stage.close()


def _without_server(stage):
    stage.start_server = lambda: None
    return stage
