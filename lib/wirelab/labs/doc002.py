"""Document 002 (Politecnico di Torino): goodput predicted from the headers, against nttcp.

Efficiency η = S / (S + L4 + L3 + L2) with L2 = 38 B on a real Ethernet wire:
UDP 1472 / 1538 = 0.957, TCP 1460 / 1538 = 0.949, 1448 / 1538 = 0.941 with
timestamps; 9.41 Mbit/s measured by nttcp at the receiver on 10 Mbit/s; the
FTTC line with a PPPoE MTU of 1492 (its table: ``seed002_goodput``). Notebooks
``01-overhead-and-goodput`` (every number predicted by ``wirelab.model``) and
``04-reading-a-capture`` (the 1514 B frames and 1448 B payloads read from the wire)
redo it. Here: its table, its exercises, and where UDP loses data as S grows:

Document 002 sent UDP with nttcp over a 10 Mbit/s cable and lost datagrams when
S > 1472 B and when S < 646 B. The two boundaries are of different kinds:

* **S > MTU − 28 = 1472 B: fragmentation**, the link's. The datagram leaves as k IP
  fragments and arrives only if all k do: delivered = (1 − p)^k for a per-packet
  loss p (Kent & Mogul 1987; ``model.Packetization.delivery_probability``). Each
  step of k (1472 → 1473, 2952 → 2953, ...) is a step of loss, on any host.
* **S below some S*: the sender outruns the receiver**, the host's. A short datagram
  costs the receiver about as much work as a long one (a wake-up, a system call,
  its bookkeeping), so its ceiling is a *packet* rate P_r, a property of its CPU,
  kernel, program and load, not of the network. The link delivers R / (8·(S + L))
  datagrams a second (L: the 28 B of UDP/IP and the wire's framing), which exceeds
  P_r below S* = R / (8·P_r) − L: there the receiver's socket buffer overflows.
  Document 002's 646 B was its own host's S* (its sender fed a USB adapter);
  another machine, program or rate moves it, and the same machine at 10 Mbit/s
  may have none (S* < 0) when it keeps up with the link's packet rate at every size.

``payload_sweep`` declares the sweep (UDP bulk, one run per size, a real wire and
a little loss so both boundaries show); ``where_data_is_lost`` reads its results:
per size, the delivered fraction beside the model's (1 − p)^k, the excess loss
that is the host's, and the boundaries measured and predicted.
"""
from __future__ import annotations

import math

import pandas as pd

from ..experiment import Experiment
from ..link.spec import LinkSpec
from ..model import HeaderStack, packetize, predict
from ..reference import load_reference
from ..wire.headers import ip_and_udp, udp_payload
from .lab import Exercise, Lab, Link, Sweep, values

__all__ = ["EXERCISES", "exercises", "sweeps", "FULL", "QUICK", "reference", "payload_sweep", "where_data_is_lost", "boundaries",
           "SIZES", "QUICK_SIZES"]


def reference() -> pd.DataFrame:
    """The document's table: η, predicted and measured Mbit/s per scenario, protocol and direction."""
    return load_reference("seed002_goodput")


#: Payloads around both boundaries: the 646 B of document 002, and each fragment step.
SIZES = (64, 128, 256, 384, 512, 646, 800, 1000, 1200, 1472, 1473, 2952, 2953, 4432, 4433, 8000)
QUICK_SIZES = (64, 646, 1472, 1473, 2953)
#: Excess loss (beyond the model's (1 − p)^k) that counts as data lost by the hosts.
EXCESS = 0.01
#: A run that received this share of what the link can deliver kept the link full.
LINK_FULL = 0.97


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


#: The payload sweep's values (``payload_sweep``); quick mode: one size on each side of each boundary.
FULL = {"sizes": SIZES, "rate": "100mbit", "loss": "1%", "time": "2s", "wire": "real", "queue": 1000, "reps": 1,
        "backend": "auto"}
QUICK = {"sizes": QUICK_SIZES}


def sweeps(*, quick: bool = False, **given) -> Lab:
    """``payload``: UDP bulk at each payload size (``payload_sweep``), read with ``where_data_is_lost``."""
    v = values(FULL, QUICK, quick, given)
    return Lab({"payload": Sweep(payload_sweep(**v))}, v)


def where_data_is_lost(df: pd.DataFrame, *, excess: float = EXCESS) -> pd.DataFrame:
    """One row per payload size of a ``payload_sweep``'s results (means over repetitions):
    ``fragments`` k, ``delivered`` (measured), ``pred_delivered`` ((1 − p)^k, the link's
    share), ``excess_loss`` (1 − delivered / pred_delivered: the host's share),
    ``link_pps`` (datagrams a second the link can carry at this size), ``received_pps``
    (what the receiver took), and ``cause`` of what was lost: with an excess over ``excess``,
    "receiver" (the link had room, the receiver fell behind) or "queue" (the link stayed
    full: the sender outran it and its queue dropped, as document 002 suspected of its
    sender's path to the card); else "fragments" where k > 1, "link loss", or "none"."""
    ok = df[df["status"] == "ok"]
    rows = []
    for size, runs in ok.groupby("packet_bytes"):
        first = runs.iloc[0]
        spec = LinkSpec.parse(rate=_value(first, "rate_bps"), loss=_value(first, "loss", 0.0),
                              mtu=_value(first, "mtu"), wire=_value(first, "link_wire", "emulated"),
                              pppoe=bool(_value(first, "pppoe", False)))
        packets = packetize(HeaderStack("udp", spec.mtu, wire=spec.wire, pppoe=spec.pppoe), int(size))
        pred = packets.delivery_probability(spec.forward.loss)
        delivered = float(runs["delivered_fraction"].mean())
        over = 1.0 - delivered / pred
        seconds = runs["transfer_s"].where(runs["transfer_s"] > 0)
        link_pps = spec.forward.rate_bps / 8 / packets.wire_bytes if spec.forward.rate_bps else math.nan
        received_pps = float((runs["packets_received"] / seconds).mean())
        if over <= excess:
            cause = "fragments" if packets.fragmented else "link loss" if spec.forward.loss else "none"
        elif received_pps >= LINK_FULL * link_pps * pred:
            cause = "queue"          # the link stayed full: the sender outran it, its queue dropped
        else:
            cause = "receiver"       # the link had room: the receiver fell behind
        rows.append({"packet_bytes": int(size), "fragments": packets.packets, "delivered": delivered,
                     "pred_delivered": pred, "excess_loss": over, "link_pps": link_pps,
                     "received_pps": received_pps,
                     "goodput_bps": float(runs["goodput_bps"].mean()),
                     "pred_goodput_bps": float(runs["pred_goodput_bps"].mean()), "cause": cause})
    return pd.DataFrame(rows)


def boundaries(table: pd.DataFrame, *, rate_bps: float, wire: str = "real", mtu: int = 1500) -> dict:
    """The two boundaries of a ``where_data_is_lost`` table.

    ``fragmentation_bytes``: MTU − 28, the largest payload of one packet (above it, k ≥ 2).
    ``lower_bytes``: the smallest size from which on every size up to that one delivers
    what the link lets through (no excess loss); None when even the largest does not.
    ``receiver_pps``: the receiver's packet-rate ceiling P_r, the datagrams a second it took
    at the largest size where it fell behind (NaN when it never did). ``predicted_lower_bytes``:
    S* = R / (8·P_r) − L, the size below which the link's packet rate exceeds P_r
    (≤ 0: the receiver keeps up at every size)."""
    single = table[table["fragments"] == 1].sort_values("packet_bytes")
    behind = single["cause"] == "receiver"
    lower = None
    for i in range(len(single)):
        if not behind.iloc[i:].any():
            lower = int(single["packet_bytes"].iloc[i])
            break
    # P_r near the boundary: the receiver's rate falls as S grows (copying adds to each datagram)
    ceiling = float(single.loc[behind, "received_pps"].iloc[-1]) if behind.any() else math.nan
    per_datagram = HeaderStack("udp", mtu, wire=wire).l2 + ip_and_udp()
    predicted = rate_bps / (8 * ceiling) - per_datagram if ceiling == ceiling else math.nan
    return {"fragmentation_bytes": udp_payload(mtu), "lower_bytes": lower, "receiver_pps": ceiling,
            "predicted_lower_bytes": predicted}


def _value(row, name: str, default=None):
    """A results column, ``default`` when absent, None or NaN (a reloaded table has all three)."""
    value = row.get(name)
    return default if value is None or value != value else value


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
        "pppoe_tcp_payload": Exercise(
            "TCP payload per segment (with timestamps) behind a PPPoE link, MTU 1492?",
            lambda: predict("tcp", 1e9, pppoe=True, timestamps=True).payload_bytes, 0.0,
            "1492 − 20 (IP) − 20 (TCP) − 12 (timestamps)"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()
