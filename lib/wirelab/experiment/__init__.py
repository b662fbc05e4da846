"""Experiments: a grid of settings × repetitions → one tidy DataFrame, saved and resumable.

Read in this order: ``spec`` (describe the sweep), ``engine`` (the seam to the
programs that move bytes; ``wirelab_engine`` and ``iperf3`` implement it),
``runner`` (run it with deadlines, record failures, resume), ``store``
(atomic parquet + csv + meta.json in ``data/<experiment>/``), ``meta`` (the
machine a run was made on), ``prediction`` (the model's ``pred_*`` columns)
and ``stats`` (mean, std, 95 % Student-t interval per setting).

    from wirelab.experiment import Experiment, run, summarize
    exp = Experiment("rate-sweep", proto=["tcp", "udp"], size="1MB",
                     rate=["10mbit", "20mbit"], delay=["0", "20ms"], reps=3)
    df = run(exp)                 # resumes if data/rate-sweep/ already has runs
    summarize(df)                 # goodput_bps_mean, _ci, pred_goodput_bps, …
"""
from .engine import ENGINES, MEASURED, Engine, get_engine
from .prediction import predict_columns
from .runner import default_folder, run, run_one
from .spec import AXES, Experiment, Setting, column_for
from .stats import confidence_interval, summarize, t_quantile
from .store import ResultStore, load

__all__ = ["Experiment", "Setting", "AXES", "column_for", "Engine", "ENGINES", "MEASURED",
           "get_engine", "run", "run_one", "default_folder", "ResultStore", "load",
           "summarize", "confidence_interval", "t_quantile", "predict_columns"]
