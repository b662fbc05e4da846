"""Two clocks: a deliberately wrong clock, and the fit that finds its offset and drift."""
import random

import pytest

from wirelab.errors import UsageError
from wirelab.transfer.clock import SkewedClock, echo_sample, fit_offset_drift
from wirelab.transfer.measure_client import measure
from wirelab.transfer.run import start_server


def test_skewed_clock_is_offset_and_drifts_by_what_it_was_told():
    now = [10**18]
    clock = SkewedClock(0.005, 50, base=lambda: now[0])
    assert clock.time_ns() - now[0] == 5_000_000
    now[0] += 10**9                                   # one second later: 50 µs further ahead
    assert clock.time_ns() - now[0] == 5_000_000 + 50_000
    assert clock.true_ns(clock.time_ns()) == pytest.approx(now[0], abs=1)
    honest = SkewedClock()
    assert abs(honest.time_ns() - SkewedClock().time_ns()) < 10**9
    with pytest.raises(UsageError):
        SkewedClock(0, 2e6)


def test_echo_sample_is_rfc5905():
    # sender sends at 0, 1 ms out, receiver clock 10 ms ahead, 0.2 ms inside, 1 ms back
    t1, t2, t3, t4 = 0, 11_000_000, 11_200_000, 2_200_000
    t, theta, rtt = echo_sample(t1, t2, t3, t4)
    assert theta == pytest.approx(0.010) and rtt == pytest.approx(0.002)


def test_fit_finds_offset_and_drift_through_noise_and_queueing():
    rng = random.Random(1)
    rounds = []
    for i in range(400):
        t = 1000.0 + i * 0.01
        theta = -0.0042 + 30e-6 * (t - 1000.0)
        queue = rng.expovariate(1 / 0.002) if rng.random() < 0.3 else 0.0   # some rounds queued
        rounds.append((t, theta + queue / 2 + rng.gauss(0, 20e-6), 0.001 + queue))
    fit = fit_offset_drift(rounds)
    assert fit.offset_s == pytest.approx(-0.0042, abs=20e-6)
    assert fit.drift_ppm == pytest.approx(30, abs=3)
    assert fit.used == 200 and fit.rounds == 400 and fit.at(1001.0) == pytest.approx(-0.0042 + 30e-6, abs=20e-6)
    single = fit_offset_drift([(5.0, 0.25, 0.001)])
    assert single.offset_s == 0.25 and single.drift == 0
    with pytest.raises(UsageError):
        fit_offset_drift([])


@pytest.mark.parametrize("proto", ["udp", "tcp"])
def test_echo_exchange_recovers_a_configured_offset_and_drift(proto):
    """The issue's criterion: offset within 0.2 ms, drift within 10 ppm (one real exchange)."""
    port, stop, thread, _ = start_server(proto)
    try:
        result = measure(proto, "127.0.0.1", port, mode="echo", count=400, echo_interval_s=0.01,
                         packet=64, same_clock=False, clock_offset_s=0.0037, clock_drift_ppm=45)
    finally:
        stop.set()
        thread.join(5)
    assert result.ok, result.error
    # the client's clock runs ahead and fast: the receiver's minus the sender's is the opposite
    assert result.clock_offset_s == pytest.approx(-0.0037, abs=0.2e-3)
    assert result.metadata["clock_drift_ppm"] == pytest.approx(-45, abs=10)
    rounds = result.metadata["echo_rounds"]
    assert len(rounds) == 400 and all(len(r) == 5 for r in rounds)
    # the true one-way delays (known because the lab made the skew) are positive and small
    assert all(0 < r[3] < 0.05 and 0 < r[4] < 0.05 for r in rounds)


def test_one_way_delay_of_a_load_is_corrected_by_the_fitted_line():
    port, stop, thread, _ = start_server("udp")
    try:
        result = measure("udp", "127.0.0.1", port, mode="load", rate_bps=4e6, packet=500, time_s=0.5,
                         echo_interval_s=0.01, same_clock=False, clock_offset_s=-0.25, clock_drift_ppm=-80)
    finally:
        stop.set()
        thread.join(5)
    assert result.ok, result.error
    assert result.clock_offset_s == pytest.approx(0.25, abs=0.2e-3)
    assert "fitted" in result.delay_method and result.packets_sent == result.packets_received
    delays = sorted(result.one_way_delays_s)
    # loopback: a quarter-second offset, once corrected, leaves sub-millisecond delays
    assert -0.2e-3 < delays[len(delays) // 2] < 2e-3, delays[len(delays) // 2]
