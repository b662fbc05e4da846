"""Figures and panels: seaborn plots (predicted = lines, measured = points with
error bars) and ipywidgets panels. Every plot takes data and ``ax=None`` and
returns the Axes; nothing here changes global style on import.

Sweeps (``sweep``): ``plot_predicted_vs_measured``, ``plot_by_protocol``,
``plot_loss``, ``plot_delay``, ``plot_sender_vs_receiver``; inside a run
(``timeseries``): ``plot_goodput_over_time``; end-to-end delay across a path
(``end_to_end``): ``plot_end_to_end``, ``plot_delay_distribution``; a document's
figures beside ours (``beside``): ``plot_beside``; the experiment control panel
(``panel``): ``experiment_panel``."""
from .._exports import lazy

_EXPORTS = {
    "ExperimentPanel": "panel", "experiment_panel": "panel", "plot_by_protocol": "sweep",
    "plot_delay": "sweep", "plot_loss": "sweep", "plot_predicted_vs_measured": "sweep",
    "plot_sender_vs_receiver": "sweep", "swept_columns": "sweep", "LIMIT_LABELS": "sweep",
    "plot_goodput_over_time": "timeseries", "efficiency_table": "overhead",
    "plot_efficiency": "overhead", "plot_header_bytes": "overhead", "header_table": "overhead", "plot_delivery": "overhead",
    "overhead_calculator": "calculator",
    # end-to-end delay across a path (document 003)
    "plot_end_to_end": "end_to_end", "plot_delay_distribution": "end_to_end",
    # a source document's figures beside ours (documents 001 and others)
    "plot_beside": "beside",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
