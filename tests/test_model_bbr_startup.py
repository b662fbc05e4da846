"""BBR v1's start-up, paced (model.bbr_startup): the rules of tcp_bbr.c, tcp_rate.c and tcp_output.c."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from wirelab.errors import ModelError
from wirelab.model.bbr_startup import (HIGH_GAIN, UNPACED_SEGMENTS, bbr_departures, bbr_startup_queue,
                                       bbr_startup_send)
from wirelab.model.prediction import predict
from wirelab.model.slowstart import slow_start_send

SEGMENT_20MBIT = 8 * 1448 / (0.9575 * 20e6)        # a full segment at 20 Mbit/s


def test_the_gain_is_tcp_bbrs_integer_one():
    # tcp_bbr.c: bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1, BBR_UNIT = 256: 739/256 ≈ 2/ln 2
    assert HIGH_GAIN == 739 / 256
    assert HIGH_GAIN == pytest.approx(2 / math.log(2), rel=2e-3)


def test_the_first_ten_segments_leave_back_to_back_then_pacing_spreads_the_next_round():
    s, rtt = SEGMENT_20MBIT, 0.170
    leaves = bbr_departures(s, rtt).leaves
    first = leaves[:UNPACED_SEGMENTS]
    assert first == pytest.approx(s * np.arange(1, UNPACED_SEGMENTS + 1))       # tcp_output.c: unpaced
    assert leaves[UNPACED_SEGMENTS] > rtt                                        # the 11th waits for an ACK
    # the second round (about 2 × IW) is paced at 2.885 × the first round's delivery rate: spread
    # over about 0.7 of a round, not sent in a burst (a capture at 20 Mbit/s, 85 ms: 22 over 114 ms)
    second = leaves[(leaves > rtt) & (leaves < 2 * rtt)]
    assert 18 <= len(second) <= 24
    assert 0.55 * rtt < second[-1] - second[0] < 0.8 * rtt


def test_the_paced_ramp_doubles_a_round_as_the_paper_says():
    # ACM Queue 2016: 2/ln 2 is "the smallest gain that doubles the sending rate each round"
    s, rtt = 8 * 1448 / (0.9575 * 100e6), 0.200
    leaves = bbr_departures(s, rtt).leaves
    per_round = np.diff([np.sum(leaves < k * rtt) for k in range(1, 9)])
    growth = per_round[2:6] / per_round[1:5]
    assert np.all((growth > 1.7) & (growth < 2.3)), per_round


def test_a_file_ending_in_start_up_takes_longer_than_slow_start_and_a_long_one_the_same_idle():
    s, rtt = SEGMENT_20MBIT, 0.170
    for n in (30, 100, 237, 400):
        assert bbr_startup_send(n, s, rtt).send > slow_start_send(n, s, rtt).send
    # after start-up the bottleneck is busy: a longer file adds only its transmission
    long, longer = bbr_startup_send(5_000, s, rtt), bbr_startup_send(8_000, s, rtt)
    assert longer.idle == pytest.approx(long.idle)
    assert longer.send - long.send == pytest.approx(3_000 * s)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-5, 5e-3), st.floats(0.0, 0.4), st.floats(1, 3000), st.sampled_from([None, 8.0, 40.0, 300.0]))
def test_never_faster_than_the_link_and_idle_never_negative(segment_s, rtt_s, n, cap):
    paced = bbr_startup_send(n, segment_s, rtt_s, max_window=cap)
    assert paced.send >= n * segment_s * (1 - 1e-9) and paced.idle >= 0
    # a window cap only slows it
    assert paced.send >= bbr_startup_send(n, segment_s, rtt_s).send * (1 - 1e-9)


def test_the_overshoot_queue_is_about_twice_the_pipe():
    s, rtt = SEGMENT_20MBIT, 0.170
    pipe = rtt / s
    peak = bbr_startup_queue(5_000, s, rtt)
    assert 1.2 * pipe < peak < 2.9 * pipe
    assert bbr_startup_queue(30, s, rtt) < 20                # a small file never builds it


def test_bad_input_is_a_model_error():
    with pytest.raises(ModelError):
        bbr_startup_send(-1, 0.001, 0.05)
    with pytest.raises(ModelError):
        bbr_startup_send(10, 0.0, 0.05)


def test_a_bbr_file_prediction_names_the_paced_start_up_and_a_shallow_queue():
    p = predict("tcp", 20e6, rtt_s=0.170, cc="bbr", size=344_000, mtu=1500)
    cubic = predict("tcp", 20e6, rtt_s=0.170, cc="cubic", size=344_000, mtu=1500)
    assert "startup" in p.transfer.data and "slow_start" not in p.transfer.data
    assert p.transfer.total_s > cubic.transfer.total_s
    assert any("tcp_bbr.c" in note for note in p.transfer.notes)
    shallow = predict("tcp", 20e6, rtt_s=0.170, cc="bbr", size=1_160_000, mtu=1500, queue_bytes=62 * 1514)
    deep = predict("tcp", 20e6, rtt_s=0.170, cc="bbr", size=1_160_000, mtu=1500, queue_bytes=1000 * 1514)
    assert any("dropped there and resent" in note for note in shallow.transfer.notes)
    assert shallow.transfer.data["queue_overflow"] > 0 and "queue_overflow" not in deep.transfer.data
    assert shallow.transfer.total_s > deep.transfer.total_s


def test_a_queue_the_overshoot_overflows_drops_the_excess_and_every_segment_still_arrives():
    s, rtt, segments = SEGMENT_20MBIT, 0.170, 800
    free = bbr_departures(s, rtt, segments=segments)
    shallow = bbr_departures(s, rtt, segments=segments, queue=60)
    assert free.dropped == 0 and shallow.dropped > 0
    assert len(shallow.leaves) == segments and np.all(np.isfinite(shallow.leaves))
    assert np.all(np.diff(shallow.leaves) >= 0)                 # "the first n have all arrived" only grows
    # drops near the file's end cost time: found a round later and resent behind the queue (drops
    # with much of the file still to send cost nothing: the resent segments take the link's time
    # the dropped ones did not)
    assert bbr_startup_send(segments, s, rtt, queue=60).send > bbr_startup_send(segments, s, rtt).send + rtt
    # a queue deep enough for the overshoot drops nothing and changes nothing
    deep = bbr_departures(s, rtt, segments=segments, queue=10_000)
    assert deep.dropped == 0 and bbr_startup_send(segments, s, rtt, queue=10_000).send == pytest.approx(
        bbr_startup_send(segments, s, rtt).send)


@pytest.mark.parametrize("rtt", [0.01, 0.125, 0.17])
def test_the_runs_at_a_vanishing_loss_meet_the_loss_free_ramp(rtt):
    # window_runs carries the same ramp round by round (held rounds sent again): as p → 0 it is the ramp
    for size in (17_377, 344_000, 2_000_000):
        free = predict("tcp", 10e6, rtt_s=rtt, cc="bbr", size=size, mtu=1500).transfer
        runs = predict("tcp", 10e6, rtt_s=rtt, cc="bbr", size=size, mtu=1500, loss=1e-6).transfer
        # (the runs count whole segments: a file's partial last one costs them up to one S/R more)
        assert runs.total_s == pytest.approx(free.total_s, abs=8 * 1514 / 10e6)
        assert ("startup" in runs.data) == ("startup" in free.data and free.data["startup"] > 1e-3)
