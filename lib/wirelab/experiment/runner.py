"""Run an experiment: every (setting, repetition), each with a deadline, saved as it goes.

    df = run(exp)                       # data/<exp.name>/, engine and backend from exp
    df = run(exp, out="data/x", engine="iperf3", progress=False)

For each run the runner: skips it if the folder already holds it (resume);
asks the engine whether it can run it (``unsupported`` → status ``skipped``);
runs it with a deadline; records any failure with its reason (status
``failed``, ``error`` text) and goes on with the sweep; adds the model's
prediction for exactly those parameters (``pred_*``); appends the row to the
results folder at once (atomic). Ctrl-C stops after saving what is done: run
it again to complete only the missing runs.
"""
from __future__ import annotations

import os
import time
import traceback
import uuid
from pathlib import Path

import pandas as pd

from ..errors import ExperimentError, WirelabError
from . import meta as machine
from .engine import flatten, get_engine
from .prediction import predict_columns
from .spec import Experiment, Setting
from .store import ResultStore, load

__all__ = ["run", "run_one", "default_folder", "RESERVED"]

#: Columns the runner owns; an engine's field of the same name is kept as ``result_<name>``.
RESERVED = {"experiment", "run_id", "setting_id", "rep", "status", "error", "engine", "backend",
            "workload", "session", "started_at", "elapsed_s", "seed", "wire", "tc_commands",
            "capture_file", "raw_file"}


def default_folder(experiment: Experiment, root: str | Path = "data") -> Path:
    return Path(root) / experiment.name


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm     # a widget in Jupyter, a text bar on a terminal
    return tqdm(total=total, desc=desc, unit="run", leave=True)


def run_one(engine, setting: Setting, *, rep: int = 0, seed: int = 0, timeout: float = 60.0,
            workdir: str | Path | None = None, timestamps: bool = True,
            capture_dir: str | Path | None = None) -> tuple[dict, dict]:
    """One run → (row, raw record). Never raises for a failed run (except Ctrl-C).
    ``capture_dir``: ask the engine for a pcapng of the run there (``<run_id>.pcapng``)."""
    run_id = f"{setting.setting_id}-r{rep}-{uuid.uuid4().hex[:6]}"
    row = {"run_id": run_id, "rep": rep, "seed": seed, **setting.columns(),
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    described = {}
    if hasattr(engine, "describe"):
        try:
            described = dict(engine.describe(setting) or {})
        except WirelabError as err:
            described = {"describe_error": str(err)}
    backend = described.pop("backend", None)
    if backend:
        row["backend"] = backend
    commands = described.pop("tc_commands", None)
    row["tc_commands"] = "\n".join(commands) if isinstance(commands, (list, tuple)) else commands
    row["wire"] = described.pop("wire", "emulated")
    framing = described.pop("predict_as", None) or {}
    row.update({f"link_{k}": v for k, v in flatten(described).items()})
    row.update(predict_columns(setting.params, wire=row["wire"], timestamps=timestamps, **framing))
    raw: dict = {"run_id": run_id, "setting": setting.columns(), "rep": rep}

    reason = engine.unsupported(setting) if hasattr(engine, "unsupported") else None
    start = time.monotonic()
    if reason:
        row.update(status="skipped", error=reason)
    else:
        try:
            extra = {"capture": Path(capture_dir) / f"{run_id}.pcapng"} if capture_dir else {}
            record = engine.run(setting, deadline=start + timeout, seed=seed, workdir=workdir, **extra)
            raw["result"] = record
            link = dict(record.get("link") or {})
            if link.get("backend"):
                row["backend"] = link.pop("backend")
            if "tc_commands" in link:
                row["tc_commands"] = "\n".join(link.pop("tc_commands"))
            row.update({f"link_{k}": v for k, v in flatten(link).items()})
            measured = flatten({k: v for k, v in record.items() if k != "link"})
            for key, value in measured.items():
                row[f"result_{key}" if key in RESERVED or key in row else key] = value
            ok = record.get("ok", True)
            if ok is False or record.get("goodput_bps") is None:
                why = record.get("error") or record.get("receiver_error") or "no goodput measured"
                row.update(status="failed", error=str(why))
            else:
                row.update(status="ok", error=None)
            if time.monotonic() - start > timeout * 1.05 and row["status"] == "ok":
                row.update(status="failed", error=f"overran its {timeout:g} s deadline")
        except KeyboardInterrupt:
            raise
        except Exception as err:       # noqa: BLE001 - a failing run must not stop the sweep
            row.update(status="failed", error=f"{type(err).__name__}: {err}")
            raw["traceback"] = traceback.format_exc()
    row["elapsed_s"] = time.monotonic() - start
    return row, raw


def run(experiment: Experiment, *, out: str | Path | None = None, engine=None,
        engine_options: dict | None = None, progress: bool = True, retry_failed: bool = False,
        max_runs: int | None = None, on_row=None) -> pd.DataFrame:
    """Run (or resume) ``experiment``; returns the whole results table, reloaded from disk.

    ``engine``: a name or an engine object (default ``experiment.engine``).
    ``retry_failed``: run again the settings whose earlier runs failed or were skipped.
    ``max_runs``: stop after this many new runs (to try a sweep, or to test resume).
    ``on_row(row)``: called after each saved run (the control panel uses it).
    """
    folder = Path(out) if out is not None else default_folder(experiment)
    engine = get_engine(engine if engine is not None else experiment.engine, **(engine_options or {}))
    engine_name = getattr(engine, "name", type(engine).__name__)
    if engine_name != experiment.engine:
        experiment = Experiment(**{**experiment.to_dict(), "engine": engine_name})

    with ResultStore(folder) as store:
        done = store.done(("ok",) if retry_failed else ("ok", "failed", "skipped"))
        todo = [(s, r) for s, r in experiment.runs() if (s.setting_id, r) not in done]
        if max_runs is not None:
            todo = todo[:max_runs]
        if not todo:
            return store.frame() if not store.frame().empty else load(folder)
        info = machine.collect(extra={"engine": engine_name,
                                      "engine_info": getattr(engine, "info", lambda: {})()})
        session = store.start_session(experiment.to_dict(), info)
        timestamps = machine.tcp_timestamps_enabled(info["sysctls"])
        bar = _progress(len(todo), progress, experiment.name)
        opened = False
        try:
            if hasattr(engine, "prepare"):
                engine.prepare(experiment.settings(), experiment.backend)
            if hasattr(engine, "open"):
                engine.open()
                opened = True
            for setting, rep in todo:
                workdir = folder / "runs"
                workdir.mkdir(parents=True, exist_ok=True)
                row, raw = run_one(engine, setting, rep=rep, seed=experiment.run_seed(setting, rep),
                                   timeout=experiment.timeout, workdir=workdir, timestamps=timestamps,
                                   capture_dir=folder / "captures" if experiment.capture else None)
                row.update(experiment=experiment.name, session=session)
                row["raw_file"] = os.path.relpath(store.write_run(row["run_id"], raw), folder)
                capture = (raw.get("result") or {}).get("capture_file")
                if capture:
                    row["capture_file"] = os.path.relpath(capture, folder)
                    row.pop("result_capture_file", None)
                store.append([row])
                if bar is not None:
                    bar.set_postfix_str(f"{setting.label()} {row['status']}", refresh=False)
                    bar.update(1)
                if on_row is not None:
                    on_row(row)
        finally:
            if bar is not None:
                bar.close()
            if opened:
                engine.close()
        frame = store.frame()
    if frame.empty:
        raise ExperimentError(f"nothing was saved in {folder}", "check the folder is writable")
    return frame
