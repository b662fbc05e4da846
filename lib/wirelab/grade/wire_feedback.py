"""A test's capture read for the student once the test is over: the PPCB exchange judged for its timing
(timing.py), the findings put in the outcome.

The runner calls ``judge_capture`` once all of a submission's tests have run (their captures stopped;
reading them beside a running test would slow the transfers it times), for every test that did not
pass and for every udpr test (its resends are where the timing rules bite). Each finding goes to ``details["wire"]``; for a test that did not pass it ends its
reason too ("on the wire: ..."), so every platform shows it; such a test also gets its exchange drawn as a
text ladder (``details["ladder"]``, ``wirelab.capture.ladder``) with the findings' frames marked. A
capture that cannot be read costs the
student nothing: the reason stays as it was, and ``details["wire_error"]`` says why.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .outcome import Outcome
from .timing import judge_timing

__all__ = ["WireJudge", "judge_capture", "link_noise"]

_SIDES = {"client": {"client"}, "server": {"server"}, "pair": {"client", "server"}}
#: A failed test's ladder, at most (about 4 KB of text: a course platform's message has room for many)
LADDER_LINES = 40
#: What a finding's frames say on the ladder
_MARKS = {"early": "<< resent before MAX_WAIT", "late": "<< resent long after MAX_WAIT",
          "too_many": "<< more sends than MAX_RETRANSMITS allows", "gave_up_early": "<< never sent again",
          "after_reject": "<< the reject, and a DATA after it"}


@dataclass(frozen=True)
class WireJudge:
    """What a test's end leaves for judging its capture: whose packets are the student's, the protocol, the
    constants the programs used, and when the student's programs could send no more (``ended_wall``, the
    wall clock; ``exited``: its client ended on its own)."""
    role: str
    proto: str
    port: int
    max_wait_s: float
    max_retransmits: int
    ended_wall: float
    exited: bool
    copies_s: float = 0.0          # the link duplicates: a packet seen again this soon is its copy
    jitter_s: float = 0.0

    def due(self, outcome: Outcome) -> bool:
        return self.role in _SIDES and (outcome.status != "pass" or self.proto == "udpr")


def link_noise(spec) -> tuple[float, float]:
    """(copies_s, jitter_s) for a test's link (a ``LinkSpec``): a link that duplicates sends a copy at
    most its delay and jitter behind (held back to reorder), so copies come within twice those and 20 ms;
    jitter moves any packet by up to its own amount."""
    ways = (spec.forward, spec.reverse)
    jitter = max(d.jitter_s for d in ways)
    copies = 2 * (max(d.delay_s for d in ways) + jitter) + 0.02 if any(d.duplicate for d in ways) else 0.0
    return copies, jitter


def judge_capture(pcap: Path, outcome: Outcome, judge: WireJudge) -> None:
    """Judge the capture at ``pcap`` (stopped) and record the findings in ``outcome``."""
    from ..capture import exchange, read_capture   # deferred: the capture reader imports pandas
    from ..capture.ladder import ladder_text
    try:
        packets = exchange(pcap, port=judge.port)
        if packets.empty:
            return
        first = float(read_capture(pcap)["time"].min())
        findings = judge_timing(packets, proto=judge.proto, max_wait_s=judge.max_wait_s,
                                max_retransmits=judge.max_retransmits, sides=_SIDES[judge.role],
                                ended_s=judge.ended_wall - first, exited=judge.exited, copies_s=judge.copies_s,
                                jitter_s=judge.jitter_s)
    except Exception as err:                        # noqa: BLE001 - feedback, never a grade: say why, go on
        outcome.details["wire_error"] = f"the capture could not be judged: {type(err).__name__}: {err}"
        return
    if outcome.status != "pass":
        marks = {f.frames[-1]: _MARKS[f.rule] for f in findings}
        outcome.details["ladder"] = ladder_text(packets, max_lines=LADDER_LINES, marks=marks)
    if not findings:
        return
    outcome.details["wire"] = [f.to_dict() for f in findings]
    if outcome.status != "pass":
        outcome.reason += "; on the wire: " + "; ".join(map(str, findings))
