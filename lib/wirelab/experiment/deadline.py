"""Each run's deadline, derived from what the model predicts it takes (unless the user set one).

A fixed 60 s deadline kills a stop-and-wait transfer the model itself
expects to take 100 s, and waits a minute for a 50 ms transfer that hung.
So a run may take ``SLACK`` times its predicted completion (set-up, transfer,
the final RCVD or report) plus ``MARGIN_S`` for starting processes and
building the link. A timed workload is expected to take its duration and
``SETUP_ROUND_TRIPS`` round trips of the link (``pred_rtt_s``) for opening its
connections before and exchanging the report after: iperf3 took 7.9 to 8.7
round trips beyond ``-t`` at 0.5 and 1 s round trips, wirelab's measurement 4 to 5
(namespaces, link build included). Where the model predicts no time, ``FALLBACK_S``.

A file transfer may also end by the protocol's own rule rather than the model's
expectation: PPCB's programs wait at most MAX_WAIT per try and MAX_RETRANSMITS + 1
tries before they give up (notebooks/ppcb-protocol.md), e.g. a plain udp client waiting for a
RCVD after its receiver stopped at a lost datagram, or TCP through heavy loss. Such
a run ends as the protocol says, with its result: the deadline leaves room for one
such wait (``give_up_s``; the programs' defaults where a setting names none).

A timed TCP run does not wait for its send buffer to drain (the receiver reports when its
interval ends, ``transfer/measure_server.py``), but a TCP load offered above what the link
carries does: its END waits behind a full send buffer, which drains at the link's rate
(``drain_s``; the client waits at most ``silence.DRAIN_SLACK`` times that), so the deadline
leaves room for it.

When the user gives a timeout, it is used as given, and a setting the model
expects to outlast it is flagged before the sweep starts (``too_long``).
"""
from __future__ import annotations

import math

from ..transfer.silence import DRAIN_SLACK
from ..wire.ppcb import give_up_s as ppcb_give_up_s
from .. import transports

__all__ = ["deadline_s", "expected_s", "give_up_s", "drain_s", "too_long", "SLACK", "MARGIN_S", "FALLBACK_S",
           "SETUP_ROUND_TRIPS"]

#: A run may take this many times its predicted completion…
SLACK = 3.0
#: …plus this much (processes, link, MAX_WAIT at the end).
MARGIN_S = 10.0
#: When nothing predicts a time (no rate, a setting the model does not cover).
FALLBACK_S = 60.0
#: Round trips a timed run spends around its duration (connections, report): iperf3's, the most.
SETUP_ROUND_TRIPS = 8
#: What a TCP send buffer grows to when no SO_SNDBUF is set: Linux's tcp_wmem maximum by default
#: (4 MiB, Documentation/networking/ip-sysctl.rst).
AUTOTUNED_SNDBUF_BYTES = 4 << 20
#: PPCB's MAX_WAIT and MAX_RETRANSMITS where a setting names none (the programs' defaults).
MAX_WAIT_S, MAX_RETRANSMITS = 5.0, 5


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def expected_s(setting, predictions: dict) -> float | None:
    """How long the model expects the run to take, or None when it cannot say."""
    if setting.workload in ("time", "load"):
        setup = SETUP_ROUND_TRIPS * (_number(predictions.get("pred_rtt_s")) or 0.0)
        return (_number(setting["time_s"]) or 0.0) + (_number(setting["omit_s"]) or 0.0) + setup
    return _number(predictions.get("pred_transfer_time_s"))


def give_up_s(setting) -> float:
    """How long PPCB's programs may wait before they give up by themselves, in a file transfer."""
    if setting.workload != "file":
        return 0.0
    tries = setting["max_retransmits"]
    return ppcb_give_up_s(_number(setting["max_wait_s"]) or MAX_WAIT_S, MAX_RETRANSMITS if tries is None else tries)


def drain_s(setting, predictions: dict) -> float:
    """Seconds a TCP load run may wait, after its time, for its send buffer to drain: a load above
    the predicted goodput fills the buffer (SO_SNDBUF, which Linux doubles, or the autotuned most)
    and the link empties it at that goodput. 0 for anything else (a timed run does not wait)."""
    if setting.workload != "load" or not transports.get(setting.proto).stream:       # a stream's send buffer
        return 0.0
    goodput, offered = _number(predictions.get("pred_goodput_bps")), _number(setting["offered_bps"])
    if goodput is None or (offered is not None and offered <= goodput):
        return 0.0
    asked = _number(setting["sndbuf_bytes"] or setting["window_bytes"])
    return 8.0 * (2 * asked if asked else AUTOTUNED_SNDBUF_BYTES) / goodput


def deadline_s(setting, predictions: dict, timeout: float | None) -> float:
    """The deadline of one run: the user's ``timeout`` if given, else derived from the prediction."""
    if timeout is not None:
        return float(timeout)
    expected = expected_s(setting, predictions)
    if expected is None:
        return FALLBACK_S + give_up_s(setting)
    return SLACK * expected + MARGIN_S + give_up_s(setting) + DRAIN_SLACK * drain_s(setting, predictions)


def too_long(settings_and_predictions, timeout: float | None) -> list[tuple[object, float]]:
    """(setting, expected seconds) of every setting predicted to outlast the user's ``timeout``."""
    if timeout is None:
        return []
    out = []
    for setting, predictions in settings_and_predictions:
        expected = expected_s(setting, predictions)
        if expected is not None and expected > timeout:
            out.append((setting, expected))
    return out
