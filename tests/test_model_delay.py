"""The store-and-forward path delay (Kurose & Ross §1.4) and netem's jitter, on the sources' numbers."""
import random

import pytest

from wirelab.errors import ModelError
from wirelab.model import Hop, hop_delays, mean_jittered_delay, path_delay


def test_kurose_ross_store_and_forward_example():
    # §1.3.1: L = 7.5 Mbit, R = 1.5 Mbit/s, one hop 5 s; source → router → destination 2·L/R = 10 s
    size = 7.5e6 / 8
    assert path_delay(size, [(1.5e6, 0.0)]) == pytest.approx(5.0)
    assert path_delay(size, [(1.5e6, 0.0), (1.5e6, 0.0)]) == pytest.approx(10.0)


def test_nodal_delay_is_the_sum_of_its_four_terms():
    hop = Hop(rate_bps=10e6, delay_s=0.02, processing_s=1e-4, queueing_s=2e-3, wire_bytes=1250)
    (terms,) = hop_delays(32, [hop])
    assert terms["transmission_s"] == pytest.approx(1e-3)         # the hop's own bytes, not 32
    assert terms["nodal_s"] == pytest.approx(1e-4 + 2e-3 + 1e-3 + 0.02)


def test_document_003_path_no_rate_counts_propagation_only():
    # s–b no delay, b–r and r–d 20 ms: one-way 40 ms, whatever the message size
    hops = [Hop(), Hop(delay_s=0.02), Hop(delay_s=0.02)]
    assert path_delay(32, hops) == pytest.approx(0.04)
    assert path_delay(32, [(None, 0.02), (None, 0.02)]) == pytest.approx(0.04)


def test_jitter_mean_follows_netem_clipping():
    assert mean_jittered_delay(0.02, 0.005) == pytest.approx(0.02)     # never below zero: mean unchanged
    assert mean_jittered_delay(0.001, 0.005) == pytest.approx(0.0018)  # (1 + 5)² / 20 ms
    assert mean_jittered_delay(0.0, 0.005) == pytest.approx(0.00125)
    rng = random.Random(3)                                             # the same by drawing
    draws = [max(0.001 + rng.uniform(-0.005, 0.005), 0.0) for _ in range(200_000)]
    assert sum(draws) / len(draws) == pytest.approx(0.0018, rel=0.01)


def test_bad_input_is_a_model_error():
    with pytest.raises(ModelError):
        path_delay(-1, [(1e6, 0.0)])
    with pytest.raises(ModelError):
        mean_jittered_delay(0.01, -0.001)
    with pytest.raises(ModelError):
        path_delay(32, [Hop(processing_s=-1)])
