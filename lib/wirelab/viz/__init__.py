"""Figures and panels: seaborn plots (predicted = lines, measured = points with
error bars) and ipywidgets panels. Every plot takes data and ``ax=None`` and
returns the Axes; nothing here changes global style on import.

Sweeps (``sweep``): ``plot_predicted_vs_measured``, ``plot_by_protocol``,
``plot_loss``, ``plot_delay``, ``plot_sender_vs_receiver``; inside a run
(``timeseries``): ``plot_goodput_over_time``, ``plot_io_graph``; while a run goes (``live``): ``watch``,
``LivePlot``, ``live_figure``; the experiment control panel
(``panel``): ``experiment_panel``; a graded class (``grade``): ``plot_pass_rate``,
``plot_goodput_vs_model``; document 000's figures (``offered_load``): ``plot_offered_load``,
``plot_transmission``; a published table beside the measurement, streams sharing a link,
a clock fit (``reference``); a PPCB exchange as a ladder diagram (as text ``ladder_text``, as a picture ``ladder_svg``); a capture as one
linked view in JupyterLab (``explore``: conversations, stream graphs, expert information, a time brush, a filter). A figure only one document's lab draws lives with that lab
(``wirelab.labs``), e.g. document 003's end-to-end delays."""
from .._exports import lazy

_EXPORTS = {
    "ExperimentPanel": "panel", "experiment_panel": "panel", "plot_by_protocol": "sweep",
    "plot_delay": "sweep", "plot_loss": "sweep", "plot_predicted_vs_measured": "sweep",
    "plot_sender_vs_receiver": "sweep", "swept_columns": "sweep", "LIMIT_LABELS": "sweep",
    "plot_goodput_over_time": "timeseries", "plot_io_graph": "timeseries",
    "watch": "live", "LivePlot": "live", "live_figure": "live", "efficiency_table": "overhead",
    "plot_efficiency": "overhead", "plot_header_bytes": "overhead",
    "header_table": "overhead", "plot_delivery": "overhead",
    "overhead_calculator": "calculator", "plot_pass_rate": "grade", "plot_goodput_vs_model": "grade",
    "plot_offered_load": "offered_load", "plot_transmission": "offered_load",
    "plot_against_document": "reference", "plot_streams": "reference", "plot_clock_fit": "reference",
    "ladder_text": "ladder", "ladder_svg": "ladder",
    "explore": "explorer", "Explorer": "explorer", "plot_conversation_bytes": "canvas",
    "plot_conversation_rate": "canvas",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
