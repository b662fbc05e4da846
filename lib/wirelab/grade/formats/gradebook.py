"""Gradebook CSVs an LMS imports: one row per student, a student identifier and one column for
the assignment, in points (the catalogue's total is the assignment's points possible).

* Canvas (``gradebook-canvas.csv``): its gradebook export's shape, which its import reads back:
  ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then the assignment; a
  ``Points Possible`` row under the header sets the new assignment's points.
* Moodle (``gradebook-moodle.csv``): a header row, then one row per student; at import the
  ``Username`` column is mapped to the user field that holds the submission's name (username,
  ID number or email) and the assignment column to a grade item, ``Feedback`` to its feedback.
  No points row: Moodle would look for a student called "Points Possible" and stop.

The student is the submission's name (its folder or archive name). The score is the one
``--json`` gives (a share of the points of the tests that ran) on the assignment's scale.
"""
from __future__ import annotations

import csv
from pathlib import Path

from ..outcome import Graded
from .feedback import scaled_score

__all__ = ["CANVAS_HEADER", "POINTS_POSSIBLE", "write_canvas", "write_moodle"]

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"


def _points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def write_canvas(graded: list[Graded], path: Path, *, assignment: str, total_points: float) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(CANVAS_HEADER + [assignment])
        out.writerow([POINTS_POSSIBLE, "", "", "", "", _points(total_points)])
        for g in graded:
            out.writerow([g.name, "", "", g.name, "", _points(scaled_score(g, total_points))])
    return path


def _feedback(g: Graded) -> str:
    failed = g.failed()
    said = f"{g.score:g} % of the tests that ran"
    if g.build_error:
        return f"{said}: {g.build_error}"
    if g.skipped():
        said += f" ({len(g.skipped())} could not run here)"
    if not failed:
        return said + "; every test passed"
    more = f" and {len(failed) - 8} more (see the report)" if len(failed) > 8 else ""
    return said + f"; not passed: {', '.join(failed[:8])}{more}"


def write_moodle(graded: list[Graded], path: Path, *, assignment: str, total_points: float) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["Username", assignment, "Feedback"])
        for g in graded:
            out.writerow([g.name, _points(scaled_score(g, total_points)), _feedback(g)])
    return path
