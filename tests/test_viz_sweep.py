"""Sweep figures: predicted is a line, measured are points with CI bars, both labelled; and the panel."""
import importlib
import random

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from wirelab.errors import TransferError  # noqa: E402
from wirelab.engines.wirelab import goodput_series  # noqa: E402


def runs(reps=3):
    rows, rng = [], random.Random(1)
    for proto in ("tcp", "udp", "udpr"):
        for rate in (10e6, 20e6):
            for delay in (0.0, 0.02):
                for rep in range(reps):
                    failed = proto == "udpr" and delay > 0
                    good = None if failed else 0.95 * rate * (1 + rng.uniform(-0.02, 0.02))
                    rows.append({"engine": "fake", "backend": "fake", "proto": proto, "rate_bps": rate,
                                 "delay_s": delay, "loss": 0.0, "rep": rep, "run_id": f"{proto}{rate}{delay}{rep}",
                                 "status": "failed" if failed else "ok",
                                 "error": "retransmits exceeded" if failed else None,
                                 "goodput_bps": good, "sender_goodput_bps": None if failed else good * 1.05,
                                 "pred_goodput_bps": 0.9564 * rate, "pred_binding": "link"})
    return pd.DataFrame(rows)


def labels(ax):
    return ax.get_legend_handles_labels()[1]


def test_predicted_is_a_line_and_measured_are_points_with_error_bars():
    from wirelab.viz import plot_predicted_vs_measured
    frame = runs()
    ax = plot_predicted_vs_measured(frame[frame["proto"] == "tcp"], "rate_bps", hue="delay_s")
    assert isinstance(ax, plt.Axes)
    names = labels(ax)
    assert sum(n.startswith("predicted") for n in names) == 2
    assert sum(n.startswith("measured (mean ± 95 % CI)") for n in names) == 2
    assert len(ax.containers) == 2                         # one errorbar container per delay
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [10, 20] and line.get_ydata()[0] == pytest.approx(9.564)
    assert "Mbit/s" in ax.get_xlabel() and "Mbit/s" in ax.get_ylabel()
    plt.close("all")


def test_failed_settings_are_marked_and_an_existing_ax_is_used():
    from wirelab.viz import plot_predicted_vs_measured
    fig, ax = plt.subplots()
    frame = runs()
    out = plot_predicted_vs_measured(frame[frame["proto"] == "udpr"], "delay_s", hue="rate_bps", ax=ax)
    assert out is ax and any(n.startswith("failed") for n in labels(ax))
    plt.close(fig)


def test_facets_loss_delay_and_sender_views_return_axes():
    from wirelab.viz import (plot_by_protocol, plot_delay, plot_goodput_over_time, plot_loss,
                             plot_sender_vs_receiver, swept_columns)
    frame = runs()
    assert swept_columns(frame) == ["rate_bps", "delay_s"]
    axes = plot_by_protocol(frame, "rate_bps", hue="delay_s")
    assert [a.get_title() for a in axes] == ["TCP", "UDP", "UDPR"]
    assert plot_delay(frame).get_xlabel().startswith("one-way delay")
    assert plot_loss(frame).get_xscale() == "symlog"
    ax = plot_sender_vs_receiver(frame)
    assert {"sender's view", "receiver (trust this)", "predicted"} <= set(labels(ax))
    series = pd.DataFrame({"run_id": ["a"] * 3, "t_s": [0.1, 0.2, 0.3], "bps": [9e6, 9.5e6, 9.4e6],
                           "proto": ["tcp"] * 3, "pred_goodput_bps": [9.56e6] * 3})
    ax = plot_goodput_over_time(series)
    assert "measured tcp" in labels(ax) and "predicted tcp" in labels(ax)
    assert plot_goodput_over_time(series.iloc[:0]).texts
    plt.close("all")


def test_goodput_series_bins_packets():
    points = goodput_series([0.0, 0.05, 0.1, 0.15, 0.2], 1000, bins=2)
    assert len(points) == 2 and points[0]["t_s"] == pytest.approx(0.1)
    assert sum(p["bps"] * 0.1 for p in points) == pytest.approx(5 * 8000)
    assert goodput_series([1.0], 1000) == []


def test_importing_viz_changes_no_global_style():
    before = dict(matplotlib.rcParams)
    for name in ("wirelab.viz.sweep", "wirelab.viz.timeseries", "wirelab.viz.panel", "wirelab.viz"):
        importlib.reload(importlib.import_module(name))
    assert dict(matplotlib.rcParams) == before


class FlakyEngine:
    """Like the sweep tests' fake: udpr with a delay always fails."""
    name = "fake"

    def run(self, setting, link, *, deadline, seed, workdir):
        if setting.proto == "udpr" and setting["delay_s"]:
            raise TransferError("retransmits exceeded", "raise MAX_RETRANSMITS")
        return {"ok": True, "goodput_bps": 0.95 * setting["rate_bps"],
                "sender_goodput_bps": setting["rate_bps"]}


def test_panel_runs_shows_why_runs_failed_and_survives_bad_input(tmp_path):
    from pixels import inked_fraction
    from wirelab.viz import ExperimentPanel
    plt.close("all")
    panel = ExperimentPanel(engine=FlakyEngine(), folder=tmp_path, progress=False, reps=2, backend="loopback")
    frame = panel.run()
    assert panel.error is None and len(frame) == 3 * 2 * 2
    # Its plot is drawn off pyplot (another thread redraws pyplot's figures in JupyterLab),
    # and what it showed is a drawn plot, not an empty frame.
    assert plt.get_fignums() == [] and len(panel.figure.axes) == 3
    assert inked_fraction(panel.png) > 0.015
    assert "not ok" in panel.status.value and not panel.button.disabled
    assert panel.table["why failed"].str.contains("retransmits exceeded").sum() == 1
    assert any(line.startswith("backend:") for line in panel.log)
    panel.controls["rate"].value = "10 parsecs"
    panel.run()
    assert "rate" in panel.error and panel.status.value.startswith("failed") and not panel.button.disabled
    assert panel.log[-1].startswith("⚠") and "parsecs" in panel.log[-1]
    panel.controls["rate"].value = "20mbit"
    assert len(panel.run()) == 12 and panel.error is None
    plt.close("all")


def test_predicted_line_follows_the_model_between_the_measured_points():
    from wirelab.experiment.prediction import predict_columns
    from wirelab.viz import plot_by_protocol
    rows = []
    for delay in (0.0, 0.02):
        params = {"proto": "udpr", "rate_bps": 10e6, "delay_s": delay, "loss": 0.0}
        pred = predict_columns(params, payload=1000)
        for rep in range(2):
            rows.append({**params, **pred, "rep": rep, "status": "ok", "error": None,
                         "goodput_bps": pred["pred_goodput_bps"] * (0.98 + 0.02 * rep)})
    frame = pd.DataFrame(rows)
    ax = plot_by_protocol(frame, "delay_s")[0]
    line = ax.get_lines()[0]
    xs, ys = line.get_xdata(), line.get_ydata()
    assert len(xs) > 10 and xs[0] == 0 and xs[-1] == pytest.approx(20)
    assert ys[0] == pytest.approx(rows[0]["pred_goodput_bps"] / 1e6)
    assert ys[-1] == pytest.approx(rows[-1]["pred_goodput_bps"] / 1e6)
    middle = ys[len(ys) // 2]
    assert middle < (ys[0] + ys[-1]) / 2          # 1/RTT: far below a straight line
    assert ax.get_yscale() == "log"               # stop-and-wait spans orders of magnitude
    plt.close("all")


def test_sender_and_receiver_views_stay_readable_when_they_differ_by_orders():
    """2,000 Mbit/s written into a socket buffer, 10 carried: a linear axis squashes the
    receiver to the floor; the plot switches to a log axis and shows both."""
    from wirelab.viz import plot_sender_vs_receiver
    frame = pd.DataFrame({"proto": ["tcp", "tcp", "udp", "udp"], "engine": ["wirelab"] * 4, "status": ["ok"] * 4,
                          "sender_goodput_bps": [2.0e9, 1.9e9, 10.5e6, 10.4e6],
                          "goodput_bps": [9.4e6, 9.5e6, 9.6e6, 9.5e6], "pred_goodput_bps": [9.56e6] * 4})
    ax = plot_sender_vs_receiver(frame)
    low, high = ax.get_ylim()
    assert ax.get_yscale() == "log" and low <= 9.4 and high >= 2000
    assert high / low < 1e3                                    # fitted to the data, not decades of air
    close = frame.assign(sender_goodput_bps=frame["goodput_bps"] * 1.05)
    ax = plot_sender_vs_receiver(close)
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    plt.close("all")


def test_io_graph_plot_marks_measured_predicted_and_retransmissions():
    from wirelab.viz import plot_io_graph
    graph = pd.DataFrame({"time": [0.0, 0.1, 0.2], "goodput_bps": [9e6, 8e6, 9.2e6],
                          "throughput_bps": [9.6e6, 9.5e6, 9.7e6]})
    ax = plot_io_graph(graph, predicted_bps=9.4e6, retransmissions=[0.12, 0.15])
    assert {"measured goodput", "measured throughput (frames)", "predicted goodput (link limit)",
            "retransmission"} == set(labels(ax))
    assert ax.get_lines()[2].get_ydata()[0] == pytest.approx(9.4)
    assert "retransmission" not in labels(plot_io_graph(graph))
    plt.close("all")
