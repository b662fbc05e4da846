"""Analyses of a sweep's results, read back from its folder: what the model left unexplained.

Above the sweep machinery (``wirelab.experiment``, whose ``load`` and ``summarize`` they
start from). Read in this order: ``residuals`` (every setting's measured ÷ predicted, with
the named reason for what is left over), ``series`` (goodput over time within each run, from
its event stream or its capture), ``latency`` (a probe's round trips beside bulk flows,
against a full queue's delay) and ``dataset`` (every results folder as one DuckDB dataset).

    from wirelab.analysis import residual_table, check_residuals, load_series
    check_residuals(residual_table(load("data/rate-sweep")))
"""
from .._exports import lazy

_EXPORTS = {
    "residual_table": "residuals", "check_residuals": "residuals:check", "ResidualError": "residuals",
    "load_series": "series", "capture_series": "series", "results_dataset": "dataset",
    "loaded_latency": "latency", "one_way_under_load": "latency",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
