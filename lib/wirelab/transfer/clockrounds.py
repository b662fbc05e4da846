"""Two clocks, per run: echo rounds across a link before and after the run, one line through them.

    result = echo_exchange(link, rounds=16)           # a's echo client against b's server: the Result
    clock = ClockRounds()                             # what a link across hosts asks (``link.hosts``)
    clock.before(link); ...the run...; clock.after(link)   # → clock_offset_s, clock_drift_ppm, ...

Across two PCs every run records θ, b's clock minus a's: ``ROUNDS`` echo rounds ``INTERVAL_S``
apart on the unshaped path before the run and as many after it, fitted to one straight line
θ(t) = θ₀ + r·(t − t₀) by ``transfer.clock.fit_offset_drift`` (RFC 5905's offsets from the
smallest-RTT half of the rounds, least squares), the method document 000 asked for. Two batches
a run apart give the drift over the run's own time; one batch alone could not (its span is a
few milliseconds). The fastest round's RTT is the path's round trip (``path_rtt_s``).
"""
from __future__ import annotations

import json
import time

from ..errors import TransferError
from .clock import fit_offset_drift
from .client import client_argv, run_client
from .measure_client import measure
from .run import start_server

__all__ = ["echo_exchange", "ClockRounds", "ROUNDS", "INTERVAL_S"]

#: Echo rounds in each batch, and the time between two rounds.
ROUNDS, INTERVAL_S = 16, 0.002
TIMEOUT_S = 20.0


def echo_exchange(link, *, rounds: int = ROUNDS, interval_s: float = INTERVAL_S, proto: str = "udp",
                  packet: int = 64, timeout: float = TIMEOUT_S, clock_offset_s: float = 0.0,
                  clock_drift_ppm: float = 0.0, same_clock: bool = False, max_wait: float = 2.0) -> dict:
    """``rounds`` echo exchanges from host a to a server on host b across ``link``; the client's
    Result (``metadata["echo_rounds"]``: t_s, θ_s, RTT_s, and the true one-way delays where
    a's clock is skewed on purpose by ``clock_offset_s`` and ``clock_drift_ppm``). ``same_clock``:
    both ends read one clock (ping's case: round trips only); ``max_wait``: the client's wait for an
    answer (a round trip longer than 2 s needs more)."""

    deadline = time.monotonic() + timeout
    with link.inside("b"):
        port, stop, thread, _ = start_server(proto, host=link.address("b"), max_wait=2.0)
    try:
        host, target = link.reach(port, proto)
        config = {"call": "measure", "proto": proto, "host": host, "port": target, "mode": "echo",
                  "count": int(rounds), "packet": int(packet), "echo_interval_s": interval_s,
                  "same_clock": same_clock, "clock_offset_s": clock_offset_s, "clock_drift_ppm": clock_drift_ppm,
                  "max_wait": max_wait}
        if hasattr(link, "call"):      # across hosts: in a's worker itself, no Python started per batch
            result = link.call("a", _echo_client, config, timeout=deadline - time.monotonic())
        else:
            done = run_client(link, client_argv(config), deadline, what="the echo client",
                              fix="lower rounds or interval_s, or raise timeout")
            try:
                result = json.loads(done.stdout)
            except json.JSONDecodeError:
                raise TransferError("the echo client printed no Result", "run it by hand to see why") from None
    finally:
        stop.set()
        thread.join(3.0)
    if result.get("error") or result.get("receiver_error"):
        raise TransferError(f"echo rounds failed: {result.get('error') or result.get('receiver_error')}",
                            "check the link is up and the server answers")
    return result


def _echo_client(config: dict) -> dict:
    """The echo client of ``config`` run here (on host a's worker), its Result as a dict."""
    config = dict(config)
    config.pop("call")
    return measure(config.pop("proto"), config.pop("host"), config.pop("port"), **config).to_dict()


class ClockRounds:
    """The clock of one run across two hosts: ``before(link)`` and ``after(link)`` (see the module
    docstring); ``after`` returns the columns for the run's row."""

    def __init__(self, rounds: int = ROUNDS, interval_s: float = INTERVAL_S):
        self.rounds, self.interval_s = rounds, interval_s
        self.samples: list[tuple[float, float, float]] = []

    def _batch(self, link) -> None:
        result = echo_exchange(link, rounds=self.rounds, interval_s=self.interval_s)
        self.samples += [tuple(r[:3]) for r in result["metadata"]["echo_rounds"]]

    def before(self, link) -> None:
        self._batch(link)

    def after(self, link) -> dict:
        self._batch(link)
        fit = fit_offset_drift(self.samples)
        return {"clock_offset_s": fit.offset_s, "clock_drift_ppm": fit.drift_ppm, "clock_residual_s": fit.residual_s,
                "clock_rounds": fit.rounds, "clock_rounds_used": fit.used,
                "clock_span_s": self.samples[-1][0] - self.samples[0][0],
                "path_rtt_s": min(s[2] for s in self.samples),
                "clock_method": f"{fit.rounds} echo rounds before and after the run (UDP, a → b), a line through "
                                "the offsets of the smallest-RTT half (RFC 5905 offsets, least squares): "
                                "θ = b's clock − a's"}

    def round_trip(self) -> float | None:
        """The fastest round's RTT so far (the path's round trip), or None before any round."""
        return min((s[2] for s in self.samples), default=None)
