"""Several flows at once on ONE link: each measured on its own, one row per stream.

    exp = Experiment("share", workload="time", time="5s", rate="10mbit", reps=3,
                     flows=["tcp + tcp", "tcp streams=4 + udp rate=1mbit"], engine="iperf3")
    df = run(exp)            # one row per stream per run; the rows of a run share its run_id
    fairness(df)             # one row per run: total goodput, Jain's index, against the model
    summarize(df)            # per stream (flow_id, stream): mean ± 95 % CI beside pred_*

A flow is written as its protocol and ``key=value`` words (defaults left out);
flows of one setting are joined by `` + ``, settings by commas or a list:

    tcp                          a→b for the setting's time, with the setting's engine
    tcp streams=4                four parallel streams (iperf3 -P 4; wirelab: four connections)
    udp rate=1mbit packet=1470   offered load per stream (UDP); for TCP a cap (iperf3 -b)
    tcp dir=b>a start=2s time=5s engine=iperf3 cc=cubic window=64KB

Every flow runs in its own thread with its engine (the server on the receiving
host, the client on the sending one), started ``start`` seconds after the
first; ``dir=b>a`` is iperf3's reverse mode (-R: the server on host b sends).
Rows carry ``flow_id`` (f0, f1, …), ``stream``, the flow's own parameters in
the usual columns (``proto``, ``engine``, ``offered_bps``, ...), its measurement,
its prediction alone (``pred_*``, as for a single flow) capped by its max-min
fair share of the link (``pred_limit_share_bps``), and per run ``jain_index``
(on goodputs), ``jain_index_share`` (on goodput ÷ fair share: 1 when every
flow gets what max-min fairness gives it) and ``pred_jain_index``.
"""
from __future__ import annotations

import math
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, replace

import pandas as pd

from .. import link as links
from .. import units
from ..errors import UsageError
from ..model.fairness import jain_index, max_min_shares
from .engine import RESERVED, flatten, get_engine, link_columns
from .deadline import deadline_s
from .prediction import predict_columns

__all__ = ["Flow", "canonical", "flows_of", "flow_setting", "run_flows", "fairness", "FLOW_COLUMNS"]

DIRECTIONS = ("a>b", "b>a")
#: Columns a flows run adds to each row.
FLOW_COLUMNS = ["flows", "flow_id", "stream", "direction", "flow_start_s", "flow_streams",
                "flow_goodput_bps", "flow_began_s", "flow_ended_s", "jain_index", "jain_index_share",
                "pred_jain_index", "total_goodput_bps", "n_streams"]


def _rate(bps: float) -> str:
    for factor, unit in ((1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")):
        if bps >= factor:
            return f"{bps / factor:g}{unit}"
    return f"{bps:g}bit"


def _whole(value) -> int:
    number = units.parse_size(value)
    if number != int(number) or number < 1:
        raise UsageError(f"{value!r} is not a whole number ≥ 1", "e.g. streams=4")
    return int(number)


#: word → (Flow field, parser, writer)
_KEYS = {
    "engine": ("engine", str, str), "dir": ("direction", str, str),
    "start": ("start_s", units.parse_time, lambda v: f"{v:g}s"),
    "time": ("time_s", units.parse_time, lambda v: f"{v:g}s"),
    "rate": ("offered_bps", units.parse_rate, _rate), "packet": ("packet_bytes", _whole, str),
    "streams": ("streams", _whole, str), "cc": ("cc", str, str),
    "window": ("window_bytes", units.parse_size, lambda v: f"{v:g}"),
}


@dataclass(frozen=True)
class Flow:
    """One flow of a setting (see the module docstring for how it is written)."""
    proto: str = "tcp"
    engine: str | None = None          # None: the setting's engine
    direction: str = "a>b"
    start_s: float = 0.0               # seconds after the run's first flow
    time_s: float | None = None        # None: the setting's time
    offered_bps: float | None = None   # per stream
    packet_bytes: int | None = None
    streams: int = 1
    cc: str | None = None
    window_bytes: float | None = None

    def __post_init__(self):
        if self.proto not in ("tcp", "udp"):
            raise UsageError(f"a flow is tcp or udp, not {self.proto!r}", "e.g. 'tcp' or 'udp rate=1mbit'")
        if self.direction not in DIRECTIONS:
            raise UsageError(f"flow direction {self.direction!r}", "use dir=a>b or dir=b>a")
        if self.streams < 1:
            raise UsageError(f"a flow has at least one stream, not {self.streams}", "e.g. streams=2")

    @classmethod
    def parse(cls, text: str) -> "Flow":
        words = str(text).split()
        if not words:
            raise UsageError("an empty flow", "e.g. 'tcp' or 'udp rate=1mbit'")
        values: dict = {"proto": words[0].lower()}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or key not in _KEYS:
                raise UsageError(f"cannot read {word!r} in flow {text!r}",
                                 f"write key=value with a key among {', '.join(_KEYS)}")
            name, parse, _ = _KEYS[key]
            values[name] = parse(value)
        return cls(**values)

    @property
    def text(self) -> str:
        """The canonical way to write this flow (what the results table shows)."""
        words = [self.proto]
        default = Flow(self.proto)
        for key, (name, _, write) in _KEYS.items():
            value = getattr(self, name)
            if value != getattr(default, name):
                words.append(f"{key}={write(value)}")
        return " ".join(words)


def canonical(value) -> str:
    """One setting's flows (text with `` + ``, a Flow, or a list of them) → canonical text."""
    if isinstance(value, Flow):
        items = [value]
    elif isinstance(value, str):
        items = [part for part in value.split("+")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UsageError(f"cannot read flows from {value!r}", "e.g. flows='tcp + udp rate=1mbit'")
    flows = [item if isinstance(item, Flow) else Flow.parse(item) for item in items]
    if not flows:
        raise UsageError("a setting with flows needs at least one", "e.g. flows='tcp + tcp'")
    return " + ".join(f.text for f in flows)


def flows_of(setting) -> list[Flow]:
    """The flows of a setting (its ``flows`` column), parsed."""
    text = setting["flows"]
    return [Flow.parse(part) for part in text.split("+")] if text else []


def flow_setting(setting, flow: Flow, *, streams: int | None = None):
    """The single-flow ``Setting`` an engine runs for ``flow`` on ``setting``'s link."""
    params = dict(setting.params)
    time_s = flow.time_s if flow.time_s is not None else setting.get("time_s", 10.0)
    udp_load = flow.proto == "udp" and flow.offered_bps
    params.update(proto=flow.proto, time_s=time_s, offered_bps=flow.offered_bps,
                  packet_bytes=flow.packet_bytes, cc=flow.cc if flow.cc is not None else params.get("cc"),
                  window_bytes=flow.window_bytes if flow.window_bytes is not None else params.get("window_bytes"),
                  streams=flow.streams if streams is None else streams,
                  reverse=flow.direction == "b>a" or None, size_bytes=None)
    return replace(setting, params=params, workload="load" if udp_load else "time",
                   engine=flow.engine or setting.engine)


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


def _tasks(engine, setting) -> list[_Task]:
    engines = {getattr(engine, "name", None): engine}
    tasks = []
    for i, flow in enumerate(flows_of(setting)):
        name = flow.engine or setting.engine
        if name not in engines:
            engines[name] = get_engine(name)
        each = engines[name]
        if getattr(each, "name", name) == "iperf3":          # iperf3 runs its streams itself
            tasks.append(_Task(f"f{i}", flow, flow_setting(setting, flow), each, 0))
        else:
            tasks += [_Task(f"f{i}", flow, flow_setting(setting, flow, streams=1), each, j)
                      for j in range(flow.streams)]
    return tasks


def _why_not(task: _Task, link, count: int) -> str | None:
    """Why this task cannot run here (recorded as ``skipped``), or None."""
    if task.flow.direction == "b>a" and getattr(task.engine, "name", "") != "iperf3":
        return "the wirelab engine sends a→b only; use engine=iperf3 for b→a (its reverse mode)"
    if count > 1 and not getattr(link, "one_queue", True):
        return ("this link gives every server its own shaper, so flows would not share one "
                "bottleneck: run as root (namespaces or userspace backend)")
    if hasattr(task.engine, "unsupported"):
        reason = task.engine.unsupported(task.setting)
        if reason:
            return reason
    return link.unsupported(task.flow.proto)


def _run_task(task: _Task, link, t0: float, deadline: float, abort: threading.Event, seed: int,
              workdir, capture) -> None:
    if abort.wait(max(0.0, t0 + task.flow.start_s - time.monotonic())):
        task.error = "stopped before it started"
        return
    task.began_s = time.monotonic() - t0
    try:
        extra = {"capture": capture} if capture else {}
        task.record = task.engine.run(task.setting, link, deadline=deadline, seed=seed, workdir=workdir, **extra)
    except Exception as err:      # noqa: BLE001 - one flow failing must not lose the others
        task.error = f"{type(err).__name__}: {err}"
        task.record = {"traceback": traceback.format_exc()}
    task.ended_s = time.monotonic() - t0


def run_flows(engine, setting, *, backend: str = "auto", rep: int = 0, seed: int = 0,
              timeout: float | None = None, workdir=None, timestamps: bool = True, capture_dir=None,
              link_layer=links, default_cc: str | None = None) -> tuple[list, dict]:
    """One run of a setting with flows → (rows, raw record). Never raises for a failed flow
    (except Ctrl-C): each row says its own status and error."""
    run_id = f"{setting.setting_id}-r{rep}-{uuid.uuid4().hex[:6]}"
    timeout = deadline_s(setting, {}, timeout)          # timed flows: their duration + a margin
    wire = link_layer.wire_of(setting.link)
    tasks = _tasks(engine, setting)
    raw: dict = {"run_id": run_id, "setting": setting.columns(), "rep": rep, "flows": {}}
    start, opened, failure = time.monotonic(), None, None
    skipped: dict[int, str] = {}
    try:
        with link_layer.open(setting.link, backend=backend, seed=seed, name="exp") as link:
            opened = link
            skipped = {k: why for k, t in enumerate(tasks) if (why := _why_not(t, link, len(tasks)))}
            _run_all(tasks, skipped, link, start + timeout, seed, workdir, capture_dir, run_id)
    except KeyboardInterrupt:
        raise
    except Exception as err:       # noqa: BLE001 - the link failed: every flow failed with it
        failure = f"{type(err).__name__}: {err}"
        raw["traceback"] = traceback.format_exc()
    base = {"run_id": run_id, "rep": rep, "seed": seed, "wire": wire, "elapsed_s": time.monotonic() - start,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - (time.monotonic() - start)))}
    base.update(link_columns(opened, backend, raw))
    rows = []
    for k, task in enumerate(tasks):
        raw["flows"][f"{task.flow_id}.{task.first_stream}"] = task.record
        rows += _rows(task, setting, base, wire, timestamps, failure or skipped.get(k), bool(failure),
                      default_cc)
    _per_run(rows, setting)
    return rows, raw


def _run_all(tasks, skipped, link, deadline, seed, workdir, capture_dir, run_id) -> None:
    """Start every task in its own thread, on time; wait for all (bounded by ``deadline``)."""
    abort = threading.Event()
    t0 = time.monotonic()
    threads = []
    for k, task in enumerate(tasks):
        if k in skipped:
            continue
        capture = None if capture_dir is None else \
            f"{capture_dir}/{run_id}-{task.flow_id}-{task.first_stream}.pcapng"
        thread = threading.Thread(target=_run_task, name=f"wirelab-flow-{task.flow_id}", daemon=True,
                                  args=(task, link, t0, deadline, abort, seed + k, workdir, capture))
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


def _measured(record: dict | None, error: str | None) -> tuple[str, str | None]:
    """(status, error) of one engine record, by the runner's rule (goodput measured, ok)."""
    if error:
        return "failed", error
    if not record or record.get("ok", True) is False or record.get("goodput_bps") is None:
        why = (record or {}).get("error") or (record or {}).get("receiver_error") or "no goodput measured"
        return "failed", str(why)
    return "ok", None


def _rows(task: _Task, setting, base: dict, wire: str, timestamps: bool, not_run: str | None,
          link_failed: bool, default_cc: str | None = None) -> list[dict]:
    """The rows of one task: one per stream it ran."""
    params = task.setting.columns()
    params.update(setting_id=setting.setting_id, engine=getattr(task.engine, "name", task.setting.engine))
    framing = dict(task.engine.framing(task.setting) or {}) if hasattr(task.engine, "framing") else {}
    head = {**params, **base, "flow_id": task.flow_id, "direction": task.flow.direction,
            "flow_start_s": task.flow.start_s, "flow_streams": task.flow.streams,
            "flow_began_s": task.began_s, "flow_ended_s": task.ended_s}
    head.update(predict_columns(task.setting.params, wire=wire, timestamps=timestamps, default_cc=default_cc,
                                **framing))
    if not_run is not None:
        status = "failed" if link_failed else "skipped"
        count = task.flow.streams if getattr(task.engine, "name", "") == "iperf3" else 1
        return [{**head, "stream": task.first_stream + j, "status": status, "error": not_run}
                for j in range(count)]
    record = dict(task.record or {})
    status, error = _measured(record, task.error)
    streams = record.pop("streams", None) or [{}]
    flat = flatten(record)
    out = []
    for j, stream in enumerate(streams if len(streams) > 1 else [{}]):
        row = dict(head, stream=task.first_stream + j, status=status, error=error)
        for key, value in flat.items():
            row[f"result_{key}" if key in RESERVED or key in row else key] = value
        row["flow_goodput_bps"] = record.get("goodput_bps")
        for key, value in stream.items():       # this stream's own figures replace the flow's sums
            if key != "stream":
                row[key] = value
        if len(streams) > 1 and stream.get("goodput_bps") is None and status == "ok":
            row.update(status="failed", error="iperf3 reported no goodput for this stream")
        out.append(row)
    return out


def _per_run(rows: list[dict], setting) -> None:
    """Fair shares, Jain's index and the total, written into every row of the run."""
    spec = setting.link
    for direction, rate in (("a>b", spec.forward.rate_bps), ("b>a", spec.reverse.rate_bps)):
        mine = [r for r in rows if r["direction"] == direction and r["status"] != "skipped"]
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
    ran = [r for r in rows if r["status"] != "skipped"]
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

