"""Goodput over time inside runs: does a transfer settle at the predicted rate?

Slow start, a queue filling, a retransmission timeout: they show here and
vanish in a mean. Takes the long table of ``wirelab.experiment.load_series``
(one row per run and interval) or any table with ``t_s`` and ``bps`` columns.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["plot_goodput_over_time"]


def plot_goodput_over_time(series: pd.DataFrame, *, hue: str = "proto", ax=None,
                           title: str = "Goodput over time (receiver), per run"):
    """One thin line per run (coloured by ``hue``), the predicted goodput dashed."""
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
