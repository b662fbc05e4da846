"""Where UDP loses data as its payload S grows (document 002), read from a payload sweep.

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

``doc002.payload_sweep`` declares the sweep (UDP bulk, one run per size, a real wire and
a little loss so both boundaries show); ``where_data_is_lost`` reads its results:
per size, the delivered fraction beside the model's (1 − p)^k, the excess loss
that is the host's, and the boundaries measured and predicted.
"""
from __future__ import annotations

import math

import pandas as pd

from ..link.spec import LinkSpec
from ..model import HeaderStack, packetize
from ..wire.headers import ip_and_udp, udp_payload

__all__ = ["where_data_is_lost", "boundaries", "boundary_table", "column_value", "EXCESS", "LINK_FULL",
           "DOC_LOWER_BYTES", "DOC_RATE_BPS"]


#: Excess loss (beyond the model's (1 − p)^k) that counts as data lost by the hosts.
EXCESS = 0.01


#: A run that received this share of what the link can deliver kept the link full.
LINK_FULL = 0.97


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
        spec = LinkSpec.parse(rate=column_value(first, "rate_bps"), loss=column_value(first, "loss", 0.0),
                              mtu=column_value(first, "mtu"), wire=column_value(first, "link_wire", "emulated"),
                              pppoe=bool(column_value(first, "pppoe", False)))
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


#: Document 002: "UDP loses packets ... when S < 646 B on that host", on its 10 Mbit/s cable.
DOC_LOWER_BYTES, DOC_RATE_BPS = 646, 10e6


def boundary_table(table: pd.DataFrame, *, rate_bps: float, wire: str = "real", mtu: int = 1500) -> pd.DataFrame:
    """The lower boundary three ways, with the rate each holds at: the document's 646 B (its host,
    10 Mbit/s), this host's measured at the sweep's ``rate_bps``, and this host's predicted
    S* = R / (8·P_r) − L both at ``rate_bps`` and at the document's 10 Mbit/s (the receiver's
    packet-rate ceiling P_r measured here; ≤ 0: it keeps up with the link at every size)."""
    found = boundaries(table, rate_bps=rate_bps, wire=wire, mtu=mtu)
    ceiling = found["receiver_pps"]
    per_datagram = HeaderStack("udp", mtu, wire=wire).l2 + ip_and_udp()
    at_doc = DOC_RATE_BPS / (8 * ceiling) - per_datagram if ceiling == ceiling else math.nan
    measured = found["lower_bytes"]
    rows = [("document 002 (its host)", DOC_RATE_BPS, DOC_LOWER_BYTES, "measured by nttcp on its cable"),
            ("this host, measured", rate_bps, math.nan if measured is None else measured,
             "smallest size from which no size loses more than the link"),
            ("this host, predicted", rate_bps, found["predicted_lower_bytes"], "R / (8·P_r) − L"),
            ("this host, predicted at the document's rate", DOC_RATE_BPS, at_doc,
             "R / (8·P_r) − L with R = 10 Mbit/s" + (": below 0, no lower boundary" if at_doc <= 0 else ""))]
    return pd.DataFrame([{"boundary": name, "rate_Mbps": rate / 1e6, "lower_bytes": value,
                          "receiver_pps": math.nan if name.startswith("document") else ceiling, "how": how}
                         for name, rate, value, how in rows])


def column_value(row, name: str, default=None):
    """A results column, ``default`` when absent, None or NaN (a reloaded table has all three)."""
    value = row.get(name)
    return default if value is None or value != value else value
