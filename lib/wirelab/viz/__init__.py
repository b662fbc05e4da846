"""Figures and panels: seaborn plots (predicted = lines, measured = points with
error bars) and ipywidgets panels. Every plot takes data and ``ax=None`` and
returns the Axes; nothing here changes global style on import.

Sweeps (``sweep``): ``plot_predicted_vs_measured``, ``plot_by_protocol``,
``plot_loss``, ``plot_delay``, ``plot_sender_vs_receiver``; inside a run
(``timeseries``): ``plot_goodput_over_time``, ``plot_io_graph``; the experiment control panel
(``panel``): ``experiment_panel``."""
from .panel import ExperimentPanel, experiment_panel
from .sweep import (plot_by_protocol, plot_delay, plot_loss, plot_predicted_vs_measured,
                    plot_sender_vs_receiver, swept_columns)
from .timeseries import plot_goodput_over_time, plot_io_graph

__all__ = ["plot_predicted_vs_measured", "plot_by_protocol", "plot_loss", "plot_delay",
           "plot_sender_vs_receiver", "plot_goodput_over_time", "plot_io_graph", "swept_columns",
           "experiment_panel", "ExperimentPanel"]
