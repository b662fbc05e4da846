"""The receiver's REPORT folded into the sender's Result (``measure_client.measure`` ends with it).

The receiver counts what arrived (bytes, packets, duplicates, its CPU) and the raw one-way
delays on its own clock; this end knows what it sent and, from the echo rounds, how far
the receiver's clock is from its own. Joined here into one Result, each one-way delay
corrected by the clock line at about its send time, the method named beside it.
"""
from __future__ import annotations

from .clock import ClockFit
from .result import Result

__all__ = ["fold_report", "report_span"]


def report_span(report: dict) -> float | None:
    """The receiver's first to last record counted (its own clock), or None."""
    first, last = report.get("receiver_start_time_s"), report.get("receiver_end_time_s")
    return last - first if first is not None and last is not None and last > first else None


def fold_report(result: Result, report: dict, same_clock: bool, fit: ClockFit | None, span) -> None:
    """Put the receiver's REPORT into the Result; one-way delay with the clock method named.
    ``span``: (first, last) send time of the records on this end's clock: the delay samples
    are spread evenly over it, so each is corrected by the fitted θ at about its send time."""
    for key in ("bytes_received", "bytes_delivered", "packets_received", "duplicates", "out_of_order",
                "receiver_start_time_s", "receiver_end_time_s", "receiver_cpu_s", "receiver_syscalls",
                "rcvbuf_granted_bytes"):
        setattr(result, key, report.get(key))
    result.receiver_error = report.get("error")
    result.lost = report.get("lost", 0 if result.proto == "tcp" else None)
    raw = report.get("raw_delays_s") or []
    if fit:
        result.clock_offset_s = fit.offset_s
        result.metadata.update(clock_drift_ppm=fit.drift_ppm, clock_fit_residual_s=fit.residual_s,
                               clock_rounds_used=fit.used, clock_t0_s=fit.t0_s)
    if same_clock:
        result.one_way_delays_s, result.delay_method = raw, "same host clock"
        result.clock = "one clock"
    elif fit:
        first, last = span or (fit.t0_s, fit.t0_s)
        step = (last - first) / max(len(raw), 1)
        result.one_way_delays_s = [d - fit.at(first + (i + 0.5) * step) for i, d in enumerate(raw)]
        result.delay_method = ("ntp-style offset and drift: a line fitted to echo rounds before and after "
                               "the data (RFC 5905 offsets, least squares over the smallest-RTT half)")
        # goodput's last instant is the end of the data: the receiver's clock, corrected there
        result.clock_offset_s, result.clock = fit.at(last), "offset estimate"
    if report.get("receiver_socket_drops") is not None:   # lost at the receiving host, not on the link
        result.metadata["receiver_socket_drops"] = report["receiver_socket_drops"]
    if report.get("delays_sampled"):
        result.metadata["delays_sampled"] = True
    if "end_markers" in report:          # nttcp's: how many arrived, the first one's time
        result.metadata.update(end_markers_received=report["end_markers"],
                               end_marker_first_s=report.get("end_marker_first_s"),
                               end_marker_numbers=report.get("end_marker_numbers"))
    result.ok = result.error is None and result.receiver_error is None
