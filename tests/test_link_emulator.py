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
