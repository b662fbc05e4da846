"""A capture's graphs written to a PNG file: a TCP stream's time-sequence or RTT graph, or the I/O graph.

For ``wirelab analyze --graph ... --png FILE`` and for scripts: drawn on a
matplotlib ``Figure`` of its own with the Agg canvas (no display, no pyplot state, no
global style touched), so it runs on a server without a screen. The stream graphs
are ``stream_plot``'s; the I/O graph is ``Capture.io_graph``'s table as steps (each pixel
column's extremes: ``decimate``).
"""
from __future__ import annotations

from pathlib import Path

from ...errors import UsageError
from .decimate import Grid

__all__ = ["GRAPHS", "save_graph"]

#: what ``save_graph`` draws: tcptrace's time-sequence graph, round-trip times, the I/O graph
GRAPHS = ("sequence", "rtt", "io")


def save_graph(capture, graph: str, path, *, stream: int | None = None, interval: float = 0.1,
               y: str = "bits") -> Path:
    """Draw ``graph`` of ``capture`` (an ``open_capture`` Capture) into the PNG file ``path``:
    "sequence" or "rtt" of TCP stream ``stream``; "io": ``y`` per ``interval`` seconds of every
    frame. Returns the path written."""
    if graph not in GRAPHS:
        raise UsageError(f"unknown graph {graph!r}", f"use one of {', '.join(GRAPHS)}")
    if graph != "io" and stream is None:
        raise UsageError(f"the {graph} graph is of one TCP stream", "give its number (--stream N; see the flow table)")
    # deferred: matplotlib only to draw
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    # start-up: matplotlib only when save_graph() runs
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if graph == "io":
        table = capture.io_graph(interval, y=y)
        grid = Grid(ax, times=[table["time"].to_numpy()])   # (1 µs bins: no more points than pixels)
        ax.step(*grid.line(table["time"], table[y]), where="post", label=f"{y} per {interval:g} s")
        ax.set_xlabel("time since the capture's first frame (s)")
        ax.set_ylabel(y)
        ax.set_title(f"I/O graph: {capture.source.name}")
        ax.legend(loc="best")
    else:
        capture.stream(stream).plot(graph, ax=ax)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png")
    return path
