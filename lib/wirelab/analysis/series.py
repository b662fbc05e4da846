"""Goodput over time within each run of a saved sweep, read back for plotting.

A run's series lives in its event stream (``events``): a list of ``{"t_s": end of
interval since the first packet, "bps": goodput in it}`` in the receiver's ``series``
event (the wirelab engine bins the receiver's per-packet times at the end of the run),
else the receiver's interval records (iperf3's ``-i 0.1`` on the server; any engine's
live records). Runs saved before streams kept it in their raw record
(``runs/<run_id>.json``, ``receiver_series``), which is read then. ``load_series``
gathers them into one long table for plotting. ``capture_series`` does the same from
the pcapng a run kept (``capture=True``): what the wire carried, Wireshark-style.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..capture import io_graph, read_capture
from ..experiment.events import read_events
from ..experiment.store import load

__all__ = ["load_series", "stream_series", "capture_series"]



def load_series(folder: str | Path, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (run, interval): run_id, t_s, bps, plus the run's parameter columns."""
    folder = Path(folder)
    runs = load(folder) if runs is None else runs
    rows = []
    nothing = [None] * len(runs)
    for run_id, raw_file, events_file, flow, stream in zip(
            runs["run_id"], runs.get("raw_file", nothing), runs.get("events_file", nothing),
            runs.get("flow_id", nothing), runs.get("stream", nothing)):
        points = stream_series(folder / events_file, flow=flow, stream=stream) \
            if isinstance(events_file, str) else None
        if points is None and isinstance(raw_file, str):       # saved before event streams
            try:
                points = (json.loads((folder / raw_file).read_text()).get("result") or {}).get("receiver_series")
            except (OSError, json.JSONDecodeError):
                points = None
        for point in points or []:
            rows.append({"run_id": run_id, "t_s": point.get("t_s"), "bps": point.get("bps"),
                         **({"flow_id": flow, "stream": stream} if isinstance(flow, str) else {})})
    flows = any("flow_id" in row for row in rows)
    series = pd.DataFrame(rows, columns=["run_id", "t_s", "bps"] + (["flow_id", "stream"] if flows else []))
    on = ["run_id", "flow_id", "stream"] if flows else ["run_id"]
    keep = [c for c in ("run_id", "flow_id", "stream", "engine", "backend", "proto", "rate_bps", "delay_s", "loss",
                        "rep", "status", "pred_goodput_bps") if c in runs and (c in on or c not in ("flow_id", "stream"))]
    return series.merge(runs[keep], on=on, how="left")


def stream_series(path, *, flow=None, stream=None) -> list[dict] | None:
    """The receiver's goodput over time from a run's event stream (see the module docstring):
    its ``series`` event, else its interval records (time from the first one that counted
    a byte); those of one ``flow`` and ``stream`` when given. None: the stream has neither."""

    def mine(event):
        return event.get("source") == "receiver" and (not isinstance(flow, str) or (
            event.get("flow") == flow and (stream is None or event.get("stream") == stream)))
    events = [e for e in read_events(path) if mine(e)]
    binned = [e for e in events if e.get("event") == "series" and e.get("points")]
    if binned:
        return binned[-1]["points"]
    intervals = [e for e in events if e.get("event") == "interval" and e.get("bps") is not None]
    moving = [i for i, e in enumerate(intervals) if e.get("bytes")]
    if not moving:
        return None
    first = moving[0]               # the interval in which the first byte came starts at the one before
    head = intervals[first]       # its rate and count say how long it lasted (from a count of 0)
    t0 = intervals[first - 1]["t"] if first > 0 else head["t"] - (8.0 * head["bytes"] / head["bps"] if head["bps"] else 0.0)
    return [{"t_s": e["t"] - t0, "bps": e["bps"]} for e in intervals[first:]]


def capture_series(folder: str | Path, runs: pd.DataFrame | None = None, *,
                   interval: float = 0.05) -> pd.DataFrame:
    """Goodput over time read from each run's pcapng (payload bytes per ``interval``,
    data direction only: frames that carry payload), in the same long format."""
    folder = Path(folder)
    runs = load(folder) if runs is None else runs
    parts = []
    for run_id, capture in zip(runs["run_id"], runs.get("capture_file", [None] * len(runs))):
        if not isinstance(capture, str) or not (folder / capture).is_file():
            continue
        frames = read_capture(folder / capture)
        if frames.empty:
            continue
        graph = io_graph(frames, interval, mask=frames["payload_len"].fillna(0) > 0)
        parts.append(pd.DataFrame({"run_id": run_id, "t_s": graph["time"] + interval,
                                   "bps": graph["goodput_bps"]}))
    series = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run_id", "t_s", "bps"])
    keep = [c for c in ("run_id", "engine", "backend", "proto", "rate_bps", "delay_s", "loss", "rep",
                        "status", "pred_goodput_bps") if c in runs]
    return series.merge(runs[keep], on="run_id", how="left")
