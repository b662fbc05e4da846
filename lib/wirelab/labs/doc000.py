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

Its clocks (one-way delay across two of them): ``labs.clocks``. Its split of a radar
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
from ..model.load import burst_delay, packet_delay, received_rate, udp_datagrams_buffered
from ..model.partition import parallel_split, round_robin
from .boards import partition_table
from ..model.window import granted_buffer
from ..reference import load_reference
from .clocks import two_clocks
from .thesis_findings import early_trials_table, findings_table
from .lab import Exercise, Lab, Link, Sweep, values

__all__ = ["EXERCISES", "exercises", "sweeps", "reference", "two_clocks", "load_prediction", "offered_load_table",
           "pacing_table", "maxima_table", "early_trials_table", "findings_table", "buffers_table", "buffers_1s_table", "transmission_table", "partition_table",
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

#: Document 000's unit: megabytes (10⁶ B) per second.
MB = 1e6


#: Linux's default SO_SNDBUF (net.core.wmem_default): what a UDP socket may have waiting.
WMEM_DEFAULT = 212992


def load_prediction(proto: str, packet: int, offered_bps: float, rate_bps: float, *, mtu: int = 1500,
                    timestamps: bool = True, sndbuf: float = WMEM_DEFAULT, pacing: str = "even") -> dict:
    """The model for one offered load: received rate (min(offered, η·C)), and what it would be
    if a router dropped fragments independently; what is not delivered; one write's delay
    (transmission of all its packets; above capacity plus the backlog). Emulated wire (IP + 14 B).

    The bottleneck here is the sender's own interface (tbf on it, as document 000's 1 Gbit/s
    NIC): a full queue pushes back into the socket, so a UDP sender is held back rather than
    dropped, and its backlog is at most its send buffer (``sndbuf``, granted). TCP's backlog
    is as much as autotuning lets its send buffer grow: not modelled (NaN) above capacity.
    ``pacing="tick"``: each second's bytes leave in one burst (document 000's timer), and a
    packet waits for the burst ahead of it (``model.load.burst_delay``, the backlog at most
    ``sndbuf`` for UDP; for TCP the whole burst, which autotuning lets its buffer hold): the
    wait if the link were the only queue and the burst were handed to it at once."""
    p = predict(proto, rate_bps, mtu=mtu, payload=int(packet), timestamps=timestamps and proto == "tcp",
                wire="emulated")
    eta, fragments = p.efficiency, p.fragments
    over = offered_bps > eta * rate_bps
    backlog = (sndbuf if proto == "udp" else math.nan) if over else 0.0
    received = received_rate(offered_bps, eta, rate_bps)
    delay = math.nan if backlog != backlog else packet_delay(p.wire_bytes, rate_bps, queue_bytes=backlog)
    if pacing == "tick" and not over:          # one burst a second, below the link's capacity
        burst = math.ceil(offered_bps / 8 / packet - 1e-9)
        delay = burst_delay(burst, p.wire_bytes, rate_bps, backlog_bytes=sndbuf if proto == "udp" else math.inf)
    return {"pred_efficiency": eta, "pred_fragments": fragments, "pred_wire_bytes": p.wire_bytes,
            "pred_received_bps": received,
            "pred_received_independent_bps": received_rate(offered_bps, eta, rate_bps, fragments=fragments,
                                                           independent=True) if proto == "udp" else received,
            "pred_undelivered": 1.0 - received / offered_bps if offered_bps else 0.0,
            "pred_delay_s": delay}


def _ok(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty or "status" not in frame:
        raise UsageError("no runs in this table", "pass the table run() returned")
    out = frame.copy()
    if "bytes_received" not in out:          # what a failed-only or foreign table lacks
        return out
    if "offered_bps" in out and out["offered_bps"].notna().any():
        offered = out["bytes_offered"].where(out["bytes_offered"] > 0)
        out["undelivered"] = (1.0 - out["bytes_received"] / offered).clip(lower=0.0)
        out["sent_fraction"] = (out["bytes_sent"] / offered).clip(upper=1.0)
        sent = out["packets_sent"].where(out["packets_sent"] > 0)
        out["lost_fraction"] = (out["lost"] / sent).where(out["proto"] == "udp") if "lost" in out else math.nan
    sent = out["bytes_sent"] - out.reindex(columns=["send_queue_bytes"]).fillna(0)["send_queue_bytes"]  # never left
    out["received_fraction"] = out["bytes_received"] / sent.where(sent > 0)
    return out


def _mean_ci(summary: pd.DataFrame, metric: str, factor: float, name: str) -> pd.DataFrame:
    return pd.DataFrame({name: summary[f"{metric}_mean"] * factor, f"{name}_ci": summary[f"{metric}_ci"] * factor})


def offered_load_table(frame: pd.DataFrame, reference: pd.DataFrame | None = None, *,
                       sndbuf: float = WMEM_DEFAULT, pacing: str = "even") -> pd.DataFrame:
    """Received MB/s, what was not delivered, and each packet's delay against the offered load,
    per (proto, packet, offered): measured (mean, 95 % CI; ``delay_ms`` one way), the model (for
    the sender's ``pacing``), document 000 (App. B; ``doc_echo_ms`` its stamp-to-echo round trip). Not delivered = not sent (``sent_fraction`` < 1: the
    sender was held back or could not keep the pace) + lost (``lost_fraction`` of what was sent, UDP)."""
    runs = _ok(frame)
    if pacing == "tick" and "bytes_received" in runs:   # a second's bytes arrive in a burst: count them per
        runs["goodput_bps"] = 8 * runs["bytes_received"] / runs["time_s"]   # second of the run, as the thesis
    metrics = ["goodput_bps", "undelivered", "sent_fraction", "lost_fraction", "one_way_delay_mean_s"]
    summary = summarize(runs, metrics=metrics, by=["proto", "packet_bytes", "offered_bps", "rate_bps"])
    out = summary[["proto", "packet_bytes", "rate_bps", "n"]].copy()
    out.insert(2, "offered_MBps", (summary["offered_bps"] / 8 / MB).round(6))   # 0.1 MB/s, not 0.1000…01
    out = pd.concat([out, _mean_ci(summary, "goodput_bps", 1 / 8 / MB, "received_MBps"),
                     _mean_ci(summary, "undelivered", 1.0, "undelivered"),
                     _mean_ci(summary, "one_way_delay_mean_s", 1e3, "delay_ms")], axis=1)
    out["sent_fraction"] = summary["sent_fraction_mean"]
    out["lost_fraction"] = summary["lost_fraction_mean"]
    out["first_error"] = summary["first_error"]
    out["pacing"] = pacing
    model = [load_prediction(p, int(s), o, r, sndbuf=sndbuf, pacing=pacing) for p, s, o, r in
             zip(summary["proto"], summary["packet_bytes"], summary["offered_bps"], summary["rate_bps"])]
    model = pd.DataFrame(model, index=summary.index)
    out["pred_received_MBps"] = model["pred_received_bps"] / 8 / MB
    out["pred_received_independent_MBps"] = model["pred_received_independent_bps"] / 8 / MB
    out["pred_undelivered"] = model["pred_undelivered"]
    out["pred_delay_ms"] = model["pred_delay_s"] * 1e3
    out["pred_fragments"] = model["pred_fragments"]
    if reference is not None:
        doc = reference.rename(columns={"protocol": "proto", "received_MBps": "doc_received_MBps",
                                        "send_time_per_packet_ms": "doc_echo_ms"})
        out = out.merge(doc, how="left", left_on=["proto", "packet_bytes", "offered_MBps"],
                        right_on=["proto", "packet_bytes", "offered_MBps"])
    return out.sort_values(["proto", "packet_bytes", "offered_MBps"]).reset_index(drop=True)


#: What a pacing table shows of each side (measured and the model).
_PACED = ["received_MBps", "sent_fraction", "lost_fraction", "delay_ms", "pred_delay_ms"]


def pacing_table(even: pd.DataFrame, tick: pd.DataFrame) -> pd.DataFrame:
    """Two ``offered_load_table``s side by side, per (proto, packet, offered) both measured:
    evenly paced (``*_even``) against each second's bytes at a 1 s tick (``*_tick``, how the
    thesis sent), with the document's numbers, which were made the tick's way."""
    keys = ["proto", "packet_bytes", "offered_MBps"]
    doc = [c for c in ("doc_received_MBps", "doc_echo_ms") if c in even]
    left = even[keys + ["pred_received_MBps"] + _PACED + doc]
    right = tick[keys + _PACED]
    out = left.merge(right, on=keys, suffixes=("_even", "_tick"))
    return out[keys + ["pred_received_MBps"] + [f"{c}_{side}" for c in _PACED for side in ("even", "tick")] + doc]


def maxima_table(even: pd.DataFrame, tick: pd.DataFrame | None = None, *,
                 offered_MBps: float | None = None) -> pd.DataFrame:
    """Appendix B's maxima, per protocol and packet size the most that arrived and at which offered
    load (1400 B: 37.92 TCP, 24.62 UDP at 100 MB/s; 40000 B: 118.9, 105.2 and 65000 B: 119.9, 117.6
    at 500 MB/s), beside the most that arrived here, evenly paced and at a 1 s tick, and the model:
    η·C on this link (tbf charges IP + 14 B) and on the thesis's real 1 Gbit/s Ethernet (+ 38 B).
    ``offered_MBps``: compare at that one level instead."""
    doc = reference("seed000_offered_load")
    if offered_MBps is not None:
        doc = doc[doc["offered_MBps"] == offered_MBps]
    doc = doc.loc[doc.groupby(["protocol", "packet_bytes"])["received_MBps"].idxmax()]
    rate = float(even["rate_bps"].iloc[0]) if len(even) else 1e9
    rows = []
    for row in doc.itertuples():
        found = {}
        for side, table in (("even", even), ("tick", tick)):
            if table is None:
                continue
            match = table[(table["proto"] == row.protocol) & (table["packet_bytes"] == row.packet_bytes)]
            if offered_MBps is not None:
                match = match[match["offered_MBps"] == offered_MBps]
            best = match.loc[match["received_MBps"].idxmax()] if match["received_MBps"].notna().any() else None
            found[f"received_MBps_{side}"] = math.nan if best is None else float(best["received_MBps"])
            found[f"at_offered_MBps_{side}"] = math.nan if best is None else float(best["offered_MBps"])
        here = predict(row.protocol, rate, payload=int(row.packet_bytes), wire="emulated",
                       timestamps=row.protocol == "tcp").goodput_bps / 8 / MB
        cable = predict(row.protocol, 1e9, payload=int(row.packet_bytes), wire="real",
                        timestamps=row.protocol == "tcp").goodput_bps / 8 / MB
        rows.append({"proto": row.protocol, "packet_bytes": row.packet_bytes, "doc_at_offered_MBps": row.offered_MBps,
                     "doc_received_MBps": row.received_MBps, **found, "pred_received_MBps": here,
                     "pred_real_wire_MBps": cable})
    return pd.DataFrame(rows)


def buffers_table(frame: pd.DataFrame, reference: pd.DataFrame | None = None, *,
                  rmem_max: float | None = None, wmem_max: float | None = None) -> pd.DataFrame:
    """Rate and share received per (proto, packet, SO_SNDBUF, SO_RCVBUF) requested: measured,
    the buffers the kernel granted (measured and the model: doubled, capped at the machine's
    ``wmem_max`` / ``rmem_max``, at least the minimum), how many datagrams the receive buffer
    holds (model), and document 000's figures 22–23 (Mbit/s, MB received of 1000 sent)."""
    runs = _ok(frame)
    keys = ["proto", "packet_bytes", "sndbuf_bytes", "rcvbuf_bytes"]
    summary = summarize(runs, metrics=["goodput_bps", "received_fraction", "sndbuf_granted_bytes",
                                       "rcvbuf_granted_bytes"], by=keys + ["rate_bps"])
    out = summary[keys + ["n"]].copy()
    out = pd.concat([out, _mean_ci(summary, "goodput_bps", 1e-6, "rate_Mbps"),
                     _mean_ci(summary, "received_fraction", 100.0, "received_pct")], axis=1)
    out["sndbuf_granted"] = summary["sndbuf_granted_bytes_mean"]
    out["rcvbuf_granted"] = summary["rcvbuf_granted_bytes_mean"]
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
    out["first_error"] = summary["first_error"]
    if reference is not None:
        doc = reference.rename(columns={"protocol": "proto", "rate_mbps": "doc_rate_Mbps"})
        doc["doc_received_pct"] = 100.0 * doc["received_MB"] / doc["sent_MB"]
        out = out.merge(doc[keys + ["doc_rate_Mbps", "doc_received_pct"]], how="left", on=keys)
    return out


def buffers_1s_table(frame: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Document 000's figures 27–28: 10 MB offered in one second with the smallest and largest
    buffers. Per (proto, packet, SO_SNDBUF, SO_RCVBUF): MB received of what was offered and each
    packet's mean one-way delay (measured), beside the document's bytes received and its "send
    time" (``doc_echo_ms``: stamp to echo, a round trip; see the module's docstring)."""
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
        out = out.merge(pd.concat(rows), how="left", on=keys)
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
