"""A test's capture read for the student once the test is over: the PPCB exchange judged for its timing
(timing.py), the findings put in the outcome.

The runner calls ``judge_capture`` once all of a submission's tests have run (their captures stopped;
reading them beside a running test would slow the transfers it times), for every test that did not
pass and for every udpr test (its resends are where the timing rules bite). Each finding goes to ``details["wire"]``; for a test that did not pass it ends its
reason too ("on the wire: ..."), so every platform shows it; such a test also gets its exchange drawn as a
text ladder (``details["ladder"]``, ``wirelab.capture.ladder``; its steps, for the HTML report's picture, in
``details["ladder_drawing"]``) with the findings' frames marked and, where the program went wrong, what it
should have done as a dashed arrow (``expected_steps``: "expected: DATA 3 resent after MAX_WAIT"). A
capture that cannot be read costs the
student nothing: the reason stays as it was, and ``details["wire_error"]`` says why.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import transports
from ..capture.ladder import ladder, ladder_text
from .outcome import Outcome
from .timing import judge_timing

__all__ = ["WireJudge", "judge_capture", "link_noise", "expected_steps"]

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
        # a retransmitting transport's timers are judged even when the test passed
        return self.role in _SIDES and (outcome.status != "pass" or transports.get(self.proto).retransmits)


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
        drawing = ladder(packets, max_lines=LADDER_LINES, marks=marks,
                         expected=expected_steps(findings, packets, judge.max_wait_s, judge.max_retransmits))
        outcome.details["ladder"] = ladder_text(drawing)
        outcome.details["ladder_drawing"] = drawing          # the picture's steps (report.py draws the SVG)
    if not findings:
        return
    outcome.details["wire"] = [f.to_dict() for f in findings]
    if outcome.status != "pass":
        outcome.reason += "; on the wire: " + "; ".join(map(str, findings))


def _name(row: dict) -> str:
    number = row.get("packet_no")
    numbered = row["kind"] in ("DATA", "ACC", "RJT") and number is not None and number == number
    return f"{row['kind']} {int(number)}" if numbered else str(row["kind"])


def expected_steps(findings, packets, max_wait_s: float, max_retransmits: int = 5) -> list[dict]:
    """Where each finding shows the program going wrong, what ppcb.md asks instead (``wirelab.capture.ladder``'s
    ``expected`` steps): a resend MAX_WAIT after the last send (early, late, gave_up_early), or the sender's
    end (too_many: it gives up; after_reject: ERROR and exit), at the time it was due."""
    rows = {int(r["frame"]): r for r in packets.to_dict("records") if r.get("frame") == r.get("frame")}
    wait = f"MAX_WAIT ({max_wait_s:g} s)"
    out = []
    for f in findings:
        seen = [rows[n] for n in f.frames if n in rows]
        if not seen:
            continue
        first, last, client = seen[0], seen[-1], f.side == "client"
        what, t0 = _name(last), float(first["time_s"])
        if f.rule == "early":
            out.append({"time_s": t0 + max_wait_s, "right": client,
                        "label": f"expected: {what} resent only after {wait} without an answer"})
        elif f.rule == "late":
            out.append({"time_s": t0 + max_wait_s, "right": client, "label": f"expected: {what} resent after {wait}"})
        elif f.rule == "gave_up_early":
            out.append({"time_s": float(last["time_s"]) + max_wait_s, "right": client,
                        "label": f"expected: {what} resent after {wait}"})
        elif f.rule == "too_many":             # at the first send beyond one plus MAX_RETRANSMITS
            same = sorted(float(r["time_s"]) for r in rows.values() if (r["kind"], r.get("packet_no"), r["src"])
                          == (last["kind"], last.get("packet_no"), last["src"]))
            said = "ppcbc gives up: ERROR, exit" if client else "ppcbs drops the session"
            extra = same[max_retransmits + 1] if len(same) > max_retransmits + 1 else float(last["time_s"])
            out.append({"time_s": extra - 1e-6, "right": None, "side": f.side,
                        "label": f"expected: no {what} again: {said}"})
        elif f.rule == "after_reject":
            out.append({"time_s": t0 + 1e-6, "right": None, "side": "client",
                        "label": f"expected: after {first['kind']} ppcbc prints ERROR and ends"})
    return out
