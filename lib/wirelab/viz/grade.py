"""Figures of a graded class (``wirelab.grade.class_table``): which tests the class finds hard,
and how each submission's goodput compares with the model.

Both take the class table (one row per submission and test) and ``ax=None``,
and return the Axes. The model is drawn as a line, measurements as points.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import pandas as pd

from ..grade.report import pass_rates

__all__ = ["plot_pass_rate", "plot_goodput_vs_model"]


def plot_pass_rate(table: pd.DataFrame, ax=None):
    """Horizontal bars: the share of submissions that passed each test, hardest at the top, coloured by topic."""
    rates = pass_rates(table)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, max(3.0, 0.22 * len(rates) + 1)))
    topics = sorted(rates["topic"].unique())
    palette = dict(zip(topics, plt.get_cmap("tab10").colors))
    ax.barh(range(len(rates)), 100 * rates["pass_rate"], color=[palette[t] for t in rates["topic"]])
    ax.set_yticks(range(len(rates)), rates["test"], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("submissions that passed (%)")
    ax.set_title("Pass rate per test (hardest first)")
    ax.legend(handles=[Patch(color=palette[t], label=t) for t in topics], title="topic", fontsize=7,
              loc="lower right")
    return ax


def plot_goodput_vs_model(table: pd.DataFrame, ax=None):
    """Measured goodput ÷ the model's, per submission (one point per passed transfer test with a
    prediction); the line at 1 is the model. Below 1: slower than the model predicts."""
    rows = table[table["status"].eq("pass") & table["goodput_bps"].notna() & table["pred_goodput_bps"].notna()]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    ax.axhline(1.0, color="black", lw=1.2, label="model (η·C, W/RTT, stop-and-wait)")
    if rows.empty:
        ax.text(0.5, 0.5, "no passed transfer test with a prediction", ha="center", transform=ax.transAxes)
        return ax
    ratio = rows["goodput_bps"] / rows["pred_goodput_bps"]
    names = list(dict.fromkeys(rows["submission"]))
    markers = "osD^v<>P*X"
    for i, test in enumerate(sorted(rows["test"].unique())):
        pick = rows["test"].eq(test)
        x = [names.index(s) + (i - 2) * 0.06 for s in rows.loc[pick, "submission"]]
        ax.scatter(x, ratio[pick], marker=markers[i % len(markers)], s=30, label=f"{test} (measured)")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    if ratio.max() / max(ratio.min(), 1e-9) > 10:         # a lucky or unlucky lossy run: keep both in view
        ax.set_yscale("log")
    ax.set_ylabel("measured / predicted goodput")
    ax.set_title("Goodput against the model, per submission")
    ax.legend(fontsize=7, loc="best")
    return ax
