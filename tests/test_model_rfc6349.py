"""RFC 6349's metrics on the RFC's own worked numbers (§4.1.1, §4.1.2, §4.2.1, §4.3.1)."""
import pytest

from wirelab.errors import ModelError
from wirelab.model.rfc6349 import (T3_L2, average_rtt_during_transfer, buffer_delay, frames_per_second,
                                   ideal_transfer_time, max_achievable_throughput, tcp_efficiency,
                                   transfer_time_ratio)


def test_frames_per_second_of_the_rfcs_links():
    assert frames_per_second(44.21e6, 1500, T3_L2) == 3664                 # T3: 1508 B frames
    assert frames_per_second(100e6) == 8127                                # 1538 B on Ethernet
    assert frames_per_second(1e9) == 81274
    assert frames_per_second(10e9) == 812743


def test_maximum_achievable_tcp_throughput():
    assert max_achievable_throughput(44.21e6, 1500, T3_L2) / 1e6 == pytest.approx(42.8, abs=0.05)
    assert max_achievable_throughput(100e6) / 1e6 == pytest.approx(94.9, abs=0.05)


def test_transfer_time_ratio_of_the_rfcs_example():
    # five connections of 100 MB each on a 500 Mbit/s service: "~8 seconds" ideal, 12 s actual
    ideal = ideal_transfer_time(5 * 100e6, 500e6)
    assert ideal == pytest.approx(8.0)
    assert transfer_time_ratio(12.0, ideal) == pytest.approx(1.5)


def test_tcp_efficiency_of_the_rfcs_example():
    # 100,000 B sent and 2,000 of them sent again: 102,000 B transmitted
    assert tcp_efficiency(102_000, 2_000) == pytest.approx(98.03, abs=0.01)
    assert tcp_efficiency(1000, 0) == 100.0
    with pytest.raises(ModelError):
        tcp_efficiency(1000, 2000)


def test_buffer_delay_of_the_rfcs_example():
    assert buffer_delay(0.032, 0.025) == pytest.approx(28.0)
    with pytest.raises(ModelError):
        buffer_delay(0.032, 0.0)


def test_the_average_rtt_takes_one_rtt_a_second():
    # second 0: ten samples of 25 ms; second 1: one of 39 ms → (25 + 39) / 2, not the samples' mean
    samples = [(i * 0.1, 0.025) for i in range(10)] + [(1.5, 0.039)]
    assert average_rtt_during_transfer(samples) == pytest.approx(0.032)
    assert buffer_delay(average_rtt_during_transfer(samples), 0.025) == pytest.approx(28.0)
    with pytest.raises(ModelError):
        average_rtt_during_transfer([])
