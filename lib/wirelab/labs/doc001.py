"""Document 001 (Polish report): PPCB over tcp, udp and udpr, its grid and its misbehaving peers.

A file-transfer protocol (PPCB, notebooks/ppcb-protocol.md) over three transports; links shaped
with tc (tbf rate, netem loss and delay); 1000-byte DATA, MAX_WAIT 20 s,
MAX_RETRANSMITS 5; a table of speeds (``seed001_transfers``) and §5's error
handling. Notebook ``10-ppcb-assignment`` redoes all of it, and notebook
``05-predicted-vs-measured`` sweeps its three protocols over a grid of links::

    lab = doc001.sweeps(quick=QUICK)         # rate, loss, delay, packet, file, scenarios
    frame = lab["rate"].run(f"{OUT}/rate")
    doc001.beside(frame, doc001.reference(), experiment="rate", axis="rate_bps", doc_axis="rate_kbps",
                  to_doc=doc001.TC_KBPS)
    doc001.readings_table()                  # how to read its units: what each reading predicts
    doc001.scenario_table(lab["scenarios"].run(f"{OUT}/scenarios"))

The sweeps run wirelab's own PPCB programs (engine ``wirelab``, udp files sent as
PPCB floods them: ``udp_files="ppcb"``, as the document did) and the misbehaving
peers (this lab's engine, ``labs.peers``). Each run's deadline follows the plan's prediction; only
MAX_WAIT, a protocol constant, is chosen here: it must outlast a round trip.

Its units, read as tc reads them (``readings_table`` sets each reading's prediction beside
its numbers): ``tbf rate 100kbps`` is 100 kilobytes a second (tc(8): "kbps: kilobytes per
second"), 800 kbit/s; its "latency 50ms" is tbf's queue (a packet waits at most 50 ms in
it), not a path delay; its TCP "20.36 kbps" under loss is most likely Mbit/s (its own words:
close to its speed without loss). Its tc commands were typed on the server, whose interface
sends only the server's packets (ACKs, ACCs, CONACC, RCVD): the data crossed no shaper,
which is what its numbers say.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import transports, units
from ..capture.ppcb_exchange import exchange
from ..experiment import Experiment
from ..model import HeaderStack, packetize, predict, stop_and_wait
from ..reference import load_reference
from ..transports.udpr import NAME as UDPR
from .beside import beside, format_beside, loss_for_goodput, plot_beside
from .lab import Exercise, Lab, Link, Sweep, values
from .peers import PeersEngine

__all__ = ["EXERCISES", "exercises", "sweeps", "grid_sweeps", "reference", "scenario_table", "scenario_packets",
           "beside", "format_beside", "loss_for_goodput", "plot_beside", "readings_table", "TC_KBPS", "FULL", "QUICK",
           "GRID", "GRID_QUICK"]

#: The assignment's transports (tcp, udp, udpr): the protocols the document measured.
PPCB = tuple(t.name for t in transports.transports() if t.ppcb)
#: tc's "kbps" is kilobytes per second (tc(8)): bit/s × this = the number in the document's command.
TC_KBPS = 1 / 8000

#: Notebook 10: the document's grid (1. rate, 2. loss, 3. delay, 4. DATA size) and §5's scenarios.
FULL = {
    "protocols": list(PPCB), "backend": "auto",
    "reps": 3,                           # its rate table: "the mean of 3"; so each row has an interval
    "rates": ["800kbit", "8mbit", "80mbit"], "rate_file": "10141756B",   # tbf rate 100/1000/10000kbps: kB/s
    "rate_max_wait": "20s",              # TCP through 800 kbit/s may wait out retransmission timeouts
    # tbf rate 1000kbps (8 Mbit/s) latency 50ms (a queue of 50 ms at the rate, no path delay: the server's
    # few packets never fill it) and netem loss, all on the server's interface: its ACKs, ACCs, CONACC and
    # RCVD (b → a), not the data
    "losses": ["10%", "20%", "30%"], "loss_link": ["8mbit", "50ms"], "loss_file": "100793B",
    "congestion": "cubic",               # the loss models describe Reno/CUBIC; the default may be BBR
    "delays": ["100ms", "1000ms", "5000ms"], "delay_file": "100793B",
    "delay_share": 0.5,                  # its delay acted once per round trip: half each way
    "unlimited_rate": "1gbit",           # it set no rate for 3. and 4.; the model needs one that never binds
    "packets": [1000, 10000, 32000, 64000], "packet_loss": "10%", "packet_file": "200KB",
    # §6: tcp and udpr, and the 3 B edge case it checked; it gives no rate, loss or delay:
    "file_sizes": ["108632485B", "65536615B", "1985958B", "3B"],
    "file_rate": "80mbit",             # a link that binds (its largest tbf rate, 10000kbps), so the model says something
    "packet_max_wait": "2s",             # shorter than its 20 s, so 4. ends in minutes; the model is told
    "max_wait": "20s", "max_retransmits": 5,
    "scenarios": [["client_dies", "tcp"], ["client_dies", "udp"], ["client_dies", UDPR],
                  ["server_dies", "tcp"], ["server_dies", UDPR], ["silent_client", "tcp"],
                  ["silent_client", UDPR], ["silent_server", "tcp"], ["silent_server", UDPR],
                  ["foreign_data", "tcp"], ["foreign_data", UDPR], ["second_client", "tcp"],
                  ["second_client", UDPR]],
    "scenario_max_wait": 0.5,            # seconds: the scenarios' bounds scale with it
    "scenario_rate": "2mbit",
}
#: MAX_WAIT 0.5 s: still hundreds of the loss runs' round trips, so every loss costs a timeout (the lesson),
#: and the model is told; 3 s for the rate sweep: at 8 Mbit/s TCP needs no more (nor less: its floor,
#: transfer.tcp), and a udp datagram the tbf queue drops is waited for that long before the run ends.
QUICK = {"reps": 1, "rate_file": "30KB", "loss_file": "10KB", "delay_file": "10KB", "packet_file": "32KB",
         "rates": ["8mbit", "80mbit"], "losses": ["10%", "30%"], "packets": [1000, 32000],
         "file_sizes": ["3B", "20KB", "200KB", "2MB"],
         "delays": ["100ms"], "max_wait": "0.5s", "packet_max_wait": "0.5s", "rate_max_wait": "3s",
         "max_retransmits": 3,
         "scenarios": [["client_dies", UDPR], ["silent_client", "udp"], ["foreign_data", UDPR]]}

#: Notebook 05: every transport the kit has (the assignment's three and Go-Back-N, its window ``windows``)
#: over a grid of links, then tcp and udp against iperf3.
GRID = {"protocols": list(transports.names()), "windows": [8], "rates": ["10mbit", "20mbit"],
        "delays": ["0", "20ms"], "losses": ["0", "1%"], "size": "300KB", "reps": 3, "precision": 0.10,
        "max_reps": 10, "budget_s": 900, "max_wait": "0.2s", "engine": "wirelab", "backend": "auto",
        "bulk_time": "2s", "bulk_reps": 3}
#: A short MAX_WAIT keeps a timeout's cost (and so the spread between runs) small; 5 ms: udpr's
#: stop-and-wait of 300 kB takes 3 s a run (6 s at 10 ms); not smaller files: on loopback relays a
#: busy host's fixed cost is a quarter of a 100 kB TCP run.
GRID_QUICK = {"rates": ["10mbit"], "delays": ["0", "5ms"], "bulk_time": "1s", "bulk_reps": 1,
              "max_wait": "0.02s", "max_reps": 8, "budget_s": 60}


def sweeps(*, quick: bool = False, **given) -> Lab:
    """Notebook 10's sweeps: ``rate``, ``loss``, ``delay``, ``packet``, ``file`` (wirelab's PPCB programs)
    and ``scenarios`` (§5's misbehaving peers). ``lab.values["delay_max_wait"]``: the MAX_WAIT of the
    delay runs, raised where a round trip would not fit in the document's. The loss runs lose the
    server's packets (b → a), behind tbf's ``loss_link`` on that way; the data's way is not shaped
    (``unlimited_rate`` stands for it, as in 3. and 4.)."""
    v = values(FULL, QUICK, quick, given)
    max_wait = units.parse_time(v["max_wait"])
    round_trips = [2 * v["delay_share"] * units.parse_time(d) for d in v["delays"]]
    # MAX_WAIT must outlast a round trip, or udpr resends every packet
    v["delay_max_wait"] = max(max_wait, 2 * max(round_trips) + 1)
    common = dict(proto=v["protocols"], reps=v["reps"], backend=v["backend"], max_retransmits=v["max_retransmits"])
    ppcb = {"udp_files": "ppcb"}
    made = {
        "rate": Experiment("10-rate", size=v["rate_file"], rate=v["rates"], max_wait=v["rate_max_wait"], **common),
        "loss": Experiment("10-loss", size=v["loss_file"], rate=v["unlimited_rate"], rate_reverse=v["loss_link"][0],
                           loss="0", loss_reverse=v["losses"],
                           max_wait=v["max_wait"], capture=True, cc=v["congestion"], **common),
        "delay": Experiment("10-delay", size=v["delay_file"], rate=v["unlimited_rate"],
                            max_wait=f"{v['delay_max_wait']}s", delay=[f"{rtt / 2}s" for rtt in round_trips],
                            **common),
        "packet": Experiment("10-packet", size=v["packet_file"], rate=v["unlimited_rate"], packet=v["packets"],
                             loss=v["packet_loss"], loss_reverse="0", max_wait=v["packet_max_wait"], **common),
        "file": Experiment("10-file", size=v["file_sizes"], rate=v["file_rate"], max_wait=v["max_wait"],
                           **dict(common, proto=[p for p in v["protocols"] if p != "udp"])),
    }
    lab = {name: Sweep(exp, ppcb) for name, exp in made.items()}
    lab["scenarios"] = Sweep(Experiment(
        "10-scenarios", engine="peers", workload="scenario", rate=v["scenario_rate"],
        max_wait=v["scenario_max_wait"], max_retransmits=2, capture=True, reps=1, backend=v["backend"],
        cases=[{"scenario": name, "proto": proto} for name, proto in v["scenarios"]]), engine=PeersEngine)
    return Lab(lab, v)


def grid_sweeps(*, quick: bool = False, **given) -> Lab:
    """Notebook 05's sweeps: ``grid`` (every protocol × rate × delay × loss, repeated until each
    interval is within ``precision`` or the budget is spent) and ``bulk/wirelab``, ``bulk/iperf3``
    (tcp and udp for ``bulk_time`` on the same links, without delay or loss, one engine each, saved
    beside the grid; ``sweep.with_backend(...)`` puts them on the backend the grid ran on)."""
    v = values(GRID, GRID_QUICK, quick, given)
    grid = Experiment("05-predicted-vs-measured", proto=v["protocols"], window_packets=v["windows"],
                      size=v["size"], rate=v["rates"],
                      delay=v["delays"], loss=v["losses"], max_wait=v["max_wait"], reps=v["reps"],
                      precision=v["precision"], max_reps=v["max_reps"], budget_s=v["budget_s"],
                      engine=v["engine"], backend=v["backend"])
    lab = {"grid": Sweep(grid)}
    for engine in ("wirelab", "iperf3"):
        lab[f"bulk/{engine}"] = Sweep(Experiment(
            grid.name, proto=["tcp", "udp"], workload="time", time=v["bulk_time"], rate=v["rates"], delay="0",
            loss="0", reps=v["bulk_reps"], engine=engine, backend=v["backend"]))
    return Lab(lab, v)


def reference() -> pd.DataFrame:
    """The document's table of speeds (Mbit/s) per experiment, protocol and value."""
    return load_reference("seed001_transfers")


#: A round trip between the document's two virtual machines with no delay set (a millisecond, an
#: assumption: it gives none), for the TCP model of its loss runs.
HOST_RTT_S = 1e-3


def _tcp_file(rate_bps: float, rtt_s: float, size: int, loss: float = 0.0) -> float:
    """The model's TCP goodput (bit/s) for one file of ``size`` bytes, data lost at ``loss``."""
    return predict("tcp", rate_bps, timestamps=True, wire="emulated", rtt_s=rtt_s, loss=loss, loss_reverse=0,
                   size=size, cc="cubic").goodput_bps


def readings_table(doc: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each way to read the document's units, what the model predicts under it, its number, and
    whether that number can be the prediction's (``fits``).

    * ``tbf rate 100/1000/10000kbps``: kbit/s, or kB/s as tc reads "kbps" (tc(8)). A transfer
      through a link cannot beat the link's η·C: a figure above it says the data did not cross it.
    * TCP's "20.36 kbps" at 10, 20 and 30 % loss: kbit/s (the model, with the loss on the data,
      falls from loss to loss; one number at all three cannot be it), or Mbit/s: the report's
      own words, close to its speed without loss (18.7 to 25.5 Mbit/s), which TCP keeps when
      only its ACKs are lost (cumulative ACKs: a later one stands for a lost one).
    * "latency 50ms" with tbf: a path delay of 50 ms, under which even a lossless 0.1 MB transfer
      stays in slow start far below 20 Mbit/s; or tbf's queue setting (no path delay).
    The document's tc commands were typed on the server: its interface sends the server's
    packets only (ACKs, ACCs, RCVD), so its data crossed neither shaper nor loss, the one
    reading every row fits."""
    doc = reference() if doc is None else doc
    rows = []
    rate_rows = doc[(doc["experiment"] == "rate") & (doc["protocol"] == "tcp")]
    for reading, to_bps in (("kbit/s", 1e3), ("kB/s (tc's kbps)", 8e3)):
        for r in rate_rows.itertuples():
            rate = r.rate_kbps * to_bps
            pred = predict("tcp", rate, timestamps=True, wire="emulated").goodput_bps
            rows.append({"figure": f"tcp at tbf rate {r.rate_kbps:g}kbps", "reading": reading,
                         "as": f"a link of {rate / 1e6:g} Mbit/s", "document_mbps": r.speed_mbps,
                         "predicted_mbps": pred / 1e6, "fits": r.speed_mbps <= 1.05 * pred / 1e6,
                         "why": "a transfer cannot beat η·C of the link it crosses"})
    loss_rows = doc[(doc["experiment"] == "loss") & (doc["protocol"] == "tcp")]
    no_loss = doc[(doc["experiment"] == "rate") & (doc["protocol"] == "tcp")]["speed_mbps"]
    for r in loss_rows.itertuples():
        size, p = int(r.file_bytes), r.loss_pct / 100
        pred = _tcp_file(8e6, HOST_RTT_S, size, p) / 1e6       # tbf 1000kbps, the data's way
        rows.append({"figure": f"tcp at {r.loss_pct:g} % loss, printed 20.36 kbps", "reading": "kbit/s",
                     "as": f"0.02036 Mbit/s; loss on the data, 8 Mbit/s, RTT {HOST_RTT_S * 1e3:g} ms",
                     "document_mbps": 0.02036, "predicted_mbps": pred, "fits": abs(0.02036 / pred - 1) <= 0.25,
                     "why": "the model falls with the loss; one number at three loss rates is none of them"})
        rows.append({"figure": f"tcp at {r.loss_pct:g} % loss, printed 20.36 kbps", "reading": "Mbit/s",
                     "as": "20.36 Mbit/s; loss on the server's packets only (its ACKs): TCP as fast as without",
                     "document_mbps": 20.36, "predicted_mbps": float(no_loss.mean()),
                     "fits": bool(no_loss.min() * 0.9 <= 20.36 <= no_loss.max() * 1.1),
                     "why": "predicted: its own speed without loss (18.7 to 25.5 Mbit/s, the machine's)"})
    first = loss_rows.iloc[0]
    for reading, rtt in (("a path delay of 50 ms", 0.05 + HOST_RTT_S), ("tbf's queue, no path delay", HOST_RTT_S)):
        pred = _tcp_file(1e9, rtt, int(first["file_bytes"])) / 1e6       # the data's way: no shaper
        rows.append({"figure": "tbf latency 50ms", "reading": reading,
                     "as": f"RTT {rtt * 1e3:g} ms, a 0.1 MB file, no loss", "document_mbps": 20.36,
                     "predicted_mbps": pred, "fits": 20.36 <= 1.05 * pred,
                     "why": "at 20.36 Mbit/s the file took 40 ms: less than one round trip of 51 ms"})
    return pd.DataFrame(rows)


#: What the scenario table shows of each run (``elapsed_s``: how long the partner took to notice).
SCENARIO_COLUMNS = ["scenario", "proto", "peer", "as_specified", "next_client_served", "elapsed_s", "bound_s",
                    "server_error", "client_error", "capture_error"]


def scenario_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per scenario run, in the order they ran: what the peer did and how the partner
    ended, against the protocol's bound."""
    table = frame.rename(columns={"elapsed_s": "run_elapsed_s", "result_elapsed_s": "elapsed_s"})
    table = table[[c for c in SCENARIO_COLUMNS if c in table]].reset_index(drop=True)
    for column in table.columns[table.dtypes == "boolean"]:      # a scenario without it: NaN, as in a record
        table[column] = table[column].astype(object).where(table[column].notna(), float("nan"))
    return table


def scenario_packets(frame: pd.DataFrame, folder: str | Path) -> dict[str, pd.DataFrame | None]:
    """``"scenario/proto"`` → the PPCB packets its capture holds (on the server's port), or None
    when the run was not captured (capturing needs root or capture rights)."""

    out = {}
    for row in frame.to_dict("records"):
        capture = row.get("capture_file")
        out[f"{row['scenario']}/{row['proto']}"] = exchange(Path(folder) / capture, port=int(row["port"])) \
            if isinstance(capture, str) and not isinstance(row.get("capture_error"), str) else None
    return out


def exercises(link: Link | None = None) -> dict[str, Exercise]:
    """The lab's exercises (``wirelab.exercises.check``); on ``link`` (a student's: its rate, one-way
    delay, loss, DATA size and MAX_WAIT) where one depends on a link, else on the document's numbers
    (1000 B DATA, 1 Mbit/s, 10 % loss, MAX_WAIT 20 s, 100 ms round trips)."""
    rate, loss, data, wait = (link.rate_bps, link.loss, link.data, link.max_wait_s) if link else (1e6, 0.1, 1000, 20.0)
    rtt = 2 * link.delay_s if link else 0.1
    # notebooks 02 and 05 ask these on a 10 Mbit/s link with 20 ms each way (02: 1 % loss, MAX_WAIT 1 s)
    rate2, delay2, loss2, wait2, data2 = (link.rate_bps, link.delay_s, link.loss, link.max_wait_s, link.data) \
        if link else (10e6, 0.02, 0.01, 1.0, 1000)
    return {
        "udpr_loss_doc001": Exercise(
            f"udpr goodput (kbit/s): {data} B per DATA over {rate / 1e6:g} Mbit/s, no delay, {loss * 100:g} % of "
            f"DATA lost (ACCs never), MAX_WAIT {wait:g} s?",
            lambda: stop_and_wait(data, rate, 0.0, stack=HeaderStack(UDPR, wire="emulated"),
                                  loss_forward=loss, timeout_s=wait).goodput_bps / 1e3, 0.01,
            "each lost DATA costs MAX_WAIT; on average 1/(1 − p) − 1 losses per packet"),
        "udpr_delay_doc001": Exercise(
            f"udpr goodput (kbit/s) with {data} B per DATA when each round trip takes {rtt * 1e3:g} ms, nothing is "
            "lost and no rate limits?",
            lambda: stop_and_wait(data, 1e12, rtt).goodput_bps / 1e3, 0.01,
            f"one DATA per round trip: 8 · {data} bits every {rtt:g} s"),
        "udpr_lossy_20ms_mbps": Exercise(
            f"udpr goodput (Mbit/s): {data2} B DATA, a {2 * delay2 * 1e3:g} ms round trip, {loss2 * 100:g} % loss "
            f"each way, MAX_WAIT {wait2:g} s, {rate2 / 1e6:g} Mbit/s?",
            lambda: stop_and_wait(data2, rate2, 2 * delay2, loss_forward=loss2, loss_reverse=loss2,
                                  timeout_s=wait2).goodput_bps / 1e6,
            0.01, "a cycle succeeds with (1 − p)²; each failed one costs DATA/C + MAX_WAIT"),
        "udpr_chunk_4000_mbps": Exercise(
            "udpr goodput (Mbit/s) with 4000 B DATA when a round trip takes 50 µs and no rate limits (loopback)?",
            lambda: stop_and_wait(4000, 1e12, 50e-6).goodput_bps / 1e6, 0.01,
            "one DATA per round trip: 8 · 4000 bits every 50 µs"),
        "udpr_20ms_mbit": Exercise(
            f"udpr goodput (Mbit/s) at {rate2 / 1e6:g} Mbit/s, {delay2 * 1e3:g} ms one-way delay, no loss, "
            f"{data2} B DATA (emulated wire)?",
            lambda: predict(UDPR, rate2, rtt_s=2 * delay2, payload=data2, wire="emulated").goodput_bps / 1e6, 0.05,
            "one DATA per round trip, plus both transmission times"),
        "tc_kbps_tcp_mbps": Exercise(
            "The document shaped with `tbf rate 1000kbps`. Through it, what TCP goodput (Mbit/s) does the model "
            "predict (emulated wire: IP + 14 B a frame; timestamps)?",
            lambda: predict("tcp", 1000 / TC_KBPS, timestamps=True, wire="emulated").goodput_bps / 1e6, 0.005,
            "tc's kbps is kilobytes per second: 8 Mbit/s, times η = 1448 / 1514"),
        "udpr_fragments_64000": Exercise(
            f"MTU 1500 and {loss * 100:g} % loss per IP packet: probability (0..1) that one 64000-byte udpr DATA "
            "arrives whole?",
            lambda: packetize(HeaderStack(UDPR), 64000).delivery_probability(loss), 0.01,
            "(1 − p)^k for the k IP fragments of one datagram"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()
