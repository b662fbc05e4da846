"""Latency under load against the model, and what watching a run costs it (issue 26).

1. RTT under load / predicted (base + 8·Q/C) for three queue sizes (20, 50, 100 full
   frames on 10 Mbit/s), the probe's median and 95th percentile, for each load and backend:
   UDP above the rate on tbf (namespaces; the test suite's 15 % check), four CUBIC flows on
   tbf (namespaces: the queue is on the sender's own interface) and on the userspace link
   (a queue between the hosts, like a router), one CUBIC flow on a 20 ms link.
2. The live path's cost: the same runs with no event stream (the engine alone), with the
   run's stream (every run now has one), and with the stream and a live plot redrawn every
   0.5 s: TCP bulk on an unshaped loopback link (CPU-bound: the worst case) and on a
   10 Mbit/s, 20 ms link; goodput ratios against the run with no stream, alternated, median
   of ``--reps``.

Run (as root for part 1): .venv/bin/python bench/bench_latency.py [--reps 5] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wirelab import link as links
from wirelab.experiment import Experiment, run
from wirelab.experiment.events import EventStream
from wirelab.analysis.latency import loaded_latency
from wirelab.engines.wirelab import WirelabEngine

LOADS = [("udp above the rate", "namespaces", 0, "udp rate=15mbit window=2MB start=0.5s time=2.5s", 3.0, 0.5),
         ("4 cubic flows", "namespaces", 0, "tcp streams=4 cc=cubic start=1s time=4s", 5.0, 1.0),
         ("4 cubic flows", "userspace", 0, "tcp streams=4 cc=cubic start=1s time=4s", 5.0, 1.0),
         ("1 cubic flow, 20 ms", "userspace", "20ms", "tcp cc=cubic start=1s time=4s", 5.0, 1.0)]


def latency_part(out: Path) -> None:
    print("RTT under load / predicted (base + 8·Q/C), the probe's median and 95th percentile, 10 Mbit/s")
    for name, backend, delay, bulk, seconds, settle in LOADS:
        exp = Experiment(f"bloat-{backend}-{name.replace(' ', '-').replace(',', '')}", workload="time", time=seconds,
                         rate="10mbit", delay=delay, queue=[20, 50, 100], reps=1, backend=backend,
                         flows=f"{bulk} + ping interval=20ms")
        frame = run(exp, out=out / exp.name, progress=False)
        table = loaded_latency(frame, out / exp.name, settle_s=settle)
        cells = "  ".join(f"Q={q // 1514:3d}: {m / p:.3f} / {u / p:.3f}" for q, m, u, p in zip(
            table["queue_bytes"], table["loaded_rtt_s"], table["loaded_rtt_p95_s"], table["pred_loaded_rtt_s"]))
        print(f"  {name:20} {backend:10}  {cells}")


def _once(spec, setting, mode: str, plot) -> float:
    """One run's receiver goodput on a fresh link: ``mode`` none (no stream), stream, live."""
    engine = WirelabEngine()
    with links.open(spec, backend="auto" if os.geteuid() == 0 else "loopback") as link:
        if mode == "none":
            record = engine.run(setting, link, deadline=time.monotonic() + 60)
        else:
            listeners = [plot] if mode == "live" else []
            with EventStream(None, "bench", listeners=listeners) as events:
                record = engine.run(setting, link, deadline=time.monotonic() + 60, events=events)
    return record["goodput_bps"]


def cost_part(reps: int) -> None:
    from wirelab.viz.live import LivePlot
    print(f"the live path's cost: goodput / goodput with no stream (median of {reps}, alternated)")
    for label, rate, delay in (("unshaped loopback (CPU-bound)", None, 0), ("10 Mbit/s, 20 ms", "10mbit", "20ms")):
        exp = Experiment("cost", proto="tcp", workload="time", time="3s", rate=rate, delay=delay, reps=1, cc="cubic")
        setting = exp.settings()[0]
        plot = LivePlot(every_s=0.5).start()
        found = {"none": [], "stream": [], "live": []}
        try:
            for _ in range(reps):
                for mode in found:
                    found[mode].append(_once(setting.link, setting, mode, plot))
        finally:
            plot.stop()
        base = statistics.median(found["none"])
        print(f"  {label:30} no stream {base / 1e6:8.2f} Mbit/s   stream {statistics.median(found['stream']) / base:.3f}"
              f"   stream + live plot {statistics.median(found['live']) / base:.3f}   ({plot.draws} frames drawn)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="wirelab-bench-latency-"))
    shutil.rmtree(out, ignore_errors=True)
    if os.geteuid() == 0:
        latency_part(out)
    else:
        print("RTT under load: needs root (namespaces, the userspace link); skipped")
    cost_part(args.reps)
    print(f"results kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
