"""Goodput over time inside runs: does a transfer settle at the predicted rate?

Slow start, a queue filling, a retransmission timeout: they show here and
vanish in a mean. Takes the long table of ``wirelab.analysis.load_series``
(one row per run and interval) or any table with ``t_s`` and ``bps`` columns.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["plot_goodput_over_time", "plot_io_graph"]


def plot_goodput_over_time(series: pd.DataFrame, *, hue: str = "proto", ax=None,
                           title: str = "Goodput over time (receiver), per run"):
    """One thin line per run (coloured by ``hue``), the predicted goodput dashed."""
    # start-up: matplotlib only when plot_goodput_over_time() runs
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(8, 3.5))[1]
    if series.empty:
        ax.text(0.5, 0.5, "no time series recorded", ha="center", va="center", transform=ax.transAxes)
        return ax
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    levels = list(dict.fromkeys(series[hue])) if hue in series else [None]
    for i, level in enumerate(levels):
        part = series if level is None else series[series[hue] == level]
        color = colors[i % len(colors)]
        for j, (_, run) in enumerate(part.groupby("run_id", sort=False)):
            run = run.sort_values("t_s")
            ax.plot(run["t_s"], run["bps"] * 1e-6, "-", color=color, alpha=0.6, linewidth=1,
                    label=f"measured {level}" if j == 0 and level is not None else None)
        if "pred_goodput_bps" in part and part["pred_goodput_bps"].notna().any():
            ax.axhline(part["pred_goodput_bps"].median() * 1e-6, color=color, linestyle="--",
                       linewidth=1, label=f"predicted {level}" if level is not None else "predicted")
    ax.set(xlabel="time since the first packet (s)", ylabel="goodput (Mbit/s)", title=title)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_io_graph(graph: pd.DataFrame, *, predicted_bps: float | None = None, retransmissions=None,
                  ax=None, title: str = "I/O graph"):
    """Wireshark's I/O graph of one direction (the table of ``capture.io_graph``): measured
    goodput (new payload) and throughput (whole frames) per bin as points, the predicted
    goodput as a line, and ``retransmissions`` (times, seconds from the first packet) as
    red ticks along the bottom."""
    # start-up: matplotlib only when plot_io_graph() runs
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(9, 4))[1]
    ax.plot(graph["time"], graph["goodput_bps"] * 1e-6, "o", ms=4, label="measured goodput")
    ax.plot(graph["time"], graph["throughput_bps"] * 1e-6, ".", ms=3, alpha=0.6,
            label="measured throughput (frames)")
    if predicted_bps:
        ax.axhline(predicted_bps * 1e-6, color="k", lw=1.5, label="predicted goodput (link limit)")
    if retransmissions is not None and len(retransmissions):
        ax.plot(list(retransmissions), [0.5] * len(retransmissions), "|", color="red", ms=14,
                label="retransmission")
    ax.set(xlabel="time (s)", ylabel="Mbit/s", title=title)
    ax.set_ylim(0, None)
    ax.legend(loc="center right")
    return ax
