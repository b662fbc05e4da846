"""Document 002 (Politecnico di Torino): goodput predicted from the headers, against nttcp.

Efficiency η = S / (S + L4 + L3 + L2) with L2 = 38 B on a real Ethernet wire:
UDP 1472 / 1538 = 0.957, TCP 1460 / 1538 = 0.949, 1448 / 1538 = 0.941 with
timestamps; 9.41 Mbit/s measured by nttcp at the receiver on 10 Mbit/s; the
FTTC line with a PPPoE MTU of 1492 (its table: ``seed002_goodput``). Notebooks
``01-overhead-and-goodput`` (every number predicted by ``wirelab.model``) and
``04-reading-a-capture`` (the 1514 B frames and 1448 B payloads read from the wire)
redo it. Here: its table, its exercises, and its sweeps.

Where UDP loses data as S grows, and why: ``payload_loss`` (``payload_sweep`` declares its
sweep here, ``where_data_is_lost`` reads it there).

The document's other measurements, each a sweep of ``sweeps`` and a table that sets
the document's number, ours and the model's side by side (``wire_table``,
``fttc_table``, ``nttcp_table``): TCP and UDP over a 10 Mbit/s cable (a link that
charges a real wire's 38 B a frame: ``wire="real"``), the FTTC line both ways
(21 Mbit/s up, 54 down, PPPoE), nttcp's two lines on a short and a long run (the
sender's figure times the writes, not the wire), and nttcp's UDP end markers in a
capture (``markers``: notebook 04 reads them).
"""
from __future__ import annotations

import math

import pandas as pd

from .. import units
from ..capture.udp_ending import udp_end_markers
from ..experiment import Experiment
from ..experiment.stats import summarize
from ..link import burst_at_start, capabilities
from ..link.spec import LinkSpec
from ..model import predict
from ..reference import load_reference
from ..wire.headers import frame_bytes, ip_and_udp
from .lab import Exercise, Lab, Link, Sweep, values
from .payload_loss import EXCESS, boundaries, boundary_table, column_value, where_data_is_lost

__all__ = ["EXERCISES", "exercises", "sweeps", "FULL", "QUICK", "reference", "payload_sweep", "where_data_is_lost",
           "boundaries", "boundary_table", "EXCESS", "DOC_PPPOE_PAYLOAD", "wire_table", "fttc_table", "nttcp_table", "nttcp_runs_table", "nttcp_lines_table", "adapter_table", "ADAPTER", "markers_table", "NTTCP", "SIZES",
           "QUICK_SIZES"]


def reference() -> pd.DataFrame:
    """The document's table: η, predicted and measured Mbit/s per scenario, protocol and direction."""
    return load_reference("seed002_goodput")


#: Payloads around both boundaries: the 646 B of document 002, and each fragment step.
SIZES = (64, 128, 256, 384, 512, 646, 800, 1000, 1200, 1472, 1473, 2952, 2953, 4432, 4433, 8000)
QUICK_SIZES = (64, 646, 1472, 1473, 2953)


def payload_sweep(name: str = "udp-payload", *, sizes=SIZES, rate="100mbit", loss="1%", time="2s",
                  wire="real", queue=1000, reps: int = 1, backend: str = "auto", **more) -> Experiment:
    """UDP bulk for ``time`` at each payload of ``sizes`` over a ``rate`` link of ``wire``,
    with a per-packet ``loss`` so fragments show their price. At 100 Mbit/s this host's
    packet-rate ceiling comes into view (at 10 Mbit/s, document 002's rate, it may not:
    ``boundaries`` predicts where it should). ``queue``: 1000 frames, a Linux NIC's
    txqueuelen, as behind document 002's sender; it holds the sender's whole socket buffer,
    so the kernel holds the sender back. A shorter queue than the socket buffer lets the
    sender outrun it, and ``where_data_is_lost`` says "queue": on this host, at 10 Mbit/s
    with the default 100 ms (125 kB), from between 1200 and 1280 B on (measured), since a
    212 kB send buffer, counted in memory (~2.2 kB a datagram of any size up to a page),
    lets ~95 datagrams out at once, and 95 × (S + 66 B) outgrows 125 kB there."""
    return Experiment(name, proto="udp", workload="time", time=time, packet=list(sizes), rate=rate,
                      loss=loss, loss_reverse=0, wire=wire, queue=queue, reps=reps, backend=backend, **more)


#: The document's values: the payload sweep's (``payload_sweep``), the cable's (``cable_*``: 10 Mbit/s,
#: timed runs), the FTTC line's (up and down), nttcp's short and long runs (its short run wrote for
#: 0.03 s, its 5 MB run for 4.21 s; send buffers: the kernel's autotuning, and a fixed 64 kB request,
#: which holds about what nttcp's kernel held), and the UDP end markers (3, 2 s apart).
FULL = {"sizes": SIZES, "rate": "100mbit", "loss": "1%", "time": "2s", "wire": "real", "queue": 1000, "reps": 1,
        "backend": "auto", "cable_rate": "10mbit", "cable_time": "5s",
        "fttc": ["21mbit", "54mbit"], "fttc_time": "5s",
        "nttcp_times": ["0.03s", "4.21s"], "nttcp_sndbufs": [None, "64KB"],
        "markers": 3, "marker_gap": "2s", "marker_time": "1s",
        # H2 → H1: its sender fed a USB adapter at Gb/s, which stored and forwarded at 10 Mbit/s: a queue
        # the sender can outrun (its buffer is unknown; 20 frames, far less than a socket buffer)
        "adapter_queue": 20}
#: Quick mode: one size on each side of each boundary, 1 s runs (2 s on the cable: its 1 % needs no
#: more), nttcp's runs with the fixed buffer only, markers 0.5 s apart.
QUICK = {"sizes": QUICK_SIZES, "time": "1s", "cable_time": "2s", "fttc_time": "1s", "nttcp_times": ["0.03s", "1s"],
         "nttcp_sndbufs": ["64KB"], "marker_gap": "0.5s"}


def sweeps(*, quick: bool = False, **given) -> Lab:
    """``payload``: UDP bulk at each payload size (``payload_sweep``, read with ``where_data_is_lost``);
    ``cable``: TCP and UDP for ``cable_time`` over a 10 Mbit/s real wire (``wire_table``); ``fttc-up``,
    ``fttc-down``: the FTTC line each way, PPPoE, real wire (``fttc_table``); ``nttcp``: TCP bulk for each
    of ``nttcp_times`` with each of ``nttcp_sndbufs`` (``nttcp_table``); ``markers``: UDP ending in nttcp's
    end markers, captured. Without root (the loopback relays) UDP only: a TCP relay ends the sender's
    connection and paces its bytes, so no TCP segment crosses the shaped wire (``values["notes"]``)."""
    v = values(FULL, QUICK, quick, given)
    root = capabilities().root
    protos = ["tcp", "udp"] if root else ["udp"]
    v["notes"] = [] if root else [
        "without root the link is a loopback relay: UDP datagrams cross it charged as real-wire frames, but a "
        "TCP relay ends the sender's connection and only paces its bytes, so no TCP segment of the sender "
        "crosses a shaped wire and TCP's 9.41 cannot be measured (run with sudo for namespaces)"]
    # a NIC's 1000-frame queue, as behind the document's sender: it holds a UDP sender's socket buffer
    cable = dict(workload="time", wire="real", queue=v["queue"], reps=v["reps"], backend=v["backend"])
    up, down = v["fttc"]
    made = {
        "cable": Sweep(Experiment("002-cable", proto=protos, time=v["cable_time"], rate=v["cable_rate"], **cable)),
        "fttc-up": Sweep(Experiment("002-fttc-up", proto=protos, time=v["fttc_time"], rate=up, rate_reverse=down,
                                    pppoe=True, **cable)),
        "fttc-down": Sweep(Experiment("002-fttc-down", proto=protos, time=v["fttc_time"], rate=down,
                                      rate_reverse=up, pppoe=True, **cable)),
        "markers": Sweep(Experiment("002-markers", proto="udp", time=v["marker_time"], rate=v["cable_rate"],
                                    capture=root, **cable),
                         {"end_markers": v["markers"], "end_marker_gap_s": units.parse_time(v["marker_gap"])}),
        "adapter": Sweep(Experiment("002-adapter", proto=protos, time=v["cable_time"], rate=v["cable_rate"],
                                    **dict(cable, queue=v["adapter_queue"]))),
        "payload": Sweep(payload_sweep(**{k: v[k] for k in ("sizes", "rate", "loss", "time", "wire", "queue", "reps",
                                                            "backend")})),
    }
    if root:
        made["nttcp"] = Sweep(Experiment("002-nttcp", proto="tcp", time=v["nttcp_times"], rate=v["cable_rate"],
                                         sndbuf=v["nttcp_sndbufs"], **cable))
    return Lab(made, v)






def _ok(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"] == "ok"] if "status" in frame else frame


def _in_mbps(table: pd.DataFrame) -> pd.DataFrame:
    """Document 002 counts in Mbit/s: every ``*_bps`` column as ``*_Mbps``."""
    return table.rename(columns=lambda c: c[:-4] + "_Mbps" if c.endswith("_bps") else c).assign(
        **{c[:-4] + "_Mbps": table[c] / 1e6 for c in table.columns if c.endswith("_bps")})


def _paper(scenario: str, protocol: str) -> pd.Series:
    doc = reference()
    return doc[(doc["scenario"] == scenario) & (doc["protocol"] == protocol)].iloc[-1]


def wire_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``cable`` sweep beside the document: per protocol, nttcp's receiver figure on the
    10 Mbit/s cable (TCP 9.4149, UDP 9.57 Mbit/s), ours (mean ± 95 % CI), the model (η·C with
    38 B a frame), the two ratios, and the share delivered."""
    summary = summarize(_ok(frame), metrics=["goodput_bps", "pred_goodput_bps", "delivered_fraction"],
                        by=["proto", "backend"])
    rows = []
    for row in summary.itertuples():
        paper = _paper("A_home_10M", row.proto)
        doc = paper["measured_mbps_mean"] * 1e6
        rows.append({"proto": row.proto, "backend": row.backend, "payload_bytes": paper["payload_bytes"],
                     "document_bps": doc, "measured_bps": row.goodput_bps_mean, "measured_ci_bps": row.goodput_bps_ci,
                     "n": row.n, "predicted_bps": row.pred_goodput_bps_mean,
                     "measured/document": row.goodput_bps_mean / doc,
                     "measured/predicted": row.goodput_bps_mean / row.pred_goodput_bps_mean,
                     "delivered": row.delivered_fraction_mean})
    return _in_mbps(pd.DataFrame(rows))


#: Document 002 behind the DSLAM (MTU 1492): "UDP S = 1464, TCP payload 1440" (timestamps).
DOC_PPPOE_PAYLOAD = {"udp": 1464, "tcp": 1440}


def fttc_table(up: pd.DataFrame | None = None, down: pd.DataFrame | None = None) -> pd.DataFrame:
    """The FTTC line, per direction and protocol: the document's measurement (mean, min, max over
    its runs, over the Internet) and its prediction (η of the LAN, 0.941 and 0.957, times 21 or 54),
    ours on an emulated line of those rates with PPPoE (MTU 1492, 8 B a frame), and the model's
    for it (TCP 1440 B, UDP 1464 B of 1538 B a frame), the payloads (the document's and the model's)
    beside them. A direction without runs (None) keeps the
    document's numbers and the model's for its rate, and no measurement."""
    rows = []
    for direction, frame, scenario in (("up", up, "B_internet_up21"), ("down", down, "B_internet_down54")):
        if frame is None:
            doc = reference()
            rates = doc[doc["scenario"] == scenario][["protocol", "capacity_mbps"]].drop_duplicates()
            runs = [{"proto": r.protocol, "rate_bps": r.capacity_mbps * 1e6, "goodput_bps_mean": math.nan,
                     "goodput_bps_ci": math.nan, "n": 0,
                     "pred_goodput_bps_mean": predict(r.protocol, r.capacity_mbps * 1e6, pppoe=True,
                                                      timestamps=r.protocol == "tcp").goodput_bps}
                    for r in rates.itertuples()]
        else:
            runs = summarize(_ok(frame), metrics=["goodput_bps", "pred_goodput_bps"],
                             by=["proto", "rate_bps"]).to_dict("records")
        for row in runs:
            paper = _paper(scenario, row["proto"])
            doc = paper["measured_mbps_mean"] * 1e6
            measured, predicted = row["goodput_bps_mean"], row["pred_goodput_bps_mean"]
            rows.append({"direction": direction, "proto": row["proto"], "rate_bps": row["rate_bps"],
                         "document_payload_bytes": DOC_PPPOE_PAYLOAD[row["proto"]],
                         "payload_bytes": predict(row["proto"], row["rate_bps"], pppoe=True,
                                                  timestamps=row["proto"] == "tcp").payload_bytes,
                         "document_bps": doc, "document_min_bps": paper["measured_mbps_min"] * 1e6,
                         "document_max_bps": paper["measured_mbps_max"] * 1e6,
                         "document_predicted_bps": paper["predicted_mbps"] * 1e6,
                         "measured_bps": measured, "measured_ci_bps": row["goodput_bps_ci"], "n": row["n"],
                         "predicted_bps": predicted, "measured/predicted": measured / predicted,
                         "measured/document": measured / doc})
    return _in_mbps(pd.DataFrame(rows))


#: nttcp's two lines on the cable (Test 1.a): writes of 1000 B for 0.03 s, and 5 MB (1000 writes
#: of 5000 B) in 4.21 s; sender's Mbit/s (it times its writes) and receiver's (it times arrivals).
NTTCP = {"short": {"bytes": 100_000, "sender_bps": 23.8351e6, "receiver_bps": 9.4138e6},
         "long": {"bytes": 5_000_000, "sender_bps": 9.5097e6, "receiver_bps": 9.4149e6}}


def nttcp_runs_table(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every nttcp run the document printed (``seed002_nttcp_runs``), per scenario and test: how many
    runs, the receiver's Mbit/s (mean, min, max) beside the sender's, and nttcp's own rule, which the
    document states: "CPU s" below "Real s" (so Real-Mbit/s below CPU-Mbit/s) on every line, or the
    bottleneck is the application, not the network. Its FTTC UDP sender lines read about 956.7 Mbit/s
    beside about 20.2 received: the sender's view of a flood into a 21 Mbit/s line."""
    runs = load_reference("seed002_nttcp_runs") if runs is None else runs
    rows = []
    for (scenario, test, proto, direction), part in runs.groupby(["scenario", "test", "protocol", "direction"],
                                                                 sort=False):
        rx, tx = part[part["line"] == "receiver"], part[part["line"] == "sender"]
        rows.append({"scenario": scenario, "test": test, "proto": proto, "direction": direction,
                     "runs": int(part["run"].nunique()), "receiver_mean_Mbps": rx["real_mbps"].mean(),
                     "receiver_min_Mbps": rx["real_mbps"].min(), "receiver_max_Mbps": rx["real_mbps"].max(),
                     "sender_mean_Mbps": tx["real_mbps"].mean(),
                     "sender/receiver": tx["real_mbps"].mean() / rx["real_mbps"].mean(),
                     "real_s": f"{part['real_s'].min():g}-{part['real_s'].max():g}",
                     "network_bound": bool(_network_bound(part).all())})
    return pd.DataFrame(rows)


def nttcp_lines_table(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each nttcp line the document printed (``seed002_nttcp_runs``, its command aside), with nttcp's rule
    for that line (``network_bound``, as in ``nttcp_runs_table``)."""
    runs = load_reference("seed002_nttcp_runs") if runs is None else runs
    return runs.drop(columns="command", errors="ignore").assign(network_bound=_network_bound(runs))


def _network_bound(lines: pd.DataFrame) -> pd.Series:
    return (lines["cpu_s"] < lines["real_s"]) & (lines["real_mbps"] < lines["cpu_mbps"])


#: Document 002, tests 1.b and 2.b (H2 → H1, through its store-and-forward USB adapter): TCP "a very
#: slight gap (0.01-0.02) from the expected 9.41", UDP "a consistent loss of packets" over 5-10 s runs.
ADAPTER = {"tcp": (9.41e6 - 0.02e6, 9.41e6 - 0.01e6, "9.41 less 0.01-0.02: retransmissions of frames lost at the "
                                                     "adapter"),
           "udp": (math.nan, math.nan, "a consistent loss over 5-10 s runs: the adapter, fed at Gb/s, forwards "
                                       "at 10 Mbit/s and drops what its queue cannot hold")}


def adapter_table(adapter: pd.DataFrame, cable: pd.DataFrame | None = None) -> pd.DataFrame:
    """H2 → H1 beside H1 → H2: the ``adapter`` sweep (a queue the sender can outrun, as the document's
    USB adapter) per protocol, its goodput and share delivered beside the document's words and the
    model, and the ``cable`` sweep (a NIC's 1000-frame queue that holds the sender back) beside it."""
    rows = []
    for way, frame in (("H2 → H1, short queue", adapter), ("H1 → H2, NIC queue", cable)):
        if frame is None or not len(_ok(frame)):
            continue
        summary = summarize(_ok(frame), metrics=["goodput_bps", "pred_goodput_bps", "delivered_fraction"],
                            by=["proto", "queue_packets"])
        for row in summary.itertuples():
            low, high, words = ADAPTER[row.proto] if way.startswith("H2") else (math.nan, math.nan, "")
            rows.append({"direction": way, "proto": row.proto, "queue_frames": row.queue_packets,
                         "document_min_bps": low, "document_max_bps": high, "document": words,
                         "measured_bps": row.goodput_bps_mean, "measured_ci_bps": row.goodput_bps_ci, "n": row.n,
                         "delivered": row.delivered_fraction_mean, "predicted_bps": row.pred_goodput_bps_mean})
    return _in_mbps(pd.DataFrame(rows))


def _held(sender_bps: float, receiver_bps: float, sent_bytes: float) -> tuple[float, float]:
    """(seconds the writes took, bytes the kernel still held when the last write returned)."""
    seconds = 8 * sent_bytes / sender_bps
    return seconds, sent_bytes - receiver_bps * seconds / 8


def nttcp_table(frame: pd.DataFrame) -> pd.DataFrame:
    """nttcp's two lines against ours, for the shortest and the longest run of the ``nttcp`` sweep,
    per send buffer asked for (none: the kernel's autotuning).

    The sender times its writes (the document's appendix: gettimeofday around the sendto loop):
    the kernel accepts the last B bytes before the wire carries them, so the sender reads
    G + 8 · B / T for a link that delivers G over T seconds of writing, far above the link on a
    short run and close to it on a long one. The receiver reads G. The model: G = η·C (on a
    transfer this short, + the tbf bucket's burst, which leaves at once: ``link.burst_at_start``);
    B from the short run (``held_bytes``; nttcp's own short run held 60 kB) predicts the long
    run's sender figure, G + 8 · B / T_long (from nttcp's own numbers: 9.53 beside its 9.51). It
    holds when B stays put: a fixed send buffer; autotuning grows it while a run lasts."""
    ok = _ok(frame).copy()
    ok["held_bytes"] = ok["bytes_offered"] - ok["goodput_bps"] * ok["sender_duration_s"] / 8
    doc_t, doc_held = _held(NTTCP["short"]["sender_bps"], NTTCP["short"]["receiver_bps"], NTTCP["short"]["bytes"])
    doc_long_t, _ = _held(NTTCP["long"]["sender_bps"], NTTCP["long"]["receiver_bps"], NTTCP["long"]["bytes"])
    rows = []
    for sndbuf, runs in ok.groupby(ok["sndbuf_bytes"].fillna(0), sort=True):
        runs = runs.sort_values("time_s")
        short, long_ = runs.iloc[0], runs.iloc[-1]
        for name, run in (("short", short), ("long", long_)):
            paper, seconds = NTTCP[name], float(run["sender_duration_s"])
            spec = LinkSpec.parse(rate=run["rate_bps"], wire="real", queue=None)
            # the bytes the receiver counted (a timed run counts its interval, not what the sender's socket
            # still held at its end): the bucket's burst is a share of those
            counted = run["bytes_delivered"] if pd.notna(run.get("bytes_delivered")) else run["bytes_offered"]
            wire_bytes = float(counted) * 8 / float(run["pred_goodput_bps"]) * spec.forward.rate_bps / 8
            burst = burst_at_start(run["backend"], spec)
            receiver_pred = float(run["pred_goodput_bps"]) * wire_bytes / max(wire_bytes - burst, 1.0)
            sender_pred = math.nan if name == "short" else \
                float(run["pred_goodput_bps"]) + 8 * float(short["held_bytes"]) / seconds
            doc_pred = math.nan if name == "short" else paper["receiver_bps"] + 8 * doc_held / doc_long_t
            for side, measured, predicted, document, doc_model in (
                    ("receiver", run["goodput_bps"], receiver_pred, paper["receiver_bps"], math.nan),
                    ("sender", run["sender_goodput_bps"], sender_pred, paper["sender_bps"], doc_pred)):
                rows.append({"sndbuf": "autotuned" if not sndbuf else f"{int(sndbuf)} B", "run": name, "side": side,
                             "writes_s": seconds, "held_bytes": float(run["held_bytes"]), "document_bps": document,
                             "measured_bps": float(measured), "predicted_bps": predicted,
                             "document_predicted_bps": doc_model,
                             "document_held_bytes": doc_held if name == "short" else math.nan,
                             "document_writes_s": doc_t if name == "short" else doc_long_t})
    return _in_mbps(pd.DataFrame(rows))


def markers_table(run: pd.Series, capture: pd.DataFrame | None = None) -> pd.DataFrame:
    """nttcp's UDP ending (Test 2.a: "3 UDP packets of 4 bytes, each 2 s apart"; its capture shows
    46 B frames, ``Len=4``, the first 1.8 ms after the last data) beside what a ``markers`` run asked
    for, what its receiver counted, and what its ``capture`` holds (``capture.udp_end_markers``;
    None: not captured). The first marker queues behind the data still on the link, so the gap
    between markers is read between the last two."""

    found = udp_end_markers(capture) if capture is not None else []
    gaps = found[0]["gaps_s"] if found else []
    frames = capture.loc[(capture["proto"] == "udp") & (capture["payload_len"] == 4), "frame_len"] \
        if capture is not None else pd.Series(dtype=float)
    return pd.DataFrame([
        {"what": "end markers", "document": 3, "asked": column_value(run, "metadata_end_markers_sent"),
         "received": column_value(run, "metadata_end_markers_received"),
         "captured": found[0]["markers"] if found else math.nan},
        {"what": "frame bytes (Wireshark)", "document": 46, "asked": frame_bytes(ip_and_udp() + 4), "received": math.nan,
         "captured": float(frames.median()) if len(frames) else math.nan},
        {"what": "first marker after the last data (s)", "document": 1.134061 - 1.132232, "asked": 0.0,
         "received": math.nan, "captured": gaps[0] if gaps else math.nan},
        {"what": "gap between markers (s)", "document": 5.111336 - 3.111138,
         "asked": column_value(run, "metadata_end_marker_gap_s"), "received": math.nan,
         "captured": gaps[-1] if len(gaps) > 1 else math.nan}])




def exercises(link: Link | None = None) -> dict[str, Exercise]:
    """The lab's exercises (``wirelab.exercises.check``); on ``link`` (a student's) where one depends on
    a link's rate or loss, else on the document's numbers (Gigabit Ethernet, 1 % loss)."""
    rate, on = (link.rate_bps, link.rate()) if link else (1e9, "Gigabit Ethernet")
    loss = link.loss if link else 0.01
    return {
        "udp_ipv6_payload": Exercise(
            "Largest UDP payload over IPv6 with MTU 1500 that does not fragment (bytes)?",
            lambda: predict("udp", 1e9, ip_version=6).payload_bytes, 0.0,
            "MTU − IPv6 header (40) − UDP header (8)"),
        "tcp_ts_gbe": Exercise(
            f"Predicted TCP goodput (Mbit/s) on {on} (a real Ethernet wire) with timestamps?",
            lambda: predict("tcp", rate, timestamps=True).goodput_bps / 1e6, 0.002,
            "η = 1448 / 1538; goodput = η · C"),
        "udp_fragments_4000": Exercise(
            "How many IPv4 fragments carry one 4000-byte UDP payload at MTU 1500?",
            lambda: predict("udp", 1e9, payload=4000).fragments, 0.0,
            "each fragment carries at most 1480 bytes of the 4008-byte UDP datagram"),
        "delivery_4000_1pct": Exercise(
            f"With {loss * 100:g} % independent packet loss, what fraction of 4000-byte UDP datagrams arrive?",
            lambda: predict("udp", 1e9, payload=4000, loss=loss).delivery_probability, 0.002,
            "(1 − p)^k with k fragments"),
        "sender_view_short": Exercise(
            "TCP (timestamps) writes 100 kB to the document's 10 Mbit/s cable; the kernel still holds 60 kB when "
            "the last write returns. What does the sender report (Mbit/s), as nttcp's sender line does?",
            lambda: predict("tcp", 10e6, timestamps=True).goodput_bps / 1e6 * 100e3 / (100e3 - 60e3), 0.005,
            "its writes took as long as the cable needs for what the kernel no longer holds: (100 − 60) kB at η·C"),
        "capture_frame_bytes": Exercise(
            "Wireshark's length of a full TCP segment with timestamps, MTU 1500 (bytes; it captures between LLC "
            "and MAC: no preamble, FCS or gap)?",
            lambda: predict("tcp", 1e9, timestamps=True, wire="emulated").wire_bytes, 0.0,
            "MTU + the 14 B Ethernet header; the payload is 1500 − 20 − 20 − 12"),
        "ipv6_tcp_payload": Exercise(
            "Payload of a full TCP segment with timestamps over IPv6, MTU 1500 (bytes)?",
            lambda: predict("tcp", 1e9, timestamps=True, ip_version=6).payload_bytes, 0.0,
            "1500 − 40 (IPv6) − 20 (TCP) − 12 (timestamps)"),
        "udp_packets_3000": Exercise(
            "How many IP packets carry one 3000-byte UDP datagram at MTU 1500?",
            lambda: predict("udp", 1e9, payload=3000).fragments, 0.0,
            "3008 B of UDP datagram, at most 1480 B of it per fragment"),
        "pppoe_tcp_payload": Exercise(
            "TCP payload per segment (with timestamps) behind a PPPoE link, MTU 1492?",
            lambda: predict("tcp", 1e9, pppoe=True, timestamps=True).payload_bytes, 0.0,
            "1492 − 20 (IP) − 20 (TCP) − 12 (timestamps)"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()
