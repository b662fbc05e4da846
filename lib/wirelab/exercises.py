"""Exercises that check a student's answer against the model, with a hint.

The expected answers are computed by ``wirelab.model`` when asked, never
stored, so an exercise stays right if a parameter changes.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import UsageError
from .model import HeaderStack, Hop, mean_jittered_delay, packetize, path_delay, predict, stop_and_wait

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
    # notebook 09, document 003: delay along a store-and-forward path
    "path_delay_doc003": Exercise(
        "One-way delay (ms) of a 32-byte message s → b → r1 → d when b–r1 and r1–d each add 20 ms "
        "and s–b nothing (no rate limits, processing not counted)?",
        lambda: path_delay(32, [Hop(), Hop(delay_s=0.02), Hop(delay_s=0.02)]) * 1e3, 0.001,
        "sum the nodal delays of the three hops (Kurose & Ross §1.4)"),
    "jitter_mean_1ms": Exercise(
        "netem 'delay 1ms 5ms' draws each delay uniformly from −4 to 6 ms and sends the negative ones "
        "at once. Mean delay it adds (ms)?",
        lambda: mean_jittered_delay(0.001, 0.005) * 1e3, 0.01,
        "the mean of max(D + U, 0): (D + J)² / 4J while D < J"),
    "store_forward_10mbit": Exercise(
        "A 1500-byte frame crosses three store-and-forward links of 10 Mbit/s, 1 ms propagation each. "
        "End-to-end delay (ms)?",
        lambda: path_delay(1500, [(10e6, 0.001)] * 3) * 1e3, 0.001,
        "each hop: 8·1500/10e6 s to transmit, plus 1 ms"),
    # notebook 10, document 001: stop-and-wait under loss, delay and fragmentation
    "udpr_loss_doc001": Exercise(
        "udpr goodput (kbit/s): 1000 B per DATA over 1 Mbit/s, no delay, 10 % of DATA lost (ACCs never), "
        "MAX_WAIT 20 s?",
        lambda: stop_and_wait(1000, 1e6, 0.0, stack=HeaderStack("udpr", wire="emulated"),
                              loss_forward=0.1, timeout_s=20).goodput_bps / 1e3, 0.01,
        "each lost DATA costs MAX_WAIT; on average 1/(1 − p) − 1 losses per packet"),
    "udpr_delay_doc001": Exercise(
        "udpr goodput (kbit/s) with 1000 B per DATA when each round trip takes 100 ms, nothing is lost "
        "and no rate limits?",
        lambda: stop_and_wait(1000, 1e12, 0.1).goodput_bps / 1e3, 0.01,
        "one DATA per round trip: 8 · 1000 bits every 0.1 s"),
    "udpr_fragments_64000": Exercise(
        "MTU 1500 and 10 % loss per IP packet: probability (0..1) that one 64000-byte udpr DATA "
        "arrives whole?",
        lambda: packetize(HeaderStack("udpr"), 64000).delivery_probability(0.1), 0.01,
        "(1 − p)^k for the k IP fragments of one datagram"),
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
