"""Grades in the shapes course platforms read, written beside the grader's own reports.

    report_dir/
      <submission>/gradescope.json     Gradescope's results.json      (gradescope.py)
      <submission>/prairielearn.json   PrairieLearn's results.json    (prairielearn.py)
      gradebook-canvas.csv  gradebook-moodle.csv                      (gradebook.py)
      leaderboard.csv                  goodput ÷ model per submission (leaderboard.py)

Every file says the same score as ``wirelab grade --json``, each on its platform's scale
(Gradescope and the gradebooks: points; PrairieLearn: a fraction), and each test's reason is
its output (``feedback.py``).

    >>> write_formats(graded, "reports", catalogue, ["gradescope", "gradebook"])   # doctest: +SKIP
"""
from __future__ import annotations

import json
from pathlib import Path

from ...errors import UsageError
from ..catalogue import Catalogue
from ..outcome import Graded
from . import gradebook, gradescope, leaderboard, prairielearn

__all__ = ["FORMATS", "parse_formats", "write_formats", "total_points"]

FORMATS = ("gradescope", "prairielearn", "gradebook")


def parse_formats(given: list[str]) -> list[str]:
    """``--format`` values (repeated or comma-separated) → the formats, each once, in FORMATS' order."""
    asked = {name.strip().lower() for value in given for name in value.split(",") if name.strip()}
    unknown = asked - set(FORMATS)
    if unknown:
        raise UsageError(f"unknown format(s) {', '.join(sorted(unknown))}", f"choose from {', '.join(FORMATS)}")
    return [f for f in FORMATS if f in asked]


def total_points(graded: list[Graded]) -> float:
    """The assignment's points: every test's of this grading (the ones this machine skipped included;
    every submission of a grading meets the same tests)."""
    return sum(t.max_points for t in graded[0].tests) if graded else 0.0


def write_formats(graded: list[Graded], report_dir: str | Path, catalogue: Catalogue | None, formats: list[str],
                  *, assignment: str = "PPCB") -> dict[str, list[Path]]:
    """Write each of ``formats`` for ``graded`` into ``report_dir``; returns the files by format.
    ``catalogue`` (None for a grading saved with another one) gives each test its description."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    total = total_points(graded)
    written: dict[str, list[Path]] = {}
    for name in parse_formats(formats):
        files = written.setdefault(name, [])
        if name in ("gradescope", "prairielearn"):
            for g in graded:
                data = (gradescope.results(g, total) if name == "gradescope" else prairielearn.results(g, catalogue))
                folder = report_dir / g.name
                folder.mkdir(parents=True, exist_ok=True)
                target = folder / f"{name}.json"
                target.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
                files.append(target)
            if name == "gradescope":
                board = report_dir / "leaderboard.csv"
                leaderboard.table(graded).to_csv(board, index=False)
                files.append(board)
        else:
            files.append(gradebook.write_canvas(graded, report_dir / "gradebook-canvas.csv", assignment=assignment,
                                                total_points=total))
            files.append(gradebook.write_moodle(graded, report_dir / "gradebook-moodle.csv", assignment=assignment,
                                                total_points=total))
    return written
