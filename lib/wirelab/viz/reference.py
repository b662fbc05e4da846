"""A published table beside the measurement and the model, and flows sharing a link.

``plot_against_document``: one task of ``labs.doc004.document_table`` —
measured (points, 95 % interval bars), predicted (a line through the model's
value at each setting), the document (crosses). ``plot_streams``: each
stream's goodput in a run with flows, beside its max-min fair share.
``plot_clock_fit``: echo rounds, the fitted clock line and the configured one.
Functions take DataFrames and ``ax=None`` and return the Axes; no global style.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiment.stats import confidence_interval

__all__ = ["plot_against_document", "plot_streams", "plot_clock_fit"]


def _ax(ax, size=(6.5, 4.2)):
    if ax is not None:
        return ax
    # start-up: matplotlib only when _ax() runs
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=size)[1]


def plot_against_document(table: pd.DataFrame, *, ax=None, log_x: bool = False, log_y: bool = False,
                          title: str | None = None, xlabel: str = "", scale: float = 1e-6,
                          unit: str = "Mbit/s"):
    """Measured, predicted and the document's bit/s against the task's parameter, one colour per side."""
    # start-up: matplotlib only when plot_against_document() runs
    import matplotlib.pyplot as plt

    ax = _ax(ax)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (side, part) in enumerate(table.groupby("side", sort=True)):
        part, color = part.sort_values("value"), colors[i % len(colors)]
        ran = part[part["measured_bps"].notna()]
        if ran["predicted_bps"].notna().any():
            ax.plot(ran["value"], ran["predicted_bps"] * scale, "-", color=color, alpha=0.6, marker=".",
                    label=f"predicted, {side}")
        ax.errorbar(ran["value"], ran["measured_bps"] * scale, yerr=ran["measured_ci"].fillna(0) * scale,
                    fmt="o", color=color, capsize=3, label=f"measured (mean ± 95 % CI), {side}")
    # a range the document's text gives over several settings: a black bar at each of them
    if "document_min_bps" in table:
        spans = table[table["document_bps"].isna() & table["document_min_bps"].notna()]
        spans = spans.drop_duplicates(["value", "document_min_bps", "document_max_bps"])
        if len(spans):
            ax.vlines(spans["value"], spans["document_min_bps"] * scale, spans["document_max_bps"] * scale,
                      color="black", linewidth=3, alpha=0.5, label="document, a range in its text")
    # each published number once, in black, labelled with the sides the document gave it for
    # ("both" is iperf3's -w, set beside the document's rows: a side the document never used)
    doc = table[table["document_bps"].notna()]
    own = doc[doc["side"] != "both"]
    doc = own if len(own) else doc
    if len(doc):
        sides = doc.groupby(["value", "document_bps"])["side"].agg(lambda s: " or ".join(sorted(set(s))))
        for (label, points), marker in zip(sides.groupby(sides), ("x", "+", "1", "2")):
            values, bps = zip(*points.index)
            ax.plot(values, [b * scale for b in bps], marker, color="black", markersize=10, mew=2,
                    label=f"document, {label}")
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    else:
        top = table[["measured_bps", "predicted_bps", "document_bps"]].max().max()
        ax.set_ylim(0, 1.12 * top * scale if top == top else None)
    ax.set(xlabel=xlabel, ylabel=f"goodput ({unit})", title=title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return ax


def plot_streams(frame: pd.DataFrame, *, by: str = "flows", ax=None, scale: float = 1e-6):
    """Each stream's goodput (mean over repetitions, 95 % bars) per setting of ``by``, with its
    max-min fair share (a short line), so an unfair share stands out."""
    # start-up: matplotlib only when plot_streams() runs
    import matplotlib.pyplot as plt

    ax = _ax(ax, (9, 4.2))
    ok = frame[frame["status"] == "ok"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ticks, labels = [], []
    x = 0.0
    for setting, part in ok.groupby(by, sort=False):
        streams = part.groupby(["flow_id", "stream"], sort=True)
        for j, ((flow_id, stream), rows) in enumerate(streams):
            mean, _, half, _ = confidence_interval(rows["goodput_bps"])
            color = colors[int(flow_id[1:]) % len(colors)]
            ax.bar(x, mean * scale, width=0.8, color=color, alpha=0.7,
                   yerr=0 if not np.isfinite(half) else half * scale, capsize=2,
                   label=f"{flow_id} ({rows['proto'].iloc[0]})" if not ticks and stream == 0 else None)
            share = rows.get("pred_limit_share_bps")
            if share is not None and share.notna().any():
                ax.hlines(share.iloc[0] * scale, x - 0.45, x + 0.45, color="k", linewidth=1.5,
                          label="fair share (model)" if x == 0 else None)
            x += 1
        ticks.append(x - len(streams) / 2 - 0.5)
        labels.append(str(setting))
        x += 1.0
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.set(ylabel="goodput per stream (Mbit/s)", title="Streams sharing one link: each against its fair share")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return ax


def plot_clock_fit(lab: dict, *, ax=None):
    """θ (receiver's clock − sender's) of every echo round against time: the rounds the fit
    used, the fitted line, and the line the lab configured."""
    ax = _ax(ax, (8, 4.2))
    rounds, fit, line = lab["rounds"], lab["fit"].iloc[0], lab["line"]
    used = rounds[rounds["used"]]
    ax.plot(rounds["t_s"], rounds["theta_s"] * 1e3, ".", color="0.7", label="echo round (θ from t1..t4)")
    ax.plot(used["t_s"], used["theta_s"] * 1e3, ".", color="C0", label="rounds with the smallest RTTs (used)")
    t = np.array([rounds["t_s"].min(), rounds["t_s"].max()])
    ax.plot(t, (line.offset_s + line.drift * t) * 1e3, "-", color="C1",
            label=f"fit: {fit['offset_estimated_ms']:.3f} ms, {fit['drift_estimated_ppm']:.1f} ppm")
    ax.plot(t, (fit["offset_configured_ms"] + fit["drift_configured_ppm"] * 1e-3 * t), "--", color="k",
            label=f"configured: {fit['offset_configured_ms']:.3f} ms, {fit['drift_configured_ppm']:.1f} ppm")
    spread = (used["theta_s"].max() - used["theta_s"].min()) * 1e3
    ax.set_ylim(used["theta_s"].min() * 1e3 - spread, used["theta_s"].max() * 1e3 + spread)
    ax.set(xlabel="time since the first round (s)", ylabel="θ = receiver − sender clock (ms)",
           title="Clock offset and drift from echo rounds (rounds that queued long are off the scale)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return ax
