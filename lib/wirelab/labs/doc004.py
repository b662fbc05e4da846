"""Document 004 (SIIT): iperf and tc on a 100 Mbit/s link, as ONE table: the document's number,
the measurement and the model's prediction, row by row. Notebook ``08-iperf-and-tc`` redoes
every task, notebook ``03-link-rate-delay-loss`` its link tasks against the model::

    lab = doc004.sweeps(quick=QUICK)       # lab["tasks"]: task/side → Sweep; lab["long"]; lab["where"]
    runs = {key: sweep.run(f"{OUT}/{sweep.name}") for key, sweep in lab["tasks"].items()}
    document_table(runs, doc004.reference())
    run_length_table(lab["long"].run(...))  # 30 s against 60 s, the document's finding beside ours
    ping_table(ping(link))                  # its 80.8 ms ping over netem delay 80ms 10ms on one host

The table itself, row by row, and what binds each prediction: ``iperf_tasks``.
"""
from __future__ import annotations

import pandas as pd

from ..experiment import Experiment
from ..link import LinkSpec, capabilities
from ..model import predict
from ..model.delay import mean_jittered_delay, transmission_delay
from ..model.fairness import jain_index, max_min_shares
from ..model.tcp import bdp_bytes, mathis, window_limited
from ..model.window import slow_start_bytes
from ..transfer.sockets import congestion_unavailable
from ..wire.headers import ip_and_udp
from .iperf_tasks import (TASKS, default_window, document_table, interval_narrowing, reader_time_s, reference,
                           run_length_table, task_rows)
from .lab import Exercise, Lab, Link, Sweep, values
from .ping import ECHO_BYTES, ping

__all__ = ["EXERCISES", "exercises", "sweeps", "link_sweeps", "reference", "TASKS", "document_table", "task_rows",
           "default_window", "interval_narrowing", "run_length_table", "reader_time_s", "ping", "ping_link", "ping_table",
           "PING_RTT_S", "DOC_BDP_BITS", "bdp_table", "FULL", "QUICK", "LINK", "LINK_QUICK"]


#: Notebook 08: every task of the document, on its 100 Mbit/s link.
FULL = {
    "backend": "auto",              # tasks without delay: namespaces + tbf/iptables (its tc) with root
    "shared_backend": "userspace",  # flows sharing the link: a queue between the hosts, like a switch
    "rate": "100mbit", "seconds": 10, "repetitions": 3,   # iperf -t (it ran 30 s, 60 s for tasks 3 and 4)
    "congestion": "cubic",          # its Ubuntu 10.10 (kernel 2.6.35) ran CUBIC; this machine may default to BBR
    "windows": [100, 500, 1000, 5000, 10000, 30000, 60000, 100000],            # B, task 1.1
    "lengths": ["1KiB", "2KiB", "4KiB", "8KiB", "16KiB", "32KiB", "128KiB", "1024KiB"],   # task 1.2
    "rates": ["50kbit", "100kbit", "1mbit", "10mbit"],                          # task 2.1 (tbf)
    # task 2.2: netem delay D ± jitter on the client's interface, a → b only (as the document's)
    # 80 ms: the document's "max data rate with delay 80ms", the rate of its BDP (bdp_table)
    "delays": ["1ms", "10ms", "50ms", "80ms", "100ms", "500ms", "1000ms", "5000ms"],
    "jitter": "10ms", "losses": ["1%", "5%", "50%"],                           # task 2.3 (a → b)
    "bdp_windows": [500, 5269, 9000], "bdp_delay": "80ms",   # a → b only, ± jitter: its ping's link (80.8 ms)
    "streams": [1, 2, 3, 4, 5, 10], "beside_udp": [1, 2, 5, 10],               # tasks 3 and 4
    "udp_rate": "1.05mbit", "udp_packet": 1470,                                # iperf 2's default UDP test
    "long": [30, 60], "long_losses": ["1%", "5%", "50%"], "long_repetitions": 3,   # task 2.3: run lengths
    "ping_rounds": 20,                        # special task: ping with netem delay 80ms 10ms on one host
}
QUICK = {"seconds": 1, "repetitions": 1, "windows": [100, 10000], "lengths": ["1KiB", "128KiB"],
         "rates": ["100kbit", "10mbit"], "delays": ["1ms", "50ms", "80ms"], "losses": ["1%", "5%"],
         "bdp_windows": [500, 9000], "streams": [1, 4], "beside_udp": [1, 2], "long": [1, 2],
         "long_losses": ["1%"], "long_repetitions": 2, "ping_rounds": 10}

#: Notebook 03: task 2's rate, delay and loss with iperf3, every residual explained.
LINK = {"backend": "auto", "rates": ["0.5mbit", "1mbit", "2mbit", "5mbit", "10mbit"],
        "delays": ["5ms", "10ms", "20ms", "40ms", "80ms"], "losses": ["0.1%", "0.5%", "1%", "2%", "5%"],
        "link_rate": "10mbit", "loss_delay": "20ms", "window": "64KiB", "congestion": "cubic",
        "repetitions": 3, "seconds": 5, "omit": 1, "precision": 0.10, "max_reps": 10, "budget_s": 600}
#: 3 s, not 1: iperf3 reads a 128 kB block at a time, which is 1 s of data at 1 Mbit/s.
LINK_QUICK = {"rates": ["2mbit", "10mbit"], "delays": ["5ms", "60ms"], "losses": ["0.5%", "5%"], "repetitions": 2,
              "seconds": 3, "omit": 1, "precision": 0.15, "max_reps": 3, "budget_s": 45}


def sweeps(*, quick: bool = False, **given) -> Lab:
    """Notebook 08's sweeps: ``tasks`` (task/side → Sweep, the keys ``document_table`` reads; tasks 3 and 4
    only where flows can share one queue: ``shared_backend`` needs root), ``long`` (task 2.3's run lengths)
    and ``where`` (backend → two TCP flows, section 5). ``lab.values["notes"]``: what was left out, and why."""
    v = values(FULL, QUICK, quick, given)
    notes = []
    cc = v["congestion"]
    if cc and congestion_unavailable(cc):
        notes.append(f"{congestion_unavailable(cc)}; the runs use this machine's default instead "
                     "(each row's congestion_control says which, and its prediction follows it)")
        cc = None
    backends = capabilities().backends
    v["shared"] = v["shared_backend"] in backends        # flows that share one queue need root
    if not v["shared"]:
        notes.append(f"the {v['shared_backend']} backend needs root here: sections 3 to 5 (flows sharing one queue) "
                     "are left out; run with sudo for them")
    v["notes"] = notes
    tcp = dict(proto="tcp", workload="time", time=v["seconds"], rate=v["rate"], cc=cc, reps=v["repetitions"],
               backend=v["backend"])
    # netem on the client delays one direction: a → b ± jitter, b → a nothing (not D/2 each way)
    one_way = dict(jitter=v["jitter"], delay_reverse="0", jitter_reverse="0")
    bdp = dict(delay=v["bdp_delay"], **one_way)
    tasks = {
        "1.1_window/server": Experiment("08-window-server", rcvbuf=v["windows"], **tcp),
        "1.1_window/client": Experiment("08-window-client", sndbuf=v["windows"], **tcp),
        "1.1_window/both": Experiment("08-window-iperf3", engine="iperf3", window=v["windows"], **tcp),
        "1.2_length/server": Experiment("08-length-server", packet="1024KiB", read=v["lengths"], **tcp),
        "1.2_length/client": Experiment("08-length", engine="iperf3", packet=v["lengths"], **tcp),
        "2.1_rate/client": Experiment("08-rate", engine="iperf3", **dict(tcp, rate=v["rates"])),
        "2.2_delay/client": Experiment("08-delay", engine="iperf3", delay=v["delays"], **one_way, **tcp),
        "2.3_loss/server": Experiment("08-loss", engine="iperf3", loss=v["losses"], loss_reverse="0", **tcp),
        "special_bdp/server": Experiment("08-bdp-server", rcvbuf=v["bdp_windows"], **bdp, **tcp),
        "special_bdp/client": Experiment("08-bdp-client", sndbuf=v["bdp_windows"], **bdp, **tcp),
    }
    shared = dict(tcp, backend=v["shared_backend"])
    if v["shared"]:
        tasks["3_parallel/client"] = Experiment("08-parallel", engine="iperf3",
                                                flows=[f"tcp streams={n}" for n in v["streams"]], **shared)
        tasks["4_with_udp/client"] = Experiment(
            "08-with-udp", engine="iperf3", **shared,
            flows=[f"tcp streams={n} + udp rate={v['udp_rate']} packet={v['udp_packet']}" for n in v["beside_udp"]])
    long = Experiment("08-loss-long", engine="iperf3", loss=v["long_losses"], loss_reverse="0",
                      **dict(tcp, time=v["long"], reps=v["long_repetitions"]))
    where = {b: Sweep(Experiment(f"08-two-flows-{b}", flows="tcp + tcp", **dict(tcp, backend=b)))
             for b in ("namespaces", v["shared_backend"])}
    return Lab({"tasks": {key: Sweep(exp) for key, exp in tasks.items()}, "long": Sweep(long), "where": where}, v)


def link_sweeps(*, quick: bool = False, **given) -> Lab:
    """Notebook 03's sweeps with iperf3: ``rate`` (tbf), ``delay`` (a fixed window, W/RTT) and ``loss``
    (the congestion control's response; repeated until its interval is within ``precision``)."""
    v = values(LINK, LINK_QUICK, quick, given)
    common = dict(proto="tcp", engine="iperf3", workload="time", time=v["seconds"], omit=v["omit"],
                  reps=v["repetitions"], backend=v["backend"], loss_reverse="0")
    made = {
        "rate": Experiment("03-rate", rate=v["rates"], **common),
        "delay": Experiment("03-delay", rate=v["link_rate"], delay=v["delays"], window=v["window"], **common),
        "loss": Experiment("03-loss", rate=v["link_rate"], delay=v["loss_delay"], loss=v["losses"], cc=v["congestion"],
                           precision=v["precision"], max_reps=v["max_reps"], budget_s=v["budget_s"], **common),
    }
    return Lab({name: Sweep(exp) for name, exp in made.items()}, v)
























#: Document 004's special task: "Server ping to client ... AVG Rtt = 80.823" (ms), with
#: `netem delay 80ms 10ms` on the client's interface, one direction only.
PING_RTT_S = 0.080823
#: "Bandwidth Delay Product of server side is about 5269.6 Kbits. It comes from average round
#: trip time (ms) * Max data rate with delay 80ms (Mbits/sec)": its rate is then 65.2 Mbit/s.
DOC_BDP_BITS = 5269.6e3


def ping_link(rate: str = "100mbit", delay: str = "80ms", jitter: str = "10ms") -> LinkSpec:
    """The document's link for its ping: ``delay`` ± ``jitter`` on one direction (a → b, the client's
    interface, as its netem), none on the other."""
    return LinkSpec.parse(rate=rate, delay=delay, jitter=jitter, delay_reverse=0, jitter_reverse=0)


def ping_table(measured: dict, spec: LinkSpec | None = None) -> pd.DataFrame:
    """The ping beside the document's 80.823 ms and the model: the one-way delay set (netem's mean
    with uniform jitter, ``model.delay.mean_jittered_delay``) plus both echoes' transmission."""
    spec = spec or ping_link()
    wire = ECHO_BYTES + ip_and_udp() + spec.l2_bytes          # an echo's payload, UDP/IP, the frame
    predicted = (mean_jittered_delay(spec.forward.delay_s, spec.forward.jitter_s)
                 + mean_jittered_delay(spec.reverse.delay_s, spec.reverse.jitter_s)
                 + transmission_delay(wire, spec.forward.rate_bps) + transmission_delay(wire, spec.reverse.rate_bps))
    return pd.DataFrame([{"link": measured.get("link", spec.describe()), "backend": measured.get("backend"),
                          "document_rtt_ms": PING_RTT_S * 1e3, "measured_rtt_ms": measured["rtt_avg_ms"],
                          "measured_min_ms": measured["rtt_min_ms"], "measured_max_ms": measured["rtt_max_ms"],
                          "measured_mdev_ms": measured["rtt_mdev_ms"], "rounds": measured["answered"],
                          "predicted_rtt_ms": predicted * 1e3,
                          "measured/document": measured["rtt_avg_ms"] / (PING_RTT_S * 1e3),
                          "measured/predicted": measured["rtt_avg_ms"] / (predicted * 1e3)}])


def bdp_table(table: pd.DataFrame, measured: dict | None = None, spec: LinkSpec | None = None) -> pd.DataFrame:
    """The special task's BDP three ways: the document's own (its ping's RTT × its "max data rate
    with delay 80ms", 5269.6 kbit: 65.2 Mbit/s, a rate its table does not list), ours the same way
    (``measured``: ``ping``'s answer; the rate: task 2.2's row at 80 ms in ``table``, a
    ``document_table``) and the model's, and the textbook's C × RTT (RFC 1323 §1.1)."""
    spec = spec or ping_link()
    row = table[(table["task"] == "2.2_delay") & (table["value"] == 80)] if len(table) else table
    rate = float(row["measured_bps"].iloc[0]) if len(row) else float("nan")
    predicted_rate = float(row["predicted_bps"].iloc[0]) if len(row) else float("nan")
    ping_row = ping_table(measured, spec).iloc[0] if measured else None
    rows = [("document 004", PING_RTT_S, DOC_BDP_BITS / PING_RTT_S,
             "its ping's RTT × its max data rate at 80 ms (the rate implied: not in its table)"),
            ("measured here", ping_row["measured_rtt_ms"] / 1e3 if ping_row is not None else float("nan"), rate,
             "the ping above × task 2.2's goodput at 80 ms"),
            ("model", ping_row["predicted_rtt_ms"] / 1e3 if ping_row is not None else PING_RTT_S, predicted_rate,
             "the ping's model × task 2.2's prediction at 80 ms"),
            ("C × RTT", PING_RTT_S, spec.forward.rate_bps, "the link's rate × the document's RTT: the window that "
                                                            "fills the pipe")]
    return pd.DataFrame([{"bdp": name, "rtt_ms": rtt * 1e3, "rate_Mbps": r / 1e6, "bdp_kbit": r * rtt / 1e3,
                          "bdp_bytes": r * rtt / 8, "how": how} for name, rtt, r, how in rows])


def _udp_beside_tcp_share(rate: float = 100e6) -> float:
    """TCP's max-min share (Mbit/s) of ``rate`` beside a 1.05 Mbit/s UDP flow (1470 B datagrams)."""
    udp = predict("udp", rate, payload=1470, wire="emulated").efficiency
    tcp = predict("tcp", rate, timestamps=True, wire="emulated").efficiency
    udp_wire, tcp_wire = max_min_shares(rate, [1.05e6 / udp, None])
    return tcp_wire * tcp / 1e6


def exercises(link: Link | None = None) -> dict[str, Exercise]:
    """The lab's exercises (``wirelab.exercises.check``); on ``link`` (a student's: its rate and round
    trip) where one depends on a link, else on the document's (100 Mbit/s, 80.8 ms)."""
    rate, rtt = (link.rate_bps, 2 * link.delay_s) if link else (100e6, 0.0808)
    mbit = f"{rate / 1e6:g} Mbit/s"
    knee_rate = link.rate_bps if link else 10e6          # notebook 03's link
    knee_mbit = f"{knee_rate / 1e6:g} Mbit/s"
    return {
        "bdp_100mbit_80ms_bytes": Exercise(
            f"Bandwidth-delay product C × RTT (bytes) of {mbit} and a {rtt * 1e3:g} ms RTT"
            + ("" if link else " (document 004's link; the document itself multiplied its RTT by its measured "
                               "65.2 Mbit/s, not by C)") + "?",
            lambda: bdp_bytes(rate, rtt), 0.002, "C × RTT / 8"),
        "window_5269_kbps": Exercise(
            f"Goodput limit (kbit/s) of a 5269 B window over a {rtt * 1e3:g} ms RTT?",
            lambda: window_limited(5269, rtt) / 1e3, 0.005, "one window per round trip: 8·W/RTT"),
        "equal_share_10_mbps": Exercise(
            f"Ten TCP streams share {mbit} (emulated wire, timestamps). Mbit/s per stream?",
            lambda: predict("tcp", rate, timestamps=True, wire="emulated").goodput_bps / 10 / 1e6, 0.005,
            "η·C shared equally"),
        "jain_6_4": Exercise(
            "Jain's fairness index of two flows getting 6 and 4 Mbit/s?",
            lambda: jain_index([6, 4]), 0.002, "(Σx)² / (n·Σx²)"),
        "tcp_beside_udp_mbps": Exercise(
            f"TCP's total share (Mbit/s) of {mbit} beside a 1.05 Mbit/s UDP flow of 1470 B datagrams?",
            lambda: _udp_beside_tcp_share(rate), 0.005,
            "max-min: UDP keeps its demand (in wire bits: 1.05 Mbit/s / η_UDP), TCP gets the rest × η_TCP"),
        "mathis_rtt_doc004_ms": Exercise(
            "Document 004 measured 17.6 Mbit/s at 5 % loss. At what RTT (ms) would Mathis' formula (MSS 1448) "
            "give exactly that?",
            lambda: mathis(1448, 1.0, 0.05) / 17.6e6 * 1e3, 0.005,     # G ∝ 1/RTT: the RTT of 1 s, scaled
            "Mathis: G = (MSS/RTT) · √(3/2) / √p; solve for RTT"),
        "window_knee_rtt_ms": Exercise(
            f"A 64 KiB window on a {knee_mbit} link (emulated wire, timestamps): from which RTT (ms) on does the "
            "window, not the link, limit TCP?",
            lambda: 8 * 65536 / predict("tcp", knee_rate, timestamps=True, wire="emulated").goodput_bps * 1e3, 0.005,
            "W / RTT = η · C: RTT = 8 · W / (η · C)"),
        "read_time_doc004_ms": Exercise(
            "Document 004's server read 1 KB (1024 B) at a time and got 11.6 Mbit/s. How long (ms) did each read "
            "take, if the reads were all that limited it?",
            lambda: reader_time_s(reference()[reference()["value"] == 1]) * 1e3, 0.005,
            "one read per 8 · 1024 bits: 8 · L / bandwidth"),
        "slow_start_5s_rtt_kbps": Exercise(
            "A 30 s run over a 5 s RTT, IW 10, MSS 1448, never losing: kbit/s (the test starts after the "
            "handshake)?",
            lambda: slow_start_bytes(30, 5, 1448, handshake_rtts=0) * 8 / 30 / 1e3, 0.005,
            "6 round trips, each doubling: 10 + 20 + ... segments"),
        # notebook 12 (task 2.1 between two PCs): a cable's framing, and the clock line's drift
        "real_wire_10mbit_kbps": Exercise(
            "TCP (timestamps) at 10 Mbit/s: how many kbit/s less does the model predict on a real cable "
            "(38 B a frame) than on an emulated wire (14 B)?",
            lambda: (predict("tcp", 10e6, timestamps=True, wire="emulated").goodput_bps
                     - predict("tcp", 10e6, timestamps=True, wire="real").goodput_bps) / 1e3, 0.005,
            "η = 1448 / (1500 + overhead): C · (η_emulated − η_real)"),
        "drift_1ms_10s_ppm": Exercise(
            "How many ppm of clock drift add up to 1 ms over one 10 s run?",
            lambda: 1e-3 / 10 * 1e6, 0.005, "drift (ppm) × run length (s) / 10⁶ = the error (s)"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()


#: Notebook 12: task 2.1 (tbf's rate, iperf3) between two machines.
ACROSS = {"rates": FULL["rates"], "seconds": FULL["seconds"], "repetitions": FULL["repetitions"],
          "congestion": FULL["congestion"], "engine": "iperf3"}
ACROSS_QUICK = {"rates": QUICK["rates"], "seconds": QUICK["seconds"], "repetitions": QUICK["repetitions"]}


def across_hosts(hosts, cluster: str, *, quick: bool = False, **given) -> Experiment:
    """Task 2.1, the document's rate sweep with iperf3 and tbf, between two machines: ``hosts`` the
    Dask workers of the client and the server (``{"a": "pc07", "b": "pc08"}``, or a list of such
    pairs), ``cluster`` the scheduler's address (``wirelab.experiment.cluster``)."""
    v = values(ACROSS, ACROSS_QUICK, quick, given)
    return Experiment("rate-across", engine=v["engine"], proto="tcp", workload="time", time=v["seconds"],
                      rate=v["rates"], cc=v["congestion"], reps=v["repetitions"], hosts=hosts, cluster=cluster)
