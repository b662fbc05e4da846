"""The scapy PPCB layer: the same bytes as wirelab.transfer.ppcb for every type, and it parses what it builds."""
import subprocess
import sys

from hypothesis import given, strategies as st

from wirelab.capture.tools.ppcb_scapy import PPCB, TYPES, bind_ppcb
from wirelab.transfer import ppcb
from scapy.layers.inet import IP, TCP, UDP
from scapy.packet import Raw

sids = st.binary(min_size=8, max_size=8)
u64 = st.integers(0, 2**64 - 1)


@given(kind=st.sampled_from(sorted(ppcb.TABLE)), sid=sids, number=u64, total=u64,
       proto=st.sampled_from([1, 2, 3]), body=st.binary(min_size=1, max_size=3000))
def test_every_type_builds_the_bytes_of_transfer_ppcb_and_parses_back(kind, sid, number, total, proto, body):
    fields = {"CONN": dict(protocol_id=proto, total_length=total), "DATA": dict(packet_no=number),
              "ACC": dict(packet_no=number), "RJT": dict(packet_no=number)}.get(kind, {})
    data = body if kind == "DATA" else None
    layer = PPCB(type=kind, session_id=sid, **fields, **({"data": data} if data else {}))
    raw = bytes(layer)
    assert raw == ppcb.pack(kind, sid, data, **fields)
    back = PPCB(raw)
    assert TYPES[back.type] == kind and back.session_id == sid
    decoded = ppcb.unpack(raw)
    for name, value in fields.items():
        assert getattr(back, name) == value == getattr(decoded, name)
    if kind == "DATA":
        assert back.data == body and back.data_len == len(body)


def test_the_field_names_are_those_of_ppcb_md():
    names = {f.name for f in PPCB.fields_desc}
    assert names == {"type", "session_id", "protocol_id", "total_length", "packet_no", "data_len", "data"}


def test_nothing_is_bound_on_import_then_bind_ppcb_binds_port_5000():
    code = ("from scapy.layers.inet import IP, UDP; import wirelab.capture.tools.ppcb_scapy as s; "
            "print(s.PPCB in IP(bytes(IP() / UDP(sport=40000, dport=5000) / bytes(s.PPCB(type='RCVD'))))); "
            "s.bind_ppcb(); print(s.PPCB in IP(bytes(IP() / UDP(sport=40000, dport=5000) / bytes(s.PPCB(type='RCVD')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "True"]


def test_ip_udp_ppcb_builds_and_parses_on_the_bound_port():
    bind_ppcb()
    frame = IP(dst="10.77.0.2") / UDP() / PPCB(type="CONN", session_id=b"ABCDEFGH", protocol_id=3, total_length=7)
    assert frame[UDP].dport == 5000
    parsed = IP(bytes(frame))
    assert PPCB in parsed and parsed[PPCB].total_length == 7 and parsed[PPCB].protocol_id == 3
    reply = IP(bytes(IP() / UDP(sport=5000, dport=40000) / PPCB(type="ACC", packet_no=9)))
    assert reply[PPCB].packet_no == 9


def test_a_tcp_segment_holds_several_packets_and_a_datagram_one():
    segment = IP(bytes(IP() / TCP(dport=5000) / PPCB(type="CONN", total_length=3)
                       / PPCB(type="DATA", packet_no=0, data=b"abc")))
    packets = [layer for layer in segment[PPCB].iterpayloads() if isinstance(layer, PPCB)]
    assert [TYPES[p.type] for p in packets] == ["CONN", "DATA"] and packets[1].data == b"abc"
    datagram = IP(bytes(IP() / UDP(dport=5000) / PPCB(type="ACC", packet_no=1) / b"tail"))
    assert isinstance(datagram[PPCB].payload, Raw) and datagram[Raw].load == b"tail"


def test_malformed_packets_for_the_grader_are_built_as_asked():
    lying = bytes(PPCB(type="DATA", session_id=b"S" * 8, data_len=99, data=b"abc"))
    assert len(lying) == 24 and int.from_bytes(lying[17:21], "big") == 99
    unknown = bytes(PPCB(type=9, session_id=b"S" * 8))
    assert unknown == b"\x09" + b"S" * 8
    assert "type 9" in PPCB(unknown).mysummary()


def test_bind_ppcb_decodes_another_port():
    bind_ppcb(6123)
    parsed = IP(bytes(IP() / UDP(sport=40000, dport=6123) / bytes(PPCB(type="RCVD", session_id=b"12345678"))))
    assert PPCB in parsed and TYPES[parsed[PPCB].type] == "RCVD"


def test_importing_wirelab_and_its_cli_does_not_import_scapy():
    code = ("import sys, wirelab, wirelab.capture, wirelab.grade, wirelab.cli; wirelab.cli.build_parser(); "
            "print(any(m.startswith('scapy') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
