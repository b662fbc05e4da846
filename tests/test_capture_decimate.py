"""capture.stats.decimate: what a picture draws of a long series keeps what the picture shows.

Properties on random series: each pixel column's lowest and highest point (and its first
and last) kept, every occupied pixel cell keeps a marker, merged bars paint exactly the
cells the bars painted; and at most a few points a column, whatever the series' length.
Then the drawing: a 100,000-segment stream drawn cut to its pixels looks as drawn whole,
and every retransmission is drawn.
"""
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirelab.capture.stats import decimate
from wirelab.capture.stats.stream_plot import WHOLE_MARKS, draw

pytest.importorskip("matplotlib")

SERIES = st.tuples(st.integers(0, 2**32 - 1), st.integers(2, 5000), st.integers(1, 300),
                   st.floats(-0.5, 0.5), st.floats(0.5, 1.5))


def _series(seed, size, spiky=True):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.random(size))
    y = np.cumsum(rng.normal(size=size))
    if spiky:                                    # a few spikes and dips one sample wide
        at = rng.integers(0, size, max(size // 100, 1))
        y[at] += rng.choice([-1, 1], at.size) * rng.uniform(10, 100, at.size)
    return x, y


@settings(max_examples=200, deadline=None)
@given(SERIES)
def test_lines_keep_every_pixel_columns_extremes_first_and_last(case):
    seed, size, n, x0, x1 = case
    x, y = _series(seed, size)
    kept = decimate.lines(x, y, x0, x1, n)
    assert np.all(np.diff(kept) > 0) and (kept.size <= 4 * n + 2 or kept.size == size)
    full, cut = decimate.columns(x, x0, x1, n), decimate.columns(x[kept], x0, x1, n)
    for column in np.unique(full[(full >= 0) & (full < n)]):
        mine, theirs = y[full == column], y[kept][cut == column]
        assert theirs.min() == mine.min() and theirs.max() == mine.max()
        assert theirs[0] == mine[0] and theirs[-1] == mine[-1]
    for outside, nearest in ((full < 0, -1), (full >= n, 0)):    # the line enters the picture
        if outside.any():
            assert np.flatnonzero(outside)[nearest] in kept


@settings(max_examples=100, deadline=None)
@given(SERIES, st.integers(1, 200))
def test_points_keep_a_marker_in_every_occupied_pixel_cell(case, m):
    seed, size, n, x0, x1 = case
    x, y = _series(seed, size)
    y0, y1 = float(y.min()), float(y.max())
    kept = decimate.points(x, y, x0, x1, n, y0, y1, m)

    def cells(i):
        c, r = decimate.columns(x[i], x0, x1, n), decimate.columns(y[i], y0, y1, m)
        inside = (c >= 0) & (c < n) & (r >= 0) & (r < m)
        return set(zip(c[inside], r[inside]))

    assert cells(np.arange(size)) == cells(kept)
    assert kept.size == size or kept.size <= len(cells(kept)) + 4    # one marker a cell, and the extremes


@settings(max_examples=100, deadline=None)
@given(SERIES, st.integers(1, 200))
def test_merged_bars_paint_exactly_the_pixel_cells_of_the_bars(case, m):
    seed, size, n, x0, x1 = case
    x, lo = _series(seed, size, spiky=False)
    hi = lo + np.random.default_rng(seed).exponential(0.5, size)
    y0, y1 = float(lo.min()), float(hi.max())

    def painted(x, lo, hi):
        c = decimate.columns(x, x0, x1, n)
        r0, r1 = decimate.columns(lo, y0, y1, m), decimate.columns(hi, y0, y1, m)
        return {(ci, r) for ci, a, b in zip(c, r0, r1) for r in range(a, b + 1)}

    bx, blo, bhi = decimate.bars(x, lo, hi, x0, x1, n, y0, y1, m)
    assert painted(bx, blo, bhi) == painted(x, lo, hi)
    assert blo.min() == lo.min() and bhi.max() == hi.max()


def test_a_long_series_is_cut_to_a_few_points_a_column_and_nan_gaps_stay():
    x, y = _series(1, 200_000)
    y[1000:1010] = np.nan
    kept = decimate.lines(x, y, 0.0, 1.0, 400)
    assert kept.size <= 4 * 400 + 10 and np.isnan(y[kept]).sum() == 10
    assert y[kept][~np.isnan(y[kept])].max() == np.nanmax(y)


class _Stream:
    """A stand-in ``StreamGraphs``: a long transfer whose every 40th segment is resent."""

    def __init__(self, segments: int, every: int = 40):
        t = np.linspace(0, 10, segments)
        seq = np.arange(segments) * 1448.0
        resent = np.arange(segments) % every == 0
        seq[resent] -= 50 * 1448.0                # resent: a stretch back
        self.stream = 7
        self.table = pd.DataFrame({"time": t, "frame": np.arange(segments), "kind": "data", "seq": seq,
                                   "end": seq + 1448, "window": np.nan, "retransmission": resent})

    def sequence_graph(self):
        return self.table


PIXELS = (288, 162)


def _picture(stream, full: bool):
    from matplotlib.figure import Figure
    figure = Figure(figsize=(5, 3), dpi=72)
    ax = figure.add_axes((0.15, 0.15, 0.8, 0.75))
    draw(stream, "sequence", ax, pixels=PIXELS, full=full)         # (5 × 0.8 in, 3 × 0.75 in at 72 dpi)
    ax.get_legend().remove()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=72)
    import matplotlib.image as mpimg
    return ax, mpimg.imread(io.BytesIO(buffer.getvalue()))[..., :3]


def test_a_stream_drawn_at_its_pixels_looks_as_drawn_whole_and_every_retransmission_is_there():
    stream = _Stream(100_000)
    ax, cut = _picture(stream, full=False)
    assert len(stream.sequence_graph()) == 100_000                  # the table whole: only the drawing is cut
    _, whole = _picture(stream, full=True)
    drawn = sum(len(line.get_xdata()) for line in ax.get_lines())
    assert drawn < 20_000                                    # not 300,000 (three a bar)
    assert np.abs(cut - whole).max(axis=-1).mean() < 0.01    # the same to the eye: < 1 % per pixel
    assert (np.abs(cut - whole).max(axis=-1) > 0.5).mean() < 0.003     # (0.001: line edges antialiased)
    red = next(line for line in ax.get_lines() if line.get_label() == "retransmission")
    resent = stream.table[stream.table["retransmission"]]
    assert len(resent) > WHOLE_MARKS                         # too many one by one: merged by pixel
    x, y = red.get_xdata(), red.get_ydata()
    low, high = y[0::3], y[1::3]
    column = decimate.columns(x[0::3], 0, 10, PIXELS[0])
    for t, seq, end in zip(resent["time"], resent["seq"], resent["end"]):   # each inside a drawn bar
        mine = column == decimate.columns(np.array([t]), 0, 10, PIXELS[0])[0]
        assert ((low[mine] <= seq) & (high[mine] >= end)).any()


def test_a_few_retransmissions_are_drawn_one_by_one():
    stream = _Stream(20_000, every=100)
    ax, _ = _picture(stream, full=False)
    red = next(line for line in ax.get_lines() if line.get_label() == "retransmission")
    resent = stream.table[stream.table["retransmission"]]
    assert len(resent) <= WHOLE_MARKS
    assert np.array_equal(red.get_xdata()[0::3], resent["time"]) and np.array_equal(red.get_ydata()[1::3],
                                                                                      resent["end"])
