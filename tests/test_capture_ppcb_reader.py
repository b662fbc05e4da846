"""The kit reads PPCB from a capture itself: the values that were sent, and on every capture the
rows tshark gives with the kit's dissector (whose TCP reassembly and IP defragmentation are
Wireshark's, not ours)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ppcb_captures import EXPECTED, by_sender, capture, decoded, without_the_conn
from wirelab.capture.tools.ppcb_dissector import tshark_ppcb_packets
from wirelab.capture.ppcb_reader import COLUMNS, ppcb_packets, ppcb_summary

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "captures" / "ppcb.pcapng"
EVERY = sorted([*(ROOT / "captures").glob("*.pcap*"), *(ROOT / "tests" / "data").glob("*.pcap*")])
#: what tshark's rows say too (the kit adds ``malformed`` and ``length``)
SHARED = ["frame", "src", "sport", "dst", "dport", "transport", "type", "session_id", "protocol_id",
          "total_length", "packet_no", "data_len"]
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")


def rows(table, columns=SHARED) -> list[dict]:
    part = table[columns].astype(object)
    return part.where(part.notna(), None).to_dict("records")


def assert_same_as_tshark(path, **ports):
    ours, theirs = ppcb_packets(path, **ports), tshark_ppcb_packets(path, **ports)
    assert rows(ours) == rows(theirs), path
    assert (ours["time"] - theirs["time"]).abs().max() < 1e-6 if len(ours) else theirs.empty
    assert ppcb_summary(ours) == ppcb_summary(theirs)
    return ours


def test_the_committed_capture_reads_with_the_values_sent():
    packets = ppcb_packets(COMMITTED)
    assert list(packets.columns) == COLUMNS and not packets["malformed"].any()
    for name, sent in EXPECTED.items():
        seen = by_sender(decoded(packets, name))
        for end, expected in by_sender(sent).items():
            assert seen[end] == expected, f"{name}, {end} side:\n  read {seen[end]}\n  sent {expected}"
    sessions = {s["session_id"]: s for s in ppcb_summary(packets)}
    assert sessions[b"UDPRFILE".hex()]["packets"] == {"CONN": 1, "CONACC": 1, "DATA": 4, "ACC": 4, "RCVD": 1}
    # a DATA cut across three segments ends in the frame of its last byte
    mss = packets[(packets["session_id"] == b"TCP-MSS5".hex()) & (packets["type"] == "DATA")]
    assert list(mss["data_len"]) == [2048] * 3 and mss["frame"].is_monotonic_increasing


@needs_tshark
@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name)
def test_every_committed_capture_reads_as_tshark_reads_it(path):
    assert_same_as_tshark(path)


@needs_tshark
@pytest.mark.parametrize("name", ["udp-fragments.pcapng", "udp-5mbit-loss2.pcapng"])
def test_udp_ports_given_read_every_datagram_fragments_put_together(name):
    packets = assert_same_as_tshark(ROOT / "captures" / name, udp_ports=[5201])
    assert len(packets) and packets["malformed"].all()            # iperf3's datagrams, read as PPCB


def test_a_stream_that_is_no_ppcb_is_one_malformed_packet_not_chance_packets():
    """iperf3's TCP read as PPCB by port: its first bytes start no packet, so the rest of each
    stream is one malformed packet (Wireshark's dissector would try again at every segment)."""
    packets = ppcb_packets(ROOT / "captures" / "tcp-10mbit.pcapng", tcp_ports=[5201])
    assert packets["malformed"].all() and len(packets) <= 4
    assert not ppcb_packets(ROOT / "captures" / "tcp-10mbit.pcapng").size       # not claimed unasked


@needs_tshark
@pytest.mark.skipif(not shutil.which("editcap"), reason="editcap not installed (apt-get install tshark)")
def test_a_stream_without_its_conn_reads_by_port_and_cut_frames_keep_their_headers(tmp_path):
    cut = tmp_path / "no-conn.pcapng"
    port = without_the_conn(COMMITTED, cut, ppcb_packets(COMMITTED))
    assert (ppcb_packets(cut)["session_id"] == b"TCP-FILE".hex()).sum() == 0
    by_port = assert_same_as_tshark(cut, tcp_ports=[port])
    data = by_port[(by_port["session_id"] == b"TCP-FILE".hex()) & (by_port["type"] == "DATA")]
    assert list(data["packet_no"]) == [0, 1, 2, 3] and list(data["data_len"]) == [1000, 1000, 1000, 500]
    # a snaplen that keeps the PPCB headers but not the data: the headers are still read
    short = tmp_path / "short.pcapng"
    subprocess.run(["editcap", "-s", "100", str(COMMITTED), str(short)], check=True, capture_output=True,
                   timeout=60)
    headers = ppcb_packets(short)
    data = headers[(headers["session_id"] == b"TCP-FILE".hex()) & (headers["type"] == "DATA")]
    assert list(data["packet_no"]) == [0, 1, 2, 3] and data["malformed"].all()


@needs_tshark
def test_a_datagram_in_fragments_is_read_once_put_together(tmp_path):
    """udpr with a 3000-byte DATA over a 1500-byte MTU: three IP fragments, one packet."""
    from scapy.layers.inet import IP, UDP, fragment
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    from wirelab.transfer import ppcb

    sid = b"FRAGMENT"
    frames = [Ether() / IP(src="10.77.0.1", dst="10.77.0.2", id=7) / UDP(sport=40000, dport=6000) /
              ppcb.pack("CONN", sid, protocol_id=3, total_length=3000)]
    big = Ether() / IP(src="10.77.0.1", dst="10.77.0.2", id=8) / UDP(sport=40000, dport=6000) / \
        ppcb.pack("DATA", sid, bytes(range(250)) * 12, packet_no=0)
    frames += [Ether() / piece for piece in fragment(big[IP], fragsize=1480)]
    path = tmp_path / "fragments.pcap"
    wrpcap(str(path), frames)
    packets = assert_same_as_tshark(path)
    assert list(packets["type"]) == ["CONN", "DATA"] and int(packets["data_len"].iloc[1]) == 3000
    assert int(packets["frame"].iloc[1]) == len(frames) and not packets["malformed"].any()


@pytest.fixture(scope="module")
def live_capture(tmp_path_factory):
    """Real transfers (wirelab's clients and servers, and misbehaving peers) captured now."""
    if os.geteuid() != 0 or not shutil.which("dumpcap"):
        pytest.skip("a live capture needs root and dumpcap")
    path = tmp_path_factory.mktemp("ppcb") / "ppcb.pcapng"
    capture(path)
    return path


@needs_tshark
@pytest.mark.root
def test_real_transfers_read_as_tshark_reads_them(live_capture):
    packets = assert_same_as_tshark(live_capture)
    for name, sent in EXPECTED.items():
        seen = by_sender(decoded(packets, name))
        assert seen == by_sender(sent), name
