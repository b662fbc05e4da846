"""End-to-end delay across a path (document 003): measured points with 95 % intervals, the
path prediction as a line, a paper's published numbers as their own markers.

Takes ``wirelab.experiment.broker_delay``'s tables: the per-message frame and its
``summarize_delays`` summary.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["plot_end_to_end", "plot_delay_distribution"]

_MARKERS = {"rtt_half": "o", "same_clock": "s", "offset_est": "^"}


def plot_end_to_end(summary: pd.DataFrame, reference: pd.DataFrame | None = None, *, ax=None,
                    title: str = "End-to-end delay of a 32-byte message"):
    """x: the delay emulated on each UDP link; y: end-to-end delay (ms). Points with error bars:
    measured means ± 95 % CI per method (slightly offset so they do not hide each other);
    line: ``pred_s`` (one-way path prediction); crosses: ``reference``'s ``measured_e2e_delay_ms``
    against ``emulated_delay_ms`` (a paper's numbers: not ours)."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 4))[1]
    if summary.empty:
        ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)
        return ax
    delays = sorted(summary["emulated_delay_s"].unique())
    step = (max(delays) - min(delays) or 1.0) * 1e3 * 0.008
    for i, (method, part) in enumerate(summary.groupby("method", sort=False)):
        x = part["emulated_delay_s"] * 1e3 + (i - 1) * step
        ax.errorbar(x, part["mean_s"] * 1e3, yerr=part["ci_s"].fillna(0) * 1e3, fmt=_MARKERS.get(method, "o"),
                    capsize=3, markersize=5, label=f"measured: {part['label'].iloc[0]} (mean ± 95 % CI)")
    one_way = summary[summary["method"] == "same_clock"].sort_values("emulated_delay_s")
    ax.plot(one_way["emulated_delay_s"] * 1e3, one_way["pred_s"] * 1e3, "-", color="0.3",
            label="predicted: store-and-forward path (model.path_delay)")
    if reference is not None and not reference.empty:
        ax.plot(reference["emulated_delay_ms"], reference["measured_e2e_delay_ms"], "x", color="C3",
                markersize=9, mew=2, label="document 003 (RTT/2, its own network)")
    ax.set(xlabel="delay on each UDP link (ms)", ylabel="end-to-end delay (ms)", title=title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_delay_distribution(frame: pd.DataFrame, method: str = "same_clock", *, ax=None,
                            title: str = "Delay of every message (one clock)"):
    """The empirical CDF of each configuration's per-message delay, its prediction dashed:
    jitter on two hops shows as a ramp (the sum of two uniform draws), not a step."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 3.5))[1]
    column = f"{method}_s"
    for i, (key, part) in enumerate(frame[~frame["lost"]].groupby("config", sort=False)):
        values = part[column].sort_values() * 1e3
        color = f"C{i % 10}"
        ax.step(values, (pd.RangeIndex(1, len(values) + 1) / len(values)), where="post", color=color,
                label=f"measured {key} ({len(values)} messages)")
        ax.axvline(part["pred_one_way_s"].iloc[0] * 1e3, color=color, linestyle="--", linewidth=1)
    ax.set(xlabel="end-to-end delay (ms)", ylabel="fraction of messages ≤ x",
           title=title + "; dashed: predicted mean")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax
