"""The live plot: frames from its drawing process while events come, the final frame equal to the
saved stream's redraw, a new run starting afresh, and Ctrl-C in a watched run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


from wirelab.experiment.events import read_events
from polling import wait_until
from wirelab.viz.live import LivePlot, live_png

ROOT = Path(__file__).resolve().parents[1]


def _events(run: str, n: int) -> list[dict]:
    """A made-up run's stream: start with its link and prediction, ``n`` intervals, end."""
    start = {"event": "start", "t": 100.0, "run_id": run, "label": f"tcp {run}", "predicted": {"pred_goodput_bps": 9e6},
             "link": {"forward": {"rate_bps": 1e7, "delay_s": 0.02, "jitter_s": 0, "loss": 0, "duplicate": 0,
                                  "reorder": 0},
                      "reverse": {"rate_bps": 1e7, "delay_s": 0.02, "jitter_s": 0, "loss": 0, "duplicate": 0,
                                  "reorder": 0}, "mtu": 1500}}
    body = []
    for i in range(n):
        t = 100.1 + 0.1 * i
        body += [{"event": "interval", "source": "sender", "t": t, "bps": 9e6, "cwnd_segments": 10 + 5 * i,
                  "srtt_s": 0.04 + 0.002 * i, "bytes": 112500 * (i + 1)},
                 {"event": "interval", "source": "receiver", "t": t, "bps": 8.9e6, "bytes": 111000 * (i + 1)},
                 {"event": "queue", "source": "link", "t": t, "backlog_bytes": 1000.0 * i}]
    return [start, *body, {"event": "end", "t": 100.2 + 0.1 * n, "status": "ok"}]


def test_frames_come_from_the_drawer_and_the_last_is_the_saved_streams_redraw():
    shown = []
    plot = LivePlot(shown.append, every_s=0.05).start()
    first, second = _events("r1", 5), _events("r2", 8)
    try:
        for event in first:
            plot(event)
        plot.drawn.wait(60)                             # the drawer starts (imports matplotlib), then draws
        assert plot.draws >= 1 and shown[-1] == live_png(first)    # the drawer's frame: the same function
        for event in second:                            # a new run: the plot starts over
            plot(event)
    finally:
        final = plot.stop()
    assert plot.runs == 2 and final == live_png(second) and shown[-1] == final
    assert plot._drawer is None                         # the drawing process is gone


def test_an_empty_plot_shows_where_the_measurements_will_go():
    assert live_png([])[:8] == b"\x89PNG\r\n\x1a\n"


WATCH = """
import sys
from wirelab.experiment import Experiment
from wirelab.viz.live import watch
exp = Experiment("ctrl-c", proto="tcp", workload="time", time="20s", rate="10mbit", reps=1, backend="loopback")
frame = watch(exp, out=sys.argv[1])
print("RETURNED", None if frame is None else len(frame), flush=True)
"""


def test_ctrl_c_in_a_watched_run_stops_it_and_keeps_its_stream(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WATCH, str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    try:
        runs = tmp_path / "out" / "runs"
        intervals, drawers = 0, set()

        def measuring_and_drawing():      # both: ten intervals in the stream on disk, and the drawer started
            nonlocal intervals
            streams = list(runs.glob("*.events.jsonl")) if runs.is_dir() else []
            intervals = sum(e["event"] == "interval" for e in read_events(streams[0])) if streams else 0
            drawers.update(_children(proc.pid, "wirelab.viz.live"))
            return (intervals >= 10 and drawers) or proc.poll() is not None
        wait_until(measuring_and_drawing, 60, "ten intervals and a drawer", every=0.1)
        assert intervals >= 10 and drawers, proc.stderr.read() if proc.poll() is not None else "no intervals or no drawer"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped by Ctrl-C" in out and "RETURNED None" in out           # no run finished: nothing saved
    (stream,) = runs.glob("*.events.jsonl")
    events = read_events(stream)
    assert events[-1]["event"] == "end" and events[-1]["status"] == "interrupted"
    assert sum(e["event"] == "interval" for e in events) >= 10                # what was measured is kept
    assert all(not Path(f"/proc/{pid}").exists() for pid in drawers)         # the drawer ended with it


def _children(pid: int, marker: str) -> set[int]:
    """Processes whose parent is ``pid`` and whose command line holds ``marker``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent == pid and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.add(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


class Reporter:
    """A fake engine that reports three intervals of the receiver."""
    name = "reporter"
    emits_events = True

    def run(self, setting, link, *, deadline, seed, workdir, events=None):
        for n in range(3):
            events.emit({"event": "interval", "source": "receiver", "seq": n, "bytes": 1000 * (n + 1), "bps": 8e5})
        return {"ok": True, "goodput_bps": 8e5}


def test_the_control_panel_shows_each_run_live_and_ends_on_the_last_runs_stream(tmp_path):
    from wirelab.experiment import load
    from wirelab.viz import ExperimentPanel
    panel = ExperimentPanel(engine=Reporter(), folder=tmp_path, progress=False, reps=1, proto=("tcp",),
                            delay="0", backend="loopback")
    frame = panel.run()
    assert panel.error is None and len(frame) == 1
    assert panel.live.runs == 1 and panel.live._drawer is None
    saved = load(next(tmp_path.iterdir()))
    assert panel.live_image.value == live_png(read_events(next(tmp_path.iterdir()) / saved["events_file"].iloc[0]))
