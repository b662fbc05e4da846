"""The engine ``wirelab report`` runs notebooks with: papermill's nbclient engine, one thing changed.

A notebook's ``Output`` widget (the experiment panel's table, plot and progress) has,
in a headless run, a stand-in in the kernel client (nbclient's ``OutputWidget``) that
collects what the widget shows; the static report reads it (``report.static_widgets``).
nbclient's stand-in also sends that state back to the kernel at every output, on the
kernel's shell socket, from the task reading outputs, while another task waits on the
same socket for the cell's reply: the reply can be missed until other traffic or the
cell's timeout wakes the waiting task (nbclient issue 312, pull request 311). Notebook
05's panel, printing a run's progress into its widget, once left ``wirelab report``
waiting 15 minutes on an idle kernel; 60 cells each flushing 100 lines into an Output
widget took 160 and 278 s with papermill's engine on the lab machine, 2 to 5 s with this
one (``tests/test_report.py``). Here the stand-in keeps the state and sends nothing: the
kernel's own widget is never read back in a headless run.
"""
from __future__ import annotations

from nbclient.output_widget import OutputWidget
from papermill import engines
from papermill.clientwrap import PapermillNotebookClient

__all__ = ["register_engine", "KeptOutput", "NAME"]

NAME = "wirelab"


class KeptOutput(OutputWidget):
    """nbclient's ``Output`` widget stand-in, its state kept here and not sent (see above)."""

    def sync_state(self) -> None:
        pass


class _Client(PapermillNotebookClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.widget_registry = {"@jupyter-widgets/output": {"OutputModel": KeptOutput}}


class _Engine(engines.NBClientEngine):
    @classmethod
    def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None, stderr_file=None,
                                 start_timeout=60, execution_timeout=None, **kwargs):
        """papermill's ``NBClientEngine.execute_managed_notebook`` (2.x), with ``_Client``."""
        kwargs = engines.remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
        final = engines.merge_kwargs(kwargs, timeout=execution_timeout, startup_timeout=start_timeout,
                                     kernel_name=kernel_name, log=engines.logger, log_output=log_output,
                                     stdout_file=stdout_file, stderr_file=stderr_file)
        return _Client(nb_man, **final).execute()


def register_engine() -> str:
    """The engine's name for ``papermill.execute_notebook(engine_name=...)``, registered once."""
    try:
        engines.papermill_engines.get_engine(NAME)
    except engines.PapermillException:              # (not yet: papermill says so)
        engines.papermill_engines.register(NAME, _Engine)
    return NAME
