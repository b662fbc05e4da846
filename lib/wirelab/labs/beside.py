"""Document 001's published numbers beside our measurement and the model's prediction.

    table = beside(frame, load_reference("seed001_transfers"), experiment="rate",
                   axis="rate_bps", doc_axis="rate_kbps", to_doc=1e-3)
    format_beside(table, "rate_kbps", " (kbit/s)")     # for people
    plot_beside(table, "rate_kbps", log_x=True)        # measured points, predicted lines, its crosses

One row per (protocol, swept value): the document's figure (its units, its
note), what we measured (receiver goodput: mean ± 95 % CI over the runs that
completed, how many failed and why), the sender's view (bytes offered ÷
sender time, and the sending loop alone: what document 001 reported for udp,
failed runs included), the model's prediction for
exactly our parameters, and the ratio of measured to predicted. Papers'
numbers and ours are never mixed: each keeps its own column.

``loss_for_goodput`` reads a published stop-and-wait figure backwards: the
loss rate at which the model (``wirelab.model.stop_and_wait``) gives it.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import transports
from ..errors import ExperimentError
from ..experiment.stats import summarize
from ..model import PPCB_HEADER, HeaderStack, packetize, stop_and_wait
from ..transports.udpr import NAME as UDPR

__all__ = ["beside", "format_beside", "loss_for_goodput", "plot_beside"]


def beside(frame: pd.DataFrame, reference: pd.DataFrame, *, experiment: str, axis: str, doc_axis: str,
           to_doc: float = 1.0, doc_metric: str = "speed_mbps", doc_scale: float = 1e6) -> pd.DataFrame:
    """Join a sweep (``run``'s table, swept over ``axis``) with the ``experiment`` rows of a
    reference table, where ``axis`` × ``to_doc`` equals the document's ``doc_axis``. Figures in
    bit/s; the document's ``doc_metric`` × ``doc_scale`` becomes ``doc_bps``. Rows of either
    side without a partner are kept (the document's blanks and our extra points alike)."""
    if frame.empty:
        raise ExperimentError("no runs to set beside the document", "run the sweep first")
    frame = frame.copy()
    frame["pred_scope"] = [_scope(row) for row in frame.to_dict("records")]
    frame.loc[frame["pred_scope"].notna(), "pred_goodput_bps"] = math.nan   # never a line where it does not hold
    ours = summarize(frame, ["goodput_bps"], by=["proto", axis])
    # the sender's figures count failed runs too: a udp flood that ends in RJT still sent
    for column in ("sender_goodput_bps", "send_loop_bps"):
        values = frame.groupby(["proto", axis])[column].mean() if column in frame else None
        ours[f"{column}_mean"] = [values.get((p, a), math.nan) if values is not None else math.nan
                                  for p, a in zip(ours["proto"], ours[axis])]
    ours["doc_key"] = ours[axis].astype(float) * to_doc
    doc = reference[reference["experiment"] == experiment].copy()
    if doc.empty:
        raise ExperimentError(f"the reference table has no {experiment!r} rows",
                              f"experiments: {', '.join(reference['experiment'].unique())}")
    doc["doc_bps"] = doc[doc_metric] * doc_scale
    doc = doc.rename(columns={"protocol": "proto", "note": "doc_note"})
    rows = []
    used = set()
    for _, mine in ours.iterrows():
        match = doc[(doc["proto"] == mine["proto"]) & np.isclose(doc[doc_axis].astype(float), mine["doc_key"])]
        paper = match.iloc[0] if len(match) else None
        if paper is not None:
            used.add(paper.name)
        rows.append(_row(mine, paper, axis, doc_axis))
    for index, paper in doc.iterrows():
        if index not in used:
            rows.append(_row(None, paper, axis, doc_axis))
    return pd.DataFrame(rows)


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and v == v for v in values)


def _scope(row: dict) -> str | None:
    """Why the prediction does not describe this run, or None when it does.

    * TCP reaches its steady rate only after slow start, which doubles the window once per
      round trip (RFC 5681 §3.1) and so sends about twice the bandwidth-delay product on the
      way: a smaller file ends before the model's rate applies. Its loss limits (Mathis, PFTK)
      need a round-trip time: without one only η·C bounds it.
    * PPCB udp stops at the first lost datagram (notebooks/ppcb-protocol.md); the model's η·C·(1 − p)^k is
      a stream that goes on. And a file shorter than a round trip at the predicted rate is
      timed mostly by the CONN/CONACC exchange, which η·C does not count.
    """
    proto, pred, rtt, size = (row.get(k) for k in ("proto", "pred_goodput_bps", "pred_rtt_s", "size_bytes"))
    loss = row.get("loss") or 0.0
    transport = transports.get(proto) if proto in transports.names() else None
    if transport is not None and transport.stream:
        if loss > 0 and not _finite(rtt):
            return "not covered: TCP's loss limits need a round-trip time and this link sets none; η·C only bounds it"
        if _finite(pred, rtt, size) and size < 2 * pred * rtt / 8:
            return (f"not covered: a {size:.0f} B file ends in slow start (2 × BDP = {2 * pred * rtt / 8:.0f} B); "
                    f"the model's steady-state {pred / 1e6:.4g} Mbit/s does not apply")
    if transport is not None and not transport.reliable and _finite(size, pred):
        chunk = row.get("packet_bytes") if _finite(row.get("packet_bytes")) else 1000
        stack = HeaderStack("udp", mtu=int(row["mtu"]) if _finite(row.get("mtu")) else None, wire="emulated")
        pieces = math.ceil(size / chunk) * packetize(stack, int(chunk) + PPCB_HEADER["DATA"]).packets
        if loss > 0:
            return (f"not covered: PPCB udp stops at the first lost datagram; the file arrives whole with "
                    f"probability (1 − {loss:g})^{pieces} = {(1 - loss) ** pieces:.2g}")
        if _finite(rtt) and size * 8 / pred < rtt:
            return (f"not covered: at the predicted rate the file takes {size * 8 / pred * 1e3:.3g} ms, less than "
                    f"the {rtt * 1e3:.4g} ms round trip of CONN/CONACC that the receiver's time includes")
    return None


def _row(mine, paper, axis: str, doc_axis: str) -> dict:
    def get(row, key):
        if row is None or key not in row or row[key] is None:
            return math.nan if key != "first_error" else None
        return row[key]
    row = {"proto": (mine if mine is not None else paper)["proto"],
           doc_axis: paper[doc_axis] if paper is not None else mine["doc_key"],
           axis: get(mine, axis),
           "doc_bps": get(paper, "doc_bps"), "doc_note": get(paper, "doc_note"),
           "goodput_bps": get(mine, "goodput_bps_mean"), "goodput_ci_bps": get(mine, "goodput_bps_ci"),
           "runs_ok": get(mine, "n"), "runs_failed": get(mine, "n_failed"),
           "sender_goodput_bps": get(mine, "sender_goodput_bps_mean"),
           "send_loop_bps": get(mine, "send_loop_bps_mean"),
           "pred_goodput_bps": get(mine, "pred_goodput_bps"), "pred_binding": get(mine, "pred_binding"),
           "pred_note": get(mine, "pred_scope") if isinstance(get(mine, "pred_scope"), str)
           else get(mine, "pred_note"), "why_failed": get(mine, "first_error")}
    pred, measured = row["pred_goodput_bps"], row["goodput_bps"]
    row["measured_over_predicted"] = measured / pred if pred and pred == pred and measured == measured else math.nan
    return row


def loss_for_goodput(goodput_bps: float, data_bytes: int, *, timeout_s: float, rtt_s: float = 0.0,
                     rate_bps: float = 1e12, mtu: int = 65535, loss_reverse: float = 0.0) -> float:
    """The forward loss probability at which stop-and-wait (``model.stop_and_wait``, MAX_WAIT
    ``timeout_s``) delivers ``goodput_bps`` with ``data_bytes`` per DATA; NaN when no loss rate
    can (the figure beats even a lossless link). The default MTU keeps a DATA in one datagram,
    so the answer is a loss rate per datagram; ``rate_bps`` 1e12 stands for "no rate limit"."""
    stack = HeaderStack(UDPR, mtu=mtu, wire="emulated")

    def model(loss: float) -> float:
        return stop_and_wait(data_bytes, rate_bps, rtt_s, stack=stack, loss_forward=loss,
                             loss_reverse=loss_reverse, timeout_s=timeout_s).goodput_bps
    if not goodput_bps > 0 or goodput_bps > model(0.0):
        return math.nan
    low, high = 0.0, 0.999999
    for _ in range(100):                   # goodput falls as loss grows: bisect
        mid = (low + high) / 2
        if model(mid) > goodput_bps:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def format_beside(table: pd.DataFrame, doc_axis: str, unit: str = "") -> pd.DataFrame:
    """``beside``'s table for people: Mbit/s with four significant digits, "mean ± CI", the runs
    that completed, and one "why" column (the failure, else what the model did not cover)."""
    def rate(value):
        return "—" if value is None or value != value else f"{value / 1e6:.4g}"
    out = pd.DataFrame({"proto": table["proto"], f"{doc_axis.rsplit('_', 1)[0]}{unit}": table[doc_axis]})
    out["document 001 (Mbit/s)"] = [rate(v) for v in table["doc_bps"]]
    out["measured (Mbit/s)"] = [rate(m) + (f" ± {c / 1e6:.2g}" if c == c and c is not None else "")
                                if m == m else "—" for m, c in zip(table["goodput_bps"], table["goodput_ci_bps"])]
    out["runs ok"] = [f"{ok:.0f}/{ok + bad:.0f}" if ok == ok else "not run"
                      for ok, bad in zip(table["runs_ok"], table["runs_failed"])]
    out["sender's view (Mbit/s)"] = [rate(v) for v in table["sender_goodput_bps"]]
    out["send loop (Mbit/s)"] = [rate(v) for v in table["send_loop_bps"]]
    out["predicted (Mbit/s)"] = [rate(v) for v in table["pred_goodput_bps"]]
    out["measured/predicted"] = [f"{v:.3f}" if v == v else "—" for v in table["measured_over_predicted"]]
    out["document's note"] = table["doc_note"].fillna("")
    out["why (failure, or what the model did not cover)"] = [
        why if isinstance(why, str) and why else (note if isinstance(note, str) else "")
        for why, note in zip(table["why_failed"], table["pred_note"])]
    return out


def plot_beside(table: pd.DataFrame, x: str, *, ax=None, log_x: bool = False, log_y: bool = True,
                xlabel: str | None = None, title: str = ""):
    """One colour per protocol. ``x``: a column of ``table`` (e.g. the document's ``rate_kbps``).
    Runs that failed have no point; the document's blanks have no cross. Where the document
    gave only a sender's figure (its note says "sender side"), our send loop is drawn too
    (hollow), so like is set beside like."""
    # start-up: matplotlib only when plot_beside() runs
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
