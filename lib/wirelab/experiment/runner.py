"""Run an experiment: every (setting, repetition), each with a deadline, saved as it goes.

    df = run(exp)                       # data/<exp.name>/, engine and backend from exp
    df = run(exp, out="data/x", engine="iperf3", progress=False)

For each run the runner: skips it if the folder already holds it (resume);
asks the engine whether it can run it (``unsupported`` → status ``skipped``);
runs it with a deadline; records any failure with its reason (status
``failed``, ``error`` text) and goes on with the sweep; adds the model's
prediction for exactly those parameters (``pred_*``); saves the run's record in
the results folder the moment it ends (the tables follow, ``store``). Ctrl-C
stops after saving what is done: run it again to complete only the missing
runs. Consecutive runs share one link where the backend can make it ready
again, reshaped in place when the rate, delay or loss changes (``reuse``).

Before the runs, where UDPR is swept, the host's own round trip is measured
(``calibration``) for the stop-and-wait model, once for the sweep's deadlines and
again before a UDPR setting's runs once the last probe of its rate, MTU and DATA
size is 30 s old (the machine's load drifts during a sweep); after them, with
``Experiment(precision=...)``, settings whose interval is still too wide get
more repetitions (``adaptive``).
"""
from __future__ import annotations

import os
import sys
import time
import traceback
import uuid
from contextlib import ExitStack
from pathlib import Path

import pandas as pd

from .. import link as links
from ..errors import ExperimentError, UsageError
from . import meta as machine
from .adaptive import more_runs
from .calibration import PROBE_MAX_AGE_S, host_round_trip, needs_probe, probe_key
from .engine import RESERVED, flatten, get_engine, link_columns
from .iperf3 import Iperf3Engine
from .deadline import deadline_s, too_long
from .prediction import predict_columns
from .reuse import KeptLinks
from .spec import Experiment, Setting
from .store import ResultStore, load

__all__ = ["run", "run_one", "iperf3_run", "default_folder", "RESERVED"]

def default_folder(experiment: Experiment, root: str | Path = "data") -> Path:
    return Path(root) / experiment.name


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm     # a widget in Jupyter, a text bar on a terminal
    return tqdm(total=total, desc=desc, unit="run", leave=True)


def _predictions(engine, setting: Setting, link_layer, timestamps: bool, default_cc: str | None,
                 backend: str | None = None, host_rtt_s: float | None = None) -> dict:
    """The model's ``pred_*`` columns for exactly this setting, framed as the engine frames data,
    with the machine's congestion control where the setting names none, carried the way the
    backend carries it, with the host's measured round trip."""
    framing = dict(engine.framing(setting) or {}) if hasattr(engine, "framing") else {}
    carriage = link_layer.carriage(backend, setting.proto) if backend and hasattr(link_layer, "carriage") \
        else "packets"
    return predict_columns(setting.params, wire=link_layer.wire_of(setting.link), timestamps=timestamps,
                           default_cc=default_cc, carriage=carriage, host_rtt_s=host_rtt_s, **framing)


def run_one(engine, setting: Setting, *, backend: str = "auto", rep: int = 0, seed: int = 0,
            timeout: float | None = None, workdir: str | Path | None = None, timestamps: bool = True,
            capture_dir: str | Path | None = None, link_layer=links,
            default_cc: str | None = None, host_rtt_s: float | None = None,
            kept: KeptLinks | None = None) -> tuple[dict, dict]:
    """One run → (row, raw record). Never raises for a failed run (except Ctrl-C).

    Opens ``setting.link`` on ``backend`` (``wirelab.link.open``: a fresh link, removed
    afterwards; or through ``kept``, a sweep's ``KeptLinks``: the link of the previous run of
    the same spec, made ready again), hands it to the engine, and fills the row from the
    engine's record and the link's ``describe()`` (``link_runs_before``: runs the link carried
    before this one). ``capture_dir``: a pcapng of the run there (``<run_id>.pcapng``).
    ``link_layer``: what opens links (``wirelab.link``; tests give a fake one).
    ``timeout``: the run's deadline in seconds; None: derived from the prediction (``deadline``).
    ``default_cc``: the machine's TCP congestion control, for settings that name none.
    ``host_rtt_s``: the host's own round trip (``calibration``), for the stop-and-wait model.
    """
    run_id = f"{setting.setting_id}-r{rep}-{uuid.uuid4().hex[:6]}"
    row = {"run_id": run_id, "rep": rep, "seed": seed, **setting.columns(),
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    row["wire"] = link_layer.wire_of(setting.link)
    row.update(_predictions(engine, setting, link_layer, timestamps, default_cc, backend, host_rtt_s))
    timeout = row["deadline_s"] = deadline_s(setting, row, timeout)
    raw: dict = {"run_id": run_id, "setting": setting.columns(), "rep": rep}

    reason = engine.unsupported(setting) if hasattr(engine, "unsupported") else None
    start = time.monotonic()
    if reason:
        row.update(status="skipped", error=reason, backend=backend, elapsed_s=0.0)
        return row, raw
    opened = None
    kept = kept if kept is not None else KeptLinks(link_layer, backend, keep=False)
    runs_before = None
    try:
        with kept.lease(setting.link, seed=seed) as link:
            opened, runs_before = link, kept.runs_on_link
            _run_across(engine, setting, link, row, raw, start=start, timeout=timeout, seed=seed,
                        workdir=workdir, capture_dir=capture_dir)
    except KeyboardInterrupt:
        raise
    except Exception as err:       # noqa: BLE001 - a failing run must not stop the sweep
        row.update(status="failed", error=f"{type(err).__name__}: {err}")
        raw["traceback"] = traceback.format_exc()
    row.update(link_columns(opened, backend, raw))
    if opened is not None:
        row["link_runs_before"] = runs_before
    row["elapsed_s"] = time.monotonic() - start
    return row, raw


def _run_across(engine, setting: Setting, link, row: dict, raw: dict, *, start: float, timeout: float,
                seed: int, workdir, capture_dir) -> None:
    """The engine's run across an open link, its record folded into ``row``."""
    reason = link.unsupported(setting.proto)
    if reason:
        row.update(status="skipped", error=reason)
        return
    extra = {"capture": Path(capture_dir) / f"{row['run_id']}.pcapng"} if capture_dir else {}
    record = engine.run(setting, link, deadline=start + timeout, seed=seed, workdir=workdir, **extra)
    raw["result"] = record
    for key, value in flatten(record).items():
        row[f"result_{key}" if key in RESERVED or key in row else key] = value
    if record.get("outcome") == "incomplete":       # the protocol's own ending: a result, not a failure
        row.update(status="incomplete", error=record.get("outcome_reason"))
    elif record.get("ok", True) is False or record.get("goodput_bps") is None:
        why = record.get("error") or record.get("receiver_error") or "no goodput measured"
        row.update(status="failed", error=str(why))
    else:
        row.update(status="ok", error=None)
    if time.monotonic() - start > timeout * 1.05 and row["status"] == "ok":
        row.update(status="failed", error=f"overran its {timeout:g} s deadline")


def _run_flows(engine, setting: Setting, **options) -> tuple[list[dict], dict]:
    from .flows import run_flows        # read only by sweeps that have flows
    return run_flows(engine, setting, **options)


def run(experiment: Experiment, *, out: str | Path | None = None, engine=None,
        engine_options: dict | None = None, progress: bool = True, retry_failed: bool = False,
        max_runs: int | None = None, on_row=None, link_layer=links) -> pd.DataFrame:
    """Run (or resume) ``experiment``; returns the whole results table, reloaded from disk.

    ``engine``: a name or an engine object (default ``experiment.engine``).
    ``retry_failed``: run again the settings whose earlier runs failed or were skipped.
    ``max_runs``: stop after this many new runs (to try a sweep, or to test resume).
    ``on_row(row)``: called after each saved run (the control panel uses it).
    ``link_layer``: what chooses the backend and opens links (``wirelab.link``; tests give a fake).
    """
    folder = Path(out) if out is not None else default_folder(experiment)
    engine = get_engine(engine if engine is not None else experiment.engine, **(engine_options or {}))
    engine_name = getattr(engine, "name", type(engine).__name__)
    if engine_name != experiment.engine:
        experiment = Experiment(**{**experiment.to_dict(), "engine": engine_name})

    with ResultStore(folder) as store, ExitStack() as leaving:
        done = store.done(("ok", "incomplete") if retry_failed else ("ok", "incomplete", "failed", "skipped"))
        todo = [(s, r) for s, r in experiment.runs() if (s.setting_id, r) not in done]
        if max_runs is not None:
            todo = todo[:max_runs]
        if not todo and not more_runs(experiment, store.frame()):
            return store.frame() if not store.frame().empty else load(folder)
        # one backend for the whole sweep, chosen by the link layer: runs never mix kinds of link
        backend = link_layer.backend_for([s.link for s in experiment.settings()], experiment.backend)
        info = machine.collect(extra={"engine": engine_name, "backend": backend,
                                      "engine_info": getattr(engine, "info", lambda: {})()})
        timestamps = machine.tcp_timestamps_enabled(info["sysctls"])
        default_cc = info["sysctls"].get("net.ipv4.tcp_congestion_control")
        # consecutive runs share one link, made ready again (and reshaped) between runs
        kept = leaving.enter_context(KeptLinks(link_layer, backend))    # removed however we leave
        probe = host_round_trip(engine, link_layer, backend, experiment.settings(), kept=kept)
        probed_at = time.monotonic()
        if probe is not None:
            info["host_round_trip"] = probe
        host_rtt = (probe or {}).get("host_rtt_s")
        # settings the model expects to outlast the user's deadline: said before anything runs
        late = too_long([(s, _predictions(engine, s, link_layer, timestamps, default_cc, backend, host_rtt))
                         for s in experiment.settings()], experiment.timeout)
        if late:
            info["expected_to_outlast_timeout"] = [{"setting": s.label(), "expected_s": e} for s, e in late]
            print(f"wirelab: {len(late)} setting(s) are predicted to take longer than the {experiment.timeout:g} s "
                  f"timeout, e.g. {late[0][0].label()} ({late[0][1]:.0f} s): they will fail; raise the timeout "
                  "or leave it unset (deadlines then follow the prediction)", file=sys.stderr)
        session = store.start_session(experiment.to_dict(), info)
        bar = _progress(len(todo), progress, experiment.name)
        opened = False
        probes: dict[tuple, tuple[float, float]] = {}   # probe key → (when, host round trip)
        if host_rtt is not None:     # the sweep's own probe stands for the first UDPR setting's key
            first = next(s for s in experiment.settings() if needs_probe([s]))
            probes[probe_key(first)] = probed_at, host_rtt

        def host_rtt_for(setting: Setting) -> float | None:
            # the machine's load drifts during a sweep (measured: a probe at the start read 0.62 ms,
            # the runs minutes later 0.37 ms, +20 % on UDPR at 0 delay): measure it next to the runs,
            # again once the last probe of this rate, MTU and DATA size is older than PROBE_MAX_AGE_S
            if host_rtt is None or not needs_probe([setting]):
                return host_rtt
            key = probe_key(setting)
            if key not in probes or time.monotonic() - probes[key][0] > PROBE_MAX_AGE_S:
                fresh = host_round_trip(engine, link_layer, backend, [setting], kept=kept) or {}
                probes[key] = time.monotonic(), fresh.get("host_rtt_s", host_rtt)
            return probes[key][1]

        def one(setting: Setting, rep: int) -> None:
            workdir = folder / "runs"
            workdir.mkdir(parents=True, exist_ok=True)
            options = dict(backend=backend, rep=rep, seed=experiment.run_seed(setting, rep),
                           timeout=experiment.timeout, workdir=workdir, timestamps=timestamps,
                           capture_dir=folder / "captures" if experiment.capture else None,
                           link_layer=link_layer, default_cc=default_cc)
            # several flows on one link: one row per stream (flows.py), on a link of their own;
            # else the one row
            if setting["flows"]:
                kept.close()
                rows, raw = _run_flows(engine, setting, **options)
            else:
                rows, raw = run_one(engine, setting, host_rtt_s=host_rtt_for(setting), kept=kept, **options)
            rows = rows if isinstance(rows, list) else [rows]
            raw_file = os.path.relpath(store.run_path(rows[0]["run_id"]), folder)
            for row in rows:
                row.update(experiment=experiment.name, session=session, raw_file=raw_file)
                capture = (raw.get("result") or {}).get("capture_file") or row.get("result_capture_file")
                if capture:
                    row["capture_file"] = os.path.relpath(capture, folder)
                    row.pop("result_capture_file", None)
            store.record(rows, raw)
            if bar is not None:
                bar.set_postfix_str(f"{setting.label()} {rows[-1]['status']}", refresh=False)
                bar.update(1)
            if on_row is not None:
                for row in rows:
                    on_row(row)

        try:
            if hasattr(engine, "open"):
                engine.open()
                opened = True
            for setting, rep in todo:
                one(setting, rep)
            # more repetitions where an interval is still wider than the precision asked for
            made = len(todo)
            while max_runs is None or made < max_runs:
                extra = more_runs(experiment, store.frame())
                if max_runs is not None:
                    extra = extra[:max_runs - made]
                if not extra:
                    break
                probes.clear()                     # a new batch of runs: a new probe next to it
                if bar is not None:
                    bar.total += len(extra)
                for setting, rep in extra:
                    one(setting, rep)
                made += len(extra)
        finally:
            if bar is not None:
                bar.close()
            if opened:
                engine.close()
        frame = store.frame()
    if frame.empty:
        raise ExperimentError(f"nothing was saved in {folder}", "check the folder is writable")
    return frame


def iperf3_run(link, *, timeout: float = 60.0, **experiment) -> dict:
    """One iperf3 test across an open ``link`` (``wirelab.link.open``), described with
    ``Experiment`` keywords (default: TCP for 3 s, 1 s omitted), e.g.
    ``iperf3_run(link, proto="udp", time="2s", offered="5mbit")``; returns ``iperf3.parse``'s columns."""
    experiment = {"workload": "time", "time": 3, "omit": 1, "rate": None, **experiment}
    setting = Experiment("iperf3", engine="iperf3", reps=1, **experiment).settings()[0]
    reason = Iperf3Engine().unsupported(setting)
    if reason:
        raise UsageError(reason, "see wirelab.experiment.iperf3")
    return Iperf3Engine().run(setting, link, deadline=time.monotonic() + timeout)
