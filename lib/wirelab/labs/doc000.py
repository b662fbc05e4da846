"""Document 000 (thesis): TCP vs UDP for radar samples on a 1 Gbit/s LAN, as tables: measurement,
the model and the document's numbers side by side. Notebook ``07-offered-load-and-buffers``::

    lab = doc000.sweeps(quick=QUICK)       # offered, offered-tick, buffers, transmission, burst-<size>
    runs = lab["offered"].run(f"{OUT}/offered")
    table = offered_load_table(runs, doc000.reference("seed000_offered_load"))
    ticks = offered_load_table(lab["offered-tick"].run(f"{OUT}/offered-tick"), pacing="tick")
    pacing_table(table, ticks); maxima_table(table, ticks)
    buffers_table(runs, doc000.reference("seed000_buffers"))
    buffers_1s_table(runs, doc000.reference("seed000_buffers_1s"))
    transmission_table(runs)

Appendix B's tables (offered load, pacing, maxima): ``labs.offered_load``, whose names this
module hands on. Its clocks (one-way delay across two of them): ``labs.clocks``. Its split of a radar
sweep across processing boards: ``partition_table`` (``model.partition``).

How the thesis paced its sender: a ``java.util.Timer`` ran the sending task once a
second (``scheduleAtFixedRate(task, 0, 1000)``), which sent that second's bytes back to
back and stopped early if sending took a whole second (``transfer.pacing.TickPacer``);
the ``offered`` sweep spaces packets evenly instead, ``offered-tick`` sends as the thesis
did. Its 10 MB buffers (figures 27-28) were the kernel's socket buffers, allowed by
raising ``net.core.rmem_max``/``wmem_max`` as root; the burst sweeps raise them too
(``Sweep.buffer_caps``) and put them back after.

Each takes the results of a sweep (one row per run, ``run``'s table) and
returns one row per setting: the measured mean with its 95 % interval, the
model's value for exactly that setting (``pred_*``, from ``wirelab.model``:
``load``, ``window``, ``efficiency``), and, where the document measured the same
setting, its number (``doc_*``). The thesis's "Sänd-tid/paket" (send time per packet) is
*not* a one-way delay: in its final code (Appendix A) the receiver's ``DataHandler`` sent each
packet's 8-byte stamp back over UDP to port 8888 on the sender, whose ``TimeCalculator``
subtracted the stamp from its own clock: the packet's way there, the receiver's queue and
handler thread, and a tiny datagram's way back. These tables call it ``doc_echo_ms`` and set
it beside the kit's one-way ``delay_ms`` only as the larger quantity it is (one clock, no
offset: the echo needs none). Document 000 worked in MB/s (10⁶ B/s) and ms;
so do these tables. The document's link was a 1 Gbit/s LAN between two PCs:
what a sweep here runs on is in its ``backend`` and ``rate_bps`` columns.
"""
from __future__ import annotations

import math

import pandas as pd

from ..errors import UsageError
from ..experiment import Experiment
from ..experiment.stats import summarize
from ..link import capabilities
from ..model import predict
from ..model.load import burst_delay, packet_delay, udp_datagrams_buffered
from ..model.partition import parallel_split, round_robin
from .boards import partition_table
from ..model.window import granted_buffer
from ..reference import load_reference
from .clocks import two_clocks
from .offered_load import (MB, WMEM_DEFAULT, _mean_ci, _ok, load_prediction, maxima_table, offered_load_table,
                           pacing_table, with_document_rows)
from .thesis_findings import early_trials_table, findings_table
from .lab import Exercise, Lab, Link, Sweep, values

__all__ = ["EXERCISES", "exercises", "sweeps", "reference", "two_clocks", "load_prediction", "offered_load_table",
           "pacing_table", "maxima_table", "with_document_rows", "early_trials_table", "findings_table", "buffers_table", "buffers_1s_table", "transmission_table", "partition_table",
           "MB", "WMEM_DEFAULT", "FULL", "QUICK"]

#: The document's values (its Appendix B and figures 22-32), on its 1 Gbit/s LAN.
FULL = {
    "backend": "auto",              # offered load and buffers: namespaces + tbf with root, else loopback
    "wire_backend": "userspace",    # transmission delay and clocks: a link that serialises every frame
    "link": "1gbit", "packets": [1400, 40000, 65000],
    "offered": ["0.1MB/s", "0.3MB/s", "1MB/s", "3MB/s", "10MB/s", "30MB/s", "100MB/s", "300MB/s", "500MB/s",
                "1000MB/s"],                   # 500 MB/s: where Appendix B has its maxima
    "tick_packets": [1400, 40000, 65000],      # the thesis's pacing: each second's bytes at a 1 s tick
    "tick_offered": ["0.1MB/s", "1MB/s", "10MB/s", "100MB/s", "500MB/s", "1000MB/s"],   # Appendix B's levels
    "seconds": 2, "repetitions": 3,                # each paced run
    "congestion": "cubic",          # its Linux Mint 17 ran CUBIC; this machine may default to BBR
    "buffer_packets": [1500, 64000], "sndbufs": [1500, 64000, 163840], "rcvbufs": [1500, 163840],  # figs 22-23
    "burst": {1400: [2240, 10000000], 65000: [65000, 10000000]},   # figures 27-28: smallest, largest buffers
    "delay_rates": ["10mbit", "100mbit"], "delay_packets": [1400, 40000, 65000],
    "delay_load": "1.5mbit",        # light: no queue, so the delay is transmission (+ the work of the link)
    "clock_offset": 0.0037, "clock_drift": 45,     # s and ppm: host a's clock is ahead and runs fast
    "echo_rounds": 400, "echo_interval": 0.01,     # s between echo rounds: the fit needs time to see a drift
}
QUICK = {"packets": [1400, 65000], "offered": ["1MB/s", "10MB/s", "500MB/s"], "tick_packets": [65000], "tick_offered": ["10MB/s", "500MB/s"],
         "seconds": 1, "repetitions": 1, "buffer_packets": [64000], "sndbufs": [1500, 163840],
         "burst": {1400: [2240, 10000000]}, "delay_rates": ["10mbit"], "delay_packets": [1400, 65000],
         "echo_rounds": 250}


def sweeps(*, quick: bool = False, **given) -> Lab:
    """``offered`` (Appendix B, evenly paced), ``offered-tick`` (the same, each second's bytes at a
    1 s timer tick, as the thesis sent), ``buffers`` (figures 22-23), ``transmission`` (figure 32,
    on ``wire_backend``: loopback without root) and ``burst-<packet>`` (figures 27-28: 10 MB offered
    at one 1 s tick, as the thesis sent it, with the kernel's buffer caps raised to the largest buffer
    as root).
    ``lab.values["wire_backend"]`` is also where the clocks run."""
    v = values(FULL, QUICK, quick, given)
    if not capabilities().root:      # no namespaces: the loopback relays stand in for the wire
        v["wire_backend"] = "loopback"
    common = dict(engine="wirelab", backend=v["backend"], rate=v["link"], cc=v["congestion"], reps=v["repetitions"])
    made = {
        "offered": Experiment("07-offered", proto=["tcp", "udp"], workload="load", packet=v["packets"],
                              offered=v["offered"], time=v["seconds"], **common),
        "offered-tick": Experiment("07-offered-tick", proto=["tcp", "udp"], workload="load",
                                   packet=v["tick_packets"], offered=v["tick_offered"], time=v["seconds"], **common),
        "buffers": Experiment("07-buffers", proto=["tcp", "udp"], workload="time", time=v["seconds"],
                              packet=v["buffer_packets"], sndbuf=v["sndbufs"], rcvbuf=v["rcvbufs"], **common),
        "transmission": Experiment("07-transmission", proto="udp", workload="load", offered=v["delay_load"],
                                   packet=v["delay_packets"], rate=v["delay_rates"], time=max(v["seconds"], 2),
                                   reps=v["repetitions"], backend=v["wire_backend"]),
    }
    for size, buffers in v["burst"].items():      # figures 27-28: 10 MB offered in one second
        made[f"burst-{size}"] = Experiment(f"07-burst-{size}", proto=["tcp", "udp"], workload="load",
                                           offered="10MB/s", time=1, packet=size, sndbuf=buffers, rcvbuf=buffers,
                                           **common)
    # figures 27-28's 10 MB buffers: the kernel must allow them (the thesis raised its caps as root)
    caps = max(b for buffers in v["burst"].values() for b in buffers) if v["burst"] else None
    # the thesis's timer sent Appendix B and figures 27-28: each second's bytes at a 1 s tick
    lab = {name: Sweep(exp, {"pacing": "tick"} if name == "offered-tick" or name.startswith("burst") else {},
                       buffer_caps=caps if name.startswith("burst") else None) for name, exp in made.items()}
    return Lab(lab, v)


def reference(name: str = "seed000_offered_load") -> pd.DataFrame:
    """One of the document's tables: ``seed000_offered_load``, ``seed000_buffers``, ``seed000_buffers_1s``."""
    if not name.startswith("seed000_"):
        raise UsageError(f"{name!r} is not one of document 000's tables",
                         "seed000_offered_load, seed000_buffers or seed000_buffers_1s")
    return load_reference(name)


def buffers_table(frame: pd.DataFrame, reference: pd.DataFrame | None = None, *,
                  rmem_max: float | None = None, wmem_max: float | None = None) -> pd.DataFrame:
    """Rate and share received per (proto, packet, SO_SNDBUF, SO_RCVBUF) requested: measured,
    the buffers the kernel granted (measured and the model: doubled, capped at the machine's
    ``wmem_max`` / ``rmem_max``, at least the minimum), how many datagrams the receive buffer
    holds (model), and document 000's figures 22–23 (Mbit/s, MB received of 1000 sent): each of its
    settings, those this run did not measure after the others (``measured`` False, the model's
    columns filled)."""
    runs = _ok(frame)
    keys = ["proto", "packet_bytes", "sndbuf_bytes", "rcvbuf_bytes"]
    summary = summarize(runs, metrics=["goodput_bps", "received_fraction", "sndbuf_granted_bytes",
                                       "rcvbuf_granted_bytes"], by=keys + ["rate_bps"])
    out = summary[keys + ["n"]].copy()
    out = pd.concat([out, _mean_ci(summary, "goodput_bps", 1e-6, "rate_Mbps"),
                     _mean_ci(summary, "received_fraction", 100.0, "received_pct")], axis=1)
    out["sndbuf_granted"] = summary["sndbuf_granted_bytes_mean"]
    out["rcvbuf_granted"] = summary["rcvbuf_granted_bytes_mean"]
    out["first_error"] = summary["first_error"]
    if reference is not None:        # every setting of figures 22-23, the measured ones first
        doc = reference.rename(columns={"protocol": "proto", "rate_mbps": "doc_rate_Mbps"})
        doc["doc_received_pct"] = 100.0 * doc["received_MB"] / doc["sent_MB"]
        doc = doc[keys + ["doc_rate_Mbps", "doc_received_pct"]]
        out = with_document_rows(out.merge(doc, how="left", on=keys), doc, keys)
    snd = {} if wmem_max is None else {"cap": float(wmem_max)}
    rcv = {} if rmem_max is None else {"cap": float(rmem_max)}
    out["pred_sndbuf_granted"] = [granted_buffer(v, "snd", **snd) for v in out["sndbuf_bytes"]]
    out["pred_rcvbuf_granted"] = [granted_buffer(v, "rcv", **rcv) for v in out["rcvbuf_bytes"]]
    out["pred_datagrams_buffered"] = [
        udp_datagrams_buffered(g, predict("udp", 1e9, payload=int(s)).fragments) if p == "udp" else math.nan
        for p, s, g in zip(out["proto"], out["packet_bytes"], out["pred_rcvbuf_granted"])]
    # a datagram's memory must fit the send buffer at once, or send() fails (ENOBUFS)
    out["pred_note"] = ["a datagram larger than the send buffer cannot be sent" if p == "udp" and s > g else ""
                        for p, s, g in zip(out["proto"], out["packet_bytes"], out["pred_sndbuf_granted"])]
    return out


def buffers_1s_table(frame: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Document 000's figures 27–28: 10 MB offered in one second with the smallest and largest
    buffers. Per (proto, packet, SO_SNDBUF, SO_RCVBUF): MB received of what was offered and each
    packet's mean one-way delay (measured), beside the document's bytes received and its "send
    time" (``doc_echo_ms``: stamp to echo, a round trip; see the module's docstring), for every
    setting of the figures (those this run did not measure after the others, ``measured`` False)."""
    runs = _ok(frame)
    keys = ["proto", "packet_bytes", "sndbuf_bytes", "rcvbuf_bytes"]
    summary = summarize(runs, metrics=["bytes_received", "bytes_offered", "one_way_delay_mean_s",
                                       "rcvbuf_granted_bytes"], by=keys)
    out = summary[keys + ["n"]].copy()
    out["offered_MB"] = summary["bytes_offered_mean"] / MB
    out = pd.concat([out, _mean_ci(summary, "bytes_received", 1 / MB, "received_MB"),
                     _mean_ci(summary, "one_way_delay_mean_s", 1e3, "delay_ms")], axis=1)
    out["rcvbuf_granted"] = summary["rcvbuf_granted_bytes_mean"]
    if reference is not None:
        rows = []
        for proto in ("tcp", "udp"):
            part = reference[keys[1:]].copy()
            part["proto"] = proto
            part["doc_received_MB"] = reference[f"received_bytes_{proto}"] / MB
            part["doc_echo_ms"] = reference[f"send_time_ms_{proto}"]
            rows.append(part)
        doc = pd.concat(rows, ignore_index=True)
        out = with_document_rows(out.merge(doc, how="left", on=keys), doc, keys)
    return out


def transmission_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Transmission delay = size / C: each packet's one-way delay at a light load (no queue),
    smallest and median, against the model (all the datagram's frames serialised at C:
    ``model.load.packet_delay``), per (rate, packet)."""
    runs = _ok(frame)
    summary = summarize(runs, metrics=["one_way_delay_min_s", "one_way_delay_median_s"],
                        by=["backend", "proto", "rate_bps", "packet_bytes"])
    out = summary[["backend", "proto", "rate_bps", "packet_bytes", "n"]].copy()
    out["min_ms"] = summary["one_way_delay_min_s_mean"] * 1e3
    out = pd.concat([out, _mean_ci(summary, "one_way_delay_median_s", 1e3, "median_ms")], axis=1)
    preds = [predict(p, r, payload=int(s), wire="emulated", timestamps=p == "tcp")
             for p, r, s in zip(out["proto"], out["rate_bps"], out["packet_bytes"])]
    out["pred_fragments"] = [p.fragments for p in preds]
    out["pred_wire_bytes"] = [p.wire_bytes for p in preds]
    out["pred_ms"] = [packet_delay(p.wire_bytes, r) * 1e3 for p, r in zip(preds, out["rate_bps"])]
    out["median_over_pred"] = out["median_ms"] / out["pred_ms"]
    return out


def exercises(link: Link | None = None) -> dict[str, Exercise]:
    """The lab's exercises (``wirelab.exercises.check``); on ``link`` (a student's) where one depends on
    a link's rate, else on the document's 1 Gbit/s Ethernet."""
    rate, on = (link.rate_bps, link.rate()) if link else (1e9, "1 Gbit/s")
    return {
        "fragments_65000": Exercise(
            "Into how many IPv4 fragments does one 65000-byte UDP datagram go at MTU 1500?",
            lambda: predict("udp", 1e9, payload=65000).fragments, 0.0,
            "65008 B of UDP datagram, 1480 B of it per fragment"),
        "udp_65000_gbe_MBps": Exercise(
            f"Predicted UDP goodput in MB/s (10⁶ B/s) with 65000 B datagrams on a real {on} Ethernet?",
            lambda: predict("udp", rate, payload=65000).goodput_bps / 8e6, 0.005,
            "η counts the IP header and the 38 B of Ethernet framing of every fragment"),
        "transmission_65000_gbe_ms": Exercise(
            f"Transmission delay (ms) of one 65000 B UDP datagram, all its fragments, at {on} (real wire)?",
            lambda: predict("udp", rate, payload=65000).wire_bytes * 8 / rate * 1e3, 0.005,
            "size on the wire × 8 / C, every fragment with its headers"),
        "rcvbuf_granted_163840": Exercise(
            "You ask for SO_RCVBUF = 163840 B; what does getsockopt report (rmem_max = 4 MiB)?",
            lambda: granted_buffer(163840, "rcv"), 0.0, "Linux doubles the request for its bookkeeping"),
        "datagrams_in_327680": Exercise(
            "About how many 64000 B datagrams (fragmented at MTU 1500) fit a 327680 B receive buffer?",
            lambda: udp_datagrams_buffered(327680, predict("udp", 1e9, payload=64000).fragments), 0.0,
            "each fragment costs about 2304 B of buffer (its truesize), not its length"),
        "drift_one_minute_ms": Exercise(
            "A clock runs 45 ppm fast. How many ms does it gain in one minute?",
            lambda: 45e-6 * 60 * 1e3, 0.001, "1 ppm is 1 µs per second"),
        "tick_burst_delay_ms": Exercise(
            "A sender puts 100 datagrams of 1400 B (1442 B each on the wire, as tbf counts them) into a "
            "1 Gbit/s link at one timer tick. Their mean delay (ms), transmission included?",
            lambda: burst_delay(100, 1442, 1e9) * 1e3, 0.005,
            "packet i waits for the i before it: mean of i · 1442 · 8 / C over i = 0..99, plus its own"),
        "parallel_overlap_8_MB": Exercise(
            "Document 000 splits a 10 MB sweep across 8 boards in parallel, 5 % overlap per board. How many "
            "MB of overlap go over the link?",
            lambda: parallel_split(10e6, 8).overlap_bytes / MB, 0.001, "X · 0.05 · N"),
        "round_robin_latency_8_ms": Exercise(
            "Round robin over 8 boards, one 400 ms sweep in 8 sectors, each board computing a sector in 400 ms: "
            "the worst wait (ms) of a sector's result?",
            lambda: round_robin(10e6, 8, sweep_s=0.4, compute_s=0.4).worst_latency_s * 1e3, 0.001,
            "computing time − sweep time / N"),
        "asymmetry_offset_error_ms": Exercise(
            "Delays are 10 ms a→b and 2 ms b→a. By how many ms is the echo-exchange offset wrong?",
            lambda: (10 - 2) / 2, 0.001, "θ = ((t2 − t1) + (t3 − t4)) / 2 assumes both directions alike"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()
