"""The experiment control panel: choose protocol, link, workload, repetitions → run.

    from wirelab.viz import experiment_panel
    experiment_panel()                 # in a notebook cell

While a click's runs go, a live plot (``live``) shows the current run: goodput, cwnd,
RTT and the link's queue as they come, the prediction drawn before the first byte.
After each click the table (measured mean ± CI beside predicted) and the plot
update (drawn off pyplot: see ``offscreen`` for the blank plot this avoids); the backend used and the ``tc`` commands that built the link are
shown. A failing run never breaks the panel: its reason is in the table
("why failed"), and an error before any run (a bad value, no root for the
chosen backend) is printed in the panel itself. Each click is its own
experiment folder under ``folder`` (default ``data/panel``).
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path

from .. import transports
from ..experiment import Experiment
from ..link import BACKENDS
from .live import LivePlot, live_png
from .offscreen import show_figure, new_figure

__all__ = ["ExperimentPanel", "experiment_panel", "panel_figure"]


class ExperimentPanel:
    """The widgets and what the Run button does (``run()`` can be called directly, e.g. in tests)."""

    def __init__(self, *, proto=None, rate: str = "10mbit", delay: str = "0,20ms",
                 loss: str = "0", size: str = "200KB", reps: int = 2, engine="wirelab",
                 backend: str = "auto", max_wait: str = "0.5s", folder: str | Path = "data/panel",
                 timeout: float | None = None, progress: bool = True, live: bool = True):
        # start-up: ipywidgets only when one is made
        import ipywidgets as w

        engines = ["wirelab", "iperf3"]
        self._engine_object = None
        if not isinstance(engine, str):           # an engine object (tests, custom engines)
            self._engine_object = engine
            engines.append(getattr(engine, "name", "custom"))
            engine = engines[-1]
        self.folder, self.timeout, self.progress = Path(folder), timeout, progress
        if proto is None:                         # the assignment's transports (tcp, udp, udpr)
            proto = tuple(t.name for t in transports.transports() if t.ppcb)
        self.controls = {
            "proto": w.SelectMultiple(options=list(transports.names()), value=tuple(proto),
                                      description="protocols", rows=len(transports.names())),
            "rate": w.Text(value=rate, description="rate(s)", placeholder="10mbit,20mbit"),
            "delay": w.Text(value=delay, description="delay(s)", placeholder="0,20ms"),
            "loss": w.Text(value=loss, description="loss(es)", placeholder="0,1%"),
            "size": w.Text(value=size, description="file size", placeholder="200KB"),
            "max_wait": w.Text(value=max_wait, description="udpr MAX_WAIT"),
            "reps": w.IntSlider(value=reps, min=1, max=10, description="repetitions"),
            "engine": w.Dropdown(options=engines, value=engine, description="engine"),
            "backend": w.Dropdown(options=list(BACKENDS),
                                  value=backend, description="backend"),
        }
        # each transport's own options (a window...): text, a list sweeps it; empty: its default
        self.option_controls = {
            o.name: w.Text(value="", description=o.name, placeholder=",".join(map(str, o.choices)) or str(o.default),
                           tooltip=o.help)
            for o in transports.options().values() if o.sweep}
        self.button = w.Button(description="Run", button_style="primary", icon="play")
        self.status = w.HTML(value="")
        self.output = w.Output()
        self.button.on_click(lambda _: self.run())
        # the live plot: the current run while it goes (a widget's value, redrawn off pyplot)
        self.live_image = w.Image(format="png", value=live_png([])) if live else None
        self.live = LivePlot(self._show_live) if live else None
        self.frame = None            # the runs of the last click (None before)
        self.table = None            # what the panel showed as its table
        self.figure = None           # ... and its plot (a Figure pyplot does not know)
        self.png: bytes | None = None
        self.log: list[str] = []     # every line the panel printed (also for tests)
        self.error: str | None = None
        c = self.controls
        self.widget = w.VBox([
            w.HBox([c["proto"], w.VBox([c["rate"], c["delay"], c["loss"]])]),
            w.HBox([w.VBox([c["size"], c["max_wait"], *self.option_controls.values()]),
                    w.VBox([c["reps"], c["engine"], c["backend"]])]),
            w.HBox([self.button, self.status]), *([self.live_image] if live else []), self.output])

    def experiment(self):

        c = self.controls
        name = f"panel-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"   # one folder per click
        return Experiment(name, proto=list(c["proto"].value) or ["tcp"],
                          size=c["size"].value, rate=c["rate"].value, delay=c["delay"].value,
                          loss=c["loss"].value, max_wait=c["max_wait"].value or None,
                          reps=c["reps"].value, engine=c["engine"].value, backend=c["backend"].value,
                          timeout=self.timeout,
                          **{name: box.value for name, box in self.option_controls.items() if box.value.strip()})

    def run(self):
        """Run the sweep the widgets describe; show table, plot, backend and tc commands."""
        # start-up: IPython only when run() runs
        from IPython.display import display

        # start-up: numpy, pandas, pyarrow only when run() runs
        from ..experiment import pretty, run, summarize

        self.button.disabled = True
        self.status.value = "running…"
        self.output.clear_output(wait=True)
        self.error = None
        self.log.clear()

        def say(text: str) -> None:
            self.log.append(text)
            print(text)

        with self.output:
            try:
                exp = self.experiment()
                engine = self._engine_object if exp.engine == getattr(self._engine_object, "name", None) \
                    else exp.engine
                if self.live is not None:
                    self.live.start()
                try:
                    self.frame = run(exp, out=self.folder / exp.name, engine=engine, progress=self.progress,
                                     on_event=self.live)
                finally:
                    if self.live is not None:
                        self.live.stop()          # the last run's whole stream, drawn once more
                frame = self.frame
                self.table = pretty(summarize(frame))
                display(self.table)
                backends = ", ".join(sorted(set(frame["backend"].dropna().astype(str))))
                say(f"backend: {backends}    results: {self.folder / exp.name}/")
                commands = frame["tc_commands"].dropna() if "tc_commands" in frame else []
                if len(commands):
                    say("link built with (last run):\n  " + "\n  ".join(str(commands.iloc[-1]).splitlines()))
                self.figure = panel_figure(frame)
                self.png = show_figure(self.figure)
                bad = int((frame["status"] != "ok").sum())
                note = f", {bad} not ok (see 'why failed')" if bad else ""
                self.status.value = f"done: {len(frame)} runs{note}"
            except Exception as err:         # noqa: BLE001 - the panel must survive anything
                self.error = f"{type(err).__name__}: {err}"
                say(f"⚠ {self.error}")
                self.status.value = "failed: see below"
            finally:
                self.button.disabled = False
        return self.frame

    def _show_live(self, png: bytes) -> None:
        self.live_image.value = png


def panel_figure(frame):
    """The panel's plot of a sweep's runs: one panel per protocol against the first swept
    parameter, coloured by the second. Drawn off pyplot: in JupyterLab another thread
    redraws pyplot's figures while a button callback runs, and the plot came out blank
    (see ``offscreen``)."""
    # start-up: numpy, pandas, pyarrow only when panel_figure() runs
    from .sweep import plot_by_protocol, swept_columns

    swept = [c for c in swept_columns(frame) if c != "engine"]
    x = swept[0] if swept else "rate_bps"
    hue = swept[1] if len(swept) > 1 else None
    figure = new_figure()
    plot_by_protocol(frame, x, hue=hue, figure=figure)
    return figure


def experiment_panel(*, run_first: bool = False, **options):
    """Build the panel and return its widget (display it by leaving it last in a cell).
    ``run_first``: run once with these values now, so the cell (and a static report,
    which shows the panel's last state) has a table and a plot before anyone clicks."""
    panel = ExperimentPanel(**options)
    panel.widget.panel = panel          # reach the controller from the widget
    if run_first:
        panel.run()
    return panel.widget
