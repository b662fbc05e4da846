"""The host's own round trip, measured before a sweep, for the stop-and-wait model.

A stop-and-wait cycle is DATA/C + RTT + ACC/C, where the RTT is the *whole*
round trip: propagation, and the time the two programs, the scheduler and the
link process (or the loopback relay) take to pass a packet on (Bertsekas &
Gallager, *Data Networks* §2.4.2, count processing in it). With no delay set
that processing is the only RTT there is, and on a loaded two-core machine it
is 0.1 to 2 ms: UDPR at 0 delay then measures 0.4 of a model that leaves it
out. It is an input of the model, like a link's RTT measured with ping before
Mathis' formula is applied, so it is measured apart from the runs:

    probe  a UDPR transfer of ``PROBE_ROUNDS`` DATA of the setting's size with the
           same engine (wirelab's programs, server on host b), across a link with
           the sweep's backend and rate but no delay and no loss;
    host   the mean of its DATA→ACC round trips − the two packets' transmission.

Why UDPR's own exchange and not a UDP echo: the server parses each DATA, keeps
its bytes and answers with an ACC, which an echo does not do. Measured under
load at 10 Mbit/s, an echo of the same size read 0.1 ms less per cycle than
the runs' own DATA→ACC, and UDPR at 0 delay came out at 0.88 to 0.94 of its
prediction in 5 reports of 6. The probe only ever sees lossless, delay-free
exchanges, so what the model adds (delay, loss, MAX_WAIT's timeouts, the file's
size) is still predicted, not measured. At 0 delay without loss the prediction
rests on the probe alone: that row checks that the host time repeats.

The mean, not the median: the model predicts a mean time, and the slow tail of
a loaded machine is part of it. Settings without UDPR need no probe. The load of
a shared machine drifts over minutes, so the runner probes again before a UDPR
setting's runs when its last probe of that rate, MTU and DATA size is older than
``PROBE_MAX_AGE_S`` (``HostRoundTrips``, one per sweep).
"""
from __future__ import annotations

import math
import time

from ..model.stopwait import ACC_WIRE_BYTES
from .prediction import predict_columns
from .spec import Experiment, Setting

__all__ = ["needs_probe", "probe_key", "host_round_trip", "HostRoundTrips", "PROBE_ROUNDS",
           "PROBE_MAX_WAIT_S", "PROBE_MAX_AGE_S"]

#: DATA exchanges in one probe; its MAX_WAIT (nothing is lost: it only bounds a stray wait);
#: how long a probe stands for its rate, MTU and DATA size before the runner measures again.
PROBE_ROUNDS, PROBE_MAX_WAIT_S, PROBE_MAX_AGE_S = 200, 1.0, 30.0
PROBE_DEADLINE_S = 30.0
DEFAULT_DATA_BYTES = 1000


def needs_probe(settings: list[Setting]) -> bool:
    """Only stop-and-wait exchanges on a rate-limited link depend on the host's round trip."""
    return any(s.proto == "udpr" and s["rate_bps"] for s in settings)


def probe_key(setting: Setting) -> tuple:
    """What a probe depends on: the rate, the MTU and the DATA size (not delay or loss)."""
    return setting["rate_bps"], setting["mtu"], setting["packet_bytes"]


def _probe_setting(settings: list[Setting], engine_name: str, backend: str) -> Setting:
    first = next(s for s in settings if s.proto == "udpr" and s["rate_bps"])
    data = first["packet_bytes"] or DEFAULT_DATA_BYTES
    exp = Experiment("probe", proto="udpr", size=PROBE_ROUNDS * data, packet=first["packet_bytes"],
                     rate=first["rate_bps"], mtu=first["mtu"], max_wait=PROBE_MAX_WAIT_S, reps=1,
                     engine=engine_name, backend=backend)
    return exp.settings()[0]


def host_round_trip(engine, link_layer, backend: str, settings: list[Setting], *, kept=None) -> dict | None:
    """``{"host_rtt_s", "cycle_rtt_mean_s", "cycle_rtt_median_s", "samples", "method"}``, or None
    when no setting needs it or the engine cannot run the probe; ``{"error": …}`` when the probe failed
    (the sweep goes on, predicting without it). Only engines whose UDPR records time each
    DATA→ACC exchange (``times_exchanges = True``, as wirelab's programs do) are probed."""
    if not needs_probe(settings):
        return None
    if not getattr(engine, "times_exchanges", False):
        return None                # its UDPR records carry no DATA→ACC round trips
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
        return {"error": "the probe measured no DATA→ACC round trip"}
    framing = dict(engine.framing(setting) or {}) if hasattr(engine, "framing") else {}
    wire = predict_columns(setting.params, wire=link_layer.wire_of(setting.link), **framing)["pred_wire_bytes"]
    if not math.isfinite(wire):
        return {"error": "the model could not frame the probe's DATA"}
    transmission = 8.0 * (wire + ACC_WIRE_BYTES) / setting["rate_bps"]
    return {"host_rtt_s": max(mean - transmission, 0.0), "cycle_rtt_mean_s": mean,
            "cycle_rtt_median_s": rtt.get("median_s", math.nan), "samples": int(count),
            "method": f"mean of {count} UDPR DATA→ACC round trips ({wire:.0f} B DATA on the wire) at "
                      f"{setting['rate_bps'] / 1e6:g} Mbit/s, no delay, no loss, on the {backend} backend, "
                      f"less their transmission ({transmission * 1e3:.2f} ms)"}


class HostRoundTrips:
    """A sweep's probes: the one at its start (``first``: the record for meta.json, or None), and
    fresh ones next to a UDPR setting's runs. ``for_setting(setting)`` is the host round trip
    its runs are predicted with (None when the sweep has no probe)."""

    def __init__(self, engine, link_layer, backend: str, settings: list[Setting], *, kept=None):
        self._engine, self._link_layer, self._backend, self._kept = engine, link_layer, backend, kept
        self.first = host_round_trip(engine, link_layer, backend, settings, kept=kept)
        self.host_rtt_s = (self.first or {}).get("host_rtt_s")
        self._probes: dict[tuple, tuple[float, float]] = {}    # probe key → (when, host round trip)
        if self.host_rtt_s is not None:   # the sweep's own probe stands for the first UDPR setting's key
            first = next(s for s in settings if needs_probe([s]))
            self._probes[probe_key(first)] = time.monotonic(), self.host_rtt_s

    def for_setting(self, setting: Setting) -> float | None:
        # the machine's load drifts during a sweep (measured: a probe at the start read 0.62 ms,
        # the runs minutes later 0.37 ms, +20 % on UDPR at 0 delay): measure it next to the runs,
        # again once the last probe of this rate, MTU and DATA size is older than PROBE_MAX_AGE_S
        if self.host_rtt_s is None or not needs_probe([setting]):
            return self.host_rtt_s
        key = probe_key(setting)
        if key not in self._probes or time.monotonic() - self._probes[key][0] > PROBE_MAX_AGE_S:
            fresh = host_round_trip(self._engine, self._link_layer, self._backend, [setting], kept=self._kept) or {}
            self._probes[key] = time.monotonic(), fresh.get("host_rtt_s", self.host_rtt_s)
        return self._probes[key][1]

    def forget(self) -> None:
        """A new batch of runs (more repetitions): a new probe next to it."""
        self._probes.clear()
