"""Pictures of ``StreamGraphs``: Wireshark's TCP Stream Graphs drawn with matplotlib (no global style touched).

tcptrace's convention for the sequence graph: a data segment is a vertical bar from its
first to its last byte, a retransmission in red; the ACK line and the receive window
line are steps (the bytes the receiver has and the bytes it allows).

What is drawn is cut to the picture's pixels (``decimate``: each pixel column's extremes
kept, markers one per pixel, bars merged where they paint the same pixels), so a
100,000-segment stream draws as fast as a small one; retransmissions (up to
``WHOLE_MARKS``) are drawn one by one. ``full=True`` draws every point (an interactive
figure that is zoomed in); the tables themselves are never cut.
"""
from __future__ import annotations

import numpy as np

from ...errors import UsageError
from .decimate import Grid

__all__ = ["draw"]

GRAPHS = ("sequence", "throughput", "rtt", "window")
#: points drawn up to which the legend finds the emptiest place (``loc="best"``)
MAX_BEST_POINTS = 5000
#: marks that matter one by one (retransmissions) drawn each up to this many, then merged by pixel
WHOLE_MARKS = 2000


def draw(graphs, graph: str, ax=None, *, pixels=None, xlim=None, full: bool = False, **kwargs):
    """``graphs`` (a ``StreamGraphs``) as ``graph`` on ``ax`` (a new figure when None). ``pixels``:
    the axes' (width, height) in the picture's pixels (None: twice their size at the figure's
    dpi); ``xlim``: the time range shown (None: all); ``full``: every point drawn."""
    if graph not in GRAPHS:
        raise UsageError(f"unknown graph {graph!r}", f"use one of {', '.join(GRAPHS)}")
    if ax is None:
        import matplotlib.pyplot as plt                 # start-up: only to draw (not onto a given ax)
        _, ax = plt.subplots(figsize=(8, 4))
    table = graphs.throughput(**kwargs) if graph == "throughput" else getattr(graphs, _TABLES[graph])()
    grid = Grid(ax, pixels, xlim, [table["time"].to_numpy(np.float64)], full)
    _PAINT[graph](table, grid, ax)
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_xlabel("time since the capture's first frame (s)")
    ax.set_title(f"TCP stream {graphs.stream}: {graph}")
    # "best" tries every place against every point drawn: 0.1 s a figure on 100,000 points, so
    # a large graph takes the corner the tcptrace line leaves empty
    points = sum(len(line.get_xdata()) for line in ax.get_lines())
    ax.legend(loc="best" if points <= MAX_BEST_POINTS else "upper left")
    return ax


def _sequence(g, grid: Grid, ax) -> None:
    data, acks = g[g["kind"] == "data"], g[g["kind"] == "ack"]
    for resent, colour, label in ((False, "C0", "data"), (True, "C3", "retransmission")):
        part = data[data["retransmission"] == resent]
        if len(part):
            x, y = grid.bars(part["time"], part["seq"], part["end"], few=WHOLE_MARKS if resent else None)
            ax.plot(x, y, color=colour, label=label)
    if len(acks):
        ax.step(*grid.line(acks["time"], acks["seq"]), where="post", color="C2", label="ACK")
        ax.step(*grid.line(acks["time"], acks["window"]), where="post", color="C1", label="receive window")
    ax.set_ylabel("relative sequence number (bytes)")


def _throughput(g, grid: Grid, ax) -> None:
    ax.plot(*grid.line(g["time"], g["throughput_bps"] / 1e6), label="throughput")
    ax.plot(*grid.line(g["time"], g["goodput_bps"] / 1e6), label="goodput")
    ax.set_ylabel("Mbit/s")


def _rtt(g, grid: Grid, ax) -> None:
    ax.plot(*grid.marks(g["time"], g["rtt"] * 1e3), ".", label="RTT")
    ax.set_ylabel("round-trip time (ms)")


def _window(g, grid: Grid, ax) -> None:
    for kind, label in (("rwnd", "receive window"), ("in_flight", "bytes in flight")):
        part = g[g["kind"] == kind]
        ax.step(*grid.line(part["time"], part["bytes"]), where="post", label=label)
    ax.set_ylabel("bytes")


_TABLES = {"sequence": "sequence_graph", "rtt": "rtt", "window": "window"}
_PAINT = {"sequence": _sequence, "throughput": _throughput, "rtt": _rtt, "window": _window}
