"""Document 002 (Politecnico di Torino): goodput predicted from the headers, against nttcp.

Efficiency η = S / (S + L4 + L3 + L2) with L2 = 38 B on a real Ethernet wire:
UDP 1472 / 1538 = 0.957, TCP 1460 / 1538 = 0.949, 1448 / 1538 = 0.941 with
timestamps; 9.41 Mbit/s measured by nttcp at the receiver on 10 Mbit/s; the
FTTC line with a PPPoE MTU of 1492 (its table: ``seed002_goodput``). Notebooks
``01-overhead-and-goodput`` (every number predicted by ``wirelab.model``) and
``04-reading-a-capture`` (the 1514 B frames and 1448 B payloads read from the wire)
redo it; they run no sweep, so this lab is its table and its exercises.
"""
from __future__ import annotations

import pandas as pd

from ..model import predict
from ..reference import load_reference
from .lab import Exercise

__all__ = ["EXERCISES", "reference"]


def reference() -> pd.DataFrame:
    """The document's table: η, predicted and measured Mbit/s per scenario, protocol and direction."""
    return load_reference("seed002_goodput")


#: The lab's exercises (``wirelab.exercises.check``).
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
