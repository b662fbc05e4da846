"""A source document's figures beside our measurement and the model (``experiment.beside``'s table):
measured points with 95 % intervals, predicted lines, the document's numbers as crosses."""
from __future__ import annotations

import pandas as pd

__all__ = ["plot_beside"]


def plot_beside(table: pd.DataFrame, x: str, *, ax=None, log_x: bool = False, log_y: bool = True,
                xlabel: str | None = None, title: str = ""):
    """One colour per protocol. ``x``: a column of ``table`` (e.g. the document's ``rate_kbps``).
    Runs that failed have no point; the document's blanks have no cross. Where the document
    gave only a sender's figure (its note says "sender side"), our send loop is drawn too
    (hollow), so like is set beside like."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6.5, 4))[1]
    for i, (proto, part) in enumerate(table.sort_values(x).groupby("proto", sort=False)):
        color = f"C{i % 10}"
        measured = part[part["goodput_bps"].notna()]
        ax.errorbar(measured[x], measured["goodput_bps"] / 1e6, yerr=measured["goodput_ci_bps"].fillna(0) / 1e6,
                    fmt="o", color=color, capsize=3, label=f"{proto} measured (receiver)")
        predicted = part[part["pred_goodput_bps"].notna()]
        if len(predicted):
            ax.plot(predicted[x], predicted["pred_goodput_bps"] / 1e6, "-", color=color, alpha=0.7,
                    label=f"{proto} predicted")
        paper = part[part["doc_bps"].notna()]
        senders = len(paper) and paper["doc_note"].fillna("").str.contains("sender side").all()
        if len(paper):
            ax.plot(paper[x], paper["doc_bps"] / 1e6, "x", color=color, markersize=9, mew=2,
                    label=f"{proto} document 001" + (" (its sender side)" if senders else ""))
        loop = part[part["send_loop_bps"].notna()] if senders and "send_loop_bps" in part else part.iloc[:0]
        if len(loop):                                  # the paper gave the sender's side: show ours too
            ax.plot(loop[x], loop["send_loop_bps"] / 1e6, "o", mfc="none", color=color,
                    label=f"{proto} measured send loop (sender side)")
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel or x, ylabel="goodput (Mbit/s)", title=title)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return ax
