"""Document 000's Appendix B as a table: received MB/s, what was not delivered and each packet's
delay against the offered load, measured (evenly paced or at the thesis's 1 s tick), the model and
the thesis's numbers side by side (``offered_load_table``, ``pacing_table``, ``maxima_table``);
``labs.doc000`` hands these names on (notebook 07). Also the helpers its other tables share: a
sweep's runs made ready (``_ok``), a mean with its interval (``_mean_ci``) and the document's rows
that this run did not measure set under the measured ones (``with_document_rows``).
"""
from __future__ import annotations

import math

import pandas as pd

from ..errors import UsageError
from ..experiment.stats import summarize
from ..model import predict
from ..model.load import burst_delay, packet_delay, received_rate
from ..reference import load_reference

__all__ = ["MB", "WMEM_DEFAULT", "load_prediction", "offered_load_table", "pacing_table", "maxima_table",
           "with_document_rows"]

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
                       sndbuf: float = WMEM_DEFAULT, pacing: str = "even",
                       every_document_row: bool = False) -> pd.DataFrame:
    """Received MB/s, what was not delivered, and each packet's delay against the offered load,
    per (proto, packet, offered): measured (mean, 95 % CI; ``delay_ms`` one way), the model (for
    the sender's ``pacing``), document 000 (App. B; ``doc_echo_ms`` its stamp-to-echo round trip). Not delivered = not sent (``sent_fraction`` < 1: the
    sender was held back or could not keep the pace) + lost (``lost_fraction`` of what was sent, UDP).
    ``every_document_row``: Appendix B's settings this run did not measure too, after the measured
    ones (``with_document_rows``), for showing; the figures and the other tables take the measured."""
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
        keys = ["proto", "packet_bytes", "offered_MBps"]
        out = out.merge(doc, how="left", on=keys)
        out = out.sort_values(keys).reset_index(drop=True)
        return with_document_rows(out, doc, keys) if every_document_row else out
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
    doc = load_reference("seed000_offered_load")
    if offered_MBps is not None:
        doc = doc[doc["offered_MBps"] == offered_MBps]
    doc = doc.loc[doc.groupby(["protocol", "packet_bytes"])["received_MBps"].idxmax()]
    rates = even["rate_bps"].dropna()
    rate = float(rates.iloc[0]) if len(rates) else 1e9
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


def with_document_rows(table: pd.DataFrame, document: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``table`` (measured rows, already joined with ``document`` on ``keys``) and under it every row
    of ``document`` whose setting it lacks: quick mode measures a few of the document's settings, and
    the published numbers of the others are shown all the same. ``measured``: whether this run
    measured the row's setting (False: the document's numbers alone, the measured columns empty)."""
    out = table.assign(measured=True)
    have = out[keys].drop_duplicates()
    rest = document.merge(have, how="left", on=keys, indicator=True)
    rest = rest[rest["_merge"] == "left_only"].drop(columns="_merge").assign(measured=False)
    rest = rest[[c for c in out.columns if c in rest.columns]]
    return pd.concat([out, rest], ignore_index=True)[list(out.columns)]
