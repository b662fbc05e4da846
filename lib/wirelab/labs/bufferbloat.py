"""Latency under load: a queue filling, the round trip it adds, and the model's full queue (notebook 11).

No source document asks this, every speed test's user does: how much later does a
packet arrive while a bulk transfer fills the link? A tail-drop queue of Q bytes in
front of a C bit/s line makes the last packet in it wait 8·Q / C (``model.delay``);
a loss-based TCP (CUBIC, Reno) fills it before it backs off, so a probe beside it
sees the base RTT plus up to that (Gettys & Nichols, "Bufferbloat: Dark Buffers in the
Internet", CACM 2012; flent's RRUL: four TCP flows and a ping). AQMs keep the queue
short instead (CoDel, RFC 8289; PIE, RFC 8033; fq_codel, RFC 8290), where the kernel
has them. RFC 6349's buffer delay percentage is the same rise, measured by TCP itself.

Sweeps (``sweeps``):

    watch      one CUBIC transfer on a 10 Mbit/s, 20 ms link, watched live (``viz.watch``):
               slow start, the queue filling, the RTT following it
    bloat      the queue's size swept under four CUBIC flows and a probe (``ping``); needs
               root (on loopback each port has its own relay: no queue to share)
    overload   UDP offered above the link's rate, the queue's size swept: its records wait in
               the queue, their one-way delay shows it full (runs without root too)
    qdiscs     one queue size under each discipline this kernel has (tbf's FIFO, pfifo,
               fq_codel): namespaces only, without a delay where the kernel has no netem

``latency_table`` and ``overload_table`` set measured beside predicted; ``plot_bufferbloat``
draws the curve (predicted: a line; measured: points, the median and the 95th percentile).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import units
from ..experiment import Experiment
from ..analysis.latency import SETTLE_S, loaded_latency, one_way_under_load
from ..link import capabilities
from ..model.delay import loaded_rtt, queueing_delay
from ..model.rfc6349 import buffer_delay
from .lab import Exercise, Lab, Link, Sweep, values

__all__ = ["FULL", "QUICK", "sweeps", "latency_table", "overload_table", "plot_bufferbloat", "exercises", "EXERCISES"]

#: The lab's values. ``queues``: full frames the link's queue holds; ``bulk``: the load beside the probe.
FULL = {"rate": "10mbit", "delay": "20ms", "queues": (20, 50, 100, 200), "time": "10s", "reps": 3,
        "bulk": "tcp streams=4 cc=cubic", "probe_interval": "20ms", "watch_time": "10s", "watch_queue": 100,
        "offered": "15mbit", "overload_time": "3s", "qdiscs": ("fifo", "pfifo", "fq_codel"), "qdisc_queue": 100,
        "backend": "auto"}
#: Quick mode (CI, about 30 s): fewer queues, shorter runs, two bulk flows, one repetition.
QUICK = {"queues": (20, 60), "time": "2s", "reps": 1, "watch_time": "2s", "overload_time": "1s",
         "qdiscs": ("fifo", "pfifo"), "bulk": "tcp streams=2 cc=cubic"}


def _seconds(text) -> float:
    return units.parse_time(text)


def _flows(v: dict, time_s: float) -> str:
    """The bulk flows from 1 s on (the probe's first second is the base RTT), and the probe."""
    return f"{v['bulk']} start=1s time={time_s - 1:g}s + ping interval={v['probe_interval']}"


def sweeps(*, quick: bool = False, **given) -> Lab:
    """The lab's sweeps (module docstring), made with ``FULL`` (``QUICK`` in quick mode) and ``given``.
    ``values["notes"]`` says what this machine cannot run, and why."""

    v = values(FULL, QUICK, quick, given)
    machine, notes = capabilities(), []
    time_s = _seconds(v["time"])
    found = {
        "watch": Sweep(Experiment("11-watch", proto="tcp", workload="time", time=v["watch_time"], rate=v["rate"],
                                  delay=v["delay"], queue=v["watch_queue"], cc="cubic", reps=1, backend=v["backend"])),
        "bloat": Sweep(Experiment("11-bloat", workload="time", time=v["time"], rate=v["rate"], delay=v["delay"],
                                  queue=list(v["queues"]), reps=v["reps"], flows=_flows(v, time_s),
                                  backend=v["backend"])),
        # a socket buffer above the largest queue: the sender's own buffer must not be what bounds it
        "overload": Sweep(Experiment("11-overload", proto="udp", workload="load", offered=v["offered"],
                                     time=v["overload_time"], rate=v["rate"], delay=v["delay"],
                                     queue=list(v["queues"]), sndbuf="4MB", reps=v["reps"], backend=v["backend"])),
    }
    if not machine.root:
        notes.append("bloat: without root the probe cannot share a queue with the bulk flows (each port has "
                     "its own relay): its runs are skipped; overload measures the queue without root")
    have = [q for q in v["qdiscs"] if q == "fifo" or machine.qdiscs.get(q)]
    notes += [f"qdiscs: this kernel has no {q} ({machine.reasons.get('qdisc ' + q, 'needs root')})"
              for q in v["qdiscs"] if q not in have]
    if machine.root and len(have) > 1:
        delay = v["delay"] if machine.netem else 0      # a discipline under a delay needs netem
        if not machine.netem:
            notes.append("qdiscs: no netem here, so the disciplines are compared without the link's delay")
        found["qdiscs"] = Sweep(Experiment("11-qdiscs", workload="time", time=v["time"], rate=v["rate"], delay=delay,
                                           queue=v["qdisc_queue"], qdisc=[None if q == "fifo" else q for q in have],
                                           reps=v["reps"], flows=_flows(v, time_s), backend="namespaces"))
    elif machine.root:
        notes.append("qdiscs: only tbf's own FIFO here: nothing to compare")
    return Lab(found, {**v, "notes": notes})


def latency_table(frame: pd.DataFrame, folder) -> pd.DataFrame:
    """One row per run of ``bloat`` or ``qdiscs`` (``analysis.latency.loaded_latency``), with the
    queue in packets, the discipline, and RFC 6349's buffer delay % of the probe's median. The
    rounds count as loaded from 1 s after the bulk flows start (half their time in a short run)."""
    loaded_s = float(frame["time_s"].max()) - 1.0                # the bulk flows start at 1 s
    table = loaded_latency(frame, folder, settle_s=min(SETTLE_S, loaded_s / 2))
    if table.empty:
        return table
    first = frame.drop_duplicates("run_id").set_index("run_id")
    table["queue_packets"] = table["run_id"].map(first["queue_packets"])
    table["qdisc"] = table["run_id"].map(first["qdisc"]).fillna("fifo") if "qdisc" in first else "fifo"
    table["buffer_delay_pct"] = [buffer_delay(loaded, base) if base and base == base and loaded == loaded else math.nan
                                 for loaded, base in zip(table["loaded_rtt_s"], table["base_rtt_s"])]
    return table


def overload_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per ``overload`` run: the one-way delay of records waiting in a full queue beside
    the link's delay plus 8·Q / C (``analysis.latency.one_way_under_load``)."""
    table = one_way_under_load(frame[frame["status"] == "ok"]) if not frame.empty else pd.DataFrame()
    if not table.empty:
        first = frame.drop_duplicates("run_id").set_index("run_id")
        table["queue_packets"] = table["run_id"].map(first["queue_packets"])
    return table


def plot_bufferbloat(table: pd.DataFrame, *, measured: str = "loaded_rtt_s", upper: str | None = "loaded_rtt_p95_s",
                     base: str = "base_rtt_s", ax=None, title: str = "RTT under load against the queue's size"):
    """Measured (median as points, ``upper`` as a bar above them) beside the model's base + 8·Q/C
    (a line over the queue sizes), per discipline where the table has several. ``base``: the
    column (or a number, seconds) the prediction starts from."""
    # start-up: matplotlib only when plot_bufferbloat() runs
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(8, 4))[1]
    ok = table.dropna(subset=[measured])
    if ok.empty:
        ax.text(0.5, 0.5, "nothing measured (see the notes)", ha="center", va="center", transform=ax.transAxes)
        return ax
    groups = ok.groupby("qdisc") if "qdisc" in ok and ok["qdisc"].nunique() > 1 else [(None, ok)]
    for i, (kind, part) in enumerate(groups):
        color = f"C{i}"
        kb = part["queue_bytes"] / 1e3
        low = part[measured] * 1e3
        ax.plot(kb, low, "o", color=color, label=f"measured{' ' + kind if kind else ''}: median")
        if upper and upper in part:
            ax.vlines(kb, low, part[upper] * 1e3, color=color, alpha=0.6,
                      label=f"measured{' ' + kind if kind else ''}: up to the 95th percentile")
    rate = float(ok["rate_bps"].iloc[0])
    start = float(np.nanmedian(ok[base])) if isinstance(base, str) else float(base)
    sizes = np.linspace(0, float(ok["queue_bytes"].max()) * 1.1, 50)
    ax.plot(sizes / 1e3, [loaded_rtt(start, q, rate) * 1e3 for q in sizes], "k--",
            label="predicted: base + 8·Q / C (a full tail-drop queue)")
    ax.set(xlabel="queue limit Q (kB)", ylabel="delay (ms)", title=title)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def exercises(link: Link | None = None) -> dict[str, Exercise]:
    """The lab's exercises (``wirelab.exercises.check``), on ``link`` (a student's rate and one-way
    delay) where one depends on a link, else on the lab's 10 Mbit/s with 20 ms each way."""
    rate, delay = (link.rate_bps, link.delay_s) if link else (10e6, 0.020)
    base, full = 2 * delay, 100 * 1514
    return {
        "full_queue_wait": Exercise(
            f"A {rate / 1e6:g} Mbit/s link's queue holds 100 full frames of 1514 B. How long (ms) does the last "
            "one wait?", lambda: queueing_delay(full, rate) * 1e3, 0.01,
            "8 · Q / C: bits in the queue over the line's rate"),
        "loaded_rtt": Exercise(
            f"Base RTT {base * 1e3:g} ms, a 64 kB queue on a {rate / 1e6:g} Mbit/s line, filled by a bulk flow: "
            "RTT under load (ms)?", lambda: loaded_rtt(base, 64e3, rate) * 1e3, 0.01, "base + 8 · Q / C"),
        "buffer_delay": Exercise(
            f"RFC 6349's buffer delay percentage when a bulk flow fills that 100-frame queue on a link with a "
            f"{base * 1e3:g} ms base RTT (the RTT stays at its full-queue value)?",
            lambda: buffer_delay(loaded_rtt(base, full, rate), base), 0.01,
            "(average − baseline) / baseline × 100, the average being base + 8 · Q / C"),
        "one_bdp": Exercise(
            f"The rule of thumb gives a router a queue of one bandwidth-delay product. How many kB on a "
            f"{rate / 1e6:g} Mbit/s link with a {base * 1e3:g} ms RTT?",
            lambda: rate * base / 8 / 1e3, 0.01, "C · RTT / 8 bytes (Villamizar & Song 1994); a full one adds one RTT"),
    }


#: The exercises on the lab's own numbers.
EXERCISES = exercises()
