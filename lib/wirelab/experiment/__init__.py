"""Experiments: a grid of settings × repetitions → one tidy DataFrame, saved and resumable.

Read in this order: ``spec`` (describe the sweep; each setting carries its
``LinkSpec``), ``engine`` (the seam to the programs that move bytes;
``wirelab_engine`` and ``iperf3`` implement it), ``runner`` (one road per run:
predict, open the link with ``wirelab.link.open``, let the engine run across
it, record; failures recorded, resume), ``deadline`` (each run's deadline from
its prediction), ``store`` (atomic parquet + csv + meta.json in
``data/<experiment>/``), ``meta`` (the machine a run was made on),
``prediction`` (the model's ``pred_*`` columns), ``calibration`` (the host's own
round trip, measured before a UDPR sweep), ``stats`` (mean, std, 95 % Student-t
interval per setting; a file as size ÷ mean time), ``adaptive`` (more repetitions
where an interval is too wide) and ``residuals`` (measured ÷ predicted with the
named reason for what is left). ``flows`` runs several flows at once on one link
(one row per stream, Jain's index per run). The labs of documents 000 and 004 as
tables: ``offered_load``, ``clocks``, ``iperf_tc``. The labs of documents 001 and
003: ``broker_delay`` (document 003's five nodes), ``misbehaviour`` (document 001
§5 live) with ``ppcb_capture`` (``exchange``: what the peers sent, from the
capture), ``replication`` (a document's table beside measurement and prediction).

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
    "WirelabEngine": "wirelab_engine", "Iperf3Engine": "iperf3", "iperf3_run": "runner",
    "Flow": "flows", "fairness": "flows", "read_sysctls": "meta", "two_clocks": "clocks",
    "offered_load_table": "offered_load", "buffers_table": "offered_load", "buffers_1s_table": "offered_load",
    "transmission_table": "offered_load", "document_table": "iperf_tc", "interval_narrowing": "iperf_tc",
    "results_dataset": "dataset",
    # the labs of documents 001 and 003
    "delay_sweep": "broker_delay", "run_broker_network": "broker_delay", "summarize_delays": "broker_delay",
    "delay_table": "broker_delay", "run_across": "broker_delay",
    "predict_route": "broker_delay", "route_hops": "broker_delay", "beside": "replication",
    "loss_for_goodput": "replication", "format_beside": "replication", "run_scenario": "misbehaviour",
    "SCENARIOS": "misbehaviour",
    "exchange": "ppcb_capture", "collapse": "ppcb_capture",
    "residual_table": "residuals", "check_residuals": "residuals:check", "ResidualError": "residuals",
    "host_round_trip": "calibration",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
