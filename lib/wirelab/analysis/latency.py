"""Latency under load: a probe's round trips beside bulk flows, against a full queue's delay.

    exp = Experiment("bloat", workload="time", time="5s", rate="10mbit", queue=[20, 50, 100],
                     flows="tcp streams=4 cc=cubic start=1s time=4s + ping interval=20ms")
    frame = run(exp, out="data/bloat")
    loaded_latency(frame, "data/bloat")     # one row per run: base and loaded RTT, predicted, ratio

The probe (``ping``: a small UDP echo every 20 ms) starts with the run, the bulk flows a
little later: its rounds before them measure the path's base RTT; its rounds once the
flows have filled the queue (``settle_s`` after they start, until they end) measure the RTT
under load (the median: the queue's level most of the time). The model's RTT under load
is the base RTT plus the queue's limit drained at the link's rate (``model.delay.loaded_rtt``:
a loss-based TCP keeps a tail-drop queue nearly full; several flows keep it fuller, as
flent's RRUL uses four). Every round trip and its time come from the run's event stream.

Without root the probe cannot share the relays' queue with a TCP flow (each port has its own
relay); there, ``one_way_under_load`` reads a UDP flow offered above the link's rate: its
records wait in the relay's queue, and their one-way delays show it filled.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd

from ..errors import UsageError
from ..model.delay import loaded_rtt, queueing_delay
from ..experiment.events import read_events
from ..experiment.spec import link_spec

__all__ = ["loaded_latency", "one_way_under_load", "SETTLE_S"]

#: Seconds after the bulk flows start before the probe's rounds count as loaded (slow start
#: fills a 10 Mbit/s link's queue of a few hundred kB within a few round trips).
SETTLE_S = 1.0


def _queue(row) -> tuple[float, float]:
    """(queue limit in charged bytes, rate in bit/s) of the link a row's run had."""
    spec = link_spec({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
    return spec.queue_for(spec.forward), spec.forward.rate_bps


def _median(values) -> float:
    return statistics.median(values) if values else math.nan


def _quantile(ordered: list, q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else math.nan


def _moving(records) -> list[float]:
    """When each flow's sender last counted more bytes than before (a flow whose data is done
    reports on, unchanged, while it waits for its receiver's report)."""
    last: dict = {}
    for record in records:
        key = (record.get("flow"), record.get("stream"))
        seen = last.get(key)
        if seen is None or record.get("bytes", 0) > seen[1]:
            last[key] = (record["t"], record.get("bytes", 0))
    return [t for t, _ in last.values()]


def loaded_latency(frame: pd.DataFrame, folder: str | Path, *, settle_s: float = SETTLE_S) -> pd.DataFrame:
    """One row per run with a probe (a flows run with ``ping``): the link (``rate_bps``,
    ``queue_bytes``), ``base_rtt_s`` (median round trip before the bulk flows),
    ``loaded_rtt_s`` (median once they filled the queue), its 95th percentile and largest, the
    rounds each counted, ``pred_queue_delay_s`` (limit ÷ rate), ``pred_loaded_rtt_s`` (base +
    that), ``loaded/predicted`` and ``queue_delay_s`` (loaded − base, measured)."""
    if frame.empty or "flow_id" not in frame or "workload" not in frame:
        raise UsageError("this table has no flows", "run flows with a probe, e.g. 'tcp start=1s + ping'")
    out = []
    for run_id, rows in frame.groupby("run_id", sort=False):
        probes = set(rows.loc[rows["workload"] == "echo", "flow_id"])
        events_file = rows["events_file"].dropna() if "events_file" in rows else []
        if not probes or not len(events_file):
            continue
        events = read_events(Path(folder) / events_file.iloc[0])
        rounds = [(e["t"], e["rtt_s"]) for e in events if e.get("event") == "rtt" and e.get("flow") in probes]
        # the bulk flows begin with their first byte sent (their programs take a while to start)
        starts = [e["t"] for e in events if e.get("event") == "interval" and e.get("source") == "sender"
                  and e.get("flow") not in probes and e.get("bytes")] or \
            [e["t"] for e in events if e.get("event") == "flow" and e.get("flow") not in probes]
        ends = _moving(e for e in events if e.get("event") == "interval" and e.get("source") == "sender"
                       and e.get("flow") not in probes)
        first = rows.iloc[0]
        queue_bytes, rate = _queue(first)
        row = {"run_id": run_id, "setting_id": first["setting_id"], "rep": first["rep"],
               "flows": first.get("flows"), "rate_bps": rate, "queue_bytes": queue_bytes,
               "delay_s": first.get("delay_s"), "status": "ok" if (rows["status"] == "ok").all() else "failed"}
        if starts and ends:
            begin, end = min(starts), max(ends)
            base = [r for t, r in rounds if t < begin]
            loaded = sorted(r for t, r in rounds if begin + settle_s <= t <= end)
            row.update(base_rtt_s=_median(base), loaded_rtt_s=_median(loaded), base_rounds=len(base),
                       loaded_rounds=len(loaded), loaded_rtt_p95_s=_quantile(loaded, 0.95),
                       loaded_rtt_max_s=loaded[-1] if loaded else math.nan)
        else:
            row.update(base_rtt_s=math.nan, loaded_rtt_s=math.nan, base_rounds=0, loaded_rounds=0,
                       loaded_rtt_p95_s=math.nan, loaded_rtt_max_s=math.nan)
        row["pred_queue_delay_s"] = queueing_delay(queue_bytes, rate) if rate else math.nan
        row["pred_loaded_rtt_s"] = loaded_rtt(row["base_rtt_s"], queue_bytes, rate) \
            if rate and row["base_rtt_s"] == row["base_rtt_s"] else math.nan
        row["queue_delay_s"] = row["loaded_rtt_s"] - row["base_rtt_s"]
        row["loaded/predicted"] = row["loaded_rtt_s"] / row["pred_loaded_rtt_s"]
        out.append(row)
    return pd.DataFrame(out)


def one_way_under_load(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per UDP run offered above its link's rate (the path without root): the link,
    ``one_way_delay_s`` (the median of the records' one-way delays: the queue fills within
    a fraction of the run and stays full), ``pred_one_way_s`` (the link's delay + a full
    queue's wait) and their ratio."""
    need = {"one_way_delay_median_s", "offered_bps", "rate_bps"}
    if frame.empty or not need <= set(frame.columns):
        raise UsageError("this table has no offered-load runs with one-way delays",
                         "run Experiment(proto='udp', workload='load', offered=...) above the link's rate")
    out = []
    for _, first in frame.iterrows():
        queue_bytes, rate = _queue(first)
        if not rate or not first["offered_bps"] > rate:
            continue
        delay = float(first.get("delay_s") or 0.0)
        predicted = delay + queueing_delay(queue_bytes, rate)
        out.append({"run_id": first["run_id"], "setting_id": first["setting_id"], "rep": first["rep"],
                    "rate_bps": rate, "offered_bps": first["offered_bps"], "queue_bytes": queue_bytes,
                    "delay_s": delay, "status": first["status"], "one_way_delay_s": first["one_way_delay_median_s"],
                    "pred_queue_delay_s": queueing_delay(queue_bytes, rate), "pred_one_way_s": predicted,
                    "measured/predicted": first["one_way_delay_median_s"] / predicted})
    return pd.DataFrame(out)
