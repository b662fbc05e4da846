"""Exercises that check a student's answer against the model, with a hint.

The expected answers are computed by ``wirelab.model`` when asked, never
stored, so an exercise stays right if a parameter changes. Each lab keeps its
own (``wirelab.labs.docNNN.EXERCISES``); ``check`` finds them by name.

Seeded exercises give each student a link of their own, drawn from their
student id, so answers cannot simply be copied from a neighbour::

    >>> my_link("s1234567")["rate"]                     # doctest: +SKIP
    '20mbit'
    >>> check("udpr_goodput", 1.23, student="s1234567")  # doctest: +SKIP
"""
from __future__ import annotations

from .errors import UsageError
from .labs import bufferbloat, doc000, doc001, doc002, doc003, doc004
from .labs.lab import Exercise
from .model import predict

__all__ = ["Exercise", "EXERCISES", "check", "my_link", "seeded_exercises", "describe_link"]

#: Every lab's exercises by name (each lab module holds its own: ``wirelab.labs.docNNN.EXERCISES``).
EXERCISES = {**doc002.EXERCISES, **doc003.EXERCISES, **doc001.EXERCISES, **doc000.EXERCISES, **doc004.EXERCISES,
             **bufferbloat.EXERCISES}

#: What a student's link is drawn from (typical lab values; every combination is sensible).
CHOICES = {"rate": ["2mbit", "5mbit", "10mbit", "20mbit", "50mbit"], "delay": ["5ms", "10ms", "20ms", "40ms"],
           "loss": ["0.5%", "1%", "2%", "5%"], "data": [500, 1000, 1400], "max_wait": ["0.2s", "0.5s", "1s"]}


def my_link(student: str) -> dict:
    """The link parameters of ``student`` (any id: matriculation number, e-mail, login): the same id
    always gives the same link; another id almost surely another."""
    import hashlib
    import random
    if not str(student).strip():
        raise UsageError("an empty student id", "give your student id, e.g. my_link('s1234567')")
    rng = random.Random(hashlib.sha256(str(student).strip().encode()).digest())
    return {name: rng.choice(values) for name, values in CHOICES.items()}


def describe_link(student: str) -> str:
    link = my_link(student)
    return (f"your link: {link['rate']}, {link['delay']} one way, {link['loss']} loss each way; "
            f"udpr DATA of {link['data']} B, MAX_WAIT {link['max_wait']}")


def seeded_exercises(student: str) -> dict[str, Exercise]:
    """Exercises on ``student``'s own link (see ``my_link``); answers from ``wirelab.model``."""
    from . import units
    link = my_link(student)
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
            lambda: predict("udpr", rate, payload=data, rtt_s=2 * delay).goodput_bps / 1e6, 0.005,
            "stop-and-wait: one DATA per cycle of DATA/C + RTT + ACC/C"),
        "udpr_lossy_goodput": Exercise(
            f"udpr goodput (Mbit/s) with {data} B DATA, {link['loss']} loss each way and MAX_WAIT "
            f"{link['max_wait']} on your link {where}?",
            lambda: predict("udpr", rate, payload=data, rtt_s=2 * delay, loss=loss, max_wait_s=wait).goodput_bps / 1e6,
            0.005, "each failed try costs DATA/C + MAX_WAIT; tries are geometric with success (1−p)²"),
        "udpr_retransmissions": Exercise(
            f"Expected retransmissions per udpr DATA with {link['loss']} loss each way?",
            lambda: predict("udpr", rate, payload=data, rtt_s=2 * delay, loss=loss).stop_and_wait
            .expected_retransmissions, 0.002, "1/q − 1 with q = (1 − p)² (the DATA and its ACC must both arrive)"),
    }


def check(name: str, answer: float | None, *, student: str | None = None) -> str:
    """Compare ``answer`` with the model; returns (and prints) a one-line verdict.
    With ``student``, ``name`` is one of that student's seeded exercises."""
    exercises = seeded_exercises(student) if student is not None else EXERCISES
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
