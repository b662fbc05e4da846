"""Splitting a radar sweep's data across N processing boards: document 000's two methods.

Source: document 000 (the thesis), §2.5 "the partitioning problem", with its own
example numbers (which it says are made up, to show how the methods behave):

* **Parallel split** ("parallelliserad uppdelning"): the whole sweep of X bytes is cut
  at the source into N parts sent at once, one connection per board. The parts cannot
  be cut exactly, so each board also gets a share of its neighbour's data, an overlap of
  ``overlap`` (5 %) per board: X · 0.05 · N bytes in all (10 MB to 3 boards: 1.5 MB). No
  added latency (all data leaves at once); the overlap, and so the load on the link,
  grows with N.
* **Round robin**: the sweep is cut into ``sectors`` as the radar turns; each sector goes
  to the next board in turn. Each part is small, so the overlap is too ("e.g. 0.4 % per
  board"); its example counts X · 0.004 = 0.04 MB for 10 MB. Boards keep up when each
  finishes its sector before its next one comes: compute time ≤ N · sector time. A
  sector's data waits, at worst, compute time − sweep time / N (4 boards, 4 sectors,
  400 ms sweep and 400 ms of computing: 300 ms).

The document's round-robin example counts one overlap of 0.4 % for the sweep, though its
text says "per board"; ``round_robin`` follows the example (``per_board=True`` takes the
text: X · 0.004 · N).

    >>> parallel_split(10e6, 3).overlap_bytes        # the document's 1.5 MB
    1500000.0
    >>> round(round_robin(10e6, 4, sweep_s=0.4, compute_s=0.4).worst_latency_s, 6)   # its 300 ms
    0.3
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ModelError

__all__ = ["Split", "parallel_split", "round_robin", "PARALLEL_OVERLAP", "ROUND_ROBIN_OVERLAP"]

#: Overlap per board of the parallel split (document 000's "e.g. 5 %").
PARALLEL_OVERLAP = 0.05
#: Overlap of round robin (document 000's "e.g. 0.4 % per board").
ROUND_ROBIN_OVERLAP = 0.004


@dataclass(frozen=True)
class Split:
    """How one sweep's ``data_bytes`` go to ``boards``: the overlap sent twice, all bytes sent,
    each board's share, the worst wait of a part before its board computes it, and whether
    the boards keep up with the radar."""
    method: str
    data_bytes: float
    boards: int
    overlap_bytes: float
    worst_latency_s: float
    keeps_up: bool

    @property
    def sent_bytes(self) -> float:
        return self.data_bytes + self.overlap_bytes

    @property
    def per_board_bytes(self) -> float:
        return self.sent_bytes / self.boards

    def link_time_s(self, goodput_bps: float) -> float:
        """Seconds a link carrying ``goodput_bps`` of payload needs for all ``sent_bytes``."""
        if not goodput_bps > 0:
            raise ModelError(f"goodput must be positive, not {goodput_bps!r}", "e.g. predict(...).goodput_bps")
        return 8.0 * self.sent_bytes / goodput_bps


def _check(data_bytes: float, boards: int, overlap: float) -> None:
    if not data_bytes >= 0 or not math.isfinite(data_bytes):
        raise ModelError(f"data must be ≥ 0 bytes, not {data_bytes!r}", "e.g. 10e6")
    if isinstance(boards, bool) or not isinstance(boards, int) or boards < 1:
        raise ModelError(f"boards must be a whole number ≥ 1, not {boards!r}", "e.g. 4")
    if not 0 <= overlap < 1:
        raise ModelError(f"overlap is a fraction from 0 to 1, not {overlap!r}", "e.g. 0.05 (5 %)")


def parallel_split(data_bytes: float, boards: int, *, overlap: float = PARALLEL_OVERLAP,
                   compute_s: float = 0.0, sweep_s: float = math.inf) -> Split:
    """Document 000's parallel split: overlap X · ``overlap`` · N, all sent at once (no wait);
    the boards keep up when one sweep's computing (``compute_s``) fits in a sweep (``sweep_s``)."""
    _check(data_bytes, boards, overlap)
    return Split("parallel", float(data_bytes), boards, data_bytes * overlap * boards, 0.0, compute_s <= sweep_s)


def round_robin(data_bytes: float, boards: int, *, sweep_s: float, compute_s: float,
                sectors: int | None = None, overlap: float = ROUND_ROBIN_OVERLAP,
                per_board: bool = False) -> Split:
    """Document 000's round robin: ``sectors`` (default one per board) dealt to the boards in
    turn. Overlap X · ``overlap`` (its example; × N with ``per_board``). A board gets a sector
    every N sector times and keeps up when ``compute_s`` ≤ N · sweep / sectors; a sector waits at
    worst ``compute_s`` − ``sweep_s`` / N for its result (never less than nothing)."""
    _check(data_bytes, boards, overlap)
    sectors = boards if sectors is None else sectors
    if not sweep_s > 0 or compute_s < 0 or sectors < 1:
        raise ModelError("a sweep needs a positive duration, computing ≥ 0 s and at least one sector",
                         "e.g. round_robin(10e6, 4, sweep_s=0.4, compute_s=0.4)")
    sector_s = sweep_s / sectors
    overlap_bytes = data_bytes * overlap * (boards if per_board else 1)
    return Split("round robin", float(data_bytes), boards, overlap_bytes, max(compute_s - sweep_s / boards, 0.0),
                 compute_s <= boards * sector_s + 1e-12)
