"""Run an experiment: every (setting, repetition), each with a deadline, saved as it goes.

    df = run(exp)                       # data/<exp.name>/, engine and backend from exp
    df = run(exp, out="data/x", engine="iperf3", progress=False)

What the sweep decides once (settings, backend, machine, predictions and
deadlines) is its ``Plan``; every engine then runs on this one road. For each run
the runner: skips it if the folder already holds it (resume); asks the engine
whether it can run it (``unsupported`` → status ``skipped``); opens its link
(``wirelab.link.open`` with the plan's backend; the engine's topology where it has
one) and runs it with the plan's deadline; decides its status by the one rule
(``status.decide``: ok, incomplete, failed), a failure recorded with its reason
while the sweep goes on; adds the plan's prediction (``pred_*``); makes the row,
or the engine's rows (one per stream of several flows, one per message of the
five-node network); saves them in the results folder the moment the run ends (the
tables follow, ``store``), with one progress bar for the sweep. Ctrl-C stops after
saving what is done: run it again to complete only the missing runs. Consecutive
runs share one link where the backend can make it ready again, reshaped in place
when the rate, delay or loss changes (``reuse``), unless the engine wants a link
of its own for each run.

Every run writes its event stream as it goes (``events``: ``runs/<run_id>.events.jsonl``):
its start with the prediction, what both ends report every interval, the link's queue,
its end; ``on_event`` sees each event the moment it happens (a live plot). Ctrl-C
during a run stops it cleanly: its stream, with what was measured so far, ends with
status ``interrupted`` and stays (``runs/``); the run has no row, so a resumed sweep
runs it again.

Before the runs, where UDPR is swept, the host's own round trip is measured
(``calibration``: a set of probes, their median and range) for the stop-and-wait model,
once for the sweep's deadlines and again just before a UDPR setting's runs once the last
set for its sizes and rate is 30 s old (the machine's load drifts during a sweep); after them, with
``Experiment(precision=...)``, settings whose interval is still too wide get
more repetitions (``adaptive``).
"""
from __future__ import annotations

import os
import sys
import time
import traceback
import uuid
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import link as links
from ..errors import ExperimentError
from ..link.queues import queue_reader
from .adaptive import more_runs
from .calibration import HostRoundTrips
from .engine import Capabilities, capabilities, link_columns
from .engines import get_engine
from .events import EVENTS_SUFFIX, EventStream, events_path, read_events
from .plan import Plan
from .rfc6349 import run_metrics
from .reuse import KeptLinks
from .spec import Experiment, Setting
from .progress import progress_bar
from .status import LOST, RESERVED, decide, failure, fold
from .store import ResultStore, load

__all__ = ["run", "run_one", "new_row", "default_folder", "RESERVED"]


def default_folder(experiment: Experiment, root: str | Path = "data") -> Path:
    return Path(root) / experiment.name


def _progress(total: int, enabled: bool, desc: str):
    return progress_bar(total, desc=desc) if enabled else None


def run_one(plan: Plan, setting: Setting, *, rep: int = 0, seed: int = 0, workdir: str | Path | None = None,
            capture_dir: str | Path | None = None, host_rtt_s: float | tuple | None = None,
            kept: KeptLinks | None = None, on_event=None) -> tuple[list[dict], dict]:
    """One run of ``setting`` → (its rows, its raw record). Never raises for a failed run
    (except Ctrl-C: its event stream then ends ``interrupted``).

    Opens what the setting's engine runs across (``plan.link_for``) on the plan's backend: through
    ``kept``, a sweep's ``KeptLinks``, the link of the previous run of the same spec made ready
    again (``link_runs_before``: runs it carried before this one), else a fresh link removed
    afterwards. Fills the row from the plan's predictions and deadline, the engine's record (its
    status by ``status.decide``) and the link's ``describe()``; an engine with ``rows`` makes
    several rows of it. ``capture_dir``: a pcapng of the run there (``<run_id>.pcapng``).
    ``host_rtt_s``: the host's own round trip (``calibration``: seconds, or a probe set's (median,
    lowest, highest)), for the stop-and-wait model.
    The run's event stream (``events``) is written to ``workdir`` and shown to ``on_event``.
    """
    engine = plan.engine_for(setting)
    row = new_row(plan, setting, rep=rep, seed=seed, host_rtt_s=host_rtt_s)
    run_id, timeout = row["run_id"], row["deadline_s"]
    raw: dict = {"run_id": run_id, "setting": setting.columns(), "rep": rep}
    events = EventStream(Path(workdir) / f"{run_id}{EVENTS_SUFFIX}" if workdir is not None else None, run_id,
                         listeners=[on_event] if on_event is not None else ())
    events.emit({"event": "start", "run_id": run_id, "label": setting.label(), "setting": setting.columns(),
                 "link": setting.link.to_dict() if setting.link is not None else None, "deadline_s": timeout,
                 "predicted": {k: v for k, v in row.items() if k.startswith("pred_")}})
    try:
        rows = _run(plan, engine, setting, row, raw, events, seed=seed, workdir=workdir,
                    capture_dir=capture_dir, kept=kept)
    except KeyboardInterrupt:
        events.close(status="interrupted", error="stopped by Ctrl-C")
        raise
    events.close(status=rows[-1].get("status"), error=rows[-1].get("error"))
    for each in rows:                   # RFC 6349's metrics of each TCP transfer, from its stream
        if each.get("status") == "ok":
            each.update(run_metrics(each, events.events, flow=each.get("flow_id"), stream=each.get("stream")))
    return rows, raw


def _run(plan: Plan, engine, setting: Setting, row: dict, raw: dict, events: EventStream, *, seed: int,
         workdir, capture_dir, kept: KeptLinks | None) -> list[dict]:
    """``run_one``'s body: the run's rows, its stream fed while it goes."""
    link_layer, timeout, run_id = plan.link_layer, row["deadline_s"], row["run_id"]
    can = capabilities(engine)
    reason = can.unsupported(setting)
    start = time.monotonic()
    if reason:
        row.update(status="skipped", error=reason, backend=plan.backend, elapsed_s=0.0)
        return _rows(can, setting, None, row)
    keeps = can.keeps_links
    if kept is None or not keeps:
        if kept is not None:
            kept.close()          # the sweep's link goes first: one testbed of this sweep at a time
        kept = KeptLinks(link_layer, plan.backend, keep=False)
    opened = runs_before = record = ran_s = None
    try:
        with kept.lease(plan.link_for(setting), seed=seed) as link:
            opened, runs_before = link, kept.runs_on_link
            reason = can.cannot_carry(setting, link)
            if reason:
                row.update(status="skipped", error=reason)
            else:
                extra = {"capture": Path(capture_dir) / f"{run_id}.pcapng"} if capture_dir else {}
                if can.emits_events:
                    extra["events"] = events
                read_queue = queue_reader(link)
                if read_queue is not None:
                    events.sample("link", read_queue)
                try:
                    record = raw["result"] = can.run(setting, link, deadline=start + timeout, seed=seed,
                                                        workdir=workdir, **extra)
                finally:
                    events.stop_sampling()        # before the link goes: the queue is read no more
                ran_s = time.monotonic() - start
    except KeyboardInterrupt:
        raise
    except Exception as err:       # noqa: BLE001 - a failing run must not stop the sweep
        row.update(status="failed", error=failure(err))
        raw["traceback"] = traceback.format_exc()
    if record is not None and can.rows is None:      # an engine's rows decide their own
        fold(row, record)
        status, error = decide(record, elapsed_s=ran_s, deadline_s=timeout, measure=can.measure)
        row.update(status=status, error=error)
    row.update(link_columns(opened, plan.backend, raw))
    if opened is not None and keeps:
        row["link_runs_before"] = runs_before
    row["elapsed_s"] = time.monotonic() - start
    return _rows(can, setting, record, row)


def new_row(plan: Plan, setting: Setting, *, rep: int, seed: int, host_rtt_s: float | tuple | None = None) -> dict:
    """A run's row before it runs: its id, the setting's columns, the plan's predictions and deadline."""
    row = {"run_id": f"{setting.setting_id}-r{rep}-{uuid.uuid4().hex[:6]}", "rep": rep, "seed": seed,
           **setting.columns(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    row["wire"] = plan.link_layer.wire_of(setting.link)
    row.update(plan.predictions(setting, host_rtt_s=host_rtt_s))
    row["deadline_s"] = plan.deadline(setting, host_rtt_s=host_rtt_s)
    return row


def _rows(can: Capabilities, setting: Setting, record: dict | None, row: dict) -> list[dict]:
    """The run's rows: the one row, or the engine's (one per stream, one per message)."""
    return can.rows(setting, record, row) if can.rows is not None else [row]


def run(experiment: Experiment, *, out: str | Path | None = None, engine=None,
        engine_options: dict | None = None, progress: bool = True, retry_failed: bool = False,
        max_runs: int | None = None, on_row=None, on_event=None, link_layer=links) -> pd.DataFrame:
    """Run (or resume) ``experiment``; returns the whole results table, reloaded from disk.

    ``engine``: a name or an engine object (default ``experiment.engine``).
    ``retry_failed``: run again the settings whose earlier runs failed or were skipped.
    ``max_runs``: stop after this many new runs (to try a sweep, or to test resume).
    ``on_row(row)``: called after each saved run (the control panel uses it).
    ``on_event(event)``: called with every event of every run as it happens (``events``: a
    live plot); quick, from the thread that emits it.
    ``link_layer``: what chooses the backend and opens links (``wirelab.link``; tests give a fake).
    An experiment with ``hosts`` runs across machines: its runs go to the hosts' Dask workers,
    pairs side by side (``cluster``), and come back to this folder as any other run.
    """
    folder = Path(out) if out is not None else default_folder(experiment)
    engine = get_engine(engine if engine is not None else experiment.engine, **(engine_options or {}))
    can = capabilities(engine)
    engine_name = can.name
    if engine_name != experiment.engine:
        experiment = Experiment(**{**experiment.to_dict(), "engine": engine_name})

    with ResultStore(folder) as store, ExitStack() as leaving:
        done = store.done(("ok", "incomplete") if retry_failed else ("ok", "incomplete", "failed", "skipped"),
                          again=(LOST,))
        settings = experiment.settings()          # once: the runs, the plan and more repetitions read them
        todo = [(s, r) for s, r in experiment.runs(settings) if (s.setting_id, r) not in done]
        if max_runs is not None:
            todo = todo[:max_runs]
        if not todo and not more_runs(experiment, store.frame(), settings):
            return store.frame() if not store.frame().empty else load(folder)
        cluster = None
        if experiment.hosts:                # across machines: the runs go to the hosts' Dask workers
            from .cluster import Cluster        # optional: distributed (the [cluster] extra)
            cluster = leaving.enter_context(Cluster(experiment))
            link_layer = cluster.layer
        plan = Plan(experiment, engine, settings=settings, link_layer=link_layer)
        # consecutive runs share one link, made ready again (and reshaped) between runs
        kept = leaving.enter_context(KeptLinks(link_layer, plan.backend))    # removed however we leave
        # (across hosts each pair's own round trip stands in for the probe: cluster.py)
        probes = HostRoundTrips(engine if cluster is None else None, link_layer, plan.backend, plan.settings, kept=kept)
        session = store.start_session(experiment.to_dict(), _session_info(experiment, plan, probes))
        sweep = _Sweep(experiment, plan, folder, store, session, _progress(len(todo), progress, experiment.name),
                       cluster, probes, kept, on_row=on_row, on_event=on_event)
        _run_and_repeat(sweep, can, todo, settings=settings, max_runs=max_runs)
        frame = store.frame()
    if frame.empty:
        raise ExperimentError(f"nothing was saved in {folder}", "check the folder is writable")
    return frame


def _session_info(experiment: Experiment, plan: Plan, probes: HostRoundTrips) -> dict:
    """What the session records before the runs: the plan's info, the host's round trip, and the
    settings the model expects to outlast the user's deadline (said on stderr before anything runs)."""
    info = dict(plan.info)
    if probes.first is not None:
        info["host_round_trip"] = probes.first
    late = plan.late(host_rtt_s=probes.host_rtt_s)
    if late:
        info["expected_to_outlast_timeout"] = [{"setting": s.label(), "expected_s": e} for s, e in late]
        print(f"wirelab: {len(late)} setting(s) are predicted to take longer than the {experiment.timeout:g} s "
              f"timeout, e.g. {late[0][0].label()} ({late[0][1]:.0f} s): they will fail; raise the timeout "
              "or leave it unset (deadlines then follow the prediction)", file=sys.stderr)
    return info


def _run_and_repeat(sweep: _Sweep, can: Capabilities, todo: list, *, settings: list,
                    max_runs: int | None) -> None:
    """The runs to do, then more repetitions where an interval is still wider than the precision
    asked for (``max_runs`` bounds both); the engine open throughout, the bar closed however we leave."""
    opened = False
    try:
        can.open()
        opened = True
        sweep.run_and_save(todo)
        made = len(todo)
        while max_runs is None or made < max_runs:
            extra = more_runs(sweep.experiment, sweep.store.frame(), settings)
            if max_runs is not None:
                extra = extra[:max_runs - made]
            if not extra:
                break
            sweep.probes.forget()                    # a new batch of runs: a new probe next to it
            if sweep.bar is not None:
                sweep.bar.total += len(extra)
            sweep.run_and_save(extra)
            made += len(extra)
    finally:
        if sweep.bar is not None:
            sweep.bar.close()
        if opened:
            can.close()


@dataclass
class _Sweep:
    """One sweep's road for its runs: where each runs (here or on the hosts' workers) and how its
    rows are saved the moment it ends."""
    experiment: Experiment
    plan: Plan
    folder: Path
    store: ResultStore
    session: int
    bar: object
    cluster: object
    probes: HostRoundTrips
    kept: KeptLinks
    on_row: object = None
    on_event: object = None

    @property
    def workdir(self) -> Path:
        return self.folder / "runs"

    def run_and_save(self, batch) -> None:
        """Run ``batch`` of (setting, rep), saving each run's rows as it ends."""
        with closing(self.runs_of(batch)) as ended:
            for setting, _, rows, raw in ended:
                self.save(setting, rows, raw)

    def runs_of(self, batch):
        """(setting, rep, rows, raw) of each run of ``batch`` as it ends."""
        if self.cluster is not None:          # each run's event stream comes back with it (no live events)
            for ended in self.cluster.runs(self.plan, batch, folder=self.folder, run_one=run_one, new_row=new_row):
                if self.on_event is not None:
                    for event in read_events(events_path(self.folder, ended[2][0]["run_id"])):
                        self.on_event(event)
                yield ended
            return
        for setting, rep in batch:
            self.workdir.mkdir(parents=True, exist_ok=True)
            yield setting, rep, *run_one(
                self.plan, setting, rep=rep, seed=self.experiment.run_seed(setting, rep), workdir=self.workdir,
                capture_dir=self.folder / "captures" if self.experiment.capture else None,
                host_rtt_s=self.probes.for_setting(setting), kept=self.kept, on_event=self.on_event)

    def save(self, setting: Setting, rows: list[dict], raw: dict) -> None:
        """Store one run's rows (paths relative to the folder), advance the bar, tell ``on_row``."""
        folder = self.folder
        raw_file = os.path.relpath(self.store.run_path(rows[0]["run_id"]), folder)
        events_file = self.workdir / f"{rows[0]['run_id']}{EVENTS_SUFFIX}"
        for row in rows:
            row.update(experiment=self.experiment.name, session=self.session, raw_file=raw_file)
            if events_file.is_file():
                row["events_file"] = os.path.relpath(events_file, folder)
            capture = (raw.get("result") or {}).get("capture_file") or row.get("result_capture_file")
            if capture:
                row["capture_file"] = os.path.relpath(capture, folder)
                row.pop("result_capture_file", None)
        self.store.record(rows, raw)
        if self.bar is not None:
            self.bar.set_postfix_str(f"{setting.label()} {rows[-1]['status']}", refresh=False)
            self.bar.update(1)
        if self.on_row is not None:
            for row in rows:
                self.on_row(row)
