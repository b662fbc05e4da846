"""Figures and panels: seaborn plots (predicted = lines, measured = points with
error bars) and ipywidgets panels. Every plot takes data and ``ax=None`` and
returns the Axes; nothing here changes global style on import."""
