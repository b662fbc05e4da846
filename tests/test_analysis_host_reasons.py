"""A host kept off the CPU is named, not blamed on the model: the residual table turns a udp sender
that offered less than the link and a receiver's socket drops into reasons of known size."""
import math

import pandas as pd
import pytest

from wirelab.analysis.reasons import reasons
from wirelab.analysis.residuals import residual_table


def _udp_runs(**columns):
    base = dict(experiment="x", setting_id=0, status="ok", engine="wirelab", backend="userspace", workload="file",
                proto="udp", size_bytes=2_000_000, rate_bps=60e6, delay_s=0.005, loss=0.0, mtu=1500,
                pred_goodput_bps=57.29e6, pred_transfer_time_s=0.2943, pred_data_time_s=0.2793,
                pred_time_link_s=0.2743, pred_datagrams=1359, bytes_delivered=2_000_000)
    frame = pd.DataFrame([{**base, "run_id": i, "rep": i, **{k: v[i] for k, v in columns.items()}}
                          for i in range(len(next(iter(columns.values()))))])
    return frame


def test_a_sender_that_offered_less_than_the_link_is_the_reason_and_its_size():
    # as measured under load: the sender took 0.373 s to send what the link carries in 0.274 s
    spans = [0.3729, 0.3731, 0.3728]
    runs = _udp_runs(first_data_time_s=[0.0, 0.0, 0.0], last_data_time_s=spans,
                     transfer_s=[s + 0.0053 for s in spans], goodput_bps=[8 * 2e6 / (s + 0.0053) for s in spans])
    row = residual_table(runs).iloc[0]
    assert row["measured/predicted"] == pytest.approx(0.74, abs=0.01)
    assert "slow sender" in row["reasons"] and row["verdict"] == "explained"
    (slow,) = [r for r in reasons(_summary(runs)) if r.name == "slow sender"]
    assert slow.low == pytest.approx(0.2793 / (0.3729 + 0.005) - 1, abs=1e-3)


def test_a_sender_that_kept_the_line_busy_is_no_reason():
    runs = _udp_runs(first_data_time_s=[0.0] * 3, last_data_time_s=[0.250] * 3, transfer_s=[0.2795] * 3,
                     goodput_bps=[8 * 2e6 / 0.2795] * 3)
    assert not [r for r in reasons(_summary(runs)) if r.name == "slow sender"]


def test_receiver_drops_are_their_share_of_the_datagrams_and_older_sweeps_stay_silent():
    runs = _udp_runs(first_data_time_s=[0.0] * 2, last_data_time_s=[0.25] * 2, transfer_s=[0.28] * 2,
                     goodput_bps=[50e6] * 2, metadata_receiver_socket_drops=[40, 28])
    (drops,) = [r for r in reasons(_summary(runs)) if r.name == "receiver drops"]
    assert drops.low == pytest.approx(-34 / 1359)
    older = runs.drop(columns=["metadata_receiver_socket_drops", "first_data_time_s", "last_data_time_s"])
    assert not {r.name for r in reasons(_summary(older))} & {"receiver drops", "slow sender"}


def _summary(runs):
    from wirelab.analysis.residuals import _host_columns
    from wirelab.experiment.stats import summarize
    row = summarize(_host_columns(runs), metrics=("goodput_bps", "send_span_s", "receiver_socket_drops")).iloc[0]
    assert math.isfinite(row["measured_over_predicted"])
    return row


def test_go_back_n_windows_are_settings_of_their_own_and_get_no_stop_and_wait_reasons():
    from wirelab.experiment.stats import summarize
    runs = pd.DataFrame([dict(experiment="x", setting_id=w, run_id=w * 10 + i, rep=i, status="ok", engine="wirelab",
                              backend="userspace", workload="file", proto="gbn", window_packets=float(w),
                              size_bytes=100_000, rate_bps=10e6, delay_s=0.01, loss=0.01, max_wait_s=0.3,
                              goodput_bps=3e6, pred_goodput_bps=3e6, rtt_mean_s=0.05, pred_rtt_s=0.02,
                              pred_datagrams=100, pred_data_time_s=0.27, retransmissions=8.0,
                              pred_time_timeouts_s=0.3)
                         for w in (1, 4, 16) for i in range(2)])
    table = summarize(runs, metrics=("goodput_bps", "rtt_mean_s", "retransmissions"))
    assert sorted(table["window_packets"]) == [1.0, 4.0, 16.0] and set(table["n"]) == {2}
    names = {w: {r.name for r in reasons(row)} for w, row in zip(table["window_packets"], table.to_dict("records"))}
    assert "host round trip" in names[1.0]
    assert not names[4.0] & {"host round trip", "rare timeouts"} and not names[16.0] & {"host round trip",
                                                                                          "rare timeouts"}


def test_a_go_back_n_setting_names_its_window_in_the_tables():
    from wirelab.analysis.residuals import _label
    from wirelab.experiment.stats import pretty, summarize
    runs = pd.DataFrame([dict(experiment="x", setting_id=w, run_id=w, rep=0, status="ok", engine="wirelab",
                              backend="userspace", workload="file", proto=p, window_packets=w, window_bytes=b,
                              size_bytes=100_000, rate_bps=10e6, delay_s=0.01, loss=0.0, goodput_bps=1e6,
                              pred_goodput_bps=1e6, pred_binding="window")
                         for p, w, b in (("gbn", 4.0, None), ("gbn", 16.0, None), ("tcp", None, 65536.0))])
    shown = pretty(summarize(runs))
    assert list(shown["window packets"]) == ["4", "16", ""] and list(shown["window"]) == ["", "", "65.54 kB"]
    assert _label(runs.iloc[1].to_dict()).startswith("gbn window 16 100 kB")
