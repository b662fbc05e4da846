"""Exercises that check a student's answer against the model, with a hint.

The expected answers are computed by ``wirelab.model`` when asked, never
stored, so an exercise stays right if a parameter changes.

Seeded exercises give each student a link of their own, drawn from their
student id, so answers cannot simply be copied from a neighbour::

    >>> my_link("s1234567")["rate"]                     # doctest: +SKIP
    '20mbit'
    >>> check("udpr_goodput", 1.23, student="s1234567")  # doctest: +SKIP
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import UsageError
from .model import HeaderStack, Hop, mean_jittered_delay, packetize, path_delay, predict, stop_and_wait

__all__ = ["Exercise", "EXERCISES", "check", "my_link", "seeded_exercises", "describe_link"]


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


#: What a student's link is drawn from (typical lab values; every combination is sensible).
CHOICES = {"rate": ["2mbit", "5mbit", "10mbit", "20mbit", "50mbit"], "delay": ["5ms", "10ms", "20ms", "40ms"],
           "loss": ["0.5%", "1%", "2%", "5%"], "data": [500, 1000, 1400], "max_wait": ["0.2s", "0.5s", "1s"]}


def my_link(student: str) -> dict:
    """The link parameters of ``student`` (any id: matriculation number, e-mail, login): the same id
    always gives the same link; another id almost surely another."""
    import hashlib
    import random
    if not str(student).strip():
        raise UsageError("an empty student id", "give your student id, e.g. my_link('s1234567')")
    rng = random.Random(hashlib.sha256(str(student).strip().encode()).digest())
    return {name: rng.choice(values) for name, values in CHOICES.items()}


def describe_link(student: str) -> str:
    link = my_link(student)
    return (f"your link: {link['rate']}, {link['delay']} one way, {link['loss']} loss each way; "
            f"udpr DATA of {link['data']} B, MAX_WAIT {link['max_wait']}")


def seeded_exercises(student: str) -> dict[str, Exercise]:
    """Exercises on ``student``'s own link (see ``my_link``); answers from ``wirelab.model``."""
    from . import units
    link = my_link(student)
    rate, delay = units.parse_rate(link["rate"]), units.parse_time(link["delay"])
    loss, wait, data = units.parse_fraction(link["loss"]), units.parse_time(link["max_wait"]), link["data"]
    where = f"({link['rate']}, {link['delay']} one way, real Ethernet wire)"
    return {
        "tcp_goodput": Exercise(
            f"Predicted TCP goodput (Mbit/s) with timestamps on your link {where}, no loss, big window?",
            lambda: predict("tcp", rate, timestamps=True).goodput_bps / 1e6, 0.002,
            "η = 1448 / 1538 for TCP with timestamps; goodput = η · C"),
        "bdp_bytes": Exercise(
            f"Bandwidth-delay product (bytes) of your link {where}: how much a sender must keep in flight?",
            lambda: rate * 2 * delay / 8, 0.002, "C · RTT / 8, with RTT = 2 × the one-way delay"),
        "udpr_goodput": Exercise(
            f"udpr goodput (Mbit/s) with {data} B DATA on your link {where}, no loss?",
            lambda: predict("udpr", rate, payload=data, rtt_s=2 * delay).goodput_bps / 1e6, 0.005,
            "stop-and-wait: one DATA per cycle of DATA/C + RTT + ACC/C"),
        "udpr_lossy_goodput": Exercise(
            f"udpr goodput (Mbit/s) with {data} B DATA, {link['loss']} loss each way and MAX_WAIT "
            f"{link['max_wait']} on your link {where}?",
            lambda: predict("udpr", rate, payload=data, rtt_s=2 * delay, loss=loss, max_wait_s=wait).goodput_bps / 1e6,
            0.005, "each failed try costs DATA/C + MAX_WAIT; tries are geometric with success (1−p)²"),
        "udpr_retransmissions": Exercise(
            f"Expected retransmissions per udpr DATA with {link['loss']} loss each way?",
            lambda: predict("udpr", rate, payload=data, rtt_s=2 * delay, loss=loss).stop_and_wait
            .expected_retransmissions, 0.002, "1/q − 1 with q = (1 − p)² (the DATA and its ACC must both arrive)"),
    }


def _udp_beside_tcp_share() -> float:
    """TCP's max-min share (Mbit/s) of 100 Mbit/s beside a 1.05 Mbit/s UDP flow (1470 B datagrams)."""
    from .model.fairness import max_min_shares
    udp = predict("udp", 100e6, payload=1470, wire="emulated").efficiency
    tcp = predict("tcp", 100e6, timestamps=True, wire="emulated").efficiency
    udp_wire, tcp_wire = max_min_shares(100e6, [1.05e6 / udp, None])
    return tcp_wire * tcp / 1e6


def _labs_000_004() -> dict:
    """Notebooks 07 (document 000) and 08 (document 004)."""
    from .model.fairness import jain_index
    from .model.load import udp_datagrams_buffered
    from .model.tcp import bdp_bytes, window_limited
    from .model.window import granted_buffer, slow_start_bytes

    return {
        "fragments_65000": Exercise(
            "Into how many IPv4 fragments does one 65000-byte UDP datagram go at MTU 1500?",
            lambda: predict("udp", 1e9, payload=65000).fragments, 0.0,
            "65008 B of UDP datagram, 1480 B of it per fragment"),
        "udp_65000_gbe_MBps": Exercise(
            "Predicted UDP goodput in MB/s (10⁶ B/s) with 65000 B datagrams on a real 1 Gbit/s Ethernet?",
            lambda: predict("udp", 1e9, payload=65000).goodput_bps / 8e6, 0.005,
            "η counts the IP header and the 38 B of Ethernet framing of every fragment"),
        "transmission_65000_gbe_ms": Exercise(
            "Transmission delay (ms) of one 65000 B UDP datagram, all its fragments, at 1 Gbit/s (real wire)?",
            lambda: predict("udp", 1e9, payload=65000).wire_bytes * 8 / 1e9 * 1e3, 0.005,
            "size on the wire × 8 / C, every fragment with its headers"),
        "rcvbuf_granted_163840": Exercise(
            "You ask for SO_RCVBUF = 163840 B; what does getsockopt report (rmem_max = 4 MiB)?",
            lambda: granted_buffer(163840, "rcv"), 0.0, "Linux doubles the request for its bookkeeping"),
        "datagrams_in_327680": Exercise(
            "About how many 64000 B datagrams (fragmented at MTU 1500) fit a 327680 B receive buffer?",
            lambda: udp_datagrams_buffered(327680, predict("udp", 1e9, payload=64000).fragments), 0.0,
            "each fragment costs about 2304 B of buffer (its truesize), not its length"),
        "drift_one_minute_ms": Exercise(
            "A clock runs 45 ppm fast. How many ms does it gain in one minute?",
            lambda: 45e-6 * 60 * 1e3, 0.001, "1 ppm is 1 µs per second"),
        "asymmetry_offset_error_ms": Exercise(
            "Delays are 10 ms a→b and 2 ms b→a. By how many ms is the echo-exchange offset wrong?",
            lambda: (10 - 2) / 2, 0.001, "θ = ((t2 − t1) + (t3 − t4)) / 2 assumes both directions alike"),
        "bdp_100mbit_80ms_bytes": Exercise(
            "Bandwidth-delay product (bytes) of 100 Mbit/s and an 80.8 ms RTT (document 004)?",
            lambda: bdp_bytes(100e6, 0.0808), 0.002, "C × RTT / 8"),
        "window_5269_kbps": Exercise(
            "Goodput limit (kbit/s) of a 5269 B window over an 80.8 ms RTT?",
            lambda: window_limited(5269, 0.0808) / 1e3, 0.005, "one window per round trip: 8·W/RTT"),
        "equal_share_10_mbps": Exercise(
            "Ten TCP streams share 100 Mbit/s (emulated wire, timestamps). Mbit/s per stream?",
            lambda: predict("tcp", 100e6, timestamps=True, wire="emulated").goodput_bps / 10 / 1e6, 0.005,
            "η·C shared equally"),
        "jain_6_4": Exercise(
            "Jain's fairness index of two flows getting 6 and 4 Mbit/s?",
            lambda: jain_index([6, 4]), 0.002, "(Σx)² / (n·Σx²)"),
        "tcp_beside_udp_mbps": Exercise(
            "TCP's total share (Mbit/s) of 100 Mbit/s beside a 1.05 Mbit/s UDP flow of 1470 B datagrams?",
            _udp_beside_tcp_share, 0.005,
            "max-min: UDP keeps its demand (in wire bits: 1.05 Mbit/s / η_UDP), TCP gets the rest × η_TCP"),
        "slow_start_5s_rtt_kbps": Exercise(
            "A 30 s run over a 5 s RTT, IW 10, MSS 1448, never losing: kbit/s (the test starts after the "
            "handshake)?",
            lambda: slow_start_bytes(30, 5, 1448, handshake_rtts=0) * 8 / 30 / 1e3, 0.005,
            "6 round trips, each doubling: 10 + 20 + ... segments"),
    }


EXERCISES.update(_labs_000_004())


def check(name: str, answer: float | None, *, student: str | None = None) -> str:
    """Compare ``answer`` with the model; returns (and prints) a one-line verdict.
    With ``student``, ``name`` is one of that student's seeded exercises."""
    exercises = seeded_exercises(student) if student is not None else EXERCISES
    if name not in exercises:
        raise UsageError(f"no exercise {name!r}", f"choose one of {', '.join(exercises)}")
    exercise = exercises[name]
    if answer is None:
        verdict = f"{name}: not answered yet. {exercise.question} Hint: {exercise.hint}."
    else:
        expected = exercise.expected()
        close = abs(float(answer) - expected) <= exercise.tolerance * abs(expected) + 1e-9
        verdict = (f"{name}: correct ({expected:.6g})" if close else
                   f"{name}: not quite ({answer!r}). Hint: {exercise.hint}.")
    print(verdict)
    return verdict
