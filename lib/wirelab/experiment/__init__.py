"""Experiments: a grid of settings × repetitions → one tidy DataFrame, saved and resumable.

The sweep machinery only; the programs it runs are engines (``wirelab.engines``), what is
read back from a sweep's folder is an analysis (``wirelab.analysis``), and each source
document's sweeps, tables and figures are a lab (``wirelab.labs``). Read in this order:
``spec`` (describe the sweep; each setting carries its ``LinkSpec``; ``flowspec``: several
flows written as text), ``plan`` (what a sweep decides once: settings, backend, machine,
each setting's predictions and deadline), ``runner`` (one road per run: open the link with
``wirelab.link.open``, let the engine run across it, decide its status by ``status``'s one
rule, record; failures recorded, resume), ``engine`` (the seam to the programs, its contract
written as types: ``Engine``, ``Capabilities``; ``engines`` by name: ``wirelab``, ``iperf3``; ``flows``: several at once on one link, one row per
stream; a lab may bring its own, e.g. ``labs.broker``, ``labs.peers``), ``linklayer`` (what a
sweep needs of the layer that opens its links, as types), ``deadline`` (each
run's deadline from its prediction), ``prediction`` (the model's ``pred_*`` columns),
``calibration`` (the host's own round trip, measured before a UDPR sweep), ``reuse`` (one
link for consecutive runs), ``events`` (each run's event stream), ``progress`` (one
progress bar), ``store`` (atomic parquet + csv + meta.json in ``data/<experiment>/``),
``meta`` (the machine a run was made on), ``rfc6349`` (RFC 6349's metrics of each TCP
run's row), ``stats`` (mean, std, 95 % Student-t interval per setting), ``adaptive`` (more
repetitions where an interval is too wide), ``cluster`` with ``hostpairs`` (the same sweep
across real machines, Dask workers: ``Experiment(hosts=..., cluster=...)``).

    from wirelab.experiment import Experiment, run, summarize
    exp = Experiment("rate-sweep", proto=["tcp", "udp"], size="1MB",
                     rate=["10mbit", "20mbit"], delay=["0", "20ms"], reps=3)
    df = run(exp)                 # resumes if data/rate-sweep/ already has runs
    summarize(df)                 # goodput_bps_mean, _ci, pred_goodput_bps, …
"""
from .._exports import lazy

_EXPORTS = {
    "Experiment": "spec", "Setting": "spec", "AXES": "spec", "column_for": "spec", "link_spec": "spec",
    "Plan": "plan", "Engine": "engine", "Capabilities": "engine",
    "capabilities": "engine", "LinkLayer": "linklayer", "MEASURED": "engine", "ENGINES": "engines", "get_engine": "engines",
    "iperf3_run": "engines", "run": "runner", "run_one": "runner", "default_folder": "runner",
    "ResultStore": "store", "load": "store", "summarize": "stats", "pretty": "stats",
    "confidence_interval": "stats", "t_quantile": "stats", "predict_columns": "prediction",
    "read_sysctls": "meta", "Flow": "flowspec", "fairness": "flows", "host_round_trip": "calibration",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
