"""Student-t intervals, the prediction columns, and the machine metadata parsers (recorded text)."""
import math
from pathlib import Path

import pandas as pd
import pytest

from wirelab.experiment.meta import (parse_ethtool_offloads, parse_tc_qdiscs, read_sysctls,
                                     tcp_timestamps_enabled)
from wirelab.experiment.prediction import predict_columns, predict_like
from wirelab.experiment.stats import confidence_interval, summarize, t_quantile

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("df, expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281),
                                          (30, 2.0423), (1e6, 1.9600)])
def test_t_quantiles_match_the_table(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-4)


def test_confidence_interval_by_hand():
    mean, std, half, n = confidence_interval([9.0, 10.0, 11.0])
    assert (mean, std, n) == (10.0, 1.0, 3) and half == pytest.approx(4.302653 / math.sqrt(3))
    assert math.isnan(confidence_interval([5.0])[2]) and confidence_interval([None, float("nan")])[3] == 0


def test_summary_keeps_settings_with_missing_parameters_apart():
    frame = pd.DataFrame({"proto": ["tcp", "tcp", "tcp"], "rate_bps": [None, None, 1e7],
                          "status": ["ok", "ok", "ok"], "goodput_bps": [1.0, 3.0, 5.0], "error": [None] * 3})
    table = summarize(frame)
    assert len(table) == 2 and sorted(table["n"]) == [1, 2]
    assert table.loc[table["n"] == 2, "goodput_bps_mean"].iloc[0] == 2.0


def test_predictions_account_for_wire_framing_and_missing_rate():
    tcp = predict_columns({"proto": "tcp", "rate_bps": 10e6})
    assert tcp["pred_goodput_bps"] == pytest.approx(10e6 * 1448 / 1514)
    framed = predict_columns({"proto": "tcp", "rate_bps": 10e6}, stream_header=21)
    assert framed["pred_goodput_bps"] == pytest.approx(tcp["pred_goodput_bps"] * 1000 / 1021)
    real = predict_columns({"proto": "tcp", "rate_bps": 10e6}, wire="real")
    assert real["pred_goodput_bps"] == pytest.approx(10e6 * 1448 / 1538)
    paced = predict_columns({"proto": "tcp", "rate_bps": 10e6}, wire="payload")
    assert paced["pred_goodput_bps"] == pytest.approx(10e6) and paced["pred_efficiency"] == 1.0
    none = predict_columns({"proto": "udp", "rate_bps": None})
    assert math.isnan(none["pred_goodput_bps"]) and "no link rate" in none["pred_note"]
    lossy = predict_columns({"proto": "tcp", "rate_bps": 10e6, "delay_s": 0.02, "loss": 0.01})
    assert lossy["pred_binding"] in ("mathis", "padhye") and lossy["pred_rtt_s"] == pytest.approx(0.04)
    udp = predict_columns({"proto": "udp", "rate_bps": 10e6, "offered_bps": 2e6})
    assert udp["pred_binding"] == "offered" and udp["pred_goodput_bps"] == pytest.approx(2e6)
    row = pd.Series({"proto": "udpr", "rate_bps": 10e6, "delay_s": 0.0, "loss": 0.0, "mtu": pd.NA,
                     **predict_columns({"proto": "udpr", "rate_bps": 10e6}, payload=1000)})
    assert predict_like(row, delay_s=0.02)["pred_goodput_bps"] < row["pred_goodput_bps"] / 10


def test_tc_and_ethtool_parsers_on_recorded_output():
    qdiscs = parse_tc_qdiscs((DATA / "tc_qdisc_show.json").read_text())
    assert {"dev": "lo", "kind": "noqueue", "handle": "0:", "parent": "root", "options": {}} in qdiscs
    assert parse_tc_qdiscs("not json") == []
    offloads = parse_ethtool_offloads((DATA / "ethtool_k_lo.txt").read_text())
    assert offloads["tcp-segmentation-offload"] is True and offloads["large-receive-offload"] is False
    assert "tx-tcp-segmentation" not in offloads            # the indented sub-features are left out


def test_sysctls_read_from_a_proc_tree(tmp_path):
    (tmp_path / "net" / "ipv4").mkdir(parents=True)
    (tmp_path / "net" / "ipv4" / "tcp_timestamps").write_text("0\n")
    (tmp_path / "net" / "ipv4" / "tcp_rmem").write_text("4096\t131072\t6291456\n")
    values = read_sysctls(["net.ipv4.tcp_timestamps", "net.ipv4.tcp_rmem", "net.core.nothing"], root=tmp_path)
    assert values == {"net.ipv4.tcp_timestamps": "0", "net.ipv4.tcp_rmem": "4096 131072 6291456",
                      "net.core.nothing": None}
    assert tcp_timestamps_enabled(values) is False and tcp_timestamps_enabled({}) is True


def test_pretty_says_so_when_no_run_measured_anything():
    import pandas as pd
    from wirelab.experiment import pretty, summarize
    frame = pd.DataFrame({"proto": ["tcp", "tcp"], "rate_bps": [1e7, 1e7], "status": ["failed", "failed"],
                          "error": ["TransferError: refused", "TransferError: refused"],
                          "pred_goodput_bps": [9.5e6, 9.5e6], "pred_binding": ["link", "link"]})
    table = pretty(summarize(frame))
    assert table["measured"].tolist() == ["—"] and table["runs"].tolist() == ["0 (+2 failed)"]
    assert table["why failed"].str.contains("refused").all()


def test_a_file_is_compared_as_size_over_mean_time_not_mean_goodput():
    # UDPR-like: four quick runs and one with a MAX_WAIT timeout (Jensen: mean goodput ≫ size/E[T])
    seconds = [1.0, 1.0, 1.0, 1.0, 5.0]
    frame = pd.DataFrame({"proto": "udpr", "workload": "file", "size_bytes": 1e6, "status": "ok",
                          "transfer_s": seconds, "bytes_delivered": 1e6, "error": None,
                          "goodput_bps": [8e6 / s for s in seconds], "pred_goodput_bps": 8e6 / 1.8,
                          "pred_binding": "timeouts"})
    row = summarize(frame).iloc[0]
    assert row["goodput_of_mean_time_bps"] == pytest.approx(8e6 / 1.8)
    assert row["goodput_bps_mean"] == pytest.approx(8e6 * 0.84)
    assert row["measured_over_predicted"] == pytest.approx(1.0) and row["measured_basis"] == "size ÷ mean time"
    mean, _, half, _ = confidence_interval(seconds)
    assert row["goodput_of_mean_time_low"] == pytest.approx(8e6 / (mean + half))
    assert row["goodput_of_mean_time_high"] == math.inf                  # the time interval reaches 0
    assert row["relative_ci"] == pytest.approx(half / mean)
    timed = frame.assign(workload="time")
    assert summarize(timed).iloc[0]["measured_basis"] == "mean of run goodputs"
    from wirelab.experiment import pretty
    assert "mean of run goodputs" in pretty(summarize(frame)).columns
