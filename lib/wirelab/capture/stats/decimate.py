"""What a picture draws of a long series: no more points than it has pixels, every extreme kept.

A graph 400 pixels wide cannot show 100,000 points; matplotlib still walks, transforms
and rasterises each (a tenth of a second a graph). These keep, of each series, what
changes the picture, on a grid of pixel columns (``n`` over ``x0``..``x1``) and rows:

* ``lines``: of the points in each column, the first, the last, the lowest and the
  highest (M4: Jugel, Jerzak, Hackenbroich, Markl, "M4: A Visualization-Oriented Time
  Series Data Aggregation", VLDB 2014), the polyline or step through them is the full
  series' to the pixel: every spike and dip kept; a point outside the columns is kept
  when it is the last before them or the first after them (the line enters the picture);
* ``points``: a marker each: one per pixel cell it falls in (markers in one cell overlap);
* ``bars``: vertical bars (tcptrace's data segments, ``lo`` to ``hi`` at ``x``): in
  each column the bars whose pixel rows touch or overlap become one, their lowest ``lo``
  to their highest ``hi`` (the same pixels painted).

``Grid`` is one picture's grid, measured on its Axes, with the three as methods. Only
what is drawn: the tables a user gets from ``StreamGraphs`` stay whole. A series of
at most ``few`` points (4 per column) is kept whole, as is, so small captures draw as before.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Grid", "columns", "lines", "points", "bars"]


def columns(x: np.ndarray, x0: float, x1: float, n: int) -> np.ndarray:
    """The pixel column of each ``x``: 0..n-1 from ``x0`` to ``x1`` (both in), -1 before, ``n``
    after (and NaN)."""
    return _cells(x, x0, x1, n)


def _cells(v, v0: float, v1: float, n: int) -> np.ndarray:
    v = np.asarray(v, np.float64)
    span = v1 - v0 if v1 > v0 else 1.0
    with np.errstate(invalid="ignore"):
        c = np.clip(np.nan_to_num(np.floor((v - v0) * (n / span)), nan=n), -1, n).astype(np.int64)
        c[(c == n) & (v <= v1)] = n - 1          # the last edge is the last column's
    return c


def lines(x, y, x0: float, x1: float, n: int) -> np.ndarray:
    """Indices (ascending) of the points of ``(x, y)`` that draw the same line on ``n`` columns
    over ``x0``..``x1``: per column its first, last, lowest and highest (NaN ``y`` kept: a gap)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.size <= 4 * max(n, 1):
        return np.arange(x.size)
    where = columns(x, x0, x1, n)
    order = np.argsort(where, kind="stable")     # (times sorted already: the identity)
    c, ys = where[order], y[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, c.size]))
    gap = np.isnan(ys)
    keep = [starts, np.r_[starts[1:], c.size] - 1, np.flatnonzero(gap)]
    for reduce, blank in ((np.minimum, np.inf), (np.maximum, -np.inf)):
        values = np.where(gap, blank, ys)
        hit = np.flatnonzero(values == reduce.reduceat(values, starts)[group])
        keep.append(hit[np.r_[True, group[hit][1:] != group[hit][:-1]]])   # the first of each column
    kept = np.sort(order[np.unique(np.concatenate(keep))])
    # beyond the columns only the nearest point on each side: the line from it enters the picture
    before, after = np.flatnonzero(where[kept] < 0), np.flatnonzero(where[kept] >= n)
    return np.delete(kept, np.r_[before[:-1], after[1:]])


def points(x, y, x0: float, x1: float, n: int, y0: float, y1: float, m: int) -> np.ndarray:
    """Indices (ascending) of markers at ``(x, y)``, one per pixel cell of ``n`` columns over
    ``x0``..``x1`` by ``m`` rows over ``y0``..``y1`` (those outside the grid dropped)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.size <= 4 * max(n, 1):
        return np.arange(x.size)
    c, r = columns(x, x0, x1, n), _cells(y, y0, y1, m)
    inside = np.flatnonzero((c >= 0) & (c < n) & (r >= 0) & (r < m))
    if not inside.size:
        return inside
    _, first = np.unique(c[inside] * m + r[inside], return_index=True)
    # and the extremes themselves: the data limits (an autoscaled Axes') stay the series'
    ends = [inside[np.argmin(v[inside])] for v in (x, y)] + [inside[np.argmax(v[inside])] for v in (x, y)]
    return np.unique(np.r_[inside[first], ends])


def bars(x, lo, hi, x0: float, x1: float, n: int, y0: float, y1: float, m: int, *, few: int | None = None):
    """``(x, lo, hi)`` of vertical bars that paint the pixels the bars given paint, on ``n``
    columns over ``x0``..``x1`` by ``m`` rows over ``y0``..``y1``: in each column, bars whose
    rows overlap or touch merged, drawn at the first and the last ``x`` of the bars merged (so
    they span what those spanned); in x order when kept whole (``few`` bars or fewer)."""
    x, lo, hi = (np.asarray(v, np.float64) for v in (x, lo, hi))
    if x.size <= (4 * max(n, 1) if few is None else few):
        return x, lo, hi
    c = columns(x, x0, x1, n)
    r0, r1 = _cells(np.minimum(lo, hi), y0, y1, m), _cells(np.maximum(lo, hi), y0, y1, m)
    order = np.lexsort((r0, c))
    c, r0, r1 = c[order], r0[order], r1[order]
    # one running top across columns: a column's rows are lifted above every earlier column's
    # (rows lie in -1..m), so the running maximum restarts at each column
    lift = (c + 1) * (m + 3)
    top = np.maximum.accumulate(r1 + lift)
    new = np.r_[True, (c[1:] != c[:-1]) | (r0[1:] + lift[1:] > top[:-1] + 1)]
    starts = np.flatnonzero(new)
    low = np.minimum.reduceat(np.minimum(lo, hi)[order], starts)
    high = np.maximum.reduceat(np.maximum(lo, hi)[order], starts)
    xs = x[order]
    left, right = np.minimum.reduceat(xs, starts), np.maximum.reduceat(xs, starts)
    two = right > left
    return np.r_[left, right[two]], np.r_[low, low[two]], np.r_[high, high[two]]


class Grid:
    """The pixel grid a graph is drawn on: ``n`` columns over ``x0``..``x1``, ``m`` rows.
    ``full``: no grid (every point drawn)."""

    def __init__(self, ax, pixels=None, xlim=None, times=(), full: bool = False):
        """``pixels``: the axes' (width, height) in the picture (None: measured on ``ax``);
        ``xlim``: the x range shown (None: that of ``times``, the x arrays to draw)."""
        self.full = full
        if pixels is None:                       # twice the axes' size at the figure's dpi: a layout
            box = ax.get_window_extent()         # that moves it, or a savefig at a higher dpi, still
            pixels = (2 * box.width, 2 * box.height)    # finds a point per pixel column
        self.n, self.m = (max(int(np.ceil(p)), 1) for p in pixels)
        if xlim is None:
            t = np.concatenate([np.asarray(v, np.float64) for v in times]) if times else np.zeros(0)
            xlim = (float(t.min()), float(t.max())) if t.size else (0.0, 1.0)
        self.x0, self.x1 = xlim

    def line(self, x, y):
        """``(x, y)`` of a line or steps, each pixel column's extremes kept."""
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if self.full:
            return x, y
        keep = lines(x, y, self.x0, self.x1, self.n)
        return x[keep], y[keep]

    def _yrange(self, x, *ys):
        inside = (x >= self.x0) & (x <= self.x1)
        values = np.concatenate([y[inside] for y in ys])
        values = values[np.isfinite(values)]
        return (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)

    def marks(self, x, y):
        """``(x, y)`` of markers, one per pixel cell."""
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if self.full:
            return x, y
        keep = points(x, y, self.x0, self.x1, self.n, *self._yrange(x, y), self.m)
        return x[keep], y[keep]

    def bars(self, x, lo, hi, *, few=None):
        """Vertical bars as one polyline broken by NaN (``vlines`` makes an object per bar: 1 s
        for 40,000 segments, this 10 ms), bars painting the same pixels merged."""
        x, lo, hi = (np.asarray(v, np.float64) for v in (x, lo, hi))
        if not self.full:
            x, lo, hi = bars(x, lo, hi, self.x0, self.x1, self.n, *self._yrange(x, lo, hi), self.m, few=few)
        n = x.size
        xs, ys = np.full(3 * n, np.nan), np.full(3 * n, np.nan)
        xs[0::3] = xs[1::3] = x
        ys[0::3], ys[1::3] = lo, hi
        return xs, ys
