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
