"""Enough data for an honest interval: repetitions added where an interval is still too wide.

With ``Experiment(precision=0.10, max_reps=12, budget_s=120)`` the runner, once
every setting has its ``reps`` runs, looks at each setting's 95 % interval
(for a file: of the mean transfer time, the quantity the model predicts; else
of the mean goodput) and gives one more run to every setting whose half-width
is above ``precision`` × its mean, round after round, until each is precise
enough, has ``max_reps`` runs, or its next run would not fit in what is left of
``budget_s`` (the seconds the sweep's runs have taken so far, every session
counted: running a finished sweep again adds nothing). Nothing here is hidden: a setting that
stops short says why (``precision_note``), with the number of runs it would
need.

The plan is read from the results table alone (the repetition numbers already
there), so an interrupted sweep resumes its extra repetitions like its others.

How many runs a precision needs: the half-width is t(0.975, n − 1)·s/√n, so a
relative spread (coefficient of variation) v needs n with t·v/√n ≤ precision;
the model's own spread (``pred_transfer_std_s``, e.g. UDPR's MAX_WAIT timeouts)
tells before any run how long that will take (``runs_needed``).
"""
from __future__ import annotations

import math

import pandas as pd

from .stats import MEASURED_STATUSES, confidence_interval, t_quantile, time_basis

__all__ = ["precision_of", "more_runs", "seconds_left", "runs_needed", "precision_note", "model_one_run"]

#: Never plan more runs than this for one setting, whatever the spread.
MOST_RUNS = 10_000


def precision_of(runs: pd.DataFrame) -> tuple[float, int]:
    """(half-width ÷ mean of the setting's interval, measured runs) for one setting's rows:
    the mean transfer time for a file, else the mean goodput. NaN with fewer than 2 runs."""
    ok = runs[runs["status"].isin(MEASURED_STATUSES)] if "status" in runs else runs
    basis = time_basis(ok)
    if "relative_ci" in basis:
        return basis["relative_ci"], len(ok)
    if "goodput_bps" not in ok:
        return math.nan, len(ok)
    mean, _, half, n = confidence_interval(pd.to_numeric(ok["goodput_bps"], errors="coerce"))
    return (half / mean if n >= 2 and mean else math.nan), n


def _number(row, name) -> float:
    try:
        value = float(row.get(name, math.nan))
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def model_one_run(row) -> float:
    """One run's spread ÷ its mean as the model predicts it (``model.window_runs``, UDPR's timeouts):
    a file's data time (``pred_transfer_std_s`` ÷ ``pred_data_time_s``), else a timed run's goodput
    (``pred_goodput_std_bps`` ÷ ``pred_goodput_bps``). NaN: the model gives none."""
    std, seconds = _number(row, "pred_transfer_std_s"), _number(row, "pred_data_time_s")
    if math.isfinite(std) and seconds > 0:
        return std / seconds
    std, goodput = _number(row, "pred_goodput_std_bps"), _number(row, "pred_goodput_bps")
    if math.isfinite(std) and goodput > 0:
        return std / goodput
    return math.nan


def runs_needed(variation: float, precision: float, *, level: float = 0.95) -> int:
    """Smallest n (≥ 2) with t(level, n − 1)·v/√n ≤ precision, for a relative spread ``variation``
    of one run (std ÷ mean); ``MOST_RUNS`` when even that many are not enough."""
    if not variation > 0:
        return 2
    quantile = 0.5 + level / 2
    n = 2
    while n < MOST_RUNS and t_quantile(quantile, n - 1) * variation / math.sqrt(n) > precision:
        n = max(n + 1, int(n * 1.2))
    return min(n, MOST_RUNS)


def seconds_left(experiment, frame: pd.DataFrame, settings=None) -> float | None:
    """What is left of ``experiment.budget_s`` after the runs of its settings in ``frame``
    (their ``elapsed_s``, whichever session made them: a resumed sweep keeps its budget).
    ``settings``: the experiment's, where the caller has them already (a sweep's plan)."""
    if experiment.budget_s is None:
        return None
    if frame.empty or "elapsed_s" not in frame:
        return float(experiment.budget_s)
    ids = {s.setting_id for s in (settings if settings is not None else experiment.settings())}
    spent = pd.to_numeric(frame.loc[frame["setting_id"].isin(ids), "elapsed_s"], errors="coerce").sum()
    return float(experiment.budget_s) - float(spent)


def more_runs(experiment, frame: pd.DataFrame, settings=None) -> list:
    """The next round of (setting, rep) pairs: one more run for every setting whose interval
    (or the model's own spread of one run over the runs made, ``model_one_run``) is wider than
    ``experiment.precision`` of its mean, has fewer than ``max_reps`` runs and
    whose typical run fits in what is left of ``budget_s``. Settings with a failed or skipped
    run get none (more of the same would not help; the reason is in the row)."""
    if experiment.precision is None or frame.empty:
        return []
    settings = settings if settings is not None else experiment.settings()
    left = seconds_left(experiment, frame, settings)
    most = experiment.max_reps or experiment.reps
    out = []
    for setting in settings:
        rows = frame[frame["setting_id"] == setting.setting_id]
        made = int(rows["rep"].max()) + 1 if len(rows) else 0
        if made < experiment.reps or made >= most or not rows["status"].isin(MEASURED_STATUSES).all():
            continue
        relative, n = precision_of(rows)
        # the model's own spread too: a few runs can all miss a heavy tail it predicts (issue 32)
        one = model_one_run(rows.iloc[0]) if len(rows) else math.nan
        if math.isfinite(one) and n >= 2:
            relative = max(relative if math.isfinite(relative) else 0.0, t_quantile(0.975, n - 1) * one / math.sqrt(n))
        if math.isfinite(relative) and relative <= experiment.precision:
            continue
        if left is not None and "elapsed_s" in rows:
            if float(pd.to_numeric(rows["elapsed_s"], errors="coerce").median()) > left:
                continue
        out.append((setting, made))
    return out


def precision_note(relative: float, runs: int, precision: float | None, max_reps: int | None, *,
                   adaptive: bool = True, failed: int = 0) -> str | None:
    """Why a setting's interval is wider than ``precision`` (None when it is not), with the
    runs it would need at the spread seen so far. ``adaptive``: whether more runs were asked
    for; ``failed``: runs of the setting that failed (then none are added)."""
    if precision is None or (math.isfinite(relative) and relative <= precision):
        return None
    if runs < 2 or not math.isfinite(relative):
        return f"{runs} run(s): no interval yet"
    spread = relative * math.sqrt(runs) / t_quantile(0.975, runs - 1)       # one run's std ÷ mean
    needed = runs_needed(spread, precision)
    why = ("no more runs were asked for (Experiment precision=)" if not adaptive
           else f"{failed} run(s) failed, so none were added" if failed
           else "max_reps reached" if max_reps is not None and runs >= max_reps else "time budget spent")
    return (f"interval ±{relative:.0%} of the mean after {runs} runs, wider than ±{precision:.0%} "
            f"({why}; one run varies by {spread:.0%}, so about {needed} runs would do)")
