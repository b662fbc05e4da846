"""Deadlines follow the prediction; a setting the model expects to outlast a given timeout is flagged."""
import math

from wirelab.experiment import Experiment
from wirelab.experiment.deadline import (FALLBACK_S, MARGIN_S, SETUP_ROUND_TRIPS, SLACK, deadline_s, expected_s,
                                        give_up_s, too_long)


def one(**kw):
    return Experiment("d", **{"proto": "udpr", "size": "1MB", "rate": "10mbit", **kw}).settings()[0]


def test_a_run_may_take_three_times_its_predicted_completion_plus_a_margin():
    slow = one(loss="1%", max_wait="2s", max_retransmits=3)
    # and the programs may wait out MAX_WAIT on each of their tries before they give up by themselves
    assert give_up_s(slow) == 2 * 4 and give_up_s(one()) == 5 * 6              # PPCB's defaults: 5 s, 5
    assert deadline_s(slow, {"pred_transfer_time_s": 100.0}, None) == SLACK * 100 + MARGIN_S + 8
    assert deadline_s(slow, {"pred_transfer_time_s": 100.0}, 20) == 20            # the user's word stands
    assert deadline_s(slow, {"pred_transfer_time_s": math.nan}, None) == FALLBACK_S + 8
    timed = one(proto="tcp", workload="time", time="5s", omit="1s")
    assert expected_s(timed, {}) == 6 and deadline_s(timed, {}, None) == SLACK * 6 + MARGIN_S
    # a long round trip: the connections and the report take round trips of their own
    assert expected_s(timed, {"pred_rtt_s": 5.0}) == 6 + SETUP_ROUND_TRIPS * 5.0


def test_settings_predicted_to_outlast_the_timeout_are_named():
    fast, slow = one(), one(loss="5%")
    late = too_long([(fast, {"pred_transfer_time_s": 2.0}), (slow, {"pred_transfer_time_s": 90.0})], 60)
    assert late == [(slow, 90.0)]
    assert too_long([(slow, {"pred_transfer_time_s": 90.0})], None) == []


def test_a_tcp_load_above_the_link_has_room_to_drain_its_send_buffer_and_a_timed_run_needs_none():
    from wirelab.experiment.deadline import AUTOTUNED_SNDBUF_BYTES, drain_s
    from wirelab.transfer.silence import DRAIN_SLACK
    slow = {"pred_goodput_bps": 2e6, "pred_rtt_s": 0.06}
    over = one(proto="tcp", workload="load", time="2s", offered="20mbit", sndbuf="1MB", rate="20mbit")
    # SO_SNDBUF 1 MB, doubled by Linux: 2 MB at 2 Mbit/s
    assert drain_s(over, slow) == 8 * 2e6 / 2e6
    assert deadline_s(over, slow, None) == SLACK * expected_s(over, slow) + MARGIN_S + DRAIN_SLACK * 8
    autotuned = one(proto="tcp", workload="load", time="2s", offered="20mbit", rate="20mbit")
    assert drain_s(autotuned, slow) == 8 * AUTOTUNED_SNDBUF_BYTES / 2e6
    # a load the link carries never fills the buffer; a timed run reports at its interval's end
    assert drain_s(over, {"pred_goodput_bps": 25e6}) == 0
    timed = one(proto="tcp", workload="time", time="2s", sndbuf="1MB", rate="20mbit")
    assert drain_s(timed, slow) == 0 and deadline_s(timed, slow, None) == SLACK * expected_s(timed, slow) + MARGIN_S
