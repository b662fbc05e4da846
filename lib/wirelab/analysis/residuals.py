"""Every setting's measured ÷ predicted, with the named reason for what is left over.

A residual is measured ÷ predicted − 1 (``stats.summarize``: a file's size ÷ mean
transfer time against the predicted one, like with like). Within ``tolerance``
it needs no reason. Beyond it, each candidate reason below is *quantified* from
the setting's own parameters and measurements, never fitted to the residual; a
residual is explained when what the reasons account for brings it back within
the tolerance (a band wider than ±25 % accounts for nothing: "the data cannot tell" is
said, with the runs it would take, not taken as an explanation). Each reason gives the range its effect
lies in (a size, or a band); ``left`` is how far the ratio lies outside the range
they span together. Whatever is left beyond the tolerance is not explained: where the
runs are too few to tell (an interval wider than ±25 % that reaches the prediction) the
row's ``verdict`` is "needs runs" and it says how many would do; otherwise it is
**unexplained**, and ``check`` raises: a gap between model and measurement nobody can
name, in runs precise enough to show it, is a bug in one of them.

Where the prediction comes with an interval of its own (``pred_goodput_low_bps`` …
``_high_bps``: UDPR at the ends of the host round trip's probe range, ``calibration``;
TCP at loss: the model's spread of one run, ``pred_transfer_std_s`` for a file or
``pred_goodput_std_bps`` for a timed run (``model.window_runs``), over the setting's
runs), the test is whether the measured mean lies inside that interval (``overlap``), not a
fixed ±10 %: the row says so, with both. An interval explains only while it is at most
``WIDEST_INTERVAL`` (±25 %) either side of the prediction, and no interval has an infinite end
(a file's time never below the fastest run the model allows); a wider one explains nothing and
the row says how many runs would make it narrow enough. The same holds for every reason's band.

The reasons, each quantified from the setting's own numbers, are ``reasons.py``'s.
"""
from __future__ import annotations

import math

import pandas as pd

from .. import transports
from ..errors import ExperimentError
from ..experiment.stats import summarize
from .intervals import WIDEST_INTERVAL, number as _number, predicted_interval, within_interval as _overlap
from .reasons import CLOCK_RESOLUTION_S, TOLERANCE, Reason, reasons

__all__ = ["Reason", "reasons", "residual_table", "check", "ResidualError", "TOLERANCE", "CLOCK_RESOLUTION_S"]


class ResidualError(ExperimentError):
    """A residual beyond the tolerance that no known reason explains."""



def _label(row) -> str:
    parts = [str(row.get("proto", ""))]
    own = tuple((o.column, lambda v, o=o: f"{o.cli_flag.lstrip('-')} {v:g}") for o in transports.options().values())
    for column, fmt in own + (("cc", str), ("size_bytes", lambda v: f"{v / 1e3:g} kB"),
                        ("rate_bps", lambda v: f"{v / 1e6:g} Mbit/s"), ("delay_s", lambda v: f"{v * 1e3:g} ms"),
                        ("loss", lambda v: f"{v:.1%} loss"), ("max_wait_s", lambda v: f"MAX_WAIT {v:g} s")):
        value = row.get(column)
        if value is not None and not (isinstance(value, float) and math.isnan(value)) and value != "":
            if column in ("loss", "delay_s") and not value:
                continue
            parts.append(fmt(value))
    return " ".join(parts)


def residual_table(runs: pd.DataFrame, *, tolerance: float = TOLERANCE, precision: float | None = None,
                   max_reps: int | None = None) -> pd.DataFrame:
    """One row per setting of a sweep's ``runs``: measured ÷ predicted, the residual, its
    interval, the reasons with their numbers, what is left after them, and ``explained``
    (module docstring). Settings the model does not cover say so and are not residuals."""
    summary = summarize(_host_columns(runs), metrics=("goodput_bps", "rtt_mean_s", "window_advertised_bytes",
                                                      "retransmissions", "send_span_s", "receiver_socket_drops"))
    rows = []
    for _, row in summary.iterrows():
        ratio = _number(row, "measured_over_predicted")
        out = {"setting": _label(row), "n": int(_number(row, "n", 0)), "measured/predicted": ratio,
               "residual": ratio - 1, "±interval": _number(row, "relative_ci"), "basis": row.get("measured_basis")}
        if not math.isfinite(ratio):
            why = row.get("first_error") if not _number(row, "n", 0) else row.get("pred_note")
            out.update(reasons=f"not compared: {why or 'no prediction'}", left=math.nan, explained=True,
                       within=None, overlap=None)
            rows.append(out)
            continue
        found = reasons(row, tolerance=tolerance, precision=precision, max_reps=max_reps)
        low = math.prod(1 + r.low for r in found)            # what the reasons allow the ratio to be
        high = math.prod(1 + r.high for r in found)
        left = ratio / low - 1 if ratio < low else ratio / high - 1 if ratio > high else 0.0
        within = abs(ratio - 1) <= tolerance
        overlap, says = _overlap(row, ratio)
        explained = within or bool(overlap) or abs(left) <= tolerance
        out.update(within=within, left=left, overlap=overlap, explained=explained,
                   verdict="within" if within else "explained" if explained
                   else "needs runs" if _cannot_tell(row, ratio, tolerance) else "unexplained",
                   reasons="; ".join([says] * bool(says) + [f"{r.name}: {r.text}" for r in found]))
        if not explained:
            out["reasons"] = (out["reasons"] + "; " if out["reasons"] else "") + (
                "NOT EXPLAINED: the runs cannot tell yet (an interval wider than "
                f"±{WIDEST_INTERVAL:.0%} reaches the prediction): more runs" if out["verdict"] == "needs runs"
                else f"UNEXPLAINED: {left:+.1%} after the known reasons")
        rows.append(out)
    return pd.DataFrame(rows)


def _host_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's sending span (first to last datagram, the sender's clock) and its receiving host's
    socket drops, where the runs recorded them (older sweeps did not: the reasons then stay silent)."""
    extra = {}
    if {"first_data_time_s", "last_data_time_s"} <= set(runs.columns):
        extra["send_span_s"] = runs["last_data_time_s"] - runs["first_data_time_s"]
    if "metadata_receiver_socket_drops" in runs.columns:
        extra["receiver_socket_drops"] = runs["metadata_receiver_socket_drops"]
    return runs.assign(**extra) if extra else runs


def _cannot_tell(row, ratio: float, tolerance: float) -> bool:
    """Whether the runs are too few to say the model is wrong: the measured mean's 95 % interval, or
    the model's own for the runs made, is wider than ``WIDEST_INTERVAL`` and reaches within the
    tolerance of the prediction. Such a row is not explained (it says how many runs would do), and
    ``check`` does not call it a defect either: only a row precise enough to miss is one."""
    relative = _number(row, "relative_ci")
    if math.isfinite(relative) and relative > WIDEST_INTERVAL:
        if ratio * (1 - relative) <= 1 + tolerance and (relative >= 1 or ratio * (1 + relative) >= 1 - tolerance):
            return True
    low, high, sources = predicted_interval(row)
    pred = _number(row, "pred_goodput_bps")
    if not sources or not (math.isfinite(pred) and pred > 0) or low == high:
        return False
    wide = max(1 - low / pred, high / pred - 1) > WIDEST_INTERVAL
    return wide and low <= ratio * pred <= high


def check(table: pd.DataFrame) -> pd.DataFrame:
    """The table back unless a residual is beyond the tolerance with no known reason while its runs
    are precise enough to tell (``verdict`` "unexplained"): then ``ResidualError``. Rows whose runs
    cannot tell yet ("needs runs") are not explained, and say so in the table, but are no defect."""
    verdict = table["verdict"] if "verdict" in table else table["explained"].map({True: "explained", False: "unexplained"})
    bad = table[verdict == "unexplained"]
    if len(bad):
        lines = "; ".join(f"{r['setting']}: measured/predicted {r['measured/predicted']:.3f}" for _, r in bad.iterrows())
        raise ResidualError(f"{len(bad)} residual(s) beyond the tolerance with no known reason: {lines}",
                            "find the cause: fix the model (with a source) or the measurement, or name the "
                            "reason in wirelab.analysis.residuals with its size")
    return table
