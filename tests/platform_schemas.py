"""Validators written from each platform's own documentation, not from wirelab's writers: each
returns the problems it finds (none: the platform reads the file).

* Gradescope, "Autograder Specifications" (gradescope/autograder_samples, docs/specs.md and
  docs/leaderboards.md): results.json's top-level fields and each test's; visibility values;
  output formats; the leaderboard's entries.
* PrairieLearn, "External Grading", section "Grading results" (PrairieLearn/PrairieLearn,
  docs/externalGrading.md): ``score`` in [0, 1] unless ``gradable`` is false; tests' fields;
  at most 1 MB.
* Canvas, importing grades into the Gradebook from a CSV: a student column (Student, ID or
  SIS User ID), ``SIS Login ID`` and ``Section`` columns, then assignments; an optional
  ``Points Possible`` row.
* Moodle, grade import from CSV (grade/import/csv): a header row; a column mapped to a user
  field (username, idnumber, email or id), every row's value an existing user (an unknown one
  stops the import); grade columns numeric.
"""
from __future__ import annotations

import csv
import io
import json
import numbers

# ------------------------------------------------------------------ Gradescope
GS_VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
GS_FORMATS = {"text", "html", "simple_format", "md", "ansi"}
GS_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
          "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GS_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
           "visibility", "extra_data"}
GS_STATUS = {"passed", "failed"}


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def gradescope_problems(data) -> list[str]:
    problems = []
    if not isinstance(data, dict):
        return ["results.json is not a JSON object"]
    problems += [f"unknown top-level field {k!r}" for k in set(data) - GS_TOP]
    tests = data.get("tests", [])
    if "score" in data and not _number(data["score"]):
        problems.append("score is not a number")
    if "score" not in data and (not tests or any("score" not in t for t in tests if isinstance(t, dict))):
        problems.append("no top-level score, and not every test has one")
    # the specification's example is a number (136); Gradescope's own gradescope-utils (0.5.0, its
    # JSONTestRunner) writes a string ("0.00"), which Gradescope takes: either, if it reads as seconds
    if "execution_time" in data and not (_number(data["execution_time"]) or (
            isinstance(data["execution_time"], str) and _number_text(data["execution_time"]))):
        problems.append("execution_time is not a number of seconds")
    for key in ("output",):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key} is not a string")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in GS_VISIBILITY:
            problems.append(f"{key} {data[key]!r} is not one of {sorted(GS_VISIBILITY)}")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in data and data[key] not in GS_FORMATS:
            problems.append(f"{key} {data[key]!r} is not one of {sorted(GS_FORMATS)}")
    if "extra_data" in data and not isinstance(data["extra_data"], dict):
        problems.append("extra_data is not an object")
    if not isinstance(tests, list):
        problems.append("tests is not a list")
        tests = []
    for i, test in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            problems.append(f"{where} is not an object")
            continue
        problems += [f"{where}: unknown field {k!r}" for k in set(test) - GS_TEST]
        for key in ("score", "max_score"):
            if key in test and not _number(test[key]):
                problems.append(f"{where}: {key} is not a number")
        for key in ("name", "number", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"{where}: {key} is not a string")
        if "status" in test and test["status"] not in GS_STATUS:
            problems.append(f"{where}: status {test['status']!r} is not passed or failed")
        if "visibility" in test and test["visibility"] not in GS_VISIBILITY:
            problems.append(f"{where}: visibility {test['visibility']!r} is not one of {sorted(GS_VISIBILITY)}")
        for key in ("name_format", "output_format"):
            if key in test and test[key] not in GS_FORMATS:
                problems.append(f"{where}: {key} {test[key]!r} is not a known format")
        if "tags" in test and not (isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])):
            problems.append(f"{where}: tags is not a list of strings")
        if "extra_data" in test and not isinstance(test["extra_data"], dict):
            problems.append(f"{where}: extra_data is not an object")
    board = data.get("leaderboard", [])
    if not isinstance(board, list):
        problems.append("leaderboard is not a list")
        board = []
    for i, entry in enumerate(board):
        where = f"leaderboard[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"name", "value", "order"} or "name" not in entry \
                or "value" not in entry:
            problems.append(f"{where} is not {{name, value[, order]}}")
            continue
        if not isinstance(entry["name"], str) or not (_number(entry["value"]) or isinstance(entry["value"], str)):
            problems.append(f"{where}: name must be a string and value a number or a string")
        if entry.get("order", "desc") not in ("asc", "desc"):
            problems.append(f"{where}: order {entry['order']!r} is not asc or desc")
    return problems


# ------------------------------------------------------------------ PrairieLearn
PL_MAX_BYTES = 1_000_000


def prairielearn_problems(raw: bytes) -> list[str]:
    problems = []
    if len(raw) > PL_MAX_BYTES:
        problems.append(f"results.json is {len(raw)} bytes, over PrairieLearn's 1 MB")
    try:
        data = json.loads(raw)
    except ValueError as err:
        return problems + [f"not JSON: {err}"]
    if not isinstance(data, dict):
        return problems + ["results.json is not a JSON object"]
    gradable = data.get("gradable", True)
    if not isinstance(gradable, bool):
        problems.append("gradable is not a boolean")
    if gradable is not False:
        score = data.get("score")
        if not _number(score) or not 0.0 <= score <= 1.0:
            problems.append(f"a gradable result needs score in [0.0, 1.0], not {score!r}")
    else:
        errors = data.get("format_errors", [])
        if not (isinstance(errors, str) or (isinstance(errors, list) and all(isinstance(e, str) for e in errors))):
            problems.append("format_errors is neither a string nor a list of strings")
    for key in ("message", "output"):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key} is not a string")
    problems += _pl_images(data.get("images", []), "images")
    tests = data.get("tests", [])
    if not isinstance(tests, list):
        return problems + ["tests is not a list"]
    for i, test in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            problems.append(f"{where} is not an object")
            continue
        for key in ("name", "description", "message", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"{where}: {key} is not a string")
        for key in ("points", "max_points"):
            if key in test and not _number(test[key]):
                problems.append(f"{where}: {key} is not a number")
        problems += _pl_images(test.get("images", []), f"{where}.images")
    return problems


def _pl_images(images, where: str) -> list[str]:
    if not isinstance(images, list):
        return [f"{where} is not a list"]
    bad = [i for i, im in enumerate(images)
           if not (isinstance(im, str) or (isinstance(im, dict) and isinstance(im.get("url"), str)
                                           and set(im) <= {"url", "label"}))]
    return [f"{where}[{i}] is neither a URL nor {{url, label}}" for i in bad]


# ------------------------------------------------------------------ Canvas and Moodle
CANVAS_STUDENT = ("Student", "ID", "SIS User ID")
CANVAS_FIXED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def _number_text(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def canvas_problems(text: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return ["empty file"]
    header = rows[0]
    problems = []
    if not any(c in header for c in CANVAS_STUDENT):
        problems.append(f"no student column (one of {', '.join(CANVAS_STUDENT)})")
    for needed in ("SIS Login ID", "Section"):
        if needed not in header:
            problems.append(f"no {needed!r} column")
    assignments = [i for i, c in enumerate(header) if c not in CANVAS_FIXED]
    if not assignments:
        problems.append("no assignment column")
    body = rows[1:]
    possible = {}
    if body and body[0] and body[0][0].strip() == "Points Possible":
        possible = {i: body[0][i] for i in assignments}
        problems += [f"points possible of {header[i]!r} is not a number" for i, v in possible.items()
                     if not _number_text(v)]
        body = body[1:]
    ids = [header.index(c) for c in (*CANVAS_STUDENT, "SIS Login ID") if c in header]
    for n, row in enumerate(body, start=2 + bool(possible)):
        if len(row) != len(header):
            problems.append(f"row {n} has {len(row)} cells, the header {len(header)}")
            continue
        if not any(row[i].strip() for i in ids):
            problems.append(f"row {n} names no student")
        for i in assignments:
            if row[i] and not _number_text(row[i]):
                problems.append(f"row {n}: {header[i]!r} is not a number ({row[i]!r})")
            elif row[i] and i in possible and float(row[i]) > float(possible[i]) + 1e-9:
                problems.append(f"row {n}: {header[i]!r} {row[i]} is above its points possible {possible[i]}")
    return problems


def moodle_problems(text: str, *, users: set[str], identifier: str, grades: list[str]) -> list[str]:
    """``identifier``: the column mapped to a user field; ``users``: the values that field has in the
    course; ``grades``: the columns mapped to grade items."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return ["empty file"]
    header, problems = rows[0], []
    for needed in (identifier, *grades):
        if needed not in header:
            problems.append(f"no column {needed!r} to map")
    if problems:
        return problems
    who, seen = header.index(identifier), set()
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            problems.append(f"row {n} has {len(row)} cells, the header {len(header)}")
            continue
        if row[who] not in users:
            problems.append(f"row {n}: no user {row[who]!r} (Moodle stops the import here)")
        if row[who] in seen:
            problems.append(f"row {n}: {row[who]!r} appears twice")
        seen.add(row[who])
        for name in grades:
            value = row[header.index(name)]
            if value and not _number_text(value):
                problems.append(f"row {n}: grade {name!r} is not a number ({value!r})")
    return problems
