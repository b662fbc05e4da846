"""Document 000's partitioning problem (§2.5) as a table: a radar sweep's data split across
processing boards in parallel or round robin (``wirelab.model.partition``), each number of
boards beside the document's own example. Notebook ``07-offered-load-and-buffers``::

    partition_table((1, 2, 3, 4, 8, 16), goodput_bps=predict("udp", 1e9, payload=65000).goodput_bps)

The thesis computed, it did not measure: its example numbers (it says they are made up to
show how the methods behave) stand beside the model's rows; the link time of each split
comes from the goodput the offered-load runs measured or the model predicts.
"""
from __future__ import annotations

import math

import pandas as pd

from ..model.partition import parallel_split, round_robin

__all__ = ["PARTITION_EXAMPLE", "partition_table"]

MB = 1e6


#: Document 000's example of splitting a sweep (§2.5): 10 MB, 5 % per board to 3 boards in
#: parallel (1.5 MB of overlap); round robin over 4 boards, a 400 ms sweep, 400 ms of computing
#: each (0.04 MB of overlap, 300 ms at worst). Its numbers are made up to show the methods.
PARTITION_EXAMPLE = {"data_bytes": 10e6, "parallel_boards": 3, "parallel_overlap_MB": 1.5,
                     "round_robin_boards": 4, "sweep_s": 0.4, "compute_s": 0.4, "round_robin_overlap_MB": 0.04,
                     "round_robin_latency_ms": 300.0}


def partition_table(boards=(1, 2, 3, 4, 8, 16), *, data_bytes: float = 10e6, sweep_s: float = 0.4,
                    compute_s: float = 0.4, goodput_bps: float | None = None) -> pd.DataFrame:
    """Both of the thesis's ways to split ``data_bytes`` of a sweep across each number of
    ``boards`` (``model.partition``): overlap, bytes sent, per board, the worst wait, whether the
    boards keep up, and with ``goodput_bps`` the link time of it all; the document's example
    numbers beside the rows it computed (``doc_*``)."""
    ex = PARTITION_EXAMPLE
    rows = []
    for n in boards:
        for split in (parallel_split(data_bytes, n, compute_s=compute_s, sweep_s=sweep_s),
                      round_robin(data_bytes, n, sweep_s=sweep_s, compute_s=compute_s)):
            example = data_bytes == ex["data_bytes"] and (
                (split.method == "parallel" and n == ex["parallel_boards"]) or
                (split.method == "round robin" and n == ex["round_robin_boards"] and sweep_s == ex["sweep_s"]
                 and compute_s == ex["compute_s"]))
            doc_overlap = (ex["parallel_overlap_MB"] if split.method == "parallel" else ex["round_robin_overlap_MB"])
            rows.append({"method": split.method, "boards": n, "overlap_MB": split.overlap_bytes / MB,
                         "doc_overlap_MB": doc_overlap if example else math.nan,
                         "sent_MB": split.sent_bytes / MB, "per_board_MB": split.per_board_bytes / MB,
                         "worst_latency_ms": split.worst_latency_s * 1e3,
                         "doc_latency_ms": ex["round_robin_latency_ms"] if example and split.method != "parallel"
                         else math.nan,
                         "keeps_up": split.keeps_up,
                         "link_s": split.link_time_s(goodput_bps) if goodput_bps else math.nan})
    return pd.DataFrame(rows)
