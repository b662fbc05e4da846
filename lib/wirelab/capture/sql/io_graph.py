"""Wireshark's I/O graph of a capture dataset, in DuckDB SQL (``flows.io_graph``'s rules),
with TCP analysis flags (``sql.tcp``) counted per bin."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UsageError
from .tcp import FLAGS, tcp_flags

__all__ = ["io_graph"]


def io_graph(ds, interval: float = 0.1, *, where: str | None = None, marks=()) -> pd.DataFrame:
    """Packets, bytes, throughput and goodput per ``interval`` seconds, as ``flows.io_graph``.

    ``where`` (SQL over the columns of ``packets``) selects frames, as ``mask`` does;
    ``marks`` names TCP analysis flags (e.g. ``["retransmission"]``) to count per bin;
    with ``retransmission`` among them, goodput leaves retransmitted payload out.
    """
    if not interval > 0:
        raise UsageError(f"interval must be positive, not {interval}", "e.g. 0.1 (seconds)")
    marks = list(marks)
    unknown = [m for m in marks if m not in FLAGS]
    if unknown:
        raise UsageError(f"unknown mark {unknown[0]!r}", f"use TCP analysis flags: {', '.join(FLAGS)}")
    join = f"LEFT JOIN {tcp_flags(ds)} f USING (file_offset)" if marks else ""
    counts = "".join(f", sum(CASE WHEN coalesce(f.{m}, false) THEN 1 ELSE 0 END) AS {m}" for m in marks)
    new = ("CASE WHEN coalesce(f.retransmission, false) THEN 0 ELSE coalesce(p.payload_len, 0) END"
           if "retransmission" in marks else "coalesce(p.payload_len, 0)")
    bins = ds.sql(f"""
    WITH t0 AS (SELECT min(time) AS t0 FROM packets)
    SELECT CAST(floor((p.time - t0.t0) / ?) AS BIGINT) AS bin, count(*) AS packets,
           sum(p.frame_len) AS bytes, sum({new}) AS new_payload {counts}
    FROM packets p CROSS JOIN t0 {join}
    WHERE p.time IS NOT NULL {f"AND ({where})" if where else ""}
    GROUP BY bin ORDER BY bin""", [float(interval)])
    nbins = int(bins["bin"].max()) + 1 if len(bins) else 0
    out = pd.DataFrame({"time": np.arange(nbins) * interval})
    at = bins["bin"].to_numpy(np.int64)
    for name in ["packets", "bytes"] + marks:
        col = np.zeros(nbins, dtype=np.int64)
        col[at] = bins[name].to_numpy(np.int64)
        out[name] = col
    out["throughput_bps"] = out["bytes"] * 8 / interval
    good = np.zeros(nbins)
    good[at] = bins["new_payload"].to_numpy(np.float64)
    out["goodput_bps"] = good * 8 / interval
    return out
