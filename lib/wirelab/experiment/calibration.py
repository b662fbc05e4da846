"""The host's own round trip, measured before a sweep, for the stop-and-wait model.

A stop-and-wait cycle is DATA/C + RTT + ACC/C, where the RTT is the *whole*
round trip: propagation, and the time the two programs, the scheduler and the
link process (or the loopback relay) take to pass a packet on (Bertsekas &
Gallager, *Data Networks* §2.4.2, count processing in it). With no delay set
that processing is the only RTT there is, and on a loaded two-core machine it
is 0.1 to 2 ms: UDPR at 0 delay then measures 0.4 of a model that leaves it
out. It is an input of the model, like a link's RTT measured with ping before
Mathis' formula is applied, so it is measured, independently of the runs:

    probe  ``rounds`` UDP echo exchanges of one DATA's size, with the same engine
           (wirelab's programs, server on host b), across a link with the
           sweep's backend and rate but no delay and no loss;
    host   mean echo RTT − the two datagrams' transmission at the rate.

The mean, not the median: the model predicts a mean time, and the slow tail of
a loaded machine is part of it. Settings without UDPR need no probe. The load of
a shared machine drifts over minutes, so the runner probes again just before
each UDPR setting's batch of runs (``runner.run``); where no delay is set the
host's round trip is the whole RTT and the load moves it from run to run
(measured under load: 0.15 to 0.75 ms between runs of one setting), so there
it probes just before every run (``per_run_probe``) and each run's prediction
uses its own probe.
"""
from __future__ import annotations

import math
import time

from ..model import HeaderStack, packetize
from .spec import Experiment, Setting

__all__ = ["needs_probe", "per_run_probe", "host_round_trip", "PROBE_ROUNDS", "PROBE_PACKET"]

#: Echo exchanges in one probe, and the size of each (a 1000 B chunk + PPCB's 21 B DATA header).
PROBE_ROUNDS, PROBE_PACKET = 200, 1021
PROBE_DEADLINE_S = 30.0


def needs_probe(settings: list[Setting]) -> bool:
    """Only stop-and-wait exchanges on a rate-limited link depend on the host's round trip."""
    return any(s.proto == "udpr" and s["rate_bps"] for s in settings)


def per_run_probe(setting: Setting) -> bool:
    """Does each run of ``setting`` need a probe of its own? Stop-and-wait with no delay:
    its whole RTT is the host's, which the machine's load moves from run to run."""
    return needs_probe([setting]) and not setting["delay_s"] and not setting["jitter_s"]


def _probe_setting(settings: list[Setting], engine_name: str, backend: str) -> Setting:
    rate = next(s["rate_bps"] for s in settings if s.proto == "udpr" and s["rate_bps"])
    mtu = next((s["mtu"] for s in settings if s["mtu"]), None)
    exp = Experiment("probe", proto="udp", workload="echo", echo=PROBE_ROUNDS, packet=PROBE_PACKET,
                     rate=rate, mtu=mtu, reps=1, engine=engine_name, backend=backend)
    return exp.settings()[0]


def host_round_trip(engine, link_layer, backend: str, settings: list[Setting], *, kept=None) -> dict | None:
    """``{"host_rtt_s", "echo_rtt_mean_s", "echo_rtt_median_s", "samples", "method"}``, or None
    when no setting needs it or the engine cannot echo; ``{"error": …}`` when the probe failed
    (the sweep goes on, predicting without it)."""
    if not needs_probe(settings):
        return None
    setting = _probe_setting(settings, getattr(engine, "name", "wirelab"), backend)
    if hasattr(engine, "unsupported") and engine.unsupported(setting):
        return None
    start = time.monotonic()
    try:
        # through the sweep's KeptLinks, when given: its first runs may use the same link
        opening = kept.lease(setting.link, seed=0) if kept is not None else \
            link_layer.open(setting.link, backend=backend, seed=0, name="probe")
        with opening as link:
            record = engine.run(setting, link, deadline=start + PROBE_DEADLINE_S, seed=0, workdir=None)
    except Exception as err:       # noqa: BLE001 - a failed probe must not stop the sweep
        return {"error": f"{type(err).__name__}: {err}"}
    rtt = record.get("rtt") or {}
    mean, count = rtt.get("mean_s"), rtt.get("count") or 0
    if mean is None or not count:
        return {"error": "the echo probe measured no round trip"}
    stack = HeaderStack("udp", setting["mtu"] or 1500, wire="emulated")
    transmission = 2 * 8.0 * packetize(stack, PROBE_PACKET).wire_bytes / setting["rate_bps"]
    return {"host_rtt_s": max(mean - transmission, 0.0), "echo_rtt_mean_s": mean,
            "echo_rtt_median_s": rtt.get("median_s", math.nan), "samples": int(count),
            "method": f"mean of {count} UDP echoes of {PROBE_PACKET} B at "
                      f"{setting['rate_bps'] / 1e6:g} Mbit/s, no delay, on the {backend} backend, "
                      f"less their transmission ({transmission * 1e3:.2f} ms)"}
