"""Document 001 (Polish report): PPCB over tcp, udp and udpr, its grid and its misbehaving peers.

A file-transfer protocol (PPCB, shared/ppcb.md) over three transports; links shaped
with tc (tbf rate, netem loss and delay); 1000-byte DATA, MAX_WAIT 20 s,
MAX_RETRANSMITS 5; a table of speeds (``seed001_transfers``) and §5's error
handling. Notebook ``10-ppcb-assignment`` redoes all of it, and notebook
``05-predicted-vs-measured`` sweeps its three protocols over a grid of links::

    lab = doc001.sweeps(quick=QUICK)         # rate, loss, delay, packet, scenarios
    frame = lab["rate"].run(f"{OUT}/rate")
    doc001.beside(frame, doc001.reference(), experiment="rate", axis="rate_bps", doc_axis="rate_kbps",
                  to_doc=1e-3)
    doc001.scenario_table(lab["scenarios"].run(f"{OUT}/scenarios"))

The sweeps run wirelab's own PPCB programs (engine ``wirelab``, udp files sent as
PPCB floods them: ``udp_files="ppcb"``, as the document did) and the misbehaving
peers (this lab's engine, ``labs.peers``). Each run's deadline follows the plan's prediction; only
MAX_WAIT, a protocol constant, is chosen here: it must outlast a round trip.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import units
from ..experiment import Experiment
from ..model import HeaderStack, packetize, stop_and_wait
from ..reference import load_reference
from .beside import beside, format_beside, loss_for_goodput, plot_beside
from .lab import Exercise, Lab, Link, Sweep, values
from .peers import PeersEngine

__all__ = ["EXERCISES", "exercises", "sweeps", "grid_sweeps", "reference", "scenario_table", "scenario_packets", "beside", "format_beside",
           "loss_for_goodput", "plot_beside", "FULL", "QUICK", "GRID", "GRID_QUICK"]

#: Notebook 10: the document's grid (1. rate, 2. loss, 3. delay, 4. DATA size) and §5's scenarios.
FULL = {
    "protocols": ["tcp", "udp", "udpr"], "reps": 1, "backend": "auto",
    "rates": ["100kbit", "1000kbit", "10000kbit"], "rate_file": "10141756B",     # its 10 MB file
    "rate_max_wait": "20s",              # TCP through 100 kbit/s may wait out retransmission timeouts
    "losses": ["10%", "20%", "30%"], "loss_link": ["1000kbit", "50ms"], "loss_file": "100793B",
    "congestion": "cubic",               # the loss models describe Reno/CUBIC; the default may be BBR
    "delays": ["100ms", "1000ms", "5000ms"], "delay_file": "100793B",
    "delay_share": 0.5,                  # its delay acted once per round trip: half each way
    "unlimited_rate": "1gbit",           # it set no rate for 3. and 4.; the model needs one that never binds
    "packets": [1000, 10000, 32000, 64000], "packet_loss": "10%", "packet_file": "200KB",
    "packet_max_wait": "2s",             # shorter than its 20 s, so 4. ends in minutes; the model is told
    "max_wait": "20s", "max_retransmits": 5,
    "scenarios": [["client_dies", "tcp"], ["client_dies", "udp"], ["client_dies", "udpr"],
                  ["server_dies", "tcp"], ["server_dies", "udpr"], ["silent_client", "tcp"],
                  ["silent_client", "udpr"], ["silent_server", "tcp"], ["silent_server", "udpr"],
                  ["foreign_data", "tcp"], ["foreign_data", "udpr"], ["second_client", "tcp"],
                  ["second_client", "udpr"]],
    "scenario_max_wait": 0.5,            # seconds: the scenarios' bounds scale with it
    "scenario_rate": "2mbit",
}
#: MAX_WAIT 1 s: still 20 round trips of the loss runs, so every loss costs a timeout (the lesson), and
#: the model is told; 3 s for the rate sweep: at 1000 kbit/s TCP needs no more (nor less: its floor,
#: transfer.tcp), and a udp datagram the tbf queue drops is waited for that long before the run ends.
QUICK = {"rate_file": "30KB", "loss_file": "10KB", "delay_file": "10KB", "packet_file": "32KB",
         "rates": ["1000kbit", "10000kbit"], "losses": ["10%", "30%"], "packets": [1000, 32000],
         "delays": ["100ms"], "max_wait": "1s", "packet_max_wait": "0.5s", "rate_max_wait": "3s",
         "max_retransmits": 3,
         "scenarios": [["client_dies", "udpr"], ["silent_client", "udp"], ["foreign_data", "udpr"]]}

#: Notebook 05: the three protocols over a grid of links, then tcp and udp against iperf3.
GRID = {"protocols": ["tcp", "udp", "udpr"], "rates": ["10mbit", "20mbit"], "delays": ["0", "20ms"],
        "losses": ["0", "1%"], "size": "300KB", "reps": 3, "precision": 0.10, "max_reps": 10, "budget_s": 900,
        "max_wait": "0.2s", "engine": "wirelab", "backend": "auto", "bulk_time": "2s", "bulk_reps": 3}
#: A short MAX_WAIT keeps a timeout's cost (and so the spread between runs) small.
GRID_QUICK = {"rates": ["10mbit"], "delays": ["0", "10ms"], "bulk_time": "1s", "bulk_reps": 1,
              "max_wait": "0.02s", "max_reps": 15, "budget_s": 180}


def sweeps(*, quick: bool = False, **given) -> Lab:
    """Notebook 10's sweeps: ``rate``, ``loss``, ``delay``, ``packet`` (wirelab's PPCB programs) and
    ``scenarios`` (§5's misbehaving peers). ``lab.values["delay_max_wait"]``: the MAX_WAIT of the
    delay runs, raised where a round trip would not fit in the document's."""
    v = values(FULL, QUICK, quick, given)
    max_wait = units.parse_time(v["max_wait"])
    round_trips = [2 * v["delay_share"] * units.parse_time(d) for d in v["delays"]]
    # MAX_WAIT must outlast a round trip, or udpr resends every packet
    v["delay_max_wait"] = max(max_wait, 2 * max(round_trips) + 1)
    common = dict(proto=v["protocols"], reps=v["reps"], backend=v["backend"], max_retransmits=v["max_retransmits"])
    ppcb = {"udp_files": "ppcb"}
    made = {
        "rate": Experiment("10-rate", size=v["rate_file"], rate=v["rates"], max_wait=v["rate_max_wait"], **common),
        "loss": Experiment("10-loss", size=v["loss_file"], rate=v["loss_link"][0], loss=v["losses"],
                           loss_reverse="0", delay=f"{units.parse_time(v['loss_link'][1]) * v['delay_share']}s",
                           max_wait=v["max_wait"], capture=True, cc=v["congestion"], **common),
        "delay": Experiment("10-delay", size=v["delay_file"], rate=v["unlimited_rate"],
                            max_wait=f"{v['delay_max_wait']}s", delay=[f"{rtt / 2}s" for rtt in round_trips],
                            **common),
        "packet": Experiment("10-packet", size=v["packet_file"], rate=v["unlimited_rate"], packet=v["packets"],
                             loss=v["packet_loss"], loss_reverse="0", max_wait=v["packet_max_wait"], **common),
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
    grid = Experiment("05-predicted-vs-measured", proto=v["protocols"], size=v["size"], rate=v["rates"],
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
    from ..experiment.ppcb_capture import exchange

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
    return {
        "udpr_loss_doc001": Exercise(
            f"udpr goodput (kbit/s): {data} B per DATA over {rate / 1e6:g} Mbit/s, no delay, {loss * 100:g} % of "
            f"DATA lost (ACCs never), MAX_WAIT {wait:g} s?",
            lambda: stop_and_wait(data, rate, 0.0, stack=HeaderStack("udpr", wire="emulated"),
                                  loss_forward=loss, timeout_s=wait).goodput_bps / 1e3, 0.01,
            "each lost DATA costs MAX_WAIT; on average 1/(1 − p) − 1 losses per packet"),
        "udpr_delay_doc001": Exercise(
            f"udpr goodput (kbit/s) with {data} B per DATA when each round trip takes {rtt * 1e3:g} ms, nothing is "
            "lost and no rate limits?",
            lambda: stop_and_wait(data, 1e12, rtt).goodput_bps / 1e3, 0.01,
            f"one DATA per round trip: 8 · {data} bits every {rtt:g} s"),
        "udpr_fragments_64000": Exercise(
            f"MTU 1500 and {loss * 100:g} % loss per IP packet: probability (0..1) that one 64000-byte udpr DATA "
            "arrives whole?",
            lambda: packetize(HeaderStack("udpr"), 64000).delivery_probability(loss), 0.01,
            "(1 − p)^k for the k IP fragments of one datagram"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()
