"""The model's new pieces: fairness, socket buffers and windows, offered load (worked numbers)."""
import math

import pytest

from wirelab.errors import ModelError
from wirelab.model import predict
from wirelab.model.fairness import jain_index, max_min_shares
from wirelab.model.load import packet_delay, received_rate, udp_datagrams_buffered, undelivered_fraction
from wirelab.model.window import base_rtt, granted_buffer, slow_start_bytes, tcp_window


def test_jain_index_on_jains_examples():
    assert jain_index([5, 5]) == 1.0
    assert jain_index([10, 0, 0, 0]) == pytest.approx(0.25)        # one of n gets all: 1/n
    assert jain_index([6, 4]) == pytest.approx(100 / 104)          # (10)² / (2 · 52)
    assert jain_index([3]) == 1.0 and math.isnan(jain_index([]))
    with pytest.raises(ModelError):
        jain_index([1, -1])


def test_max_min_shares_fill_progressively():
    assert max_min_shares(10, [None, None]) == [5, 5]
    assert max_min_shares(10, [1, None, None]) == [1, 4.5, 4.5]
    assert max_min_shares(10, [2, 3, 8]) == [2, 3, 5]
    assert max_min_shares(10, [2, 3]) == [2, 3]                    # nobody wants the rest
    assert sum(max_min_shares(94.1, [None] * 10)) == pytest.approx(94.1)
    with pytest.raises(ModelError):
        max_min_shares(0, [None])


def test_linux_grants_twice_the_request_within_its_floor_and_cap():
    # measured on this machine (kernel 6.x, rmem_max = wmem_max = 4 MiB): getsockopt after setsockopt
    assert granted_buffer(1, "rcv") == 2304 and granted_buffer(1, "snd") == 4608
    assert granted_buffer(1500, "rcv") == 3000 and granted_buffer(1500, "snd") == 4608
    assert granted_buffer(163840, "rcv") == 327680
    assert granted_buffer(10_000_000, "rcv") == 8388608             # capped at rmem_max, then doubled
    assert granted_buffer(10_000_000, "rcv", cap=163840) == 327680
    assert tcp_window(5269) == pytest.approx(5269)                 # doubled, half of it is window
    assert tcp_window(5269, mss=1448) == 3 * 1448 and tcp_window(500, mss=1448) == 1152
    with pytest.raises(ModelError):
        granted_buffer(100, "both")


def test_slow_start_and_base_rtt():
    # 3 round trips after the handshake: 10 + 20 + 40 segments
    assert slow_start_bytes(4.0, 1.0, 1000) == 70_000
    assert slow_start_bytes(4.0, 1.0, 1000, window_bytes=15_000) == 10_000 + 15_000 + 15_000
    assert slow_start_bytes(0.5, 1.0, 1000) == 0.0
    assert base_rtt(100e6, 0.04) == pytest.approx(0.08 + 8 * 1580 / 100e6)


def test_offered_load_against_the_link():
    eta = predict("udp", 1e9, payload=65000, wire="emulated").efficiency
    capacity = eta * 1e9
    assert received_rate(0.8e8, eta, 1e9) == 0.8e8
    assert received_rate(8e9, eta, 1e9) == pytest.approx(capacity)
    # 45 fragments dropped independently at an eightfold overload: almost nothing survives
    assert received_rate(8e9, eta, 1e9, fragments=45, independent=True) < 1e-30 * capacity
    assert undelivered_fraction(2 * capacity, eta, 1e9) == pytest.approx(0.5)
    assert undelivered_fraction(0, eta, 1e9) == 0
    # document 000's figure 32: transmission delay = size / C, all fragments of the datagram
    wire = predict("udp", 1e9, payload=65000, wire="emulated").wire_bytes
    assert packet_delay(wire, 1e9) == pytest.approx(8 * wire / 1e9)
    assert packet_delay(1514, 10e6, queue_bytes=125_000, propagation_s=0.01) == pytest.approx(
        0.01 + 8 * (1514 + 125_000) / 10e6)


def test_udp_receive_buffer_holds_datagrams_by_truesize():
    assert udp_datagrams_buffered(212992, 1) == 92                 # measured: 92 datagrams of 1400 B
    # a 64000 B datagram in 44 fragments: a 327680 B buffer holds three (document 000, figure 22)
    fragments = predict("udp", 1e9, payload=64000).fragments
    assert fragments == 44 and udp_datagrams_buffered(327680, fragments) == 3
