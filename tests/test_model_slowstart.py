"""Initial window (RFC 6928), slow start at a finite rate (Kurose & Ross), the first loss (Cardwell et al.)."""
import math

import pytest
from hypothesis import given, strategies as st

from wirelab.errors import ModelError
from wirelab.model.slowstart import (backoff_factor, cardwell_slow_start_time,
                                     expected_loss_recovery, expected_slow_start_segments,
                                     expected_slow_start_window, expected_timeout, handshake_time,
                                     initial_window, kurose_ross_latency, retransmission_delay,
                                     slow_start_send, timeout_probability)


@pytest.mark.parametrize("mss, segments", [(1460, 10), (1448, 10), (536, 10), (4380, 3), (9000, 2),
                                           (2190, 6)])
def test_rfc6928_initial_window(mss, segments):
    # min(10·MSS, max(2·MSS, 14600)) bytes, RFC 6928 §2 eq. (1)
    assert initial_window(mss) == segments
    assert initial_window(mss) * mss <= min(10 * mss, max(2 * mss, 14600))


def test_kurose_ross_slow_start_example():
    # K&R's figure: O/S = 15 segments, K = 4 windows (1, 2, 4, 8), Q = 2, P = 2 stalls.
    # S/R = 10 ms and RTT = 20 ms give Q = ⌊log₂(1 + 2)⌋ + 1 = 2.
    s, rtt = 0.010, 0.020
    latency = 2 * rtt + 15 * s + 2 * (rtt + s) - (2 ** 2 - 1) * s
    assert latency == pytest.approx(0.220)
    assert kurose_ross_latency(15 * 8000, 8000, 8000 / s, rtt) == pytest.approx(latency)
    send, idle, _ = slow_start_send(15, s, rtt, iw=1)
    assert idle == pytest.approx((s + rtt - s) + (s + rtt - 2 * s))      # the two stalls
    assert 2 * rtt + send == pytest.approx(latency)                       # handshake + request/response


def test_kurose_ross_static_window():
    # K&R's static window: latency = 2·RTT + O/R + (K − 1)·[S/R + RTT − W·S/R]⁺
    s, rtt = 0.010, 0.020
    send, idle, capped = slow_start_send(16, s, rtt, iw=2, gamma=1.0)           # K = 8 windows of W = 2
    assert idle == capped == pytest.approx(7 * (s + rtt - 2 * s))
    assert slow_start_send(16, s, rtt, iw=4, gamma=1.0)[1] == 0          # W·S/R ≥ S/R + RTT: no stall
    capped = slow_start_send(100, s, rtt, iw=1, max_window=2)[1]
    assert capped == pytest.approx((s + rtt - s) + 49 * (s + rtt - 2 * s))  # 1, then 2 forever


@given(st.integers(1, 5000), st.floats(1e-5, 0.02), st.floats(0.0, 0.5))
def test_generalised_slow_start_equals_kurose_ross_from_one_segment(segments, seg_time, rtt):
    expected = kurose_ross_latency(segments * 12000, 12000, 12000 / seg_time, rtt)
    assert 2 * rtt + slow_start_send(segments, seg_time, rtt, iw=1)[0] == pytest.approx(expected, rel=1e-9)


def test_cardwell_eq15_is_the_round_count_at_infinite_rate():
    # at R → ∞ every window costs one RTT: our rounds + the last ACK's RTT = Cardwell's E[T_ss]
    rtt = 0.05
    for rounds in range(1, 7):
        segments = 10 * (2 ** rounds - 1)                              # w₁ = 10, γ = 2
        assert cardwell_slow_start_time(segments, rtt, iw=10) == pytest.approx(rounds * rtt)
        assert slow_start_send(segments, 1e-12, rtt, iw=10)[0] + rtt == pytest.approx(rounds * rtt)


def test_cardwell_eq15_window_limited_branch_joins_the_other():
    w_max, w1, g = 40.0, 10.0, 2.0
    at = (g * w_max - w1) / (g - 1)                                    # E[W_ss] reaches W_max here
    assert expected_slow_start_window(at, w1, g) == pytest.approx(w_max)
    free = cardwell_slow_start_time(at, 0.1, iw=w1)
    limited = cardwell_slow_start_time(at + 1e-9, 0.1, iw=w1, max_window=w_max)
    assert limited == pytest.approx(free)
    # beyond it every W_max segments take one more RTT
    assert cardwell_slow_start_time(at + 400, 0.1, iw=w1, max_window=w_max) == pytest.approx(free + 0.1 * 10)


def test_cardwell_eq5_expected_slow_start_segments():
    assert expected_slow_start_segments(100, 0.0) == 100
    # (1 − 0.99^100)·0.99/0.01 + 1
    assert expected_slow_start_segments(100, 0.01) == pytest.approx((1 - 0.99 ** 100) * 99 + 1)
    assert expected_slow_start_segments(10 ** 6, 0.01) == pytest.approx(100.0, rel=1e-6)   # ≈ 1/p
    assert expected_slow_start_segments(1, 0.3) == 1                    # capped at d


def test_pftk_timeout_pieces():
    assert timeout_probability(0.1, 3) == 1.0 and timeout_probability(0.0, 10) == 0.0
    assert timeout_probability(1e-7, 30) == pytest.approx(3 / 30, rel=1e-4)   # Q̂ → 3/w as p → 0
    assert backoff_factor(0.0) == 1.0 and backoff_factor(0.5) == pytest.approx(1 + .5 + .5 + .5 + .5 + .5 + .5)
    assert expected_timeout(0.0, 1.0) == 1.0 and expected_timeout(0.1, 1.0) > 1.0 / 0.9
    # eq. 20: a certain loss with Q̂ = 1 costs E[Z^TO]; no loss costs nothing
    assert expected_loss_recovery(100, 0.0, 0.05, 1.0, 50) == 0.0
    assert expected_loss_recovery(10 ** 6, 0.2, 0.05, 1.0, 2) == pytest.approx(expected_timeout(0.2, 1.0))


def test_cardwell_eq4_handshake():
    assert handshake_time(0.04) == 0.04
    # T_s·((1 − p)/(1 − 2p) − 1) per direction: 1 s · (0.9/0.8 − 1) = 0.125 s each
    assert handshake_time(0.04, 0.1, 0.1, syn_timeout_s=1.0) == pytest.approx(0.04 + 0.25)
    assert retransmission_delay(0.01, 0.2) == pytest.approx(0.2 * (0.99 / 0.98 - 1))
    with pytest.raises(ModelError, match="50 %"):
        handshake_time(0.04, 0.5)


@given(st.floats(1, 1e5), st.floats(1e-6, 0.01), st.floats(0, 0.3), st.floats(1, 64))
def test_slow_start_never_faster_than_the_link_nor_slower_than_stop_and_wait(n, seg, rtt, iw):
    send, idle, _ = slow_start_send(n, seg, rtt, iw=iw)
    assert idle >= 0 and send == pytest.approx(n * seg + idle)
    assert send <= n * (seg + rtt) + 1e-9                              # never worse than one per RTT
    assert math.isfinite(send)


def test_segments_before_the_first_loss_is_eq5_without_its_no_loss_extra():
    from wirelab.model.slowstart import expected_segments_before_loss
    for d, p in [(10, 0.01), (100, 0.05), (1000, 0.001), (1, 0.3)]:
        assert expected_segments_before_loss(d, p) == pytest.approx(
            (1 - (1 - p) ** d) * (1 - p) / p + 1 - (1 - p) ** d)
        # E[min(J, d)] = Σ_{m<d} P(J > m), J the first lost segment
        assert expected_segments_before_loss(d, p) == pytest.approx(sum((1 - p) ** m for m in range(d)))
    assert expected_segments_before_loss(50, 0.0) == 50


def test_slow_start_idle_under_loss_is_weighted_by_survival():
    s, rtt = 0.001, 0.05
    free = slow_start_send(70, s, rtt, iw=10)[1]                         # idles after 10 and 30 segments
    lossy = slow_start_send(70, s, rtt, iw=10, loss=0.01)[1]
    assert free == pytest.approx((s + rtt - 10 * s) + (s + rtt - 20 * s))
    assert lossy == pytest.approx((s + rtt - 10 * s) * 0.99 ** 10 + (s + rtt - 20 * s) * 0.99 ** 30)
