"""Exercises that check a student's answer against the model, with a hint.

The expected answers are computed by ``wirelab.model`` when asked, never
stored, so an exercise stays right if a parameter changes. Each lab keeps its
own (``wirelab.labs.docNNN.EXERCISES``); ``check`` finds them by name.

Each student gets a link of their own, drawn from their course and their
student id, so answers cannot simply be copied from a neighbour (nor from last
year's course). Every lab asks the questions that depend on a link on the
student's link (``wirelab.labs.docNNN.exercises(link)``), and five more are
asked on it alone (``seeded_exercises``). ``answer_key`` gives the instructor
every student's link and expected answers (``wirelab exercises key``)::

    >>> my_link("s1234567", course="net-2026")["rate"]                        # doctest: +SKIP
    '20mbit'
    >>> check("udpr_goodput", 1.23, student="s1234567", course="net-2026")   # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path
import csv
import hashlib
import random
import pandas as pd

from . import units
from .errors import UsageError
from .labs import bufferbloat, doc000, doc001, doc002, doc003, doc004
from .labs.lab import Exercise, Link
from .model import predict
from .transports.udpr import NAME as UDPR

__all__ = ["Exercise", "EXERCISES", "LABS", "check", "my_link", "student_rng", "student_link", "seeded_exercises",
           "student_exercises", "describe_link", "answer_key", "read_roster"]

#: Each lab module, by the name its exercises are listed under in the answer key.
LABS = {"doc000": doc000, "doc001": doc001, "doc002": doc002, "doc003": doc003, "doc004": doc004,
        "bufferbloat": bufferbloat}
#: Every lab's exercises on the documents' own numbers, by name (``wirelab.labs.docNNN.EXERCISES``).
EXERCISES = {name: e for lab in LABS.values() for name, e in lab.EXERCISES.items()}

#: What a student's link is drawn from (typical lab values; every combination is sensible).
CHOICES = {"rate": ["2mbit", "5mbit", "10mbit", "20mbit", "50mbit"], "delay": ["5ms", "10ms", "20ms", "40ms"],
           "loss": ["0.5%", "1%", "2%", "5%"], "data": [500, 1000, 1400], "max_wait": ["0.2s", "0.5s", "1s"]}


def my_link(student: str, course: str = "") -> dict:
    """The link parameters of ``student`` (any id: matriculation number, e-mail, login) in ``course``
    (any name; "" for none): the same pair always gives the same link; another student, or the same
    student in another course, almost surely another."""
    rng = student_rng(student, course)
    return {name: rng.choice(values) for name, values in CHOICES.items()}


def student_rng(student: str, course: str = "", *more: str):
    """The random numbers of ``student`` in ``course``: ``my_link`` draws from them, and the grader draws each
    student's link for a test from them with ``more`` = ("grade", the test's id) (``wirelab.grade.own_link``)."""
    student, course = str(student).strip(), str(course or "").strip()
    if not student:
        raise UsageError("an empty student id", "give your student id, e.g. my_link('s1234567')")
    seed = student if not course else f"{course}\x00{student}"       # no course: the links given before
    seed = "\x00".join([seed, *more])
    return random.Random(hashlib.sha256(seed.encode()).digest())


def student_link(student: str, course: str = "") -> Link:
    """``my_link`` in SI units, as the labs' ``exercises(link)`` take it."""
    link = my_link(student, course)
    return Link(rate_bps=units.parse_rate(link["rate"]), delay_s=units.parse_time(link["delay"]),
                loss=units.parse_fraction(link["loss"]), data=int(link["data"]),
                max_wait_s=units.parse_time(link["max_wait"]))


def describe_link(student: str, course: str = "") -> str:
    link = my_link(student, course)
    return (f"your link: {link['rate']}, {link['delay']} one way, {link['loss']} loss each way; "
            f"udpr DATA of {link['data']} B, MAX_WAIT {link['max_wait']}")


def seeded_exercises(student: str, course: str = "") -> dict[str, Exercise]:
    """Five exercises asked on ``student``'s link alone (see ``my_link``); answers from ``wirelab.model``."""
    link = my_link(student, course)
    rate, delay = units.parse_rate(link["rate"]), units.parse_time(link["delay"])
    loss, wait, data = units.parse_fraction(link["loss"]), units.parse_time(link["max_wait"]), link["data"]
    where = f"({link['rate']}, {link['delay']} one way, real Ethernet wire)"
    return {
        "tcp_goodput": Exercise(
            f"Predicted TCP goodput (Mbit/s) with timestamps on your link {where}, no loss, big window?",
            lambda: predict("tcp", rate, timestamps=True).goodput_bps / 1e6, 0.002,
            "η = 1448 / 1538 for TCP with timestamps; goodput = η · C"),
        "bdp_bytes": Exercise(
            f"Bandwidth-delay product (bytes) of your link {where}: how much a sender must keep in flight?",
            lambda: rate * 2 * delay / 8, 0.002, "C · RTT / 8, with RTT = 2 × the one-way delay"),
        "udpr_goodput": Exercise(
            f"udpr goodput (Mbit/s) with {data} B DATA on your link {where}, no loss?",
            lambda: predict(UDPR, rate, payload=data, rtt_s=2 * delay).goodput_bps / 1e6, 0.005,
            "stop-and-wait: one DATA per cycle of DATA/C + RTT + ACC/C"),
        "udpr_lossy_goodput": Exercise(
            f"udpr goodput (Mbit/s) with {data} B DATA, {link['loss']} loss each way and MAX_WAIT "
            f"{link['max_wait']} on your link {where}?",
            lambda: predict(UDPR, rate, payload=data, rtt_s=2 * delay, loss=loss, max_wait_s=wait).goodput_bps / 1e6,
            0.005, "each failed try costs DATA/C + MAX_WAIT; tries are geometric with success (1−p)²"),
        "udpr_retransmissions": Exercise(
            f"Expected retransmissions per udpr DATA with {link['loss']} loss each way?",
            lambda: predict(UDPR, rate, payload=data, rtt_s=2 * delay, loss=loss).stop_and_wait
            .expected_retransmissions, 0.002, "1/q − 1 with q = (1 − p)² (the DATA and its ACC must both arrive)"),
    }


def student_exercises(student: str | None = None, course: str = "") -> dict[str, Exercise]:
    """Every exercise as ``student`` of ``course`` is asked it: each lab's on the student's link, and the
    five seeded ones; with no student, the labs' on the documents' own numbers."""
    if student is None or not str(student).strip():
        return dict(EXERCISES)
    link = student_link(student, course)
    return {**{name: e for lab in LABS.values() for name, e in lab.exercises(link).items()},
            **seeded_exercises(student, course)}


def check(name: str, answer: float | None, *, student: str | None = None, course: str = "") -> str:
    """Compare ``answer`` with the model; returns (and prints) a one-line verdict. With ``student`` (and
    ``course``), the exercise is asked on that student's link (``student_exercises``)."""
    exercises = student_exercises(student, course)
    if name not in exercises:
        raise UsageError(f"no exercise {name!r}", f"choose one of {', '.join(exercises)}")
    exercise = exercises[name]
    if answer is None:
        verdict = f"{name}: not answered yet. {exercise.question} Hint: {exercise.hint}."
    else:
        expected = exercise.expected()
        close = abs(float(answer) - expected) <= exercise.tolerance * abs(expected) + 1e-9
        verdict = (f"{name}: correct ({expected:.6g})" if close else
                   f"{name}: not quite ({answer!r}). Hint: {exercise.hint}.")
    print(verdict)
    return verdict


def answer_key(course: str, students: list[str]):
    """The instructor's key: one row per student and exercise, with the student's link (as
    ``my_link`` gives it), the question as that student reads it, and the answer ``check`` accepts
    (``expected``, within ``tolerance``, relative), computed by the model."""
    lab_of = {name: lab for lab, module in LABS.items() for name in module.EXERCISES}
    rows = []
    for student in students:
        link = my_link(student, course)
        for name, exercise in student_exercises(student, course).items():
            rows.append({"course": course, "student": student, **link, "lab": lab_of.get(name, "seeded"),
                         "exercise": name, "expected": exercise.expected(), "tolerance": exercise.tolerance,
                         "question": exercise.question})
    return pd.DataFrame(rows)


#: Column names a roster's student ids may sit under (else its first column), compared without case.
ROSTER_COLUMNS = ("student", "id", "student id", "login", "sis login id", "username", "email")


def read_roster(path) -> list[str]:
    """The student ids of a roster CSV (a header row; the column named as in ROSTER_COLUMNS, else the
    first), each once, in the roster's order."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no roster {path}", "give a CSV file with a header row and one student id per row")
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or not rows[0]:
        raise UsageError(f"{path} has no students", "a header row (e.g. 'student'), then one student id per row")
    header = [h.strip().lower() for h in rows[0]]
    column = next((header.index(c) for c in ROSTER_COLUMNS if c in header), 0)
    ids = [row[column].strip() for row in rows[1:] if len(row) > column and row[column].strip()]
    return list(dict.fromkeys(ids))
