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
