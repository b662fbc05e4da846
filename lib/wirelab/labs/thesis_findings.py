"""Document 000's numbers outside its final tables: its early trials (figures 21 and 25) and the
single findings of its text (figure 10's protocol table, the ≈ 4 % UDP loss, netcat's half, the
one-host offset, its 50-run means), each beside what this kit has for it.

Both tables are the thesis's own (``seed000_early_trials``, ``seed000_findings``); nothing here
is measured. ``findings_table`` takes what notebook 07 measured (its repetitions, the clock fit
of ``labs.clocks.two_clocks``) and sets it beside them where the kit has a counterpart.
"""
from __future__ import annotations

import math

import pandas as pd

from ..reference import load_reference
from ..wire.headers import TCP_HEADER, UDP_HEADER

__all__ = ["early_trials_table", "findings_table"]


def early_trials_table() -> pd.DataFrame:
    """Figures 21 (Försök 2: a second's bytes, 10 kB to 100 MB) and 25 (Försök 5: 1400 B packets):
    bytes offered and received per protocol, with the share received. The thesis's later, final
    method is Appendix B (``offered_load_table``); these trials are how it got there."""
    table = load_reference("seed000_early_trials")
    for proto in ("udp", "tcp"):
        table[f"received_{proto}_share"] = table[f"received_{proto}_bytes"] / table["offered_bytes"]
    return table


def findings_table(*, repetitions: int | None = None, clock_fit: dict | None = None) -> pd.DataFrame:
    """Each finding of the thesis's text, with the kit's counterpart where it has one (``kit``) and
    where in notebook 07 the rest is measured (``here``). ``repetitions``: the runs per point this
    notebook averages; ``clock_fit``: ``two_clocks``'s answer on one host."""
    table = load_reference("seed000_findings")
    kit = {"tcp_header": (TCP_HEADER, "wire.headers.TCP_HEADER, no options"),
           "udp_header": (UDP_HEADER, "wire.headers.UDP_HEADER"),
           "sctp_header": (math.nan, "not modelled: the kit has no SCTP"),
           "tcp_handshake": (3, "SYN, SYN-ACK, ACK: the model counts it as one round trip"),
           "sctp_handshake": (math.nan, "not modelled"),
           "udp_loss_large_buffers": (math.nan, "section 2: received_pct of the largest buffers"),
           "udp_received_small_rcvbuf": (math.nan, "section 2: received_pct where SO_RCVBUF < SO_SNDBUF"),
           "netcat_udp_received": (math.nan, "not run: the kit reads its own receiver's counts"),
           "java_udp_received": (math.nan, "not run: section 2's received_pct is the kit's receiver"),
           "program_start_offset": (math.nan, "the kit stamps with the wall clock, not nanoTime"),
           "one_host_offset": (math.nan, "section 4: the fit's offset error on one clock"),
           "one_host_delay": (math.nan, "section 1: delay_ms at light load"),
           "runs_averaged": (math.nan if repetitions is None else repetitions, "runs per point here (REPETITIONS)"),
           "udp_1400_delay_at_100MB": (math.nan, "section 1: doc_echo_ms and delay_ms at 100 MB/s"),
           "udp_1400_delay_high_load": (math.nan, "section 1: doc_echo_ms and delay_ms above 100 MB/s")}
    if clock_fit is not None:
        fit = clock_fit["fit"]
        error = fit["offset_error_ms"].iloc[0] if isinstance(fit, pd.DataFrame) else fit["offset_error_ms"]
        kit["one_host_offset"] = (abs(float(error)) * 1e6, "section 4: |offset error| of the clock fit, ns")
    table["kit"] = [kit.get(f, (math.nan, ""))[0] for f in table["finding"]]
    table["here"] = [kit.get(f, (math.nan, ""))[1] for f in table["finding"]]
    return table
