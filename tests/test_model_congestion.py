"""Steady state by congestion control: RFC 9438's own tables, BBR's stated assumption."""
import math

import pytest
from hypothesis import given, strategies as st

from wirelab.errors import ModelError
from wirelab.model import predict
from wirelab.model.congestion import (bbr, cubic, cubic_average_window, reno_average_window,
                                      steady_state)

LOSSES = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8]
# RFC 9438 §5.1 Table 1 (RTT = 0.1 s) and Table 2 (RTT = 0.01 s): average window in
# segments, columns Reno, CUBIC C = 0.04, C = 0.4, C = 4 (HSTCP left out).
TABLE_1 = [(12, 12, 12, 12), (38, 38, 38, 59), (120, 120, 187, 333), (379, 593, 1054, 1874),
           (1200, 3332, 5926, 10538), (3795, 18740, 33325, 59261), (12000, 105383, 187400, 333250)]
TABLE_2 = [(12, 12, 12, 12), (38, 38, 38, 38), (120, 120, 120, 120), (379, 379, 379, 379),
           (1200, 1200, 1200, 1874), (3795, 3795, 5926, 10538), (12000, 18740, 33325, 59261)]


@pytest.mark.parametrize("rtt, table", [(0.1, TABLE_1), (0.01, TABLE_2)])
def test_rfc9438_tables_1_and_2(rtt, table):
    for p, (reno, *by_c) in zip(LOSSES, table):
        assert round(reno_average_window(p)) == reno
        for c, expected in zip((0.04, 0.4, 4.0), by_c):
            assert round(cubic_average_window(rtt, p, c=c)) == expected, (rtt, p, c)


def test_rfc9438_eq7_coefficient_and_table_3():
    # eq. 7: with C = 0.4, β = 0.7 the coefficient is 1.054
    assert cubic_average_window(0.5, 0.5, reno_friendly=False) == pytest.approx(1.054, abs=5e-4)
    # Table 3 (1500 B packets, RTT 0.1 s): the loss at which CUBIC averages these windows
    for window, p in [(83.3, 2.9e-4), (833.3, 1.4e-5), (8333.3, 6.3e-7), (83333.3, 2.9e-8)]:
        assert cubic_average_window(0.1, p) == pytest.approx(window, rel=0.03)
    # 1 Mbit/s needs 8.3 segments: there CUBIC is in its Reno-friendly region
    assert cubic_average_window(0.1, 2.0e-2) == pytest.approx(reno_average_window(2.0e-2))
    assert reno_average_window(2.0e-2) == pytest.approx(8.3, rel=0.03)


def test_cubic_goodput_is_window_times_mss_over_rtt():
    assert cubic(1448, 0.04, 0.01) == pytest.approx(8 * 1448 * 12.0 / 0.04)   # Reno-friendly: 1.2/√p


def test_bbr_is_link_times_fraction_delivered_and_stops_at_20_percent():
    assert bbr(10e6, 0.956, 0.05) == pytest.approx(10e6 * 0.956 * 0.95)
    with pytest.raises(ModelError, match="not modelled"):
        bbr(10e6, 0.956, 0.25)
    state = steady_state("bbr", 10e6, 0.956, 1448, rtt_s=0.04, loss=0.25)
    assert not state.covered and math.isnan(state.goodput_bps) and "not modelled" in state.notes[0]
    assert "optimistic" in " ".join(steady_state("bbr", 10e6, 0.956, 1448, rtt_s=0.04, loss=0.18).notes)


def test_each_cc_names_its_own_limit():
    common = dict(rtt_s=0.041, loss=0.01)
    assert steady_state("bbr", 10e6, 0.956, 1448, **common).binding == "bbr"
    assert steady_state("cubic", 10e6, 0.956, 1448, **common).binding == "cubic"
    assert steady_state("reno", 10e6, 0.956, 1448, **common).binding == "padhye"
    assert steady_state("cubic", 10e6, 0.956, 1448, rtt_s=0.041).binding == "link"
    assert steady_state("cubic", 10e6, 0.956, 1448, rtt_s=0.041, window_bytes=20000).binding == "window"
    lossy = steady_state("cubic", 10e6, 0.956, 1448, rtt_s=0.002, loss=0.01)
    assert lossy.binding == "link" and lossy.goodput_bps == pytest.approx(10e6 * 0.956 * 0.99)
    with pytest.raises(ModelError, match="congestion control"):
        steady_state("vegas", 10e6, 0.956, 1448, rtt_s=0.04)


def test_predict_with_cc_keeps_the_old_answer_without_it():
    old = predict("tcp", 10e6, rtt_s=0.04, loss=0.01, timestamps=True)
    assert old.cc is None and old.binding in ("mathis", "padhye") and old.transfer is None
    new = predict("tcp", 10e6, rtt_s=0.04, loss=0.01, timestamps=True, cc="bbr")
    assert new.cc == "bbr" and new.binding == "bbr" and new.goodput_bps > 2 * old.goodput_bps
    with pytest.raises(ModelError, match="no model for congestion control"):
        predict("tcp", 10e6, cc="westwood")


@given(st.sampled_from(["reno", "cubic", "bbr"]), st.floats(0.001, 0.3), st.floats(1e-4, 0.15),
       st.floats(1.05, 3.0))
def test_steady_state_falls_with_rtt_and_loss(cc, rtt, loss, factor):
    def rate(r, p):
        return steady_state(cc, 10e6, 0.956, 1448, rtt_s=r, loss=p).goodput_bps
    assert rate(rtt * factor, loss) <= rate(rtt, loss) * (1 + 1e-12)
    assert rate(rtt, min(loss * factor, 0.2)) <= rate(rtt, loss) * (1 + 1e-12)
    assert rate(rtt, loss) <= 10e6 * 0.956 * (1 - loss) * (1 + 1e-12)
