"""One-way delay across two clocks, as a lab (documents 000 and 003): give host a's programs a clock that is off by a
known offset and drift, run echo rounds across the link, fit the line, compare.

    with wirelab.link.open(LinkSpec.parse(rate="10mbit", delay="10ms")) as link:
        lab = two_clocks(link, offset_s=0.0037, drift_ppm=45)
    lab["fit"]       # offset and drift the echo rounds give, beside the configured ones
    lab["rounds"]    # one row per round: t, θ, RTT and the true one-way delays

Namespaces share one clock, so the lab knows the truth: the skew is applied in
the client's own program (``transfer.clock.SkewedClock``), and every estimate
is checked against it. θ is the receiver's clock minus the sender's, so a
sender clock *ahead* by 3.7 ms and *fast* by 45 ppm shows as θ = −3.7 ms
falling by 45 µs per second. Two-way time transfer assumes both directions
take as long; on an asymmetric link its offset is wrong by half the
difference, and so is RTT/2 as a one-way delay (document 000, 003).
"""
from __future__ import annotations

import pandas as pd

from ..transfer.clockrounds import echo_exchange
from ..transfer.clock import fit_offset_drift

__all__ = ["two_clocks"]


def two_clocks(link, *, offset_s: float = 0.0037, drift_ppm: float = 45.0, rounds: int = 400,
               interval_s: float = 0.01, proto: str = "udp", packet: int = 64, timeout: float = 60.0) -> dict:
    """Run ``rounds`` echo exchanges ``interval_s`` apart from host a (its clock skewed by
    ``offset_s`` and ``drift_ppm``) to a server on host b. Returns ``rounds`` (a DataFrame:
    t_s since the first round, theta_s, rtt_s, true_ab_s, true_ba_s), ``fit`` (a one-row
    DataFrame: configured, estimated and the error) and the client's ``result``."""
    result = echo_exchange(link, rounds=rounds, interval_s=interval_s, proto=proto, packet=packet,
                           timeout=timeout, clock_offset_s=offset_s, clock_drift_ppm=drift_ppm)
    table = pd.DataFrame(result["metadata"]["echo_rounds"],
                         columns=["t_s", "theta_s", "rtt_s", "true_ab_s", "true_ba_s"])
    fit = fit_offset_drift(table[["t_s", "theta_s", "rtt_s"]].itertuples(index=False))
    table["t_s"] -= fit.t0_s
    table["used"] = table["rtt_s"] <= table["rtt_s"].nsmallest(fit.used).max()
    half_rtt = table["rtt_s"] / 2
    estimate = {
        "offset_configured_ms": -offset_s * 1e3, "offset_estimated_ms": fit.offset_s * 1e3,
        "drift_configured_ppm": -drift_ppm, "drift_estimated_ppm": fit.drift_ppm,
        "residual_us": fit.residual_s * 1e6, "rounds_used": fit.used, "rounds": fit.rounds,
        "one_way_ab_true_ms": table["true_ab_s"].median() * 1e3,
        "one_way_ab_from_fit_ms": ((table["theta_s"] - (fit.offset_s + fit.drift * table["t_s"]))
                                   + half_rtt).median() * 1e3,
        "rtt_half_ms": half_rtt.median() * 1e3,
    }
    estimate["offset_error_ms"] = estimate["offset_estimated_ms"] - estimate["offset_configured_ms"]
    estimate["drift_error_ppm"] = estimate["drift_estimated_ppm"] - estimate["drift_configured_ppm"]
    return {"rounds": table, "fit": pd.DataFrame([estimate]), "line": fit, "result": result}
