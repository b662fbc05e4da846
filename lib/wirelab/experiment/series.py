"""Goodput over time within one run: from per-packet receive times, or from a tool's intervals.

Each run's raw record (``runs/<run_id>.json``) may carry ``receiver_series``:
a list of ``{"t_s": end of interval since the first packet, "bps": goodput in it}``.
The wirelab engine computes it from the receiver's per-packet times; iperf3
reports it itself (``-i 0.1`` on the server). ``load_series`` gathers them
into one long table for plotting. ``capture_series`` does the same from the
pcapng a run kept (``capture=True``): what the wire carried, Wireshark-style.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

__all__ = ["goodput_series", "load_series", "capture_series"]


def goodput_series(times_s, bytes_per_packet: float, *, bins: int = 20,
                   min_bin_s: float = 0.02) -> list[dict]:
    """Per-packet delivery times → goodput in equal intervals (about ``bins`` of them)."""
    times = sorted(t for t in times_s if t is not None and math.isfinite(t))
    if len(times) < 2:
        return []
    start, span = times[0], times[-1] - times[0]
    width = max(span / bins, min_bin_s)
    count = max(int(math.ceil(span / width)), 1)
    totals = [0.0] * count
    for t in times:
        totals[min(int((t - start) / width), count - 1)] += bytes_per_packet
    return [{"t_s": (i + 1) * width, "bps": 8.0 * b / width} for i, b in enumerate(totals)]


def load_series(folder: str | Path, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (run, interval): run_id, t_s, bps, plus the run's parameter columns."""
    from .store import load

    folder = Path(folder)
    runs = load(folder) if runs is None else runs
    rows = []
    for run_id, raw_file in zip(runs["run_id"], runs.get("raw_file", [None] * len(runs))):
        if not isinstance(raw_file, str):
            continue
        try:
            record = json.loads((folder / raw_file).read_text())
        except (OSError, json.JSONDecodeError):
            continue
        for point in (record.get("result") or {}).get("receiver_series") or []:
            rows.append({"run_id": run_id, "t_s": point.get("t_s"), "bps": point.get("bps")})
    series = pd.DataFrame(rows, columns=["run_id", "t_s", "bps"])
    keep = [c for c in ("run_id", "engine", "backend", "proto", "rate_bps", "delay_s", "loss", "rep",
                        "status", "pred_goodput_bps") if c in runs]
    return series.merge(runs[keep], on="run_id", how="left")


def capture_series(folder: str | Path, runs: pd.DataFrame | None = None, *,
                   interval: float = 0.05) -> pd.DataFrame:
    """Goodput over time read from each run's pcapng (payload bytes per ``interval``,
    data direction only: frames that carry payload), in the same long format."""
    from ..capture import io_graph, read_capture
    from .store import load

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
