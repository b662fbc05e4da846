"""Pictures of ``StreamGraphs``: Wireshark's TCP Stream Graphs drawn with matplotlib (no global style touched).

tcptrace's convention for the sequence graph: a data segment is a vertical bar from its
first to its last byte, a retransmission in red; the ACK line and the receive window
line are steps (the bytes the receiver has and the bytes it allows).
"""
from __future__ import annotations

import numpy as np

from ...errors import UsageError

__all__ = ["draw"]

GRAPHS = ("sequence", "throughput", "rtt", "window")
#: points drawn up to which the legend finds the emptiest place (``loc="best"``)
MAX_BEST_POINTS = 5000


def draw(graphs, graph: str, ax=None, **kwargs):
    """``graphs`` (a ``StreamGraphs``) as ``graph`` on ``ax`` (a new figure when None)."""
    if graph not in GRAPHS:
        raise UsageError(f"unknown graph {graph!r}", f"use one of {', '.join(GRAPHS)}")
    if ax is None:
        import matplotlib.pyplot as plt                 # start-up: only to draw (not onto a given ax)
        _, ax = plt.subplots(figsize=(8, 4))
    if graph == "sequence":
        g = graphs.sequence_graph()
        data, acks = g[g["kind"] == "data"], g[g["kind"] == "ack"]
        for resent, colour, label in ((False, "C0", "data"), (True, "C3", "retransmission")):
            part = data[data["retransmission"] == resent]
            if len(part):                # the bars as one line broken by NaN: ``vlines`` makes an
                x, y = _bars(part)           # object per bar (1 s for 40,000 segments, this 10 ms)
                ax.plot(x, y, color=colour, label=label)
        if len(acks):
            ax.step(acks["time"], acks["seq"], where="post", color="C2", label="ACK")
            ax.step(acks["time"], acks["window"], where="post", color="C1", label="receive window")
        ax.set_ylabel("relative sequence number (bytes)")
    elif graph == "throughput":
        g = graphs.throughput(**kwargs)
        ax.plot(g["time"], g["throughput_bps"] / 1e6, label="throughput")
        ax.plot(g["time"], g["goodput_bps"] / 1e6, label="goodput")
        ax.set_ylabel("Mbit/s")
    elif graph == "rtt":
        g = graphs.rtt()
        ax.plot(g["time"], g["rtt"] * 1e3, ".", label="RTT")
        ax.set_ylabel("round-trip time (ms)")
    else:
        g = graphs.window()
        for kind, label in (("rwnd", "receive window"), ("in_flight", "bytes in flight")):
            part = g[g["kind"] == kind]
            ax.step(part["time"], part["bytes"], where="post", label=label)
        ax.set_ylabel("bytes")
    ax.set_xlabel("time since the capture's first frame (s)")
    ax.set_title(f"TCP stream {graphs.stream}: {graph}")
    # "best" tries every place against every point drawn: 0.1 s a figure on 100,000 points, so
    # a large graph takes the corner the tcptrace line leaves empty
    points = sum(len(line.get_xdata()) for line in ax.get_lines())
    ax.legend(loc="best" if points <= MAX_BEST_POINTS else "upper left")
    return ax


def _bars(part):
    """x and y of vertical bars (``time``, from ``seq`` to ``end``) as one polyline, NaN between."""
    n = len(part)
    x, y = np.full(3 * n, np.nan), np.full(3 * n, np.nan)
    x[0::3] = x[1::3] = part["time"].to_numpy(np.float64)
    y[0::3], y[1::3] = part["seq"].to_numpy(np.float64), part["end"].to_numpy(np.float64)
    return x, y
