"""The pred_* columns of a file transfer: the congestion control, the finite transfer, its breakdown."""
import math

import pandas as pd
import pytest

from wirelab.experiment.prediction import PRED_COLUMNS, predict_columns, predict_like
from wirelab.model import predict

TCP = {"proto": "tcp", "rate_bps": 10e6, "delay_s": 0.02, "loss": 0.0, "size_bytes": 200_000}


def test_the_cc_column_wins_over_the_machine_default():
    assert predict_columns({**TCP, "cc": "cubic"}, stream_header=21, default_cc="bbr")["pred_cc"] == "cubic"
    assert predict_columns(TCP, stream_header=21, default_cc="bbr")["pred_cc"] == "bbr"
    classic = predict_columns({**TCP, "cc": "htcp"}, stream_header=21)
    assert classic["pred_cc"] is None and "no model for congestion control 'htcp'" in classic["pred_note"]
    assert predict_columns({**TCP, "proto": "udpr"}, payload=1000, default_cc="bbr")["pred_cc"] is None


def test_a_file_gets_its_transfer_time_and_every_term():
    row = predict_columns({**TCP, "loss": 0.01}, stream_header=21, default_cc="cubic")
    assert set(PRED_COLUMNS) <= set(row)
    terms = {k: v for k, v in row.items() if k.startswith("pred_time_")}
    assert {"pred_time_handshake_s", "pred_time_conn_s", "pred_time_link_s", "pred_time_slow_start_s",
            "pred_time_propagation_s", "pred_time_rcvd_s"} <= set(terms)
    assert row["pred_transfer_time_s"] == pytest.approx(sum(terms.values()))
    assert row["pred_transfer_time_s"] > row["pred_data_time_s"] > 0
    # goodput of the file's bytes (the 21 B PPCB headers are not goodput) over the data time
    assert row["pred_goodput_bps"] == pytest.approx(8 * 200_000 / row["pred_data_time_s"])
    # (with loss a short transfer may beat the steady state: slow start runs until the first loss)
    clean = predict_columns(TCP, stream_header=21, default_cc="cubic")
    assert clean["pred_goodput_bps"] < clean["pred_steady_goodput_bps"] and clean["pred_binding"] == "slow_start"
    assert row["pred_note"].startswith("21 B of application framing")
    assert row["pred_binding"] in ("cubic", "slow_start", "loss_recovery") and row["pred_steady_binding"] == "chain"


def test_without_a_size_the_columns_are_the_steady_state():
    row = predict_columns({**TCP, "size_bytes": None}, stream_header=21, default_cc="cubic")
    assert math.isnan(row["pred_transfer_time_s"]) and row["pred_goodput_bps"] == row["pred_steady_goodput_bps"]
    assert not any(k.startswith("pred_time_") for k in row)


def test_udp_and_udpr_files():
    udp = predict_columns({"proto": "udp", "rate_bps": 10e6, "loss": 0.01, "size_bytes": 100_000},
                          payload=1000, udp_header=21)
    assert udp["pred_datagrams"] == 100 and udp["pred_expected_lost_datagrams"] == pytest.approx(1.0)
    assert udp["pred_delivered_fraction"] == pytest.approx(0.99) and udp["pred_binding"] == "link"
    assert udp["pred_goodput_bps"] == pytest.approx(0.99 * 10e6 * 1000 / 1063, rel=1e-6)
    udpr = predict_columns({"proto": "udpr", "rate_bps": 10e6, "delay_s": 0.005, "loss": 0.02,
                            "max_wait_s": 0.3, "size_bytes": 100_000}, payload=1000)
    assert udpr["pred_binding"] == "timeouts" and udpr["pred_transfer_std_s"] > 0
    assert udpr["pred_time_timeouts_s"] == pytest.approx(100 * 0.3 * 2 * 0.02 / 0.98, rel=1e-6)
    assert 0 <= udpr["pred_give_up_probability"] < 1e-6


def test_predict_like_keeps_the_congestion_control_and_size():
    row = pd.Series({**TCP, "cc": None, "mtu": pd.NA, **predict_columns(TCP, stream_header=21, default_cc="bbr")})
    longer = predict_like(row, delay_s=0.04)
    assert longer["pred_cc"] == "bbr" and longer["pred_goodput_bps"] < row["pred_goodput_bps"]
    bigger = predict_like(row, size_bytes=2_000_000)
    assert bigger["pred_goodput_bps"] > row["pred_goodput_bps"]


def test_a_real_wire_setting_is_predicted_on_its_own_wire():
    from wirelab.experiment import Experiment
    from wirelab.link import wire_of
    plain, emulated, real = (Experiment("w", proto="udp", workload="time", time="2s", rate="10mbit", **w).settings()[0]
                             for w in ({}, {"wire": "emulated"}, {"wire": "real"}))
    assert plain.setting_id == emulated.setting_id, "saying the default changes nothing saved"
    assert real.setting_id != plain.setting_id and real.link.wire == "real" and wire_of(real.link) == "real"
    row = predict_columns(real.params, wire=wire_of(real.link))
    assert row["pred_goodput_bps"] == pytest.approx(10e6 * 1472 / 1538) and row["pred_wire"] == "real"
    fttc = Experiment("f", proto="tcp", workload="time", time="2s", rate="21mbit", wire="real",
                      pppoe=True).settings()[0]
    assert fttc["mtu"] == 1492 and fttc.link.mtu == 1492 and fttc.link.l2_bytes == 46
    row = predict_columns(fttc.params, wire="real", default_cc="cubic")
    assert row["pred_payload_bytes"] == 1440 and row["pred_wire_bytes"] == 1538
    assert predict_like(pd.Series({**fttc.params, **row}))["pred_wire_bytes"] == 1538


def test_an_fttc_line_is_asymmetric_and_old_settings_keep_their_ids():
    from wirelab.experiment import Experiment
    up = Experiment("up", proto="udp", workload="time", time="2s", rate="21mbit", rate_reverse="54mbit",
                    wire="real", pppoe=True).settings()[0]
    assert (up.link.forward.rate_bps, up.link.reverse.rate_bps) == (21e6, 54e6)
    same = Experiment("s", rate="21mbit").settings()[0]
    assert same.link.reverse.rate_bps == 21e6 and "rate_reverse_bps" not in {
        k for k, v in same.params.items() if v is not None}
    # document 002's FTTC predictions on its own framing: 1464 B of UDP in 1538 B frames
    assert predict_columns(up.params, wire="real")["pred_goodput_bps"] == pytest.approx(21e6 * 1464 / 1538)


def test_udpr_on_tbf_is_predicted_as_tbf_meters_it_and_the_rest_as_a_wire():
    """The namespaces and hosts backends shape with tbf (link.meter_bytes): UDPR's cycle is the
    meter's, max(DATA/C, RTT + what exceeds the bucket /C); TCP and UDP keep η·C."""
    from wirelab.link import LinkSpec, meter_bytes
    spec = LinkSpec.parse(rate="10mbit")
    assert meter_bytes("namespaces", spec) == meter_bytes("hosts", spec) == spec.burst_for(spec.forward) == 2764
    assert meter_bytes("userspace", spec) is None and meter_bytes("loopback", spec) is None
    assert meter_bytes("namespaces", LinkSpec.parse(delay="1ms")) is None          # no rate: no tbf
    udpr = {"proto": "udpr", "rate_bps": 10e6, "size_bytes": 600_000}
    wire = predict_columns(udpr, payload=1000, host_rtt_s=0.2e-3)
    metered = predict_columns(udpr, payload=1000, host_rtt_s=0.2e-3, meter_bytes=2764)
    data_s = 8 * 1063 / 10e6                                   # 1000 B + PPCB 21 + UDP/IP 28 + Ethernet 14
    assert wire["pred_goodput_bps"] == pytest.approx(8000 / (data_s + 0.2e-3 + 8 * 59 / 10e6), rel=2e-3)
    assert metered["pred_goodput_bps"] == pytest.approx(8000 / data_s, rel=2e-3)
    assert metered["pred_goodput_bps"] <= metered["pred_limit_link_bps"] * 1.001
    assert metered["pred_meter_bytes"] == 2764 and math.isnan(wire["pred_meter_bytes"]) and "tbf meters" in metered["pred_note"]
    assert predict_like(pd.Series({**udpr, **metered}))["pred_goodput_bps"] == metered["pred_goodput_bps"]
    for proto in ("tcp", "udp"):
        assert predict_columns({**udpr, "proto": proto}, meter_bytes=2764)["pred_goodput_bps"] == \
            predict_columns({**udpr, "proto": proto})["pred_goodput_bps"], proto


def test_a_delay_on_one_direction_counts_once_in_the_round_trip_and_old_ids_stay():
    from wirelab.experiment import Experiment
    one_way = Experiment("one", workload="time", time="10s", rate="100mbit", delay="80ms", jitter="10ms",
                         delay_reverse="0", jitter_reverse="0", window=9000).settings()[0]
    assert (one_way.link.forward.delay_s, one_way.link.reverse.delay_s) == (0.08, 0.0)
    assert (one_way.link.forward.jitter_s, one_way.link.reverse.jitter_s) == (0.01, 0.0)
    both = Experiment("two", workload="time", time="10s", rate="100mbit", delay="40ms", window=9000).settings()[0]
    assert both.link.reverse.delay_s == 0.04 and "delay_reverse_s" not in both.params
    assert both.setting_id == Experiment("two", workload="time", time="10s", rate="100mbit", delay="40ms",
                                         window=9000).settings()[0].setting_id
    # the same 80 ms round trip either way: the window's limit is the same
    assert predict_columns(one_way.params)["pred_goodput_bps"] == pytest.approx(
        predict_columns(both.params)["pred_goodput_bps"], rel=1e-9)


def test_a_file_whose_time_the_model_cannot_give_is_not_compared_to_the_steady_state(monkeypatch):
    # the runs' rules give up on a file that takes too many rounds: its row must say so, not
    # set the steady state's goodput beside a file's (the grid once read 0.29 of it for a BBR file)
    import pandas as pd
    from wirelab.analysis import residual_table
    from wirelab.model import window_runs
    monkeypatch.setattr(window_runs, "_MAX_ROUNDS", 3)
    window_runs.file_runs.cache_clear()
    params = dict(proto="tcp", workload="file", size_bytes=964_721, rate_bps=25.9e6, delay_s=0.076, loss=0.003,
                  cc="bbr")
    out = predict_columns(params)
    flagged = predict("tcp", 25.9e6, rtt_s=0.152, loss=0.003, cc="bbr", size=964_721)     # the flag, not the words
    window_runs.file_runs.cache_clear()
    assert flagged.untimed and flagged.transfer is None
    assert math.isnan(out["pred_goodput_bps"]) and math.isnan(out["pred_transfer_time_s"])
    assert "transfer time not predicted" in out["pred_note"] and out["pred_steady_goodput_bps"] > 0
    runs = pd.DataFrame([{**params, **out, "experiment": "x", "setting_id": 0, "run_id": i, "rep": i, "status": "ok",
                          "engine": "wirelab", "backend": "userspace", "goodput_bps": 7.0e6, "transfer_s": 1.1,
                          "bytes_delivered": 964_721} for i in range(3)])
    row = residual_table(runs).iloc[0]
    assert row["reasons"].startswith("not compared") and "transfer time not predicted" in row["reasons"]
