"""Watch a run as it happens: goodput, cwnd, RTT and the bottleneck queue, redrawn while it goes.

    frame = watch(Experiment("tcp-live", proto="tcp", workload="time", time="10s",
                             rate="10mbit", delay="20ms", cc="cubic", reps=1))

``watch`` runs the experiment in the cell and shows one figure that is redrawn every
``every_s`` from the run's event stream (``wirelab.experiment.events``): the model's
prediction is drawn before the first byte (goodput, the base RTT and the RTT of a full
queue, the queue's limit), the measurements join it as they come. The cell returns
when the run ends, with the final figure drawn from the whole stream: the figure
``live_figure`` draws from the saved stream (``read_events``) is that very one. Ctrl-C
stops the run cleanly; the runs done and the stopped run's stream stay saved, and
``watch`` returns what was saved.

``LivePlot`` is the part a panel embeds: a listener for ``run(on_event=...)`` that
keeps the current run's events, and a thread that asks for a redraw at most every
``every_s`` and only when something new came, handed over as PNG bytes. The frames
while the run goes are drawn by a process of their own (``python -m wirelab.viz.live``,
at a lower priority: a frame costs 0.2-0.5 s of CPU on two busy cores, and drawn here it
would hold the interpreter lock the run's receiver thread needs); it is given each new
event once and answers each request with the frame of all it has. The final frame is
drawn here, by the same function. Predicted is drawn as lines (dashed), measured as
solid lines and points.
"""
from __future__ import annotations

import io
import json
import os
import select
import struct
import subprocess
import sys
import threading

from ..link import LinkSpec
from ..link.cleanup import end_process

__all__ = ["LivePlot", "live_figure", "live_png", "watch", "EVERY_S"]

#: Seconds between two redraws at most (a slower drawer sets its own pace: one frame at a time).
EVERY_S = 0.5
DPI = 72
#: The drawing process's niceness: it draws with what CPU the run leaves.
NICE = 10
#: How long a frame may take before the live plot gives up on its drawer (the run goes on).
FRAME_TIMEOUT_S = 30.0


def _series(events, event: str, source: str | None, key: str):
    """{(flow, stream): ([t], [value])} of one kind of record, time since the run's start."""
    t0 = events[0]["t"] if events else 0.0
    out: dict = {}
    for e in events:
        if e.get("event") == event and (source is None or e.get("source") == source) and e.get(key) is not None:
            xs, ys = out.setdefault((e.get("flow"), e.get("stream")), ([], []))
            xs.append(e["t"] - t0)
            ys.append(e[key])
    return out


def _name(key) -> str:
    flow, stream = key
    return "" if flow is None else f" {flow}.{stream}"


def live_figure(events: list[dict], figure=None):
    """The live plot of one run's events (its ``start`` first), as a ``Figure`` off pyplot (a fixed
    layout: no layout engine and no tight bounding box to solve at every redraw)."""
    # start-up: matplotlib only when live_figure() runs
    from matplotlib.figure import Figure

    if figure is None:
        figure = Figure(figsize=(10, 5.6))
        figure.subplots_adjust(left=0.07, right=0.98, top=0.92, bottom=0.09, hspace=0.12, wspace=0.2)
    good, cwnd, rtt, queue = figure.subplots(2, 2, sharex=True).flat
    start = next((e for e in events if e.get("event") == "start"), {})
    end = next((e for e in events if e.get("event") == "end"), None)
    predicted = start.get("predicted") or {}
    spec = LinkSpec.from_dict(start["link"]) if start.get("link") else None
    rate = spec.forward.rate_bps if spec else None
    limit = spec.queue_for(spec.forward) if spec else None
    # the prediction, before the first byte
    if predicted.get("pred_goodput_bps"):
        good.axhline(predicted["pred_goodput_bps"] / 1e6, color="k", ls="--", lw=1.2, label="predicted")
    if spec is not None:
        rtt.axhline(spec.rtt_s * 1e3, color="k", ls=":", lw=1.2, label="predicted: base RTT")
        if rate:
            rtt.axhline((spec.rtt_s + 8 * limit / rate) * 1e3, color="k", ls="--", lw=1.2,
                        label="predicted: base + full queue")
            queue.axhline(limit / 1e3, color="k", ls="--", lw=1.2, label="queue limit")
    # the measurements, as they came
    for key, (xs, ys) in _series(events, "interval", "receiver", "bps").items():
        good.plot(xs, [y / 1e6 for y in ys], "-", lw=1.5, label=f"measured: receiver{_name(key)}")
    for key, (xs, ys) in _series(events, "interval", "sender", "bps").items():
        good.plot(xs, [y / 1e6 for y in ys], "-", lw=0.8, alpha=0.5, label=f"sender{_name(key)}")
    for key, (xs, ys) in _series(events, "interval", "sender", "cwnd_segments").items():
        cwnd.plot(xs, ys, "-", lw=1.5, label=f"cwnd{_name(key)}")
    for key, (xs, ys) in _series(events, "interval", "sender", "srtt_s").items():
        rtt.plot(xs, [y * 1e3 for y in ys], "-", lw=1.5, label=f"measured: TCP srtt{_name(key)}")
    for key, (xs, ys) in _series(events, "rtt", "probe", "rtt_s").items():
        rtt.plot(xs, [y * 1e3 for y in ys], ".", ms=3, label=f"measured: probe{_name(key)}")
    for key, (xs, ys) in _series(events, "queue", "link", "backlog_bytes").items():
        queue.plot(xs, [y / 1e3 for y in ys], "-", lw=1.5, label="measured: backlog")
    good.set(ylabel="goodput (Mbit/s)")
    cwnd.set(ylabel="cwnd (segments)")
    rtt.set(ylabel="RTT (ms)")
    queue.set(ylabel="queue (kB)")
    for ax in (rtt, queue):
        ax.set_xlabel("time since the run started (s)")
    for ax in (good, cwnd, rtt, queue):
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
        else:
            ax.text(0.5, 0.5, "nothing reported", ha="center", va="center", transform=ax.transAxes, color="0.5")
    state = "running…" if end is None else (end.get("status") or "done")
    figure.suptitle(f"{start.get('label', 'run')}  ({state})", fontsize=10)
    return figure


def live_png(events: list[dict]) -> bytes:
    """``live_figure`` as PNG bytes (what a live plot shows, and a saved stream redraws alike)."""
    buffer = io.BytesIO()
    live_figure(events).savefig(buffer, format="png", dpi=DPI, facecolor="white")
    return buffer.getvalue()


class LivePlot:
    """A listener for ``run(on_event=...)`` that has the current run redrawn at most every
    ``every_s`` (by its drawing process) and hands each PNG to ``show(png_bytes)``."""

    def __init__(self, show=None, *, every_s: float = EVERY_S):
        self.show, self.every_s = show, every_s
        self.events: list[dict] = []      # the current run's (a new ``start`` begins a new run)
        self.runs = 0
        self.draws = 0
        self.drawn = threading.Event()     # set at each frame shown: wait on it rather than poll ``draws``
        self.png: bytes | None = None
        self._lock = threading.Lock()
        self._version = self._drawn = 0
        self._sent = 0                     # events of the current run the drawer has ...
        self._drawer_run = 0               # ... and which run that is
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawer: subprocess.Popen | None = None

    def __call__(self, event: dict) -> None:
        with self._lock:
            if event.get("event") == "start":
                self.events, self.runs = [], self.runs + 1
            self.events.append(event)
            self._version += 1

    def _shown(self, png: bytes, version: int) -> bytes:
        self.png, self._drawn, self.draws = png, version, self.draws + 1
        self.drawn.set()
        if self.show is not None:
            self.show(png)
        return png

    def draw(self) -> bytes:
        """Draw what came so far here and now, show it, return the PNG."""
        with self._lock:
            events, version = list(self.events), self._version
        return self._shown(live_png(events), version)

    def start(self) -> "LivePlot":
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="wirelab-live-plot", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):      # a timer: redraw only when something came
            if self._version == self._drawn:
                continue
            with self._lock:
                fresh = self.runs != self._drawer_run  # a new run began: the drawer starts over
                if fresh:
                    self._drawer_run, self._sent = self.runs, 0
                new, version = self.events[self._sent:], self._version
                self._sent = len(self.events)
            png = self._ask(new, fresh)
            if png is None:
                return                                 # the drawer is gone: the final frame still comes
            self._shown(png, version)

    def _ask(self, new: list[dict], fresh: bool) -> bytes | None:
        """Give the drawer the new events (``fresh``: of a new run) and read back its frame."""
        lines = ([b"reset"] if fresh else []) + [json.dumps(e).encode() for e in new] + [b"draw"]
        if self._drawer is None:      # started for the first frame (always a run's first: ``fresh``)
            self._drawer = subprocess.Popen([sys.executable, "-m", "wirelab.viz.live"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
                                            preexec_fn=lambda: os.nice(NICE))
        try:
            self._drawer.stdin.write(b"\n".join(lines) + b"\n")
            header = _read(self._drawer.stdout, 4)
            return _read(self._drawer.stdout, struct.unpack("!I", header)[0]) if header else None
        except (OSError, ValueError):
            return None

    def stop(self) -> bytes:
        """Stop redrawing, end the drawer, draw the final figure here (the last run's whole stream)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=FRAME_TIMEOUT_S)
            self._thread = None
        if self._drawer is not None:
            try:
                self._drawer.stdin.close()             # it ends at the end of its input
            except OSError:
                pass
            end_process(self._drawer)
            self._drawer = None
        return self.draw()


def _read(stream, count: int, timeout: float = FRAME_TIMEOUT_S) -> bytes | None:
    """Exactly ``count`` bytes from the drawer within ``timeout``, or None."""
    chunks, left = [], count
    fd = stream.fileno()
    while left:
        if not select.select([fd], [], [], timeout)[0]:
            return None
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve(inp=None, out=None) -> int:
    """The drawing process: each input line is an event (JSON), ``reset`` (a new run) or ``draw``
    (answered with the frame of every event so far: 4 bytes of length, then the PNG)."""
    inp, out = inp or sys.stdin.buffer, out or sys.stdout.buffer
    events: list[dict] = []
    for line in inp:
        line = line.strip()
        if line == b"reset":
            events = []
        elif line == b"draw":
            png = live_png(events)
            out.write(struct.pack("!I", len(png)) + png)
            out.flush()
        elif line:
            events.append(json.loads(line))
    return 0


def watch(experiment, *, out=None, every_s: float = EVERY_S, **options):
    """Run ``experiment`` (``wirelab.experiment.run``'s ``out`` and options) with its live plot in
    this cell; returns the results table (after Ctrl-C: what was saved, or None)."""
    # start-up: IPython only when watch() runs
    from IPython.display import Image, display

    # start-up: numpy, pandas, pyarrow only when watch() runs
    from ..experiment import load, run
    from ..experiment.runner import default_folder

    handle = display(Image(data=live_png([]), format="png"), display_id=True)     # None outside IPython
    show = None if handle is None else (lambda png: handle.update(Image(data=png, format="png")))
    plot = LivePlot(show, every_s=every_s).start()
    folder = out if out is not None else default_folder(experiment)
    try:
        return run(experiment, out=folder, on_event=plot, **{"progress": False, **options})
    except KeyboardInterrupt:
        print(f"stopped by Ctrl-C: every finished run is saved in {folder} and the stopped run's "
              "stream in its runs/ folder; run the cell again to complete the sweep")
        try:
            return load(folder)
        except Exception:          # noqa: BLE001 - nothing was saved yet
            return None
    finally:
        plot.stop()


if __name__ == "__main__":
    sys.exit(serve())
