"""Overhead read from the wire, the model's prediction for it, and capture sanity warnings."""
from __future__ import annotations

from pathlib import Path

import pytest

from wirelab import CaptureError, predict
from wirelab.capture import capture_warnings, predict_from_capture, read_capture, read_overhead

CAP = Path(__file__).resolve().parents[1] / "captures"
DATA = Path(__file__).resolve().parent / "data"


def test_tcp_with_timestamps_carries_1448_in_1514_byte_frames():
    ov = read_overhead(read_capture(CAP / "tcp-10mbit-loss2.pcapng"))
    assert (ov.proto, ov.ip_version, ov.vlan, ov.fragmented) == ("tcp", 4, False, False)
    assert (ov.frame_len, ov.payload, ov.tcp_options, ov.mtu, ov.mss) == (1514, 1448, 12, 1500, 1460)
    assert ov.ip_header == 20 and ov.l4_header == 32
    assert ov.unique_payload_bytes < ov.payload_bytes        # retransmissions are not goodput
    assert ov.stack().l4 == 32


def test_prediction_uses_the_overhead_and_sits_beside_the_measurement():
    verdict = predict_from_capture(read_capture(CAP / "tcp-10mbit.pcapng"), 10e6, wire="emulated")
    assert verdict.prediction.goodput_bps == pytest.approx(predict("tcp", 10e6, timestamps=True,
                                                                   wire="emulated").goodput_bps)
    assert verdict.prediction.goodput_bps == pytest.approx(10e6 * 1448 / 1514)
    assert 0.9 < verdict.ratio < 1.02          # tbf at 10 Mbit/s, no random loss
    d = verdict.to_dict()
    assert d["overhead"]["payload"] == 1448 and d["predicted_goodput_bps"] > d["measured_goodput_bps"] * 0.9


def test_ipv6_overhead():
    ov = read_overhead(read_capture(CAP / "ipv6.pcapng"))
    assert (ov.ip_version, ov.payload, ov.tcp_options, ov.ip_header, ov.mss) == (6, 1428, 12, 40, 1440)


def test_udp_datagrams_spread_over_fragments():
    df = read_capture(CAP / "udp-fragments.pcapng")
    ov = read_overhead(df)
    assert ov.proto == "udp" and ov.fragmented and ov.payload == 3000 and ov.mtu == 1500
    verdict = predict_from_capture(df, 10e6)
    assert verdict.prediction.fragments == 3


def test_vlan_is_read_from_the_tags():
    ov = read_overhead(read_capture(DATA / "vlan.pcap"))
    assert ov.vlan and ov.stack().l2 == 14 + 4


def test_warnings_for_snaplen_loopback_and_offload():
    warn = capture_warnings(read_capture(CAP / "tcp-10mbit.pcapng"))
    assert any("snaplen" in w for w in warn)
    lo = read_capture(DATA / "lo-linux-sll2.pcapng")
    assert any("loopback" in w for w in capture_warnings(lo))


def test_no_conversation_is_a_capture_error():
    import struct
    empty = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    with pytest.raises(CaptureError):
        read_overhead(read_capture(empty))


# ---- the frame's parts, on every link type (issue 33: the overhead line said "Ethernet 14" on all)

def _segments(linktype: int, payload: int = 1388, n: int = 12, address: str = "127.0.0.1") -> bytes:
    """A classic pcap of ``n`` full TCP segments (timestamps option: 32 B of TCP header) from
    ``address`` to itself, framed as ``linktype`` frames them: Ethernet (1), Linux cooked v1
    (113, 16 B) and v2 (276, 20 B), raw IP (101), BSD loopback (0). Defaults: 1440 B IP
    packets, a loopback capture of wire-sized frames (1456 B in Linux cooked v1)."""
    import socket
    import struct
    ip_addr = socket.inet_aton(address)
    link = {1: bytes(12) + b"\x08\x00",
            113: struct.pack(">HHH", 0, 772, 6) + bytes(8) + b"\x08\x00",
            276: b"\x08\x00" + bytes(2) + struct.pack(">IHBB", 1, 772, 0, 6) + bytes(8),
            101: b"", 0: struct.pack("<I", 2)}[linktype]
    records = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype)]
    for i in range(n):
        tcp = struct.pack(">HHIIBBHHH", 40000, 5201, 1 + i * payload, 1, 8 << 4, 0x18, 512, 0, 0) \
            + b"\x01\x01\x08\x0a" + struct.pack(">II", i, 0) + bytes(payload)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), i, 0x4000, 64, 6, 0, ip_addr, ip_addr)
        frame = link + ip + tcp
        records.append(struct.pack("<IIII", 1700000000, i * 1000, len(frame), len(frame)) + frame)
    return b"".join(records)


def _parts_add_up(ov) -> bool:
    return ov.link_header + ov.ip_header + ov.l4_header + ov.payload + ov.trailer == ov.frame_len


@pytest.mark.parametrize("linktype, link, size", [(1, "Ethernet", 14), (113, "Linux cooked", 16),
                                                  (276, "Linux cooked v2", 20), (101, "raw IP", 0),
                                                  (0, "BSD loopback", 4)])
def test_the_frame_is_the_sum_of_its_link_types_parts(linktype, link, size, tmp_path):
    from wirelab.capture.report import render, report
    path = tmp_path / f"link{linktype}.pcap"
    path.write_bytes(_segments(linktype))
    ov = read_overhead(read_capture(path))
    assert (ov.link, ov.link_header, ov.trailer, ov.frame_len) == (link, size, 0, 1440 + size)
    assert _parts_add_up(ov) and (ov.ip_header, ov.l4_header, ov.payload) == (20, 32, 1388)
    line = next(x for x in render(report(path)).splitlines() if x.strip().startswith("frame "))
    terms = line.split("=", 1)[1].replace("(options 12)", "").split("+")
    assert sum(int(t.split()[-1]) for t in terms) == ov.frame_len, line
    assert ("Ethernet" in line) == (linktype == 1)
    # loopback packets of wire sizes: no warning about 64 KB super-frames (it was given on every
    # capture with 127.0.0.1 in it)
    assert not any("loopback" in w for w in ov.warnings)


@pytest.mark.parametrize("name", ["lo-linux-sll.pcapng", "lo-linux-sll2.pcapng", "ip46-null.pcap", "ip46-loop.pcap",
                                  "vlan.pcap"])
def test_the_link_header_is_what_wireshark_sees_before_ip(name):
    """Captures written by dumpcap/tcpdump of each link type (vlan.pcap: two tags, 802.1ad + 802.1Q):
    the bytes before the IP header are tshark's frame.len - ip.len of the same frames."""
    import shutil
    import subprocess
    ov = read_overhead(read_capture(DATA / name))
    assert _parts_add_up(ov) and ov.trailer == 0
    if not shutil.which("tshark"):
        pytest.skip("tshark not installed")
    out = subprocess.run(["tshark", "-r", str(DATA / name), "-Y", f"tcp.len == {ov.payload}", "-T", "fields",
                          "-e", "frame.len", "-e", "ip.len", "-e", "ipv6.plen"], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split("\n")[0].split("\t")
    ip_len = int(out[1]) if out[1] else 40 + int(out[2])
    assert ov.link_header == int(out[0]) - ip_len
