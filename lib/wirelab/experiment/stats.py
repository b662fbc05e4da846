"""Repetitions → mean, standard deviation and a 95 % confidence interval per setting.

The interval is Student's t: mean ± t(0.975, n − 1) · s / √n, the interval
document 003 draws over its 1000 messages. With n = 3 repetitions t is 4.30,
so three runs give a wide interval, honestly. The t quantile is computed here
(regularised incomplete beta, Numerical Recipes §6.4) so no SciPy is needed.

Runs with status ``ok`` and ``incomplete`` (the protocol ended them early:
plain UDP losing data; their goodput is that of what arrived) are aggregated;
``n_incomplete`` counts the latter, ``n_failed`` failed runs, ``n_skipped``
the runs the engine could not make here (the reason is in ``first_error``).
Prediction columns (``pred_*``) are the same for every run of a setting and
are carried into the summary unchanged, beside the measurement, never mixed.
"""
from __future__ import annotations

import math

import pandas as pd

from ..errors import ExperimentError

__all__ = ["t_quantile", "confidence_interval", "summarize", "pretty", "PARAMETER_COLUMNS"]

#: Columns that identify a setting (whatever of these the table has).
#: Statuses whose measurements are averaged: completed runs, and runs the protocol itself ended
#: early (plain UDP losing data), whose goodput is that of what arrived.
MEASURED_STATUSES = ("ok", "incomplete")
PARAMETER_COLUMNS = ["engine", "backend", "workload", "proto", "size_bytes", "time_s",
                     "offered_bps", "packet_bytes", "echo_count", "rate_bps", "delay_s",
                     "jitter_s", "loss", "loss_reverse", "mtu", "queue_packets", "window_bytes",
                     "sndbuf_bytes", "rcvbuf_bytes", "cc", "max_wait_s", "max_retransmits", "omit_s",
                     "flows", "flow_id", "stream", "direction"]   # the last four: runs with flows


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile: ``t_quantile(0.975, 2) ≈ 4.303``, ``(0.975, ∞) → 1.960``."""
    if not 0 < p < 1 or not df > 0:
        raise ExperimentError(f"no t quantile for p={p}, df={df}", "use 0 < p < 1 and df ≥ 1")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):                      # bisection: slow but sure, 1e-12 relative
        mid = 0.5 * (lo + hi)
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def confidence_interval(values, level: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, std, half-width, n) of the finite values; half-width NaN when n < 2."""
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(data)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = sum(data) / n
    if n < 2:
        return mean, math.nan, math.nan, n
    std = math.sqrt(sum((v - mean) ** 2 for v in data) / (n - 1))
    half = t_quantile(0.5 + level / 2.0, n - 1) * std / math.sqrt(n)
    return mean, std, half, n


def summarize(frame: pd.DataFrame, metrics=("goodput_bps",), *, by=None,
              level: float = 0.95) -> pd.DataFrame:
    """One row per setting: parameters, ``<metric>_mean/_std/_ci/_low/_high``, ``n``,
    ``n_failed``, the first error seen, and the ``pred_*`` columns."""
    if frame.empty:
        return pd.DataFrame()
    if "status" not in frame:
        raise ExperimentError("this table has no status column", "pass the table a sweep returned")
    by = list(by) if by is not None else [c for c in PARAMETER_COLUMNS if c in frame.columns]
    metrics = [m for m in ([metrics] if isinstance(metrics, str) else metrics) if m in frame.columns]
    preds = [c for c in frame.columns if c.startswith("pred_")]
    rows = []
    keys = frame[by].astype(object).where(frame[by].notna(), None)
    for key, group in frame.groupby([keys[c] for c in by], dropna=False, sort=False):
        # incomplete runs ended as their protocol says (plain UDP lost data): what arrived counts
        ok = group[group["status"].isin(MEASURED_STATUSES)]
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row["n"] = len(ok)
        row["n_incomplete"] = int((group["status"] == "incomplete").sum())
        row["n_skipped"] = int((group["status"] == "skipped").sum())
        row["n_failed"] = len(group) - len(ok) - row["n_skipped"]
        for metric in metrics:
            mean, std, half, _ = confidence_interval(pd.to_numeric(ok[metric], errors="coerce"), level)
            row.update({f"{metric}_mean": mean, f"{metric}_std": std, f"{metric}_ci": half,
                        f"{metric}_low": mean - half, f"{metric}_high": mean + half})
        failed = group[~group["status"].isin(("ok",))]
        row["first_error"] = (failed["error"].dropna().iloc[0]
                              if "error" in failed and failed["error"].notna().any() else None)
        for column in preds:
            row[column] = group[column].iloc[0]
        if "pred_goodput_bps" in row and "goodput_bps_mean" in row and row["pred_goodput_bps"]:
            row["measured_over_predicted"] = row["goodput_bps_mean"] / row["pred_goodput_bps"]
        rows.append(row)
    return pd.DataFrame(rows)


def pretty(summary: pd.DataFrame, metric: str = "goodput_bps") -> pd.DataFrame:
    """A summary for people: swept parameters with units, measured mean ± CI, predicted,
    their ratio and the binding limit (one row per setting)."""
    from .. import units

    if summary.empty:
        return summary
    shown = {"engine": str, "backend": str, "proto": str,
             "size_bytes": lambda v: units.format_size(v), "time_s": units.format_time,
             "offered_bps": units.format_rate, "packet_bytes": lambda v: f"{v:g} B",
             "rate_bps": units.format_rate, "delay_s": units.format_time,
             "jitter_s": units.format_time, "loss": units.format_fraction, "mtu": lambda v: f"{v:g}",
             "loss_reverse": units.format_fraction, "queue_packets": lambda v: f"{v:g}",
             "window_bytes": units.format_size, "sndbuf_bytes": units.format_size,
             "rcvbuf_bytes": units.format_size, "cc": str, "flows": str, "flow_id": str,
             "stream": lambda v: f"{v:g}"}
    names = {"size_bytes": "size", "time_s": "time", "offered_bps": "offered", "packet_bytes": "packet",
             "rate_bps": "rate", "delay_s": "delay", "jitter_s": "jitter", "queue_packets": "queue",
             "loss_reverse": "loss b→a", "window_bytes": "window",
             "sndbuf_bytes": "sndbuf", "rcvbuf_bytes": "rcvbuf"}
    out = pd.DataFrame(index=summary.index)
    for column, fmt in shown.items():
        if column in summary and summary[column].notna().any():
            out[names.get(column, column)] = [("" if v is None or (isinstance(v, float) and math.isnan(v))
                                               else fmt(v)) for v in summary[column]]
    rate = units.format_rate

    def cell(mean, ci):
        if not math.isfinite(mean):
            return "—"
        return rate(mean, 4) + (f" ± {rate(ci, 3)}" if math.isfinite(ci) else "")
    incomplete = summary.get("n_incomplete", pd.Series(0, index=summary.index))
    out["runs"] = [f"{n}" + (f" ({i} incomplete)" if i else "") + (f" (+{f} failed)" if f else "")
                   + (f" ({k} not run)" if k else "")
                   for n, i, f, k in zip(summary["n"], incomplete, summary["n_failed"], summary["n_skipped"])]
    nothing = [math.nan] * len(summary)          # no run measured anything: every cell says so
    out["measured"] = [cell(m, c) for m, c in zip(summary.get(f"{metric}_mean", nothing),
                                                    summary.get(f"{metric}_ci", nothing))]
    if "pred_goodput_bps" in summary:
        out["predicted"] = [rate(v, 4) if isinstance(v, float) and math.isfinite(v) else "—"
                            for v in summary["pred_goodput_bps"]]
        out["measured/predicted"] = [f"{v:.3f}" if isinstance(v, float) and math.isfinite(v) else "—"
                                     for v in summary.get("measured_over_predicted", [math.nan] * len(summary))]
        out["binds"] = summary["pred_binding"].astype(object).where(summary["pred_binding"].notna(), "—")
    if summary["first_error"].notna().any():
        out["why failed"] = summary["first_error"].fillna("")     # or why incomplete
    return out
