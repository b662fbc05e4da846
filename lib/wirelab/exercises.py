"""Exercises that check a student's answer against the model, with a hint.

The expected answers are computed by ``wirelab.model`` when asked, never
stored, so an exercise stays right if a parameter changes.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import UsageError
from .model import predict

__all__ = ["Exercise", "EXERCISES", "check"]


@dataclass(frozen=True)
class Exercise:
    question: str
    expected: Callable[[], float]
    tolerance: float          # relative
    hint: str


EXERCISES = {
    "udp_ipv6_payload": Exercise(
        "Largest UDP payload over IPv6 with MTU 1500 that does not fragment (bytes)?",
        lambda: predict("udp", 1e9, ip_version=6).payload_bytes, 0.0,
        "MTU − IPv6 header (40) − UDP header (8)"),
    "tcp_ts_gbe": Exercise(
        "Predicted TCP goodput (Mbit/s) on Gigabit Ethernet with timestamps?",
        lambda: predict("tcp", 1e9, timestamps=True).goodput_bps / 1e6, 0.002,
        "η = 1448 / 1538; goodput = η · C"),
    "udp_fragments_4000": Exercise(
        "How many IPv4 fragments carry one 4000-byte UDP payload at MTU 1500?",
        lambda: predict("udp", 1e9, payload=4000).fragments, 0.0,
        "each fragment carries at most 1480 bytes of the 4008-byte UDP datagram"),
    "delivery_4000_1pct": Exercise(
        "With 1 % independent packet loss, what fraction of 4000-byte UDP datagrams arrive?",
        lambda: predict("udp", 1e9, payload=4000, loss=0.01).delivery_probability, 0.002,
        "(1 − p)^k with k fragments"),
    "pppoe_tcp_payload": Exercise(
        "TCP payload per segment (with timestamps) behind a PPPoE link, MTU 1492?",
        lambda: predict("tcp", 1e9, pppoe=True, timestamps=True).payload_bytes, 0.0,
        "1492 − 20 (IP) − 20 (TCP) − 12 (timestamps)"),
}


def check(name: str, answer: float | None) -> str:
    """Compare ``answer`` with the model; returns (and prints) a one-line verdict."""
    if name not in EXERCISES:
        raise UsageError(f"no exercise {name!r}", f"choose one of {', '.join(EXERCISES)}")
    exercise = EXERCISES[name]
    if answer is None:
        verdict = f"{name}: not answered yet. {exercise.question} Hint: {exercise.hint}."
    else:
        expected = exercise.expected()
        close = abs(float(answer) - expected) <= exercise.tolerance * abs(expected) + 1e-9
        verdict = (f"{name}: correct ({expected:.6g})" if close else
                   f"{name}: not quite ({answer!r}). Hint: {exercise.hint}.")
    print(verdict)
    return verdict
