"""What a student reads about one test on a course platform: its status, its reason, and the
measurement beside the model where there is one. The same words the HTML report shows, as text."""
from __future__ import annotations

from ..outcome import Graded, Outcome
from ..timing import wire_lines

__all__ = ["test_feedback", "summary", "scaled_score"]

_SAID = {"pass": "passed", "fail": "failed", "timeout": "timed out", "error": "could not run",
         "skipped": "not run here"}


def _rate(bps: float | None) -> str:
    return f"{bps / 1e6:.3g} Mbit/s" if bps else "?"


def test_feedback(t: Outcome) -> str:
    """The test's status and reason (the reason is the output every platform shows), then what was
    measured against the model's goodput, each line saying what it is."""
    lines = [f"{_SAID.get(t.status, t.status)}: {t.reason}"]
    if t.reading:
        lines.append(f"reading taken: {t.reading}")
    if t.link != "clean":
        lines.append(f"link: {t.link}")
    if t.status == "pass":                  # (a test that did not pass has them in its reason)
        lines += [f"on the wire (no points lost): {line}" for line in wire_lines(t)]
    if t.goodput_flag:
        lines.append(f"goodput not shown: {t.goodput_flag}")
    elif t.goodput_bps:
        measured = f"measured goodput {_rate(t.goodput_bps)} ({t.goodput_at})"
        if t.pred_goodput_bps:
            measured += (f"; the model predicts {_rate(t.pred_goodput_bps)} "
                         f"(measured ÷ model = {t.goodput_bps / t.pred_goodput_bps:.2f})")
        lines.append(measured)
    ladder = (t.details or {}).get("ladder")
    if ladder and t.status != "pass":
        lines += ["", "What crossed the wire (from the test's capture; frame numbers as Wireshark shows them):",
                  *ladder]
    return "\n".join(lines)


def summary(g: Graded) -> str:
    """One paragraph about the whole submission: score, counts, constants, how it ran, what did not run."""
    counts = ", ".join(f"{n} {_SAID[s]}" for s, n in g.counts().items() if n)
    lines = [f"{g.points:g} of {g.max_points:g} points ({g.score:g} %): {counts}."]
    if g.build_error:
        lines.append(f"The submission could not be built or laid out: {g.build_error}")
        if g.build_log:
            lines.append("Last lines of the build:\n" + "\n".join(g.build_log.strip().splitlines()[-15:]))
    if g.constants:
        lines.append(f"MAX_WAIT {g.constants['max_wait_s']:g} s, MAX_RETRANSMITS {g.constants['max_retransmits']}: "
                     f"{g.constants['note']}.")
    if g.warnings:
        lines.append(f"Compiler warnings ({len(g.warnings)}):\n" + "\n".join(g.warnings[:10]))
    skipped = g.skipped()
    if skipped:
        points = sum(t.max_points for t in skipped)
        lines.append(f"{len(skipped)} tests ({points:g} points) could not run on this machine and count on "
                     f"neither side of the score (each says why): {skipped[0].reason}")
    if g.confinement:
        lines.append(f"Each program ran in: {g.confinement}.")
    return "\n\n".join(lines)


def scaled_score(g: Graded, total: float) -> float:
    """The submission's score (the share of the points of the tests that ran, as ``--json`` gives it
    in percent) on a platform's scale of ``total`` points."""
    return round(g.points / g.max_points * total, 4) if g.max_points else 0.0
