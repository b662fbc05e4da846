"""scapy's byte layout of a frame agrees with the model's HeaderStack, layer by layer."""
import itertools

import pytest

from wirelab.capture.tools.scapy_layout import build_frame, compare_with_stack, header_bytes, layout
from wirelab.errors import UsageError
from wirelab.model import HeaderStack, packetize


@pytest.mark.parametrize("proto,ip_version,options,vlan", [
    (p, v, o, q) for p, v, o, q in itertools.product(("tcp", "udp"), (4, 6), (0, 12, 40), (False, True))
    if p == "tcp" or o == 0])
def test_every_header_size_agrees_with_the_model(proto, ip_version, options, vlan):
    stack = HeaderStack(proto, ip_version=ip_version, tcp_options=options, vlan=vlan, wire="emulated")
    payload = packetize(stack).payload_bytes                    # a full packet at MTU 1500
    frame = build_frame(proto, payload=payload, ip_version=ip_version, tcp_options=options, vlan=vlan)
    table = compare_with_stack(frame, stack)
    assert table["agree"].all(), table
    assert len(bytes(frame)) == stack.l2 + stack.mtu            # the whole frame: 14 (+4) + MTU


def test_document_002_frame_field_by_field():
    """1514 B: 14 Ethernet + 20 IPv4 + 32 TCP (12 of options) + 1448 of payload."""
    frame = build_frame("tcp", payload=1448, tcp_options=12)
    table = layout(frame).set_index(["layer", "field"])
    assert len(bytes(frame)) == 1514
    assert table.loc[("IP", "src"), "offset"] == 26 and table.loc[("IP", "ttl"), "offset"] == 22
    assert table.loc[("TCP", "dport"), "offset"] == 36 and table.loc[("TCP", "dataofs"), "bits"] == 4
    assert table.loc[("TCP", "flags"), "offset"] == 46.875 and table.loc[("TCP", "flags"), "bits"] == 9
    assert table.loc[("Raw", "load"), "offset"] == 66 and table["bits"].sum() == 8 * 1514
    assert header_bytes(frame) == {"ethernet": 14, "IPv4": 20, "TCP": 20, "TCP options": 12, "payload": 1448}


def test_a_real_wire_counts_what_no_frame_holds():
    table = compare_with_stack(build_frame("udp", payload=1472), HeaderStack("udp", wire="real"))
    outside = table.set_index("layer").loc[["preamble+SFD", "FCS", "inter-frame gap"], "agree"]
    assert set(outside) == {"not in a captured frame"}
    assert bool(table.set_index("layer").loc["UDP", "agree"])


def test_bad_requests_are_usage_errors():
    with pytest.raises(UsageError):
        build_frame("udpr")
    with pytest.raises(UsageError):
        build_frame("tcp", tcp_options=10)
