"""Gradescope's ``results.json`` for one submission, as its autograder specification describes it
(gradescope-autograders.readthedocs.io, "Autograder Specifications": ``score``,
``execution_time``, ``output``, ``tests[]`` with ``name``, ``score``, ``max_score``,
``status``, ``output``, ``tags``, ``visibility``, ``extra_data``; and ``leaderboard``).

* Scale: points. Each test's ``max_score`` is its catalogue points; the top-level ``score``
  (which overrides the sum of the tests') is the submission's score as ``--json`` gives it, on
  the scale of all the catalogue's points (``feedback.scaled_score``): with every test run it
  is exactly the sum of the tests' scores.
* Visibility: public tests ``visible``; hidden ones ``after_due_date`` (students see them, and
  so their total, once the due date has passed).
* Each test's ``output`` is its reason (``feedback.test_feedback``); a test this machine could
  not run (status ``skipped``) has no score at all, only its reason, so it reads as neither
  passed nor failed.
* ``leaderboard``: goodput ÷ model (``leaderboard.py``), when the submission has any.
"""
from __future__ import annotations

from ..outcome import Graded
from .feedback import scaled_score, summary, test_feedback
from .leaderboard import entries

__all__ = ["results", "VISIBILITY"]

#: public test → visibility, as the specification spells it
VISIBILITY = {True: "visible", False: "after_due_date"}


def _test(t) -> dict:
    row = {"name": t.id, "output": test_feedback(t), "tags": list(dict.fromkeys(tag for tag in (t.role, t.proto, t.topic) if tag)),
           "visibility": VISIBILITY[bool(t.public)],
           "extra_data": {"status": t.status, "link": t.link, "goodput_bps": t.goodput_bps,
                          "pred_goodput_bps": t.pred_goodput_bps}}
    if t.status != "skipped":
        row.update(score=float(t.points), max_score=float(t.max_points),
                   status="passed" if t.status == "pass" else "failed")
    return row


def results(g: Graded, total_points: float) -> dict:
    """The results.json for ``g``; ``total_points``: every test's points together (the catalogue's)."""
    data = {"score": scaled_score(g, total_points), "execution_time": int(round(g.duration_s)),
            "output": summary(g), "tests": [_test(t) for t in g.tests],
            "extra_data": {"wirelab_score_percent": g.score, "language": g.language, "counts": g.counts()}}
    board = entries(g)
    if board:
        data["leaderboard"] = board
    return data
