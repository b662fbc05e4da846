"""Document 000's figures 29–32: received rate, what is not delivered and each packet's delay
against the offered load; transmission delay measured against size / C.

Measured = points with 95 % interval bars; the model = lines (evaluated densely
between the measured loads, never drawn through the points); document 000 =
crosses. Every function takes the table ``labs.doc000`` made and
``ax``/``axes=None``, returns the Axes, and leaves matplotlib's style alone.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..labs.doc000 import MB, load_prediction

__all__ = ["plot_offered_load", "plot_transmission"]

#: (measured, model, document, y label, factor, what the document's number is)
_PANELS = (("received_MBps", "pred_received_MBps", "doc_received_MBps", "received (MB/s)", 1.0, ""),
           ("undelivered", "pred_undelivered", None, "not delivered (share of offered)", 1.0, ""),
           # the thesis's "Sänd-tid/paket" ran from the stamp to its echo back at the sender (App. A)
           ("delay_ms", "pred_delay_ms", "doc_echo_ms", "delay per packet (ms)", 1.0,
            " (stamp to echo: a round trip)"))


def _dense(proto: str, packet: int, rate: float, low: float, high: float) -> pd.DataFrame:
    loads = np.geomspace(low, high, 80)
    rows = [load_prediction(proto, packet, o * 8 * MB, rate) for o in loads]
    out = pd.DataFrame(rows)
    out["offered_MBps"] = loads
    out["pred_received_MBps"] = out["pred_received_bps"] / 8 / MB
    out["pred_received_independent_MBps"] = out["pred_received_independent_bps"] / 8 / MB
    out["pred_delay_ms"] = out["pred_delay_s"] * 1e3
    return out


def plot_offered_load(table: pd.DataFrame, axes=None):
    """One row of panels per protocol (received, not delivered, delay) against the offered
    load on a log axis; one colour per packet size. Returns the 2-D array of Axes."""
    # start-up: matplotlib only when plot_offered_load() runs
    import matplotlib.pyplot as plt

    protos = [p for p in ("tcp", "udp") if p in set(table["proto"])]
    if axes is None:
        _, axes = plt.subplots(len(protos), 3, figsize=(16, 4.2 * len(protos)), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    sizes = sorted(table["packet_bytes"].unique())
    for row, proto in zip(axes, protos):
        part = table[table["proto"] == proto]
        for i, size in enumerate(sizes):
            data = part[part["packet_bytes"] == size].sort_values("offered_MBps")
            if data.empty:
                continue
            color, label = colors[i % len(colors)], f"{size:g} B"
            dense = _dense(proto, int(size), float(data["rate_bps"].iloc[0]),
                           data["offered_MBps"].min(), data["offered_MBps"].max())
            for ax, (measured, model, doc, ylabel, f, what) in zip(row, _PANELS):
                ax.plot(dense["offered_MBps"], dense[model] * f, "-", color=color, alpha=0.7,
                        label=f"model, {label}")
                if measured == "received_MBps" and proto == "udp" and (dense["pred_fragments"] > 1).any():
                    ax.plot(dense["offered_MBps"], dense["pred_received_independent_MBps"], ":", color=color,
                            alpha=0.6, label=f"model if fragments dropped independently, {label}")
                value, ci = data[measured] * f, data[f"{measured}_ci"].fillna(0) * f
                low = ci.where(value - ci > 0, value * 0.9) if measured == "delay_ms" else ci   # a log axis: no bar below 0
                ax.errorbar(data["offered_MBps"], value, yerr=[low, ci], fmt="o", color=color, capsize=3,
                            label=f"measured (mean ± 95 % CI), {label}")
                if doc and doc in data and data[doc].notna().any():
                    ax.plot(data["offered_MBps"], data[doc], "x", color=color, markersize=9, mew=2,
                            label=f"document 000{what}, {label}")
                ax.set(xscale="log", xlabel="offered load (MB/s)", ylabel=ylabel, title=f"{proto.upper()}: {ylabel}")
                ax.grid(True, alpha=0.3)
        row[2].set_yscale("log")
        row[0].legend(fontsize=7)
    return axes


def plot_transmission(table: pd.DataFrame, ax=None):
    """Measured delay per packet (median ± CI, and the smallest) against the model's size / C,
    log-log, with the line measured = predicted."""
    # start-up: matplotlib only when plot_transmission() runs
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (rate, part) in enumerate(table.groupby("rate_bps")):
        color = colors[i % len(colors)]
        ax.errorbar(part["pred_ms"], part["median_ms"], yerr=part["median_ms_ci"].fillna(0), fmt="o", color=color,
                    capsize=3, label=f"median, {rate / 1e6:g} Mbit/s")
        ax.plot(part["pred_ms"], part["min_ms"], "v", color=color, alpha=0.6, label=f"smallest, {rate / 1e6:g} Mbit/s")
        for _, row in part.iterrows():
            ax.annotate(f"{row['packet_bytes']:g} B", (row["pred_ms"], row["median_ms"]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
    span = np.geomspace(max(table["pred_ms"].min() / 2, 1e-3), table["pred_ms"].max() * 2, 10)
    ax.plot(span, span, "k-", linewidth=1, label="model: size / C (all fragments)")
    ax.set(xscale="log", yscale="log", xlabel="predicted transmission delay (ms)",
           ylabel="measured one-way delay (ms)", title="Transmission delay: measured against size / C")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return ax
