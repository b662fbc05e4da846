"""The explorer's pictures: a figure per graph, made once and redrawn in place, at a fixed pixel grid.

Why not a new figure per redraw with a constrained layout (as before): on a 100,000-packet
conversation a redraw of four graphs took 0.3 s, of which the layout (every tick label
measured twice) and making the Axes were half and the points the rest. Here each graph's
Axes sit at fixed margins (in inches: room for the tick labels, kept short by the
y axis's scientific notation from 10^4, and the labels), so its size in pixels is known
before drawing: ``pixels`` is the grid the points are cut to (``capture.stats.decimate``,
each pixel column's extremes kept), and the figure's lines are removed and drawn anew.

The UDP conversation pictures (``plot_conversation_bytes``, ``plot_conversation_rate``) are
here too: a UDP conversation has no sequence numbers, its bytes over time and its rate
stand in for the sequence graph and the throughput.
"""
from __future__ import annotations

import io
import threading
import warnings

import numpy as np
import pandas as pd

from ..capture.stats.decimate import Grid

__all__ = ["Canvas", "plot_conversation_bytes", "plot_conversation_rate"]

#: the Axes' margins in inches (left, bottom, right, top): the y label and tick labels of
#: up to 6 characters, the x tick labels and label, the title
MARGINS = (0.82, 0.46, 0.12, 0.26)
LABEL_SIZE = 9
#: where the axis labels sit, in inches from the Axes (x label's top, y label's right): past
#: the tick (3.5 pt), its pad (3.5 pt) and a 10 pt tick label, 6 characters wide on the y axis
LABELS_AT = (19 / 72, 46 / 72)


class Canvas:
    """Figures of ``figsize`` inches drawn at ``dpi``, one per graph name, reused."""

    def __init__(self, *, figsize=(5.6, 2.8), dpi: float = 72):
        self.figsize, self.dpi = figsize, dpi
        self._made: dict[str, tuple] = {}
        # one redraw at a time: a widget callback may run on a kernel subshell's thread while a
        # cell sets a widget on the main one (``offscreen``), and both would draw these figures
        self._drawing = threading.Lock()

    def _axes(self, graph: str):
        """The graph's Axes, cleared of what the last redraw drew (made the first time)."""
        if graph not in self._made:
            # start-up: matplotlib only when a picture is drawn
            from matplotlib.figure import Figure
            figure = Figure(figsize=self.figsize, dpi=self.dpi, facecolor="white")
            (width, height), (left, bottom, right, top) = self.figsize, MARGINS
            ax = figure.add_axes((left / width, bottom / height, 1 - (left + right) / width,
                                  1 - (bottom + top) / height))
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4))
            # the labels and the title placed once: matplotlib otherwise measures every tick
            # label again at each draw to move them clear (a fifth of a picture's time)
            wide, high = width - left - right, height - bottom - top
            ax.xaxis.set_label_coords(0.5, -LABELS_AT[0] / high)
            ax.yaxis.set_label_coords(-LABELS_AT[1] / wide, 0.5)
            ax.set_title("", y=1.0)
            self._made[graph] = figure, ax
            return ax
        ax = self._made[graph][1]
        for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.texts]:
            artist.remove()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.relim()                               # (no artists: the data limits forgotten)
        ax.autoscale(True)
        ax.set_prop_cycle(None)                  # each redraw's colours from the first again
        ax.set_title("")
        return ax

    def axes(self, graph: str):
        """The Axes the graph's picture was last drawn on (what it draws: ``ax.get_lines()``)."""
        return self._made[graph][1]

    def pixels(self, graph: str) -> tuple[float, float]:
        """The graph's Axes' width and height in the picture's pixels."""
        box = self.axes(graph).get_position()
        return box.width * self.figsize[0] * self.dpi, box.height * self.figsize[1] * self.dpi

    def png(self, graph: str, paint, xlim: tuple[float, float]) -> bytes:
        """``paint(ax, pixels)`` on the graph's Axes, shown over ``xlim``; the picture as PNG."""
        with self._drawing:
            return self._png(graph, paint, xlim)

    def _png(self, graph: str, paint, xlim) -> bytes:
        ax = self._axes(graph)
        with warnings.catch_warnings():          # an empty range: "no artists with labels"
            warnings.simplefilter("ignore", UserWarning)
            paint(ax, self.pixels(graph))
        ax.set_xlim(*xlim)
        ax.set_title(ax.get_title() or graph, fontsize=10)
        for label in (ax.xaxis.label, ax.yaxis.label):
            label.set_fontsize(LABEL_SIZE)
        buffer = io.BytesIO()                    # (zlib's fastest: ~3 ms a picture less, ~5 % more bytes)
        self._made[graph][0].savefig(buffer, format="png", dpi=self.dpi, pil_kwargs={"compress_level": 1})
        return buffer.getvalue()


def plot_conversation_bytes(frames: pd.DataFrame, ax=None, *, pixels=None, xlim=None):
    """Bytes sent so far in each direction of one conversation (``frames``: its rows of a
    ``Capture``'s frames), a step per frame (each pixel column's extremes: ``pixels``, ``xlim``
    as ``stream_plot.draw``'s); returns the Axes."""
    if ax is None:
        import matplotlib.pyplot as plt          # start-up: only to draw
        _, ax = plt.subplots(figsize=(8, 4))
    grid = Grid(ax, pixels, xlim, [frames["time_relative"].to_numpy(np.float64)])
    for forward, label in ((True, "A → B"), (False, "B → A")):
        side = frames[frames["a_to_b"].to_numpy(bool) == forward]
        if len(side):
            ax.step(*grid.line(side["time_relative"], side["frame_len"].cumsum()), where="post", label=label)
    ax.set_xlabel("time since the capture's first frame (s)")
    ax.set_ylabel("bytes sent (frames)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")
    return ax


def plot_conversation_rate(frames: pd.DataFrame, interval: float, ax=None):
    """Each direction's rate (frame bits per ``interval``, Wireshark's I/O graph) of one
    conversation's ``frames``; returns the Axes."""
    if ax is None:
        import matplotlib.pyplot as plt          # start-up: only to draw
        _, ax = plt.subplots(figsize=(8, 4))
    t = frames["time_relative"].to_numpy(np.float64)
    if t.size:
        edges = np.arange(np.floor(t.min() / interval), np.floor(t.max() / interval) + 2) * interval
        for forward, label in ((True, "A → B"), (False, "B → A")):
            side = frames["a_to_b"].to_numpy(bool) == forward
            bits, _ = np.histogram(t[side], edges, weights=frames["frame_len"].to_numpy(np.float64)[side] * 8)
            ax.step(edges[:-1], bits / interval / 1e6, where="post", label=label)
        ax.legend(loc="best")
    ax.set_xlabel("time since the capture's first frame (s)")
    ax.set_ylabel(f"Mbit/s ({interval * 1e3:.3g} ms bins)")
    return ax
