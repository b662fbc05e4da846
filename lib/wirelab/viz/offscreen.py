"""Figures for widgets: drawn outside pyplot, shown as one finished PNG.

Why: JupyterLab 4 with ipykernel 7 delivers widget messages on a kernel
*subshell*, a second thread. After every widget message the ``comm`` package
fires IPython's ``post_execute`` event, and pyplot (interactive under the
inline backend) answers it by redrawing every figure it knows, in that
thread. A panel that draws with pyplot in a button callback therefore has
two threads drawing one figure on one Agg renderer at once, and the PNG it
shows comes out blank or garbled (seen in a real browser: axes titles only).
A ``matplotlib.figure.Figure`` made here is unknown to pyplot, so nothing
else ever draws it; we render it once and display the bytes. (The kit installs
ipykernel 6 now, pyproject.toml says why; a course image with 7 still draws right.)
"""
from __future__ import annotations

import io

__all__ = ["new_figure", "figure_png", "show_figure"]


def new_figure(figsize=(7, 4)):
    """A Figure with an Agg canvas that pyplot does not track (no global state touched)."""
    # start-up: matplotlib only when new_figure() runs
    from matplotlib.figure import Figure
    return Figure(figsize=figsize, layout="constrained")


def figure_png(figure, *, dpi: float = 100) -> bytes:
    """The figure as PNG bytes, cropped to what is drawn (by its constrained layout when it has
    one: cropping again, ``bbox_inches="tight"``, draws the figure twice)."""
    buffer = io.BytesIO()
    laid_out = figure.get_layout_engine() is not None
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches=None if laid_out else "tight", facecolor="white")
    return buffer.getvalue()


def show_figure(figure, *, dpi: float = 100) -> bytes:
    """Display the figure as an image in the current output (a cell or an ``Output`` widget)."""
    # start-up: IPython only when show_figure() runs
    from IPython.display import Image, display

    png = figure_png(figure, dpi=dpi)
    display(Image(data=png, format="png"))
    return png
