"""The PPCB packet table against bytes made by hand from notebooks/ppcb-protocol.md (every row)."""
import pytest
from hypothesis import given, strategies as st

import ppcb_raw as raw
from wirelab.errors import ProtocolError
from wirelab.transfer import ppcb

# (kind, fields for ppcb.pack, hand-made bytes, size from the spec's table)
ROWS = [
    ("CONN", {"protocol_id": 3, "total_length": 123456789}, raw.conn(raw.SID, 3, 123456789), 18),
    ("CONACC", {}, raw.conacc(), 9),
    ("CONRJT", {}, raw.conrjt(), 9),
    ("DATA", {"packet_no": 7, "data": b"hello"}, raw.data(7, b"hello"), 21 + 5),
    ("ACC", {"packet_no": 2 ** 40}, raw.acc(2 ** 40), 17),
    ("RJT", {"packet_no": 0}, raw.rjt(0), 17),
    ("RCVD", {}, raw.rcvd(), 9),
]


def test_table_has_every_packet_of_the_spec_with_its_type_code():
    assert {name: code for name, (code, _, _) in ppcb.TABLE.items()} == {
        "CONN": 1, "CONACC": 2, "CONRJT": 3, "DATA": 4, "ACC": 5, "RJT": 6, "RCVD": 7}
    assert ppcb.PROTOCOL_IDS == {"tcp": 1, "udp": 2, "udpr": 3}
    assert ppcb.HEADER_BYTES == {"CONN": 18, "CONACC": 9, "CONRJT": 9, "DATA": 21, "ACC": 17,
                                 "RJT": 17, "RCVD": 9}


@pytest.mark.parametrize("kind,fields,expected,size", ROWS, ids=[r[0] for r in ROWS])
def test_pack_gives_the_spec_bytes(kind, fields, expected, size):
    fields = dict(fields)
    body = fields.pop("data", None)
    packed = ppcb.pack(kind, raw.SID, data=body, **fields)
    assert packed == expected and len(packed) == size


@pytest.mark.parametrize("kind,fields,expected,size", ROWS, ids=[r[0] for r in ROWS])
def test_unpack_reads_the_spec_bytes(kind, fields, expected, size):
    packet = ppcb.unpack(expected)
    assert packet.kind == kind and packet.session_id == raw.SID
    for name, value in fields.items():
        assert getattr(packet, name) == value


@pytest.mark.parametrize("kind,fields,expected,size", ROWS, ids=[r[0] for r in ROWS])
def test_truncated_headers_are_refused(kind, fields, expected, size):
    header = ppcb.HEADER_BYTES[kind]
    for cut in range(1, header):
        with pytest.raises(ProtocolError, match="truncated"):
            ppcb.unpack(expected[:cut])


@pytest.mark.parametrize("kind", ["CONN", "CONACC", "CONRJT", "ACC", "RJT", "RCVD"])
def test_trailing_bytes_are_refused(kind):
    expected = next(r[2] for r in ROWS if r[0] == kind)
    with pytest.raises(ProtocolError, match="bytes"):
        ppcb.unpack(expected + b"x")


@pytest.mark.parametrize("code", [0, 8, 9, 0x80, 255])
def test_unknown_types_and_empty_packets_are_refused(code):
    with pytest.raises(ProtocolError, match="unknown packet type"):
        ppcb.unpack(bytes([code]) + bytes(30))
    with pytest.raises(ProtocolError, match="empty"):
        ppcb.unpack(b"")


def test_data_len_must_match_the_datagram_and_the_limits():
    with pytest.raises(ProtocolError, match="data_len 10 but carries 5"):
        ppcb.unpack(raw.data(0, b"hello", data_len=10))           # beyond the datagram
    with pytest.raises(ProtocolError, match="carries 5"):
        ppcb.unpack(raw.data(0, b"hello", data_len=3))            # shorter than the datagram
    with pytest.raises(ProtocolError, match="outside"):
        ppcb.unpack(raw.data(0, b"", data_len=0))                 # n >= 1
    with pytest.raises(ProtocolError, match="outside"):
        ppcb.unpack(raw.data(0, b"x" * 64001))                    # n <= 64000
    assert ppcb.unpack(raw.data(0, b"x" * 64000)).data_len == 64000
    with pytest.raises(ProtocolError):
        ppcb.pack("DATA", raw.SID, packet_no=0, data=b"")
    with pytest.raises(ProtocolError):
        ppcb.pack("DATA", raw.SID, packet_no=0, data=bytes(64001))


def test_stream_mode_reads_a_data_header_alone():
    header = raw.data(5, b"abc")[:21]
    packet = ppcb.unpack(header, stream=True)
    assert (packet.kind, packet.packet_no, packet.data_len, packet.data) == ("DATA", 5, 3, None)


def test_bad_arguments_to_pack_say_what_to_do():
    with pytest.raises(ProtocolError, match="8 bytes"):
        ppcb.pack("ACC", b"short", packet_no=1)
    with pytest.raises(ProtocolError, match="unknown packet kind"):
        ppcb.pack("HELLO", raw.SID)
    with pytest.raises(ProtocolError, match="cannot pack"):
        ppcb.pack("ACC", raw.SID, packet_no=-1)
    assert ppcb.header_size(4) == 21
    with pytest.raises(ProtocolError):
        ppcb.header_size(99)


@given(sid=st.binary(min_size=8, max_size=8), no=st.integers(0, 2 ** 64 - 1),
       body=st.binary(min_size=1, max_size=300))
def test_data_round_trips(sid, no, body):
    packet = ppcb.unpack(ppcb.pack("DATA", sid, packet_no=no, data=body))
    assert (packet.session_id, packet.packet_no, packet.data) == (sid, no, body)


@given(st.binary(max_size=40))
def test_random_bytes_either_decode_or_raise_protocol_error(blob):
    try:
        packet = ppcb.unpack(blob)
    except ProtocolError:
        return
    assert ppcb.TYPES[blob[0]] == packet.kind
