"""The host's own round trip, measured next to a setting's runs, for the stop-and-wait model.

A stop-and-wait cycle is DATA/C + RTT + ACC/C, where the RTT is the *whole*
round trip: propagation, and the time the two programs, the scheduler and the
link process (or the loopback relay) take to pass a packet on (Bertsekas &
Gallager, *Data Networks* §2.4.2, count processing in it). With no delay set
that processing is the only RTT there is, and on a loaded two-core machine it
is 0.1 to 2 ms: UDPR at 0 delay then measures 0.4 of a model that leaves it
out. It is an input of the model, like a link's RTT measured with ping before
Mathis' formula is applied, so it is measured apart from the runs, the way the
runs do it:

    probe  a UDPR transfer with the same engine, hence the same programs and processes
           (server on host b, the client forked as the runs' clients are), of the
           setting's own DATA size and file (at most ``PROBE_ROUNDS`` DATA), across a
           link with the sweep's backend and rate but no delay and no loss;
    host   the mean of its DATA→ACC round trips − the two packets' transmission (where the
           rate is tbf's, a meter: ``link.meter_bytes``, − what the DATA exceeds the bucket by,
           ``model.stopwait.cycle_time``; a round trip shorter than the DATA's transmission
           hides behind the bucket's refill there, and is taken as that transmission, which
           predicts the delay-free cycle exactly and one with a delay no faster than it runs);
    set    ``PROBES`` probes in a row: their **median** is the host round trip the
           setting is predicted with, their **range** (lowest, highest) the interval
           of that input: for 5 probes the median of the probes' distribution lies
           inside it with probability 1 − 2·2⁻⁵ = 94 % (distribution-free: the order
           statistics of a median). ``prediction`` turns it into an interval on the
           predicted goodput, and ``residuals`` checks that it overlaps the runs'.

Why UDPR's own exchange and not a UDP echo: the server parses each DATA, keeps
its bytes and answers with an ACC, which an echo does not do. Measured under
load at 10 Mbit/s, an echo of the same size read 0.1 ms less per cycle than
the runs' own DATA→ACC. Why several probes and their median: one probe on a
shared machine is one draw of its load (a probe at a sweep's start read 0.62 ms,
the runs minutes later 0.37 ms); a median of a few, next to the runs, repeats
what the runs see, and their range says how well. The probe only ever sees
lossless, delay-free exchanges, so what the model adds (delay, loss, MAX_WAIT's
timeouts, the file's size) is still predicted, not measured.

Within one probe the mean, not the median, of its cycles: the model predicts a mean
time, and the slow tail of a loaded machine is part of it. Settings without UDPR
need no probe. The runner takes a probe set just before a UDPR setting's runs, and
again once its last set is older than ``PROBE_MAX_AGE_S`` (``HostRoundTrips``,
one per sweep; the first set, at the sweep's start, goes to meta.json).
"""
from __future__ import annotations

import math
import statistics
import time

from .. import transports
from ..model.stopwait import ACC_WIRE_BYTES
from ..transports.udpr import NAME as PROBE_PROTO      # the probe is a lossless UDPR transfer (above)
from .engine import capabilities
from .linklayer import layer_capabilities
from .prediction import predict_columns
from .spec import Experiment, Setting

__all__ = ["needs_probe", "probe_key", "host_round_trip", "HostRoundTrips", "PROBES", "PROBE_ROUNDS",
           "PROBE_MAX_WAIT_S", "PROBE_MAX_AGE_S"]

#: Probes in a set (their median and range); DATA exchanges in one probe at most; its MAX_WAIT
#: (nothing is lost: it only bounds a stray wait); how long a set stands for its setting.
PROBES, PROBE_ROUNDS, PROBE_MAX_WAIT_S, PROBE_MAX_AGE_S = 5, 100, 1.0, 30.0
PROBE_DEADLINE_S = 30.0
DEFAULT_DATA_BYTES = 1000


def needs_probe(settings: list[Setting]) -> bool:
    """Only stop-and-wait exchanges on a rate-limited link depend on the host's round trip."""
    return any(transports.get(s.proto).ack_clocked and s["rate_bps"] for s in settings)


def probe_key(setting: Setting) -> tuple:
    """What a probe set stands for: the setting's rate, MTU, DATA size and file size."""
    return setting["rate_bps"], setting["mtu"], setting["packet_bytes"], setting["size_bytes"]


def _probe_setting(setting: Setting, engine_name: str, backend: str) -> Setting:
    data = setting["packet_bytes"] or DEFAULT_DATA_BYTES
    size = min(setting["size_bytes"] or PROBE_ROUNDS * data, PROBE_ROUNDS * data)
    exp = Experiment("probe", proto=PROBE_PROTO, size=size, packet=setting["packet_bytes"], rate=setting["rate_bps"],
                     mtu=setting["mtu"], max_wait=PROBE_MAX_WAIT_S, reps=1, engine=engine_name, backend=backend)
    return exp.settings()[0]


def _one_probe(engine, link_layer, backend: str, setting: Setting, kept) -> dict:
    start = time.monotonic()
    try:
        # through the sweep's KeptLinks, when given: its runs use the same link
        opening = kept.lease(setting.link, seed=0) if kept is not None else \
            link_layer.open(setting.link, backend=backend, seed=0, name="probe")
        with opening as link:
            record = engine.run(setting, link, deadline=start + PROBE_DEADLINE_S, seed=0, workdir=None)
    except Exception as err:       # noqa: BLE001 - a failed probe must not stop the sweep
        return {"error": f"{type(err).__name__}: {err}"}
    rtt = record.get("rtt") or {}
    if rtt.get("mean_s") is None or not rtt.get("count"):
        return {"error": "the probe measured no DATA→ACC round trip"}
    return {"mean_s": float(rtt["mean_s"]), "count": int(rtt["count"])}


def host_round_trip(engine, link_layer, backend: str, settings: list[Setting], *, kept=None) -> dict | None:
    """A probe set for the first UDPR setting of ``settings`` (module docstring):
    ``{"host_rtt_s"`` (the probes' median), ``"host_rtt_low_s"``, ``"host_rtt_high_s"`` (their
    range), ``"probes_s"``, ``"cycle_rtt_mean_s"``, ``"samples"``, ``"method"}``; None when no
    setting needs it or the engine cannot run the probe; ``{"error": …}`` when every probe
    failed (the sweep goes on, predicting without it). Only engines whose UDPR records time
    each DATA→ACC exchange (``times_exchanges = True``, as wirelab's programs do) are probed."""
    can = capabilities(engine) if engine is not None else None
    if not needs_probe(settings) or can is None or not can.times_exchanges:
        return None
    target = next(s for s in settings if needs_probe([s]))
    setting = _probe_setting(target, can.name, backend)
    if can.unsupported(setting):
        return None
    layer = layer_capabilities(link_layer)
    framing = dict(can.framing(setting) or {})
    wire = predict_columns(setting.params, wire=layer.wire_of(setting.link), **framing)["pred_wire_bytes"]
    if not math.isfinite(wire):
        return {"error": "the model could not frame the probe's DATA"}
    meter = layer.meter_bytes(backend, setting.link)
    # on a wire the cycle holds both packets' transmission; on tbf's meter only what the DATA
    # exceeds its bucket by (model.stopwait.cycle_time)
    held = wire + ACC_WIRE_BYTES if meter is None else max(0.0, wire - meter)
    transmission = 8.0 * held / setting["rate_bps"]
    probes = [_one_probe(engine, link_layer, backend, setting, kept) for _ in range(PROBES)]
    good = [p for p in probes if "error" not in p]
    if not good:
        return {"error": probes[0]["error"]}
    cycles = sorted(p["mean_s"] for p in good)
    hosts = [max(c - transmission, 0.0) for c in cycles]
    return {"host_rtt_s": statistics.median(hosts), "host_rtt_low_s": hosts[0], "host_rtt_high_s": hosts[-1],
            "probes_s": hosts, "cycle_rtt_mean_s": statistics.median(cycles),
            "samples": sum(p["count"] for p in good),
            "method": f"median of {len(good)} UDPR probes of {setting['size_bytes']:.0f} B in DATA of "
                      f"{wire:.0f} B on the wire, each the mean of "
                      f"its DATA→ACC round trips, at {setting['rate_bps'] / 1e6:g} Mbit/s, no delay, no loss, on "
                      f"the {backend} backend, less their transmission ({transmission * 1e3:.2f} ms"
                      + ("" if meter is None else f": tbf's meter, a bucket of {meter} B") + "); range "
                      f"{hosts[0] * 1e3:.3f}–{hosts[-1] * 1e3:.3f} ms"}


def _triple(probe: dict | None) -> tuple[float, float, float] | None:
    """(median, lowest, highest) host round trip of a probe set, or None."""
    if not probe or probe.get("host_rtt_s") is None:
        return None
    return probe["host_rtt_s"], probe["host_rtt_low_s"], probe["host_rtt_high_s"]


class HostRoundTrips:
    """A sweep's probe sets: the one at its start (``first``: the record for meta.json, or None),
    and fresh ones just before a UDPR setting's runs. ``for_setting(setting)`` is the host round
    trip its runs are predicted with, (median, lowest, highest) seconds, or None (no probe)."""

    def __init__(self, engine, link_layer, backend: str, settings: list[Setting], *, kept=None):
        self._engine, self._link_layer, self._backend, self._kept = engine, link_layer, backend, kept
        self.first = host_round_trip(engine, link_layer, backend, settings, kept=kept)
        self.host_rtt_s = _triple(self.first)
        self._probes: dict[tuple, tuple[float, tuple]] = {}    # probe key → (when, triple)
        if self.host_rtt_s is not None:   # the sweep's own set stands for the first UDPR setting's key
            first = next(s for s in settings if needs_probe([s]))
            self._probes[probe_key(first)] = time.monotonic(), self.host_rtt_s

    def for_setting(self, setting: Setting) -> tuple[float, float, float] | None:
        # the machine's load drifts during a sweep (measured: a probe at the start read 0.62 ms,
        # the runs minutes later 0.37 ms, +20 % on UDPR at 0 delay): measure next to the runs,
        # again once the last set for this setting's sizes and rate is older than PROBE_MAX_AGE_S
        if self.host_rtt_s is None or not needs_probe([setting]):
            return self.host_rtt_s
        key = probe_key(setting)
        if key not in self._probes or time.monotonic() - self._probes[key][0] > PROBE_MAX_AGE_S:
            fresh = _triple(host_round_trip(self._engine, self._link_layer, self._backend, [setting],
                                            kept=self._kept))
            self._probes[key] = time.monotonic(), fresh or self.host_rtt_s
        return self._probes[key][1]

    def forget(self) -> None:
        """A new batch of runs (more repetitions): a new probe set next to it."""
        self._probes.clear()
