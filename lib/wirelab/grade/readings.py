"""Points the assignment leaves open, every reading of each that a careful student could choose,
and ``take``, which records the reading a program took and refuses it only where the catalogue
pins one (``strict = true``: only each point's first reading, the one ``checks`` describes).

notebooks/ppcb-protocol.md ("Readings") says the same to students, point by point.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..peers.exchange import Failed

__all__ = ["READINGS", "Reading", "take", "describe"]


@dataclass(frozen=True)
class Reading:
    question: str
    forms: dict[str, str]          # name -> what the program does; the first is the catalogue's own

    @property
    def pinned(self) -> str:
        return next(iter(self.forms))


READINGS = {
    "rjt_number": Reading(
        "which packet number an RJT carries for a DATA out of order (DATA 0, then DATA 2)",
        {"received": "the number of the packet rejected (2)", "expected": "the number expected next (1)"}),
    "overlong_tcp": Reading(
        "what a tcp server does with a DATA longer than what CONN announced is left",
        {"rjt": "RJT, then it closes the connection",
         "close": "it closes the connection without an answer",
         "rcvd": "it takes the bytes announced, sends RCVD and closes"}),
    "unknown_type_tcp": Reading(
        "what a tcp server does with a packet of a type no packet has, where DATA is expected",
        {"rjt": "RJT, then it closes the connection",
         "close": "it closes the connection without an answer (it cannot know where such a packet ends)"}),
    "malformed_data": Reading(
        "what a udp server does with a datagram whose data_len disagrees with the bytes it carries",
        {"rjt": "RJT, and the session ends",
         "ignore": "it drops the datagram as junk, and the session goes on"}),
    "resend_count": Reading(
        "how many times a packet goes out when no answer comes (\"repeat at most MAX_RETRANSMITS times\")",
        {"plus": "one send plus MAX_RETRANSMITS resends", "total": "MAX_RETRANSMITS sends in all"}),
    "foreign_at_client": Reading(
        "what a udpr client does with an ACC of another session (the assignment says nothing of it)",
        {"ignore": "it ignores the packet and waits for its own ACC",
         "error": "it gives up with ERROR: the packet is not its server's"}),
    "error_exit": Reading(
        "the exit status of a client that gives up (the assignment asks only for 'ERROR: ...' on stderr)",
        {"nonzero": "ERROR on stderr and a non-zero exit status", "zero": "ERROR on stderr, exit status 0"}),
}


def take(ctx, point: str, form: str) -> None:
    """Record that the program took ``form`` of ``point``; under ``strict`` only the pinned form passes."""
    reading = READINGS[point]
    ctx.measured.setdefault("readings", {})[point] = form
    if getattr(ctx.test, "strict", False) and form != reading.pinned:
        raise Failed(f"{reading.question}: the program's answer was '{reading.forms[form]}', and this test "
                     f"(strict) accepts only '{reading.forms[reading.pinned]}'")


def describe(taken: dict[str, str]) -> str:
    """'rjt_number: the number expected next (1)' for the report, one point after another."""
    return "; ".join(f"{point}: {READINGS[point].forms[form]}" for point, form in taken.items())
