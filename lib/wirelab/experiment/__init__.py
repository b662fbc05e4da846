"""Experiments: a grid of settings × repetitions → one tidy DataFrame, saved and resumable.

Read in this order: ``spec`` (describe the sweep), ``engine`` (the seam to the
programs that move bytes; ``wirelab_engine`` and ``iperf3`` implement it),
``runner`` (run it with deadlines, record failures, resume), ``store``
(atomic parquet + csv + meta.json in ``data/<experiment>/``), ``meta`` (the
machine a run was made on), ``prediction`` (the model's ``pred_*`` columns),
``calibration`` (the host's own round trip, measured before a UDPR sweep),
``stats`` (mean, std, 95 % Student-t interval per setting; a file as size ÷ mean
time), ``adaptive`` (more repetitions where an interval is too wide) and
``residuals`` (measured ÷ predicted with the named reason for what is left).

    from wirelab.experiment import Experiment, run, summarize
    exp = Experiment("rate-sweep", proto=["tcp", "udp"], size="1MB",
                     rate=["10mbit", "20mbit"], delay=["0", "20ms"], reps=3)
    df = run(exp)                 # resumes if data/rate-sweep/ already has runs
    summarize(df)                 # goodput_bps_mean, _ci, pred_goodput_bps, …
"""
from .._exports import lazy

_EXPORTS = {
    "Experiment": "spec", "Setting": "spec", "AXES": "spec", "column_for": "spec",
    "Engine": "engine", "ENGINES": "engine", "MEASURED": "engine", "get_engine": "engine",
    "run": "runner", "run_one": "runner", "default_folder": "runner", "ResultStore": "store",
    "load": "store", "summarize": "stats", "pretty": "stats", "confidence_interval": "stats",
    "t_quantile": "stats", "predict_columns": "prediction", "goodput_series": "series",
    "load_series": "series", "capture_series": "series", "link_spec": "spec",
    "WirelabEngine": "wirelab_engine", "Iperf3Engine": "iperf3", "iperf3_run": "iperf3",
    "residual_table": "residuals", "check_residuals": "residuals:check", "ResidualError": "residuals",
    "host_round_trip": "calibration",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
