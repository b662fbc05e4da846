"""UDPR: stop-and-wait goodput, with loss in both directions and a timeout.

Source: Bertsekas & Gallager, *Data Networks* (2nd ed.) §2.4.2, and Kurose &
Ross, *Computer Networking* §3.4.2 (rdt3.0): one packet per cycle
DATA/C + RTT + ACK/C; a lost DATA or ACK costs a timeout T₀ (PPCB's
MAX_WAIT) before the resend; attempts are geometric with success
q = (1 − p_f)^k · (1 − p_r).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError
from .efficiency import packetize
from .headers import PPCB_HEADER, HeaderStack

__all__ = ["StopAndWait", "stop_and_wait"]


@dataclass(frozen=True)
class StopAndWait:
    """The stop-and-wait prediction for one DATA size on one link."""
    data_bytes: int
    cycle_s: float                  # DATA/C + RTT + ACC/C, no loss
    success_probability: float      # q: DATA and its ACC both arrive
    expected_transmissions: float   # 1/q
    time_per_packet_s: float        # cycle + (1/q − 1)(DATA/C + T₀)
    goodput_bps: float
    failure_probability: float      # (1 − q)^(MAX_RETRANSMITS + 1): the client gives up

    @property
    def expected_retransmissions(self) -> float:
        return self.expected_transmissions - 1.0


def stop_and_wait(data_bytes: int, rate_bps: float, rtt_s: float = 0.0, *,
                  stack: HeaderStack | None = None, loss_forward: float = 0.0,
                  loss_reverse: float = 0.0, timeout_s: float = 5.0,
                  max_retransmits: int = 5) -> StopAndWait:
    """Predict UDPR for DATA packets of ``data_bytes`` (see module docstring).

    ``rtt_s`` is the round trip without transmission time (propagation and
    processing); ``timeout_s`` is MAX_WAIT.
    """
    stack = stack or HeaderStack("udpr")
    if stack.proto != "udpr":
        raise ModelError(f"stop-and-wait models udpr, not {stack.proto}", "use HeaderStack('udpr', ...)")
    if not rate_bps > 0:
        raise ModelError(f"rate must be positive, not {rate_bps!r}", "e.g. 10mbit")
    if rtt_s < 0 or timeout_s <= 0 or max_retransmits < 0:
        raise ModelError("RTT and MAX_RETRANSMITS cannot be negative, MAX_WAIT must be positive",
                         "e.g. rtt 40ms, MAX_WAIT 5s, MAX_RETRANSMITS 5")
    for name, p in (("forward loss", loss_forward), ("reverse loss", loss_reverse)):
        if not 0 <= p < 1:
            raise ModelError(f"{name} must be in [0, 1), not {p!r}", "e.g. 0.01 for 1 %")
    data = packetize(stack, data_bytes)
    ack_wire = stack.l2 + stack.l3 + 8 + PPCB_HEADER["ACC"]
    data_time = 8.0 * data.wire_bytes / rate_bps
    cycle = data_time + rtt_s + 8.0 * ack_wire / rate_bps
    q = data.delivery_probability(loss_forward) * (1.0 - loss_reverse)
    tries = 1.0 / q
    per_packet = cycle + (tries - 1.0) * (data_time + timeout_s)
    return StopAndWait(data_bytes, cycle, q, tries, per_packet,
                       8.0 * data_bytes / per_packet, (1.0 - q) ** (max_retransmits + 1))
