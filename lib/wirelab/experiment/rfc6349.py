"""RFC 6349's three metrics of a TCP run, from its row and its event stream (``model.rfc6349``).

    columns = run_metrics(row, events)      # rfc6349_* columns, added to every TCP run's row
    table = rfc6349_table(frame)            # the same for a saved sweep, one row per TCP run

Where each input comes from:

* actual transfer time: the receiver's (``receiver_duration_s``: first byte to last, the
  figure goodput is computed on);
* ideal transfer time: the bytes delivered at the link's own limit for this transfer,
  ``pred_limit_link_bps`` (η·C on the link's wire, with this run's headers and TCP
  options: the RFC's Maximum Achievable TCP Throughput, §4.1.1, counted on the wire in use);
  for one of several flows sharing the link, its max-min fair share of it
  (``pred_limit_share_bps``: what it can achieve beside the others);
* transmitted and retransmitted bytes: the kernel's own counters of the sender's socket
  (TCP_INFO ``bytes_sent`` and ``bytes_retrans``: RFC 4898's HCDataOctetsOut and
  OctetsRetrans), in the sender's last interval record;
* average RTT during transfer: the sender's smoothed RTT in its interval records while it
  sent, one a second as §4.3 says; baseline RTT: the smallest RTT the kernel saw on the
  connection (``min_rtt_s``; its handshake and first segments cross an empty queue).

Capture files have their own road (``capture.tcp_analysis``): ``wirelab analyze`` prints the
same three from Wireshark's retransmission flags and RTT samples.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..model import rfc6349 as rfc
from .events import read_events

__all__ = ["run_metrics", "rfc6349_table", "from_samples", "COLUMNS"]

COLUMNS = ("rfc6349_ideal_transfer_s", "rfc6349_transfer_time_ratio", "rfc6349_tcp_efficiency_pct",
           "rfc6349_buffer_delay_pct", "rfc6349_average_rtt_s", "rfc6349_baseline_rtt_s")


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def from_samples(*, delivered_bytes=None, actual_s=None, achievable_bps=None, transmitted_bytes=None,
                 retransmitted_bytes=None, rtt_samples=(), baseline_rtt_s=None) -> dict:
    """The ``rfc6349_*`` columns from what was measured; each left out when its inputs are."""
    out: dict = {}
    delivered, actual, limit = _number(delivered_bytes), _number(actual_s), _number(achievable_bps)
    if delivered and actual and limit:
        ideal = rfc.ideal_transfer_time(delivered, limit)
        out.update(rfc6349_ideal_transfer_s=ideal, rfc6349_transfer_time_ratio=rfc.transfer_time_ratio(actual, ideal))
    sent, resent = _number(transmitted_bytes), _number(retransmitted_bytes)
    if sent and resent is not None and resent <= sent:
        out["rfc6349_tcp_efficiency_pct"] = rfc.tcp_efficiency(sent, resent)
    samples = [(t, r) for t, r in rtt_samples if _number(r)]
    baseline = _number(baseline_rtt_s)
    if samples:
        out["rfc6349_average_rtt_s"] = rfc.average_rtt_during_transfer(samples)
        if baseline:
            out.update(rfc6349_baseline_rtt_s=baseline,
                       rfc6349_buffer_delay_pct=rfc.buffer_delay(out["rfc6349_average_rtt_s"], baseline))
    return out


def run_metrics(row: dict, events: list[dict], *, flow=None, stream=None) -> dict:
    """The ``rfc6349_*`` columns of one TCP run (of one ``flow`` and ``stream`` of a flows run)."""
    if row.get("proto") != "tcp":
        return {}
    sender = [e for e in events if e.get("event") == "interval" and e.get("source") == "sender"
              and e.get("flow") == flow and (stream is None or e.get("stream") == stream)]
    last = sender[-1] if sender else {}
    sending, before = [], -1
    for record in sender:                # the records while data went out (not the wait for the end)
        if (record.get("bytes") or 0) > before or record.get("unacked_segments"):
            sending.append(record)
        before = record.get("bytes") or 0
    return from_samples(delivered_bytes=row.get("bytes_delivered") or row.get("bytes_received"),
                        actual_s=row.get("receiver_duration_s"),
                        achievable_bps=row.get("pred_limit_share_bps") or row.get("pred_limit_link_bps"),
                        transmitted_bytes=last.get("bytes_sent"), retransmitted_bytes=last.get("bytes_retrans"),
                        rtt_samples=[(r["t"], r.get("srtt_s")) for r in sending],
                        baseline_rtt_s=last.get("min_rtt_s"))


def rfc6349_table(frame, folder) -> pd.DataFrame:
    """The ``rfc6349_*`` columns of every TCP run of a saved sweep (read from its event streams),
    with the run's setting columns in front."""
    out = []
    for _, row in frame.iterrows():
        events_file = row.get("events_file")
        if row.get("proto") != "tcp" or not isinstance(events_file, str):
            continue
        events = read_events(Path(folder) / events_file)
        flow = row.get("flow_id") if isinstance(row.get("flow_id"), str) else None
        stream = int(row["stream"]) if flow is not None and _number(row.get("stream")) is not None else None
        metrics = run_metrics(row.to_dict(), events, flow=flow, stream=stream)
        out.append({k: row.get(k) for k in ("run_id", "flow_id", "stream", "rate_bps", "delay_s", "loss",
                                            "queue_packets", "goodput_bps") if k in row} | metrics)
    return pd.DataFrame(out)
