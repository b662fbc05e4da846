"""The model reproduces document 002 and the textbook GbE figures; invariants by hypothesis."""
import math

import pytest
from hypothesis import assume, given, strategies as st

from wirelab.errors import ModelError
from wirelab.model import (HeaderStack, bdp_bytes, binding_limit, efficiency, mathis,
                           max_payload, packetize, padhye, predict, stop_and_wait,
                           transmission_delay, one_way_from_rtt, window_limited)
from wirelab.model.delay import path_delay
from wirelab.reference import load_reference


@pytest.mark.parametrize("proto, timestamps, eta, mbps", [
    ("udp", False, 0.957, 9.57), ("tcp", False, 0.949, 9.49), ("tcp", True, 0.941, 9.41),
])
def test_document_002_at_10_mbit(proto, timestamps, eta, mbps):
    p = predict(proto, 10e6, timestamps=timestamps)
    assert round(p.efficiency, 3) == eta
    assert round(p.goodput_bps / 1e6, 2) == mbps
    assert p.wire_bytes == 1538 and p.binding == "link"


def test_document_002_table_rows_for_scenario_a():
    table = load_reference("seed002_goodput")
    for row in table[table.scenario == "A_home_10M"].itertuples():
        p = predict(row.protocol, row.capacity_mbps * 1e6, timestamps=row.payload_bytes == 1448)
        assert p.payload_bytes == row.payload_bytes
        assert round(p.efficiency, 3) == row.efficiency
        assert round(p.goodput_bps / 1e6, 2) == row.predicted_mbps


def test_document_002_pppoe_payloads():
    assert predict("udp", 21e6, pppoe=True).payload_bytes == 1464
    assert predict("tcp", 21e6, pppoe=True, timestamps=True).payload_bytes == 1440
    assert HeaderStack("tcp", pppoe=True).mtu == 1492


@pytest.mark.parametrize("proto, timestamps, mbps", [
    ("tcp", True, 941.5), ("tcp", False, 949.3), ("udp", False, 957.1)])
def test_gigabit_ethernet_figures(proto, timestamps, mbps):
    assert round(predict(proto, 1e9, timestamps=timestamps).goodput_bps / 1e6, 1) == mbps


def test_emulated_wire_charges_only_the_ethernet_header():
    p = predict("tcp", 10e6, timestamps=True, wire="emulated")
    assert p.wire_bytes == 1514  # the frame Wireshark shows
    assert p.efficiency == pytest.approx(1448 / 1514)


def test_vlan_and_ipv6_overheads():
    assert predict("udp", vlan=True).wire_bytes == 1542
    assert predict("udp", ip_version=6).payload_bytes == 1452
    assert predict("tcp", ip_version=6, timestamps=True).payload_bytes == 1428


def test_udp_fragmentation_ipv4():
    pk = packetize(HeaderStack("udp"), 1473)
    assert pk.fragmented and pk.packets == 2
    assert pk.ip_packets == (1500, 20 + 1481 - 1480)
    assert pk.delivery_probability(0.1) == pytest.approx(0.81)
    assert not packetize(HeaderStack("udp"), 1472).fragmented


def test_udp_fragmentation_ipv6_adds_fragment_headers():
    pk = packetize(HeaderStack("udp", ip_version=6), 3000)
    per = (1500 - 48) // 8 * 8
    assert pk.packets == math.ceil(3008 / per)
    assert sum(s - 48 for s in pk.ip_packets) == 3008


def test_tcp_limits_name_what_binds():
    p = predict("tcp", 100e6, rtt_s=0.08, window_bytes=500)
    assert p.binding == "window"
    assert p.goodput_bps == pytest.approx(8 * 500 / 0.08)
    lossy = predict("tcp", 100e6, rtt_s=0.04, loss=0.05)
    assert lossy.binding in ("mathis", "padhye")
    assert set(lossy.limits) == {"link", "mathis", "padhye"}
    assert predict("tcp", 100e6, loss=0.05).notes, "loss without RTT is flagged"


def test_mathis_textbook_value():
    # 1460 B, 100 ms, 1 %: (1460·8/0.1)·1.2247/0.1 ≈ 1.43 Mbit/s
    assert mathis(1460, 0.1, 0.01) == pytest.approx(1460 * 8 / 0.1 * math.sqrt(1.5) / 0.1)


def test_padhye_below_mathis_and_capped_by_window():
    assert padhye(1460, 0.1, 0.05) < mathis(1460, 0.1, 0.05)
    assert padhye(1460, 0.1, 0.0001, max_window_bytes=10 * 1460) == pytest.approx(8 * 10 * 1460 / 0.1)


def test_bdp_and_window():
    assert bdp_bytes(100e6, 0.0808) == pytest.approx(1.01e6)
    assert window_limited(65535, 0.04) == pytest.approx(13.107e6)
    assert binding_limit({"a": 3.0, "b": 2.0}) == ("b", 2.0)


def test_stop_and_wait_no_loss_is_one_packet_per_cycle():
    sw = stop_and_wait(1000, 1e6, 0.1)
    data_wire, ack_wire = 1000 + 21 + 8 + 20 + 38, max(17 + 8 + 20 + 38, 84)     # a minimum frame
    assert sw.cycle_s == pytest.approx(8 * data_wire / 1e6 + 0.1 + 8 * ack_wire / 1e6)
    assert sw.goodput_bps == pytest.approx(8000 / sw.cycle_s)
    assert sw.expected_retransmissions == 0


def test_an_acc_on_the_wire_is_its_headers_and_ppcbs_17_bytes():
    from wirelab.model import ACC_WIRE_BYTES, acc_wire_bytes
    # real Ethernet, IPv4: 14 + 20 + 8 + 17 + FCS 4 = 63 B is padded to the 64 B minimum frame
    assert acc_wire_bytes() == 64 + 8 + 12 == 38 + 20 + 8 + 17 + 1
    assert ACC_WIRE_BYTES == acc_wire_bytes(HeaderStack("udpr", wire="emulated")) == 14 + 20 + 8 + 17
    assert acc_wire_bytes(HeaderStack("udpr", wire="emulated", ip_version=6)) == 14 + 40 + 8 + 17


def test_stop_and_wait_loss_costs_timeouts():
    # a lost DATA and a lost ACC each cost one MAX_WAIT (the server resends its ACC by itself):
    # (1 − s)/s + (1 − r)/r extra tries, s = r = 0.9 (stopwait's docstring)
    sw = stop_and_wait(1000, 1e6, 0.05, loss_forward=0.1, loss_reverse=0.1, timeout_s=20)
    assert sw.success_probability == pytest.approx(0.81)
    assert sw.expected_retransmissions == pytest.approx(2 * 0.1 / 0.9)
    assert sw.time_per_packet_s == pytest.approx(sw.cycle_s + 20 * 2 * 0.1 / 0.9)
    # give up: DATA never through in 6 tries, or through on try j and no ACC on tries j..6
    stuck = 0.1 ** 6 + sum(0.9 * 0.1 ** (j - 1) * 0.1 ** (7 - j) for j in range(1, 7))
    assert sw.failure_probability == pytest.approx(stuck)


def test_delays():
    assert transmission_delay(1500, 10e6) == pytest.approx(1.2e-3)
    assert one_way_from_rtt(0.0808) == pytest.approx(0.0404)
    assert path_delay(32, [(1e9, 0.02), (1e9, 0.02)]) == pytest.approx(0.04 + 2 * 256e-9)


@pytest.mark.parametrize("kwargs, words", [
    (dict(mtu=30), "smaller than"), (dict(rate_bps=-1), "positive"), (dict(loss=1.5), "loss"),
    (dict(proto="sctp"), "unknown protocol"), (dict(ip_version=5), "IP version"),
    (dict(tcp_options=3), "multiple of 4"), (dict(proto="udp", payload=70000), "IP limit"),
    (dict(proto="udpr", payload=64001), "at most 64000"), (dict(payload=0), "≥ 1"),
    (dict(ip_version=6, mtu=1000), "1280"), (dict(wire="copper"), "unknown wire"),
])
def test_impossible_settings_are_model_errors(kwargs, words):
    with pytest.raises(ModelError if "unknown" not in words and "IP version" not in words else ValueError) as info:
        predict(**kwargs)
    assert words in str(info.value)


stacks = st.builds(HeaderStack, proto=st.sampled_from(["tcp", "udp", "udpr"]),
                   mtu=st.integers(1280, 9000), ip_version=st.sampled_from([4, 6]),
                   vlan=st.booleans(), pppoe=st.booleans(), wire=st.sampled_from(["real", "emulated"]))


@given(stacks, st.integers(1, 60000))
def test_packetization_conserves_bytes(stack, payload):
    pk = packetize(stack, payload)
    assert 0 < pk.efficiency < 1
    assert all(size <= stack.mtu for size in pk.ip_packets)
    assert pk.wire_bytes == pk.payload_bytes + pk.header_bytes
    assert pk.packets >= 1 and pk.packets == len(pk.ip_packets)


@given(stacks)
def test_a_full_packet_never_fragments_and_one_more_byte_does(stack):
    assume(stack.proto != "tcp")
    full = max_payload(stack)
    assert packetize(stack, full).packets == 1
    assert packetize(stack, full + 1).packets == 2


@given(stacks)
def test_real_wire_costs_more_than_emulated(stack):
    from dataclasses import replace
    real = efficiency(replace(stack, wire="real"))
    emulated = efficiency(replace(stack, wire="emulated"))
    assert real < emulated


@given(st.floats(1e3, 1e11), st.sampled_from(["tcp", "udp", "udpr"]), st.floats(0, 0.5),
       st.one_of(st.none(), st.floats(1e-4, 2.0)))
def test_goodput_never_exceeds_the_link(rate, proto, loss, rtt):
    p = predict(proto, rate, loss=loss, rtt_s=rtt)
    assert 0 <= p.goodput_bps <= p.efficiency * rate * (1 + 1e-12)
    assert p.goodput_bps == pytest.approx(min(p.limits.values()) * (p.delivery_probability if proto == "udp" else 1))


@given(st.floats(0.0001, 0.3), st.floats(0.0001, 0.3))
def test_more_loss_never_helps(p1, p2):
    lo, hi = sorted((p1, p2))
    for proto in ("tcp", "udp", "udpr"):
        assert predict(proto, 10e6, loss=hi, rtt_s=0.02).goodput_bps <= \
            predict(proto, 10e6, loss=lo, rtt_s=0.02).goodput_bps * (1 + 1e-9)


def test_a_real_wire_never_carries_a_frame_under_84_bytes():
    from wirelab.link import LinkSpec
    from wirelab.model import packetize
    real, emulated = HeaderStack("udp", wire="real"), HeaderStack("udp", wire="emulated")
    assert packetize(real, 4).wire_bytes == 84 and packetize(emulated, 4).wire_bytes == 4 + 8 + 20 + 14
    assert packetize(real, 18).wire_bytes == 18 + 8 + 20 + 38 == 84       # the smallest unpadded one
    # the link charges what the model counts, frame by frame
    spec = LinkSpec(wire="real")
    assert all(spec.charge(ip + 14) == real.frame(ip) for ip in range(28, 1501))
