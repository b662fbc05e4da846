"""PrairieLearn's external-grader ``results.json`` for one submission, as its documentation
("External Grading", "Grading results") describes it: ``gradable``, ``score`` in [0, 1],
``message``, ``output``, ``tests[]`` with ``name``, ``description``, ``points``,
``max_points``, ``message``, ``output``; at most 1 MB.

* A submission that could not be built or laid out is ``gradable: false`` with the reason in
  ``format_errors``: PrairieLearn then neither awards nor takes points, nor counts the attempt,
  which is what its documentation asks for input that does not compile.
* PrairieLearn shows every test at once and has no "after the due date": a hidden test shows
  its name, points and whether it passed, and keeps its reason for the instructor's report.
* A test this machine could not run has 0 of 0 points and its reason as its message.
"""
from __future__ import annotations

import json

from ..catalogue import Catalogue
from ..outcome import Graded
from .feedback import summary, test_feedback
from .leaderboard import MEDIAN, entries

__all__ = ["results", "MAX_BYTES"]

MAX_BYTES = 1_000_000
#: what a hidden test says instead of its reason
HIDDEN = "hidden test: its reason is in the instructor's report"


def _test(t, checks: dict[str, str]) -> dict:
    if t.status == "skipped":
        return {"name": t.id, "description": checks.get(t.id, ""), "points": 0, "max_points": 0,
                "message": test_feedback(t), "output": ""}
    shown = t.public
    return {"name": t.id, "description": checks.get(t.id, "") if shown else "hidden test",
            "points": float(t.points), "max_points": float(t.max_points),
            "message": test_feedback(t) if shown else f"{'passed' if t.status == 'pass' else 'not passed'} ({HIDDEN})",
            "output": f"link: {t.link}" if shown else ""}


def results(g: Graded, catalogue: Catalogue | None = None) -> dict:
    """The results.json for ``g``; ``catalogue`` gives each test its description (what it checks)."""
    if g.build_error:
        return {"gradable": False, "format_errors": [g.build_error], "message": summary(g), "output": g.build_log[-4000:]}
    checks = {t.id: t.checks for t in catalogue.tests} if catalogue is not None else {}
    board = {e["name"]: e["value"] for e in entries(g)}
    message = summary(g) + (f"\n\nGoodput ÷ model (median over {board['transfers compared']} transfers): "
                            f"{board[MEDIAN]:.2f}" if board else "")
    data = {"gradable": True, "score": round(g.points / g.max_points, 6) if g.max_points else 0.0,
            "message": message, "output": "", "tests": [_test(t, checks) for t in g.tests]}
    for cut in (2000, 500, 100):               # the documented 1 MB: long reasons give way first
        if len(json.dumps(data).encode()) <= MAX_BYTES:
            break
        for test in data["tests"]:
            test["message"] = test["message"][:cut]
    return data
