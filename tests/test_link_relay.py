"""The loopback backend (no root): a UDP relay that is a real emulated link, a TCP relay that paces."""
import socket
import statistics
import threading
import time

import pytest

from wirelab.link import LinkSpec
from link_probe import UdpCounter, UdpEcho, udp_blast, udp_rtts
from wirelab.link.relay import TcpRelay, UdpRelay


def test_udp_relay_delays_both_ways():
    spec = LinkSpec.parse(delay="20ms", delay_reverse="5ms")
    with UdpEcho(("127.0.0.1", 0)) as echo, UdpRelay(spec, echo.address) as relay:
        rtts = udp_rtts(relay.address, 15)
    assert len(rtts) == 15 and min(rtts) >= 0.025
    assert statistics.median(rtts) == pytest.approx(0.025, abs=0.003)


@pytest.mark.slow
def test_udp_relay_loses_the_configured_fraction():
    with UdpCounter(("127.0.0.1", 0)) as counter, \
            UdpRelay(LinkSpec.parse(loss="5%", loss_reverse=0), counter.address, seed=3) as relay:
        sent = udp_blast(relay.address, 20000, rate_pps=10000)
        received = counter.wait_quiet()
    assert 1 - received / sent == pytest.approx(0.05, abs=0.01)
    assert relay.describe()["counters"]["a->b"]["dropped_loss"] == sent - received


def test_udp_relay_charges_ip_fragments_of_the_links_mtu():
    relay = UdpRelay(LinkSpec.parse(rate="10mbit", mtu=1500), ("127.0.0.1", 9))
    try:
        assert relay._admit(relay.forward, 3000, 0.0)
        # 3008 B of UDP in 1480 B fragments: 3 fragments, each + 20 B IP + 14 B Ethernet
        assert relay.forward.counters.packets == 3
        assert relay.forward.counters.bytes == 3008 + 3 * (20 + 14)
    finally:
        relay.close()


@pytest.mark.slow
def test_tcp_relay_paces_at_the_rate_and_says_what_it_cannot_do():
    spec = LinkSpec.parse(rate="20mbit", delay="5ms")
    server = socket.create_server(("127.0.0.1", 0))
    received = []

    def sink():
        conn, _ = server.accept()
        total, first = 0, None
        while data := conn.recv(65536):
            first = first or time.monotonic()
            total += len(data)
        received.append((total, time.monotonic() - first))
        conn.close()

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()
    with TcpRelay(spec, server.getsockname()) as relay:
        with socket.create_connection(relay.address, timeout=10) as sock:
            # segments the size the emulated link's MTU allows, not loopback's 64 KB: the sender's
            # window then grows per segment as on a real link, and its buffers stay small
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG) <= spec.mtu - 40
            sock.sendall(b"x" * 5_000_000)         # 2 s at 20 Mbit/s
        thread.join(timeout=20)
        meta = relay.describe()
    server.close()
    total, seconds = received[0]
    assert total == 5_000_000
    assert total * 8 / seconds == pytest.approx(spec.predict("tcp", timestamps=True).goodput_bps, rel=0.1)
    assert "loss" in meta["cannot_emulate"] and "never sees loss" in meta["note"]


def test_udp_relay_charges_a_real_wires_framing():
    relay = UdpRelay(LinkSpec.parse(rate="10mbit", wire="real"), ("127.0.0.1", 9))
    try:
        assert relay._admit(relay.forward, 1472, 0.0) and relay._admit(relay.forward, 4, 0.0)
        # a full datagram: 1500 B of IP + 38 B of framing; nttcp's 4 B end marker: a minimum frame
        assert relay.forward.counters.bytes == 1538 + 84
        assert "38 B of real-wire framing" in relay.describe()["charged_bytes"]
    finally:
        relay.close()


def test_udp_relay_loses_whole_datagrams_when_the_spec_says_so():
    """8000 B datagrams (6 fragments) at 30 % loss: by datagram about 0.7 arrive, fragment by
    fragment about 0.7^6 = 0.12."""
    arrived = {}
    for unit in ("packet", "datagram"):
        relay = UdpRelay(LinkSpec.parse(loss="30%", loss_reverse=0, loss_unit=unit), ("127.0.0.1", 9), seed=4)
        try:
            arrived[unit] = sum(bool(relay._admit(relay.forward, 8000, 0.0)) for _ in range(2000)) / 2000
            assert relay.forward.counters.packets == 6 * 2000
        finally:
            relay.close()
    assert arrived["datagram"] == pytest.approx(0.7, abs=0.035)
    assert arrived["packet"] == pytest.approx(0.7 ** 6, abs=0.02)
