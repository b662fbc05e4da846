"""Several flows at once on ONE link: each measured on its own, one row per stream.

    exp = Experiment("share", workload="time", time="5s", rate="10mbit", reps=3,
                     flows=["tcp + tcp", "tcp streams=4 + udp rate=1mbit"], engine="iperf3")
    df = run(exp)            # one row per stream per run; the rows of a run share its run_id
    fairness(df)             # one row per run: total goodput, Jain's index, against the model
    summarize(df)            # per stream (flow_id, stream): mean ± 95 % CI beside pred_*

How flows are written: ``flowspec``. A setting with flows is run by ``Flows``, an
engine of the one runner made of the sweep's engine (the plan chooses it): the
runner opens the link (a fresh one for each run), and ``Flows`` runs every flow in
its own thread with its engine (the server on the receiving host, the client on the
sending one), started ``start`` seconds after the first; ``dir=b>a`` is iperf3's
reverse mode (-R: the server on host b sends). Rows carry ``flow_id`` (f0, f1, …),
``stream``, the flow's own parameters in the usual columns (``proto``, ``engine``,
``offered_bps``, ...), its measurement with its status by the runner's one rule
(``status.decide``), its prediction alone (``pred_*``, the plan's, as for a single
flow) capped by its max-min fair share of the link (``pred_limit_share_bps``), and
per run ``jain_index`` (on goodputs), ``jain_index_share`` (on goodput ÷ fair share:
1 when every flow gets what max-min fairness gives it) and ``pred_jain_index``.
"""
from __future__ import annotations

import math
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import UsageError
from ..link.contract import link_capabilities
from ..model.fairness import jain_index, max_min_shares
from .engine import capabilities
from .engines import get_engine
from .flowspec import Flow, canonical, flow_setting, flows_of
from .status import decide, fold

__all__ = ["Flows", "Flow", "canonical", "flows_of", "flow_setting", "fairness", "FLOW_COLUMNS"]

#: Columns a flows run adds to each row.
FLOW_COLUMNS = ["flows", "flow_id", "stream", "direction", "flow_start_s", "flow_streams",
                "flow_goodput_bps", "flow_began_s", "flow_ended_s", "jain_index", "jain_index_share",
                "pred_jain_index", "total_goodput_bps", "n_streams"]


@dataclass
class _Task:
    """One engine run: a whole flow (iperf3 -P), or one stream of it (wirelab)."""
    flow_id: str
    flow: Flow
    setting: object
    engine: object
    first_stream: int
    record: dict | None = None
    error: str | None = None
    began_s: float | None = None
    ended_s: float | None = None


class Flows:
    """The flows of a setting side by side on the link the runner opened, each with its engine
    (the flow's ``engine=``, else the sweep's). ``predict(setting, engine=...)``: the plan's
    predictions, asked for each flow alone."""
    name = "flows"
    keeps_links = False          # every run of flows starts on a link built for it
    emits_events = True          # each flow's engine reports to the run's stream, tagged with the flow

    def __init__(self, engine, *, predict):
        self._engines = {capabilities(engine).name: engine}
        self._predict = predict

    def predict(self, setting) -> dict:
        return {}                # each flow is predicted alone (``rows``); a run's deadline follows its time

    def cannot_carry(self, setting, link) -> str | None:
        return None              # asked flow by flow (``_why_not``), so the others still run

    def _tasks(self, setting) -> list[_Task]:
        tasks = []
        for i, flow in enumerate(flows_of(setting)):
            name = flow.engine or ("wirelab" if flow.proto == "ping" else setting.engine)   # echo rounds
            if name not in self._engines:
                self._engines[name] = get_engine(name)
            each = self._engines[name]
            if capabilities(each).name == "iperf3":          # iperf3 runs its streams itself
                tasks.append(_Task(f"f{i}", flow, flow_setting(setting, flow), each, 0))
            else:
                tasks += [_Task(f"f{i}", flow, flow_setting(setting, flow, streams=1), each, j)
                          for j in range(flow.streams)]
        return tasks

    def run(self, setting, link, *, deadline: float, seed: int = 0, workdir=None, capture=None,
            events=None) -> dict:
        """Every flow at once; the record keeps each task's own (``flows``), and for ``rows`` the
        tasks themselves (``_tasks``, taken out before it is saved). ``events``: the run's stream,
        each flow's records tagged ``flow`` and ``stream``."""
        tasks = self._tasks(setting)
        skipped = {k: why for k, t in enumerate(tasks) if (why := _why_not(t, link, len(tasks)))}
        _run_all(tasks, skipped, link, deadline, seed, workdir, capture, events)
        return {"flows": {f"{t.flow_id}.{t.first_stream}": t.record for t in tasks},
                "_tasks": tasks, "_skipped": skipped}

    def rows(self, setting, record: dict | None, row: dict) -> list[dict]:
        """One row per stream; ``row`` is the run's (its link, times, deadline; its status when
        the run failed before the flows ran, e.g. the link could not be built)."""
        tasks = record.pop("_tasks") if record else self._tasks(setting)
        skipped = record.pop("_skipped") if record else {}
        # the run's own columns; its backend is the one that carried it, not the one asked for
        run_level = {k: v for k, v in row.items() if k not in setting.columns() or k == "backend"}
        rows = []
        for k, task in enumerate(tasks):
            not_run = skipped.get(k) if record else row.get("error") or "not run"
            status = "skipped" if record else row.get("status")
            rows += self._task_rows(task, setting, run_level, not_run, status)
        _per_run(rows, setting)
        return rows

    def _task_rows(self, task: _Task, setting, run_level: dict, not_run: str | None, status: str) -> list[dict]:
        """The rows of one task: one per stream it ran."""
        params = task.setting.columns()
        params.update(setting_id=setting.setting_id, engine=capabilities(task.engine).name)
        head = {**params, **run_level, "flow_id": task.flow_id, "direction": task.flow.direction,
                "flow_start_s": task.flow.start_s, "flow_streams": task.flow.streams,
                "flow_began_s": task.began_s, "flow_ended_s": task.ended_s}
        head.update(self._predict(task.setting, engine=task.engine))
        if not_run is not None:
            count = task.flow.streams if capabilities(task.engine).name == "iperf3" else 1
            return [{**head, "stream": task.first_stream + j, "status": status, "error": not_run}
                    for j in range(count)]
        record = dict(task.record or {})
        measure = "goodput_bps"
        if task.flow.proto == "ping":         # a probe measures round trips, not goodput
            measure = "rtt_median_s"
            record.setdefault(measure, (record.get("rtt") or {}).get("median_s"))
        status, error = decide(record, error=task.error, elapsed_s=run_level.get("elapsed_s"),
                               deadline_s=run_level.get("deadline_s"), measure=measure)
        streams = record.pop("streams", None) or [{}]
        out = []
        for j, stream in enumerate(streams if len(streams) > 1 else [{}]):
            row = fold(dict(head, stream=task.first_stream + j, status=status, error=error), record)
            row["flow_goodput_bps"] = record.get("goodput_bps")
            for key, value in stream.items():       # this stream's own figures replace the flow's sums
                if key != "stream":
                    row[key] = value
            if len(streams) > 1 and stream.get("goodput_bps") is None and status == "ok":
                row.update(status="failed", error="iperf3 reported no goodput for this stream")
            out.append(row)
        return out


def _why_not(task: _Task, link, count: int) -> str | None:
    """Why this task cannot run here (recorded as ``skipped``), or None."""
    if task.flow.direction == "b>a" and capabilities(task.engine).name != "iperf3":
        return "the wirelab engine sends a→b only; use engine=iperf3 for b→a (its reverse mode)"
    if count > 1 and not link_capabilities(link).one_queue:
        return ("this link gives every server its own shaper, so flows would not share one "
                "bottleneck: run as root (namespaces or userspace backend)")
    reason = capabilities(task.engine).unsupported(task.setting)
    if reason:
        return reason
    return link.unsupported(task.flow.proto)


def _run_task(task: _Task, link, t0: float, deadline: float, abort: threading.Event, seed: int,
              workdir, capture, events=None) -> None:
    if abort.wait(max(0.0, t0 + task.flow.start_s - time.monotonic())):
        task.error = "stopped before it started"
        return
    task.began_s = time.monotonic() - t0
    try:
        extra = {"capture": capture} if capture else {}
        if events is not None and capabilities(task.engine).emits_events:
            extra.update(events=events, event_tags={"flow": task.flow_id, "stream": task.first_stream})
            events.emit({"event": "flow", "flow": task.flow_id, "stream": task.first_stream,
                         "proto": task.flow.proto, "text": task.flow.text})
        task.record = task.engine.run(task.setting, link, deadline=deadline, seed=seed, workdir=workdir, **extra)
    except Exception as err:      # noqa: BLE001 - one flow failing must not lose the others
        task.error = f"{type(err).__name__}: {err}"
        task.record = {"traceback": traceback.format_exc()}
    task.ended_s = time.monotonic() - t0


def _run_all(tasks, skipped, link, deadline, seed, workdir, capture, events=None) -> None:
    """Start every task in its own thread, on time; wait for all (bounded by ``deadline``).
    ``capture``: the run's pcapng path; each task captures to its own beside it."""
    abort = threading.Event()
    t0 = time.monotonic()
    threads = []
    for k, task in enumerate(tasks):
        if k in skipped:
            continue
        mine = None if capture is None else \
            Path(capture).with_name(f"{Path(capture).stem}-{task.flow_id}-{task.first_stream}.pcapng")
        thread = threading.Thread(target=_run_task, name=f"wirelab-flow-{task.flow_id}", daemon=True,
                                  args=(task, link, t0, deadline, abort, seed + k, workdir, mine, events))
        thread.start()
        threads.append((task, thread))
    try:
        for task, thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()) + 5.0)
            if thread.is_alive():
                task.error = task.error or "did not finish before the run's deadline"
    except KeyboardInterrupt:
        abort.set()
        raise


def _per_run(rows: list[dict], setting) -> None:
    """Fair shares, Jain's index and the total, written into every row of the run."""
    spec = setting.link
    for direction, rate in (("a>b", spec.forward.rate_bps), ("b>a", spec.reverse.rate_bps)):
        mine = [r for r in rows if r["direction"] == direction and r["status"] != "skipped"
                and r.get("workload") != "echo"]          # a probe takes no share worth counting
        efficiency = [r.get("pred_efficiency") for r in mine]
        if not mine or not rate or any(e is None or not e == e for e in efficiency):
            continue
        # max-min in bytes on the wire: a flow's demand costs offered / η of the link
        demands = [None if not r.get("offered_bps") else r["offered_bps"] / e for r, e in zip(mine, efficiency)]
        for row, share, e in zip(mine, max_min_shares(rate, demands), efficiency):
            row["pred_limit_share_bps"] = share * e
            alone = row.get("pred_goodput_bps")
            if alone is None or not alone == alone or share * e < alone:
                row.update(pred_goodput_bps=share * e, pred_binding="share")
            if row.get("offered_bps") and row["proto"] == "udp":
                row["pred_loss"] = max(0.0, 1.0 - share * e / row["offered_bps"])
    ran = [r for r in rows if r["status"] != "skipped" and r.get("workload") != "echo"]
    ok = all(r["status"] == "ok" for r in ran) and ran
    goodputs = [r["goodput_bps"] for r in ran] if ok else []
    shares = [r.get("pred_limit_share_bps") for r in ran]
    fair = all(s is not None and s > 0 for s in shares) and ran
    for row in rows:
        row["n_streams"] = len(ran)
        row["total_goodput_bps"] = sum(goodputs) if ok else math.nan
        row["jain_index"] = jain_index(goodputs) if ok else math.nan
        row["jain_index_share"] = jain_index([g / s for g, s in zip(goodputs, shares)]) if ok and fair else math.nan
        row["pred_jain_index"] = jain_index(shares) if fair else math.nan
        row["pred_total_bps"] = sum(shares) if fair else math.nan


def fairness(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run of a flows table: the setting's link and flows, ``n_streams``,
    ``total_goodput_bps``, ``jain_index``, ``jain_index_share``, the smallest and largest
    stream, their predictions, and ``status`` (ok when every stream that ran was measured).
    ``summarize(fairness(df), metrics=["total_goodput_bps", "jain_index"])`` gives the CI.
    The total sums each stream's own average: flows started by separate processes begin a
    few hundred ms apart, so in short runs it can exceed the link (see ``flow_began_s``)."""
    if frame.empty or "flow_id" not in frame:
        raise UsageError("this table has no flows", "run an Experiment with flows=[...]")
    keep = ["setting_id", "rep", "backend", "flows", "rate_bps", "delay_s", "jitter_s", "loss",
            "loss_reverse", "mtu", "queue_packets"]
    out = []
    for run_id, rows in frame.groupby("run_id", sort=False):
        first = rows.iloc[0]
        ran = rows[rows["status"] != "skipped"]
        row = {"run_id": run_id, **{c: first[c] for c in keep if c in rows}}
        row["engine"] = "+".join(sorted(set(rows["engine"].astype(str))))
        row["time_s"] = rows["time_s"].max() if "time_s" in rows else math.nan
        row["status"] = "ok" if len(ran) and (ran["status"] == "ok").all() else \
            ("skipped" if ran.empty else "failed")
        errors = rows["error"].dropna() if "error" in rows else []
        row["error"] = errors.iloc[0] if len(errors) else None
        for column in ("n_streams", "total_goodput_bps", "jain_index", "jain_index_share",
                       "pred_jain_index", "pred_total_bps"):
            row[column] = first.get(column, math.nan)
        good = pd.to_numeric(ran["goodput_bps"], errors="coerce") if "goodput_bps" in ran else pd.Series(dtype=float)
        row["min_stream_bps"], row["max_stream_bps"] = good.min(), good.max()
        out.append(row)
    return pd.DataFrame(out)

