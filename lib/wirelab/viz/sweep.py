"""Predicted next to measured, over any swept parameter.

Measured = points with 95 % confidence-interval error bars (Student t over
the repetitions; for a file, size ÷ mean transfer time, its bars from the time's
interval, like with like with the model's expected time); predicted = a line
through the model's ``pred_goodput_bps`` for exactly those settings (the finite
transfer's, with the congestion control it assumed), and, where it differs, the
steady state as a dotted line. All are labelled as such. Every function takes
the table a sweep returned (one row per run) and ``ax=None``, and returns the
Axes (``plot_by_protocol`` returns one Axes per protocol). Nothing here
changes matplotlib's global style.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import transports, units
from ..experiment.prediction import predict_like
from ..experiment.stats import summarize

__all__ = ["plot_predicted_vs_measured", "plot_by_protocol", "protocols_in", "plot_loss", "plot_delay",
           "plot_sender_vs_receiver", "AXIS_LABELS", "swept_columns"]

#: column → (axis label, factor to the unit shown)
AXIS_LABELS = {
    "rate_bps": ("link rate (Mbit/s)", 1e-6), "delay_s": ("one-way delay (ms)", 1e3),
    "jitter_s": ("jitter (ms)", 1e3), "loss": ("loss per direction (%)", 100.0),
    "mtu": ("MTU (B)", 1.0), "size_bytes": ("file size (kB)", 1e-3),
    "packet_bytes": ("bytes per write/datagram", 1.0), "offered_bps": ("offered load (Mbit/s)", 1e-6),
    "sndbuf_bytes": ("SO_SNDBUF (kB)", 1e-3), "rcvbuf_bytes": ("SO_RCVBUF (kB)", 1e-3),
    "queue_packets": ("queue (packets)", 1.0), "time_s": ("run time (s)", 1.0),
    "window_bytes": ("TCP window (kB)", 1e-3),
    "goodput_bps": ("goodput at the receiver (Mbit/s)", 1e-6),
    "sender_goodput_bps": ("goodput, sender's view (Mbit/s)", 1e-6),
}
_PARAMETERS = ["rate_bps", "delay_s", "loss", "mtu", "size_bytes", "packet_bytes", "offered_bps",
               "jitter_s", "sndbuf_bytes", "rcvbuf_bytes", "queue_packets", "time_s", "cc", "engine"]


def swept_columns(frame: pd.DataFrame) -> list[str]:
    """Parameters that take more than one value in ``frame`` (what can go on an axis or a hue)."""
    return [c for c in _PARAMETERS if c in frame and frame[c].nunique(dropna=True) > 1]


def _new_ax(ax, size=(7, 4)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt      # start-up: matplotlib only when a plot is drawn
    return plt.subplots(figsize=size)[1]


def _label(column: str, value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    formats = {"rate_bps": units.format_rate, "offered_bps": units.format_rate,
               "delay_s": units.format_time, "jitter_s": units.format_time,
               "loss": units.format_fraction, "size_bytes": units.format_size}
    name = column.split("_")[0]
    return f"{name} {formats[column](value)}" if column in formats else f"{name} {value}"


#: What each ``pred_limit_<name>_bps`` column is, in a legend.
LIMIT_LABELS = {"link": "η·C (link)", "window": "W/RTT (window)", "mathis": "Mathis", "padhye": "PFTK",
                "cubic": "CUBIC (RFC 9438)", "chain": "CUBIC/Reno at random loss (window chain)",
                "bbr": "BBR: η·C·(1 − p)",
                "stop_and_wait": "stop-and-wait", "offered": "offered load"}
_DENSE = ("rate_bps", "delay_s", "loss", "mtu", "packet_bytes", "offered_bps", "max_wait_s", "window_bytes")


def _dense_prediction(frame: pd.DataFrame, x: str, level_rows: pd.DataFrame, points: int = 60,
                      column: str = "pred_goodput_bps", log: bool = False):
    """The model between the measured points: the row's prediction redrawn for many ``x``
    (``column``: the prediction or one of its ``pred_limit_*`` terms)."""
    if x not in _DENSE:
        return None
    values = pd.to_numeric(level_rows[x], errors="coerce").dropna()
    if values.nunique() < 2 or "pred_wire" not in frame:
        return None
    template = level_rows.iloc[0]
    low, high = values.min(), values.max()
    xs = np.geomspace(low, high, points) if log and low > 0 else np.linspace(low, high, points)
    if x in ("mtu", "packet_bytes"):
        xs = np.unique(np.round(xs).astype(int))
    ys = [predict_like(template, **{x: (int(v) if x in ("mtu", "packet_bytes") else float(v))})
          .get(column, np.nan) for v in xs]
    return xs, np.array(ys, dtype=float)


def plot_predicted_vs_measured(frame: pd.DataFrame, x: str = "rate_bps", *, hue: str | None = None,
                               metric: str = "goodput_bps", ax=None, log_x: bool = False,
                               log_y: bool = False, title: str | None = None, limits: bool = False,
                               steady: bool = True):
    """Measured mean ± 95 % CI (points) and predicted (line) against ``x``.

    ``frame``: runs of a sweep (one protocol, or pass ``hue="proto"``). Other
    swept parameters go into ``hue`` (one colour per value). Failed runs are
    left out of the means; settings with no successful run are marked ×.
    The predicted line is the model evaluated between the measured points
    too (same wire, framing and timestamps as each run's ``pred_*`` columns),
    not a straight line joining two predictions. ``limits``: also draw each
    term of the model (η·C, W/RTT, Mathis, PFTK, ...) as a dashed line, so the
    one that binds is seen to bind. Settings that were not run (skipped) are
    marked apart from failed ones. ``steady``: also draw the steady state (dotted) where
    the finite transfer's prediction differs from it by more than 1 %.
    """
    import matplotlib.pyplot as plt      # start-up: matplotlib only when a plot is drawn

    ax = _new_ax(ax)
    if frame.empty or x not in frame:
        ax.text(0.5, 0.5, "no runs to plot", ha="center", va="center", transform=ax.transAxes)
        return ax
    label_x, fx = AXIS_LABELS.get(x, (x, 1.0))
    label_y, fy = AXIS_LABELS.get(metric, (metric, 1.0))
    table = summarize(frame, metrics=[metric])
    groups = [(None, table)] if hue is None or hue not in table else \
        list(table.groupby(table[hue].astype(object).where(table[hue].notna(), None), sort=True,
                           dropna=False))
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for i, (level, part) in enumerate(groups):
        part = part.sort_values(x)
        color = colors[i % len(colors)]
        suffix = "" if level is None else f", {_label(hue, level)}"
        if "pred_goodput_bps" in part and metric == "goodput_bps" and part["pred_goodput_bps"].notna().any():
            runs = frame if level is None else frame[frame[hue].astype(object) == level]
            _draw_predicted(ax, runs, part, x, fx, fy, color, suffix, log_x=log_x, limits=limits, steady=steady)
        _draw_measured(ax, part, x, metric, fx, fy, color, suffix)
    _scale_x(ax, frame, x, fx, log_x)
    ax.set(xlabel=label_x, ylabel=label_y, title=title or f"{label_y.split(' (')[0]}: measured vs predicted")
    if log_y:
        _log_y(ax)
    elif limits:      # model terms far above what binds would squash the picture: keep it in view
        shown = [np.nanmax(np.asarray(line.get_ydata(), dtype=float)) for line in ax.get_lines()
                 if line.get_linestyle() in ("-", "None") and len(line.get_ydata())]
        top = max([v for v in shown if np.isfinite(v)] or [1.0])
        ax.set_ylim(0, 1.3 * top)
    else:
        ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return ax


def _draw_predicted(ax, runs: pd.DataFrame, part: pd.DataFrame, x: str, fx: float, fy: float, color,
                    suffix: str, *, log_x: bool, limits: bool, steady: bool) -> None:
    """The predicted goodput of one hue level as a line: the model evaluated between the measured
    points where it can be, else the runs' own predictions; its limits and steady state if asked."""
    dense = _dense_prediction(runs, x, runs.sort_values(x), log=log_x) if len(runs) else None
    if limits and len(runs):
        _draw_limits(ax, runs, x, fx, fy, color, suffix, log_x)
    what = _what_predicted(runs)
    if dense is not None and np.isfinite(dense[1]).any():
        ax.plot(dense[0] * fx, dense[1] * fy, "-", color=color, alpha=0.8,
                label=f"predicted{what}{suffix}")
    else:
        pred = part[[x, "pred_goodput_bps"]].dropna().drop_duplicates(x)
        ax.plot(pred[x] * fx, pred["pred_goodput_bps"] * fy, "-", color=color, alpha=0.8,
                label=f"predicted{what}{suffix}")
    if steady and len(runs):
        _draw_steady(ax, runs, part, x, fx, fy, color, suffix, log_x)


def _draw_measured(ax, part: pd.DataFrame, x: str, metric: str, fx: float, fy: float, color, suffix: str) -> None:
    """One hue level's measured points with their error bars, and its settings with no successful
    run marked on the axis: failed (×) apart from not run here (|)."""
    ok = part[part["n"] > 0]
    mean, yerr, what = _measured(ok, metric, fy)
    ax.errorbar(ok[x] * fx, mean, yerr=yerr, fmt="o", color=color,
                capsize=4, markersize=6, label=f"measured ({what}){suffix}")
    not_run = part[(part["n"] == 0) & (part["n_failed"] == 0)]
    failed = part[(part["n"] == 0) & (part["n_failed"] > 0)]
    if len(failed):
        ax.plot(failed[x] * fx, np.zeros(len(failed)), "x", color=color,
                label=f"failed (no successful run){suffix}")
    if len(not_run):
        ax.plot(not_run[x] * fx, np.zeros(len(not_run)), "|", color=color, markersize=12,
                label=f"not run here (see why in the table){suffix}")


def _scale_x(ax, frame: pd.DataFrame, x: str, fx: float, log_x: bool) -> None:
    """A log x axis if asked (symlog where a setting is at 0), its ticks as plain numbers."""
    if log_x:
        if (frame[x] == 0).any():
            ax.set_xscale("symlog", linthresh=1e-3 * fx or 1)
        else:
            ax.set_xscale("log")
        from matplotlib.ticker import FuncFormatter      # start-up: matplotlib only when a plot is drawn
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _what_predicted(runs: pd.DataFrame) -> str:
    """`` (finite transfer, cubic)``: what the solid line predicts, for its legend."""
    parts = []
    if "pred_transfer_time_s" in runs and runs["pred_transfer_time_s"].notna().any():
        parts.append("finite transfer")
    if "pred_carriage" in runs and (runs["pred_carriage"] == "stream").any():
        parts.append("relayed stream")
    ccs = runs["pred_cc"].dropna().unique() if "pred_cc" in runs else []
    if len(ccs) == 1:
        parts.append(str(ccs[0]))
    return f" ({', '.join(parts)})" if parts else ""


def _measured(ok: pd.DataFrame, metric: str, fy: float):
    """(points, error bars, legend words): size ÷ mean time for files, else the mean of the runs."""
    if metric == "goodput_bps" and "goodput_of_mean_time_bps" in ok and \
            (ok.get("measured_basis") == "size ÷ mean time").all() and len(ok):
        mean = ok["goodput_of_mean_time_bps"].to_numpy(dtype=float)
        low = ok["goodput_of_mean_time_low"].to_numpy(dtype=float)
        high = ok["goodput_of_mean_time_high"].to_numpy(dtype=float)
        high = np.where(np.isfinite(high), high, 3 * mean)          # an interval reaching 0 s: clipped
        below, above = np.nan_to_num(mean - low), np.nan_to_num(high - mean)
        return mean * fy, np.vstack([below, above]) * fy, "size ÷ mean time, 95 % CI"
    return ok[f"{metric}_mean"] * fy, ok[f"{metric}_ci"].fillna(0.0) * fy, "mean ± 95 % CI"


def _draw_steady(ax, runs, part, x, fx, fy, color, suffix, log_x) -> None:
    """The steady state as a dotted line, where the finite transfer's prediction differs from it."""
    if "pred_steady_goodput_bps" not in runs:
        return
    finite, steady = (pd.to_numeric(part[c], errors="coerce") for c in ("pred_goodput_bps", "pred_steady_goodput_bps"))
    if not ((finite - steady).abs() > 0.01 * steady).any():
        return
    dense = _dense_prediction(runs, x, runs.sort_values(x), column="pred_steady_goodput_bps", log=log_x)
    xs, ys = dense if dense is not None else (part[x].to_numpy(dtype=float), steady.to_numpy(dtype=float))
    binding = runs["pred_steady_binding"].dropna().unique() if "pred_steady_binding" in runs else []
    name = LIMIT_LABELS.get(binding[0], binding[0]) if len(binding) == 1 else "its limits"
    ax.plot(xs * fx, ys * fy, ":", color=color, alpha=0.7, label=f"steady state ({name}){suffix}")


def _draw_limits(ax, runs: pd.DataFrame, x: str, fx: float, fy: float, color, suffix: str,
                 log_x: bool) -> None:
    """Each term of the model as a thin dashed line (the binding one is the solid line's floor)."""
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3))]
    names = [c[len("pred_limit_"):-len("_bps")] for c in runs.columns
             if c.startswith("pred_limit_") and c.endswith("_bps") and runs[c].notna().any()]
    ordered = runs.sort_values(x)
    for i, name in enumerate(sorted(names, key=lambda n: list(LIMIT_LABELS).index(n)
                                    if n in LIMIT_LABELS else 99)):
        dense = _dense_prediction(runs, x, ordered, column=f"pred_limit_{name}_bps", log=log_x)
        if dense is None or not np.isfinite(dense[1]).any():
            continue
        ax.plot(dense[0] * fx, dense[1] * fy, linestyle=styles[i % len(styles)], color=color,
                alpha=0.5, linewidth=1, label=f"{LIMIT_LABELS.get(name, name)} (model term){suffix}")


def _log_y(ax) -> None:
    """A log y axis fitted to what is drawn, with plain numbers on the ticks."""
    from matplotlib.ticker import FuncFormatter      # start-up: matplotlib only when a plot is drawn

    values = [v for line in ax.get_lines() for v in np.asarray(line.get_ydata(), dtype=float)
              if np.isfinite(v) and v > 0]
    ax.set_yscale("log")
    if values:
        ax.set_ylim(min(values) / 2, max(values) * 2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def protocols_in(frame: pd.DataFrame) -> list[str]:
    """The protocols of ``frame`` in the kit's order (``transports.names()``: tcp, udp, udpr, ...); ["tcp"]
    when none."""
    return [p for p in transports.names() if p in set(frame.get("proto", []))] or ["tcp"]


def plot_by_protocol(frame: pd.DataFrame, x: str = "rate_bps", *, hue: str | None = None,
                     metric: str = "goodput_bps", axes=None, sharey: bool = False,
                     log_y=None, figure=None):
    """One panel per protocol (tcp, udp, udpr), each predicted vs measured; returns the Axes.
    Protocols in ``log_y`` get a log y axis (default: the transports whose ``log_scale`` says so, as
    stop-and-wait, which spans orders of magnitude).
    ``figure``: draw on this Figure (e.g. ``offscreen.new_figure``) instead of a new pyplot one."""
    import matplotlib.pyplot as plt      # start-up: matplotlib only when a plot is drawn

    protos = protocols_in(frame)
    if log_y is None:
        log_y = [t.name for t in transports.transports() if t.log_scale]
    if axes is None and figure is not None:
        figure.set_size_inches(5.2 * len(protos), 4)
        axes = figure.subplots(1, len(protos), squeeze=False, sharey=sharey)[0]
    elif axes is None:
        _, axes = plt.subplots(1, len(protos), figsize=(5.2 * len(protos), 4), squeeze=False,
                               sharey=sharey)
        axes = axes[0]
    axes = np.atleast_1d(axes)
    for proto, ax in zip(protos, axes):
        plot_predicted_vs_measured(frame[frame["proto"] == proto], x, hue=hue, metric=metric, ax=ax,
                                   title=proto.upper(), log_y=proto in (log_y or ()))
    return axes


def plot_loss(frame: pd.DataFrame, *, hue: str | None = "proto", ax=None):
    """Goodput against configured loss (symmetric-log axis, so 0 % shows too)."""
    ax = plot_predicted_vs_measured(frame, "loss", hue=hue, ax=ax, title="Goodput against loss")
    ax.set_xscale("symlog", linthresh=0.1)
    return ax


def plot_delay(frame: pd.DataFrame, *, hue: str | None = "proto", ax=None):
    """Goodput against configured one-way delay (log y: stop-and-wait falls by orders)."""
    ax = plot_predicted_vs_measured(frame, "delay_s", hue=hue, ax=ax, title="Goodput against delay")
    values = frame["goodput_bps"].dropna() if "goodput_bps" in frame else pd.Series(dtype=float)
    if len(values) and values.min() > 0 and values.max() / values.min() > 50:
        _log_y(ax)
    return ax


def plot_sender_vs_receiver(frame: pd.DataFrame, *, by: str = "proto", ax=None, log_y="auto"):
    """The two views of one transfer (like nttcp's two lines): sender's and receiver's goodput.

    The receiver's figure is the one to trust; a sender that finishes writing
    into its socket buffer early reports more than the link carried, sometimes
    hundreds of times more (2,000 Mbit/s written, 10 carried). ``log_y="auto"``
    switches to a log axis when the values drawn span more than 20×, so both
    views stay readable; True/False force it.
    """
    ax = _new_ax(ax)
    ok = frame[frame["status"] == "ok"] if "status" in frame else frame
    if ok.empty or "sender_goodput_bps" not in ok:
        ax.text(0.5, 0.5, "no runs with both views", ha="center", va="center", transform=ax.transAxes)
        return ax
    keys = ok[by].astype(str) + " " + ok.get("engine", pd.Series("", index=ok.index)).astype(str)
    levels = sorted(set(keys))
    positions = {k: i for i, k in enumerate(levels)}
    xs = keys.map(positions).to_numpy(dtype=float)
    ax.plot(xs - 0.12, ok["sender_goodput_bps"] * 1e-6, "s", color="C1", alpha=0.7, label="sender's view")
    ax.plot(xs + 0.12, ok["goodput_bps"] * 1e-6, "o", color="C0", alpha=0.7, label="receiver (trust this)")
    if "pred_goodput_bps" in ok:
        for key, part in ok.groupby(keys):
            pred = part["pred_goodput_bps"].dropna()
            if len(pred):
                i = positions[key]
                ax.hlines(pred.median() * 1e-6, i - 0.35, i + 0.35, color="k", linewidth=1,
                          label="predicted" if i == 0 else None)
    ax.set_xticks(range(len(levels)), levels)
    ax.set(ylabel="goodput (Mbit/s)", title="Sender's view vs receiver's view")
    drawn = pd.concat([ok["sender_goodput_bps"], ok["goodput_bps"]]).astype(float)
    drawn = drawn[np.isfinite(drawn) & (drawn > 0)]
    spread = drawn.max() / drawn.min() if len(drawn) else 1.0
    if log_y is True or (log_y == "auto" and spread > 20):
        _log_y(ax)
        ax.set_ylabel("goodput (Mbit/s, log scale)")
    else:
        ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return ax
