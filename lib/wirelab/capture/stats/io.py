"""Wireshark's Statistics › I/O Graph: packets, bytes or bits per interval, any interval, no point cap.

Bins count from the capture's first frame (``time_relative``), whatever frames are
selected, as Wireshark's I/O graph does; a bin is [k·interval, (k+1)·interval). A frame
timed before the first (another interface's clock) is in no bin, as in Wireshark's I/O Graph
(``get_io_graph_index``, ui/io_graph_item.c: -1, left out); ``tshark -z io,stat`` counts a
frame whose time goes back in the interval it has reached instead. Empty
bins are rows of 0 up to the last frame's bin (an interval of 1 µs over 10 s is 10
million rows: the user's choice; Wireshark stops at 250,000 points and 1 ms).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UsageError

__all__ = ["Y", "io_table"]

Y = ("packets", "bytes", "bits")


def io_table(frames, interval: float, y: str = "packets", mask=None) -> pd.DataFrame:
    """``time`` (each bin's start, s since the capture's first frame) and ``y`` per bin, of the
    frames ``mask`` keeps (all when None). ``frames``: the frames' table, or any mapping of
    ``time_relative`` and ``frame_len`` to arrays (``Numbered.record_columns``: no table made)."""
    if y not in Y:
        raise UsageError(f"unknown y {y!r}", f"use one of {', '.join(Y)}")
    if not interval > 0:
        raise UsageError(f"interval must be positive, not {interval}", "e.g. 0.001 (seconds)")
    bins = np.divide(np.asarray(frames["time_relative"], dtype=np.float64), interval)
    np.floor(bins, out=bins)
    # (NaN, no time, and a frame timed before the first, see above: in no bin)
    keep = bins >= 0 if mask is None else np.asarray(mask, dtype=bool) & (bins >= 0)
    whole = bool(keep.all())                   # (the usual capture: no copy of the kept frames)
    bins = bins.astype(np.int64) if whole else bins[keep].astype(np.int64)
    n = int(bins.max()) + 1 if bins.size else 0
    weights = None if y == "packets" else np.asarray(frames["frame_len"], dtype=np.float64)
    if weights is not None:
        weights = (weights if whole else weights[keep]) * (8 if y == "bits" else 1)
    return pd.DataFrame({"time": np.arange(n) * interval,
                         y: np.bincount(bins, weights=weights, minlength=n).astype(np.int64)})
