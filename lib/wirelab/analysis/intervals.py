"""The prediction's interval for a setting's mean, and whether it explains the measured mean.

The model gives a setting an interval of its own where it can: UDPR's goodput at the ends of the
host round trip's probe range (``pred_goodput_low_bps`` … ``_high_bps``, ``experiment.calibration``),
and the spread of one run (``experiment.adaptive.model_one_run``: a file's data time, run by run in
``model.window_runs``, or a timed run's goodput) over the setting's n runs, T ± t·σ/√n, which
shrinks with n. A time interval stops at the fastest run the model allows, so no goodput interval
reaches infinity. The measured mean is explained by the interval only while it lies inside it and
the interval is at most ``WIDEST_INTERVAL`` either side of the prediction (issue 32: "a check that
cannot fail is a defect"); a wider one explains nothing, and the row says how many runs would make
it narrow enough.
"""
from __future__ import annotations

import math

from ..experiment.adaptive import model_one_run, runs_needed
from ..experiment.stats import t_quantile
from .._plain import field

__all__ = ["WIDEST_INTERVAL", "number", "one_run", "model_spread", "predicted_interval", "within_interval"]

#: An interval explains a residual only while it is at most this wide either side of the
#: prediction: a wider one (at worst one reaching infinity) would explain anything.
WIDEST_INTERVAL = 0.25


def number(row, name, default=math.nan) -> float:
    value = field(row, name, default)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


def one_run(row) -> float:
    """One run's spread ÷ its mean as the model predicts it (``adaptive.model_one_run``)."""
    return model_one_run(row)


def model_spread(row, runs: int) -> float:
    """Half-width ÷ mean of the 95 % interval ``runs`` runs would give at the spread the model
    itself predicts for one (``one_run``): a few runs can miss a rare slow one and show a
    narrow interval of their own. NaN where the model gives none."""
    one = one_run(row)
    if runs < 2 or not math.isfinite(one):
        return math.nan
    return t_quantile(0.975, runs - 1) * one / math.sqrt(runs)


def time_floor(row) -> float:
    """The shortest data time the model allows (``pred_data_time_min_s``, the fastest simulated run;
    else the file at η·C and the last byte's one-way delay): no interval of time reaches below it,
    so no goodput interval reaches infinity."""
    fastest = number(row, "pred_data_time_min_s")
    if math.isfinite(fastest) and fastest > 0:
        return fastest
    floor = number(row, "pred_time_link_s", 0.0) + number(row, "pred_time_propagation_s", 0.0)
    return floor if floor > 0 else math.nan


def predicted_interval(row) -> tuple[float, float, list[str]]:
    """The prediction's 95 % interval for this setting's mean and what it comes from: the host round
    trip's probe range (UDPR: ``pred_goodput_low_bps`` … ``_high_bps``) and the model's own spread
    of one run over the setting's ``n`` runs (``pred_transfer_std_s``, a time: T ± t·σ/√n, its lower
    end never below the fastest run the model allows, ``_time_floor``); where both exist, the span of
    the two; where neither, the prediction itself (a point). Both ends are always finite.
    NaNs: no prediction."""
    lows, highs, sources = [], [], []
    low, high = number(row, "pred_goodput_low_bps"), number(row, "pred_goodput_high_bps")
    if math.isfinite(low) and math.isfinite(high):
        host = (number(row, "pred_host_rtt_low_s"), number(row, "pred_host_rtt_high_s"))
        sources.append(f"host round trip {host[0] * 1e3:.3f}–{host[1] * 1e3:.3f} ms, the probes' range"
                       if all(math.isfinite(h) for h in host) else "the prediction's inputs' range")
        lows.append(low), highs.append(high)
    runs, pred = int(number(row, "n", 0)), number(row, "pred_goodput_bps")
    model = model_spread(row, runs)
    seconds = number(row, "pred_data_time_s")
    if math.isfinite(model) and model > 0 and math.isfinite(pred) and math.isfinite(seconds) and seconds > 0:
        floor = time_floor(row)
        shortest = max(seconds * (1 - model), floor if math.isfinite(floor) else 0.0)
        if shortest > 0:
            sources.append(f"the model's spread of one run over {runs} runs: ±{model:.0%} in time")
            lows.append(pred * seconds / (seconds * (1 + model))), highs.append(pred * seconds / shortest)
    elif math.isfinite(model) and model > 0 and math.isfinite(pred):      # a timed run: in goodput
        sources.append(f"the model's spread of one run over {runs} runs: ±{model:.0%} in goodput")
        lows.append(pred * max(1 - model, 0.0)), highs.append(pred * (1 + model))
    if not sources and math.isfinite(pred):
        return pred, pred, ["a point: the model gives no interval here"]
    if not sources:
        return math.nan, math.nan, []
    return min(lows), max(highs), sources


def within_interval(row, ratio: float) -> tuple[bool | None, str]:
    """Whether the measured mean lies inside the prediction's interval for the setting's runs
    and that interval is narrow enough to say so (at most ``WIDEST_INTERVAL`` either side; None:
    no interval), and the sentence that says so with both."""
    low, high, sources = predicted_interval(row)
    pred = number(row, "pred_goodput_bps")
    if not sources or not (math.isfinite(pred) and pred > 0 and math.isfinite(ratio)):
        return None, ""
    measured = ratio * pred
    inside = low <= measured <= high
    if low == high:
        return None, f"the prediction is a point ({sources[0]}): within ±10 % or a named reason, or not explained"
    width = max(1 - low / pred, high / pred - 1)
    says = (f"measured mean {measured / 1e6:.3f} Mbit/s {'inside' if inside else 'outside'} the predicted "
            f"{low / 1e6:.3f}–{high / 1e6:.3f} Mbit/s ({'; '.join(sources)})")
    if width > WIDEST_INTERVAL:
        one = one_run(row)
        more = (f"; about {runs_needed(one, WIDEST_INTERVAL * 0.8)} runs would be needed"
                if math.isfinite(one) and one > 0 else "")
        return False, (f"{says}, an interval ±{width:.0%} wide explains nothing (at most "
                       f"±{WIDEST_INTERVAL:.0%}){more}")
    return inside, says
