"""Repetitions → mean, standard deviation and a 95 % confidence interval per setting.

The interval is Student's t: mean ± t(0.975, n − 1) · s / √n, the interval
document 003 draws over its 1000 messages. With n = 3 repetitions t is 4.30,
so three runs give a wide interval, honestly. The t quantile is computed here
(regularised incomplete beta, Numerical Recipes §6.4) so no SciPy is needed.

Runs with status ``ok`` and ``incomplete`` (the protocol ended them early:
plain UDP losing data; their goodput is that of what arrived) are aggregated;
``n_incomplete`` counts the latter, ``n_failed`` failed runs, ``n_skipped``
the runs the engine could not make here (the reason is in ``first_error``).
Prediction columns (``pred_*``) are carried into the summary beside the
measurement, never mixed (a numeric one that differs between runs, e.g. after a
resumed sweep re-measured the host's round trip, is averaged).

Like with like: for a file the model predicts an expected transfer *time*, and
the mean of per-run goodputs is not size ÷ mean time (Jensen's inequality: a
rare MAX_WAIT timeout makes one run slow, which lowers the mean time a lot and
the mean goodput little). So file workloads also get
``goodput_of_mean_time_bps`` = 8 · mean bytes delivered ÷ mean ``transfer_s``,
with the interval from the time interval's two ends (a monotonic transform),
and ``measured_over_predicted`` uses it (``measured_basis`` says which);
``goodput_bps_mean`` stays, labelled "mean of run goodputs". ``relative_ci``
is the half-width of the basis' interval over its mean (the precision).
"""
from __future__ import annotations

import math

import pandas as pd

from .. import transports, units
from ..errors import ExperimentError

__all__ = ["t_quantile", "confidence_interval", "summarize", "pretty", "PARAMETER_COLUMNS", "parameter_columns",
           "time_basis", "BASIS_TIME", "BASIS_RUNS"]

#: What ``measured_over_predicted`` divides: a file's size ÷ its mean transfer time, or
#: (time, load and echo workloads) the mean of the runs' goodputs.
BASIS_TIME, BASIS_RUNS = "size ÷ mean time", "mean of run goodputs"

#: Columns that identify a setting (whatever of these the table has).
#: Statuses whose measurements are averaged: completed runs, and runs the protocol itself ended
#: early (plain UDP losing data), whose goodput is that of what arrived.
MEASURED_STATUSES = ("ok", "incomplete")
PARAMETER_COLUMNS = ["engine", "backend", "workload", "proto", "size_bytes", "time_s",
                     "offered_bps", "packet_bytes", "echo_count", "rate_bps", "delay_s",
                     "jitter_s", "loss", "loss_reverse", "mtu", "queue_packets", "window_bytes",
                     "sndbuf_bytes", "rcvbuf_bytes", "cc", "max_wait_s", "max_retransmits", "omit_s",
                     "flows", "flow_id", "stream", "direction"]   # the last four: runs with flows


def parameter_columns() -> list[str]:
    """``PARAMETER_COLUMNS`` and every transport's own (Go-Back-N's ``window_packets``): two settings
    that differ only there are two settings."""
    own = [o.column for o in transports.options().values()]
    return PARAMETER_COLUMNS + [c for c in own if c not in PARAMETER_COLUMNS]


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
    data = [float(v) for v in values if not pd.isna(v) and math.isfinite(float(v))]   # None, NaN, pd.NA
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
    by = list(by) if by is not None else [c for c in parameter_columns() if c in frame.columns]
    # a metric no run measured (every run skipped or failed) still gets its columns, as NaN
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
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
            values = ok[metric] if metric in ok else pd.Series([], dtype=float)
            mean, std, half, _ = confidence_interval(pd.to_numeric(values, errors="coerce"), level)
            row.update({f"{metric}_mean": mean, f"{metric}_std": std, f"{metric}_ci": half,
                        f"{metric}_low": mean - half, f"{metric}_high": mean + half})
        failed = group[~group["status"].isin(("ok",))]
        row["first_error"] = (failed["error"].dropna().iloc[0]
                              if "error" in failed and failed["error"].notna().any() else None)
        for column in preds:
            row[column] = _carried(group[column])
        row.update(time_basis(ok, level))
        measured = row.get("goodput_of_mean_time_bps") if row.get("measured_basis") == BASIS_TIME \
            else row.get("goodput_bps_mean")
        if row["measured_basis"] == BASIS_RUNS and "goodput_bps_mean" in row:
            row["relative_ci"] = _relative(row["goodput_bps_ci"], row["goodput_bps_mean"])
        pred = row.get("pred_goodput_bps")
        if measured is not None and isinstance(pred, (int, float)) and pred and math.isfinite(pred):
            row["measured_over_predicted"] = measured / pred
        rows.append(row)
    return pd.DataFrame(rows)


def _carried(values: pd.Series):
    """A prediction column's value for the setting: the first, or the mean of a numeric one."""
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().all() and values.map(lambda v: isinstance(v, (int, float))
                                            and not isinstance(v, bool)).all():
        return float(numeric.mean())
    return values.iloc[0]


def _relative(half: float, mean: float) -> float:
    return half / abs(mean) if math.isfinite(half) and mean else math.nan


def time_basis(ok: pd.DataFrame, level: float = 0.95) -> dict:
    """Size ÷ mean transfer time for the measured runs of one file setting (module docstring):
    ``goodput_of_mean_time_bps`` and its ``_low``/``_high`` from the time interval's ends,
    ``transfer_s_mean``/``_ci``, ``relative_ci``; else just ``measured_basis`` = runs."""
    workload = ok["workload"].iloc[0] if "workload" in ok and len(ok) else "file"
    if workload != "file" or "transfer_s" not in ok or not len(ok):
        return {"measured_basis": BASIS_RUNS}
    seconds = pd.to_numeric(ok["transfer_s"], errors="coerce")
    delivered = pd.to_numeric(ok["bytes_delivered"], errors="coerce") if "bytes_delivered" in ok \
        else pd.to_numeric(ok.get("size_bytes"), errors="coerce")
    both = seconds.notna() & delivered.notna() & (seconds > 0)
    if not both.any():
        return {"measured_basis": BASIS_RUNS}
    mean, _, half, _ = confidence_interval(seconds[both], level)
    bits = 8.0 * float(delivered[both].mean())
    low_time, high_time = (mean - half, mean + half) if math.isfinite(half) else (math.nan, math.nan)
    return {"measured_basis": BASIS_TIME, "transfer_s_mean": mean, "transfer_s_ci": half,
            "goodput_of_mean_time_bps": bits / mean,
            "goodput_of_mean_time_low": bits / high_time if math.isfinite(high_time) else math.nan,
            "goodput_of_mean_time_high": (bits / low_time if low_time > 0 else math.inf)
            if math.isfinite(low_time) else math.nan,
            "relative_ci": _relative(half, mean)}


def _interval(mean: float, low: float, high: float) -> str:
    """``9.31 Mbit/s [9.2, 9.4]``: an interval that need not be symmetric."""
    if not isinstance(mean, float) or not math.isfinite(mean):
        return "—"
    if not (isinstance(low, float) and math.isfinite(low)):
        return units.format_rate(mean, 4)
    top = units.format_rate(high, 3) if math.isfinite(high) else "∞"
    return f"{units.format_rate(mean, 4)} [{units.format_rate(low, 3)}, {top}]"


def pretty(summary: pd.DataFrame, metric: str = "goodput_bps") -> pd.DataFrame:
    """A summary for people: swept parameters with units, measured mean ± CI, predicted,
    their ratio and the binding limit (one row per setting)."""

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
    for opt in transports.options().values():        # a transport's own parameter (Go-Back-N's window)
        shown.setdefault(opt.column, lambda v: f"{v:g}")
        names.setdefault(opt.column, opt.column.replace("_", " "))     # "window packets": not TCP's window
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
    runs_mean = [cell(m, c) for m, c in zip(summary.get(f"{metric}_mean", nothing),
                                            summary.get(f"{metric}_ci", nothing))]
    if metric == "goodput_bps" and "goodput_of_mean_time_bps" in summary:
        # a file's goodput compared like with like: size ÷ mean time, interval from the time's
        out["measured"] = [_interval(m, lo, hi) if basis == BASIS_TIME else runs
                           for m, lo, hi, basis, runs in zip(
                               summary["goodput_of_mean_time_bps"], summary["goodput_of_mean_time_low"],
                               summary["goodput_of_mean_time_high"], summary["measured_basis"], runs_mean)]
        out["mean of run goodputs"] = runs_mean
    else:
        out["measured"] = runs_mean
    if "pred_goodput_bps" in summary:
        out["predicted"] = [rate(v, 4) if isinstance(v, float) and math.isfinite(v) else "—"
                            for v in summary["pred_goodput_bps"]]
        out["measured/predicted"] = [f"{v:.3f}" if isinstance(v, float) and math.isfinite(v) else "—"
                                     for v in summary.get("measured_over_predicted", [math.nan] * len(summary))]
        out["binds"] = summary["pred_binding"].astype(object).where(summary["pred_binding"].notna(), "—")
    if "relative_ci" in summary:
        out["±%"] = [f"{100 * v:.1f}" if isinstance(v, float) and math.isfinite(v) else "—"
                     for v in summary["relative_ci"]]
    if summary["first_error"].notna().any():
        out["why failed"] = summary["first_error"].fillna("")     # or why incomplete
    return out
