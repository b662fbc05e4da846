"""The per-packet rules of the emulated link, checked with a seeded random source."""
import random

import pytest

from wirelab.link import Direction, LinkSpec, Shaper
from wirelab.model import predict


def test_rate_serializes_charged_bytes():
    shaper = Shaper(Direction(rate_bps=8e6), queue_bytes=10**6)
    times = [shaper.admit(1000, 0.0)[0] for _ in range(10)]   # 1000 B at 1 MB/s: 1 ms each
    assert times == pytest.approx([0.001 * (i + 1) for i in range(10)])


def test_saturated_tcp_goodput_matches_the_models_emulated_wire():
    """Full 1448 B segments framed as 1514 B: payload rate = η·C of the emulated wire."""
    shaper = Shaper(Direction(rate_bps=10e6), queue_bytes=10**7)
    last = max(shaper.admit(1448 + 32 + 20 + 14, 0.0)[0] for _ in range(1000))
    goodput = 1000 * 1448 * 8 / last
    assert goodput == pytest.approx(predict("tcp", 10e6, wire="emulated", timestamps=True).goodput_bps)


def test_queue_limit_drops_at_the_tail():
    shaper = Shaper(Direction(rate_bps=8e6), queue_bytes=5000)
    results = [shaper.admit(1000, 0.0) for _ in range(10)]
    assert sum(1 for r in results if r) == 5 and shaper.counters.dropped_queue == 5
    assert shaper.admit(1000, 1.0)   # drained later: room again


def test_delay_and_fifo_jitter():
    shaper = Shaper(Direction(delay_s=0.02, jitter_s=0.005), queue_bytes=10**6, rng=random.Random(1))
    times = [shaper.admit(100, i * 0.001)[0] for i in range(2000)]
    assert times == sorted(times)                                  # a wire never reorders by itself
    delays = [t - i * 0.001 for i, t in enumerate(times)]
    assert min(delays) >= 0.015 - 1e-9 and sum(delays) / len(delays) == pytest.approx(0.02, abs=0.003)


def test_loss_duplicate_reorder_rates():
    d = Direction(delay_s=0.01, loss=0.05, duplicate=0.02, reorder=0.1)
    shaper = Shaper(d, queue_bytes=10**6, rng=random.Random(7))
    n = 40000
    for i in range(n):
        shaper.admit(100, i * 1e-4)
    c = shaper.counters
    assert c.dropped_loss / n == pytest.approx(0.05, abs=0.005)
    kept = n - c.dropped_loss
    assert c.duplicated / kept == pytest.approx(0.02, abs=0.004)
    assert c.reordered / kept == pytest.approx(0.1, abs=0.01)
    assert c.delivered == kept + c.duplicated


def test_same_seed_same_link():
    spec = LinkSpec.parse(rate="10mbit", delay="5ms", jitter="1ms", loss="3%")
    runs = []
    for _ in range(2):
        shaper = Shaper(spec.forward, spec.queue_for(spec.forward), random.Random(42))
        runs.append([tuple(shaper.admit(1514, i * 5e-4)) for i in range(500)])
    assert runs[0] == runs[1]


def _fragments(payload: int, ident: int) -> list[bytes]:
    """The Ethernet frames of one UDP datagram cut by IP at MTU 1500 (scapy's fragment())."""
    from scapy.layers.inet import IP, UDP, fragment
    from scapy.layers.l2 import Ether
    return [bytes(Ether() / f) for f in fragment(IP(src="10.0.0.1", dst="10.0.0.2", id=ident)
                                                 / UDP(sport=1, dport=2) / bytes(payload), 1480)]


def test_datagram_key_names_the_datagram_of_each_fragment_and_nothing_else():
    from wirelab.link.emulator import datagram_key
    first, second = _fragments(4000, 7), _fragments(4000, 8)
    assert len(first) == 3 and len({datagram_key(f) for f in first}) == 1
    assert datagram_key(first[0]) != datagram_key(second[0])
    whole = _fragments(1000, 9)
    assert len(whole) == 1 and datagram_key(whole[0]) is None          # not a fragment: drawn alone
    assert datagram_key(b"\x00" * 10) is None and datagram_key(bytes(14) + b"\x60" + bytes(40)) is None


@pytest.mark.parametrize("unit, arrive", [("packet", 0.7 ** 6), ("datagram", 0.7)])
def test_loss_by_datagram_draws_once_for_all_its_fragments(unit, arrive):
    """30 % loss, 8000 B datagrams (6 fragments): each fragment alone, a datagram arrives 0.7^6 of
    the time; by datagram, 0.7 of the time, and its fragments arrive or vanish together."""
    from wirelab.link.emulator import datagram_key
    shaper = Shaper(Direction(loss=0.3), queue_bytes=10**9, rng=random.Random(5), loss_unit=unit)
    template = _fragments(8000, 0)
    whole = partial = 0
    for ident in range(2000):      # the same fragments, each datagram with its own IP id
        frames = [f[:18] + ident.to_bytes(2, "big") + f[20:] for f in template]
        fates = [bool(shaper.admit(len(f), 0.0, datagram_key(f))) for f in frames]
        whole += all(fates)
        partial += any(fates) and not all(fates)
    assert whole / 2000 == pytest.approx(arrive, abs=0.035)
    assert (partial == 0) == (unit == "datagram")


def test_a_loss_unit_the_link_cannot_honour_is_refused_and_the_choice_of_backend_follows_it():
    from wirelab.errors import BackendUnavailableError, UsageError
    from wirelab.link.detect import Capabilities, choose_backend
    with pytest.raises(UsageError, match="loss unit"):
        LinkSpec.parse(loss="1%", loss_unit="frame")
    spec = LinkSpec.parse(rate="10mbit", loss="10%", loss_unit="datagram")
    assert spec.needs_userspace and not LinkSpec.parse(rate="10mbit", loss_unit="datagram").needs_userspace
    assert "whole datagrams" in spec.describe()
    assert LinkSpec.from_dict({k: v for k, v in spec.to_dict().items() if k != "loss_unit"}).loss_unit == "packet"
    caps = Capabilities(root=True, netns=True, veth=True, tbf=True, netem=True, tun=True, packet_socket=True,
                        iptables_statistic=True, reasons={})
    assert choose_backend(spec, "auto", caps) == "userspace"          # tc and iptables see fragments
    assert choose_backend(LinkSpec.parse(loss="10%"), "auto", caps) == "namespaces"
    with pytest.raises(BackendUnavailableError, match="whole datagrams"):
        choose_backend(spec, "namespaces", caps)


def test_the_model_predicts_loss_by_datagram_for_exactly_that_link():
    """A 64000 B DATA is 44 fragments at MTU 1500: at 20 % loss per fragment it arrives 0.8^44 of
    the time; lost whole, 0.8 of the time (the stop-and-wait chain then as for one packet)."""
    by_fragment = predict("udpr", 10e6, payload=64000, loss=0.2, loss_reverse=0, max_wait_s=0.5)
    by_datagram = LinkSpec.parse(rate="10mbit", loss="20%", loss_reverse=0, loss_unit="datagram").predict(
        "udpr", payload=64000, max_wait_s=0.5)
    assert by_fragment.stop_and_wait.success_probability == pytest.approx(0.8 ** 44)
    assert by_datagram.stop_and_wait.success_probability == pytest.approx(0.8)
    assert by_datagram.goodput_bps > 1000 * by_fragment.goodput_bps
    udp = predict("udp", 10e6, payload=8000, loss=0.1, loss_unit="datagram")
    assert udp.delivery_probability == pytest.approx(0.9)
