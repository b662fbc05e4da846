"""Each student's own link in grading: the tests that ``draw`` (catalogue.toml) run on a link drawn for the student.

    >>> test = load_catalogue()["client-udpr-20KB-loss10"]                       # doctest: +SKIP
    >>> own_link(test, "s1234567", "net-2026").describe_link()                   # doctest: +SKIP
    'rate 20mbit, loss 12%, loss_reverse 0, loss_unit datagram (drawn for s1234567, course net-2026)'

A test's ``draw`` table names link options and the values each may take; the
student's value for each is drawn from the random numbers of the student in the
course (``wirelab.exercises.student_rng``, the seed the notebooks' ``my_link``
draws from) with the test's id added, and so is the loss pattern (the userspace
link's seed). Two students of a course are not tested on the same packets; the
same student always is, on every grading and every machine. The model predicts
for the drawn link (prediction.py reads the test's link), and the report says
whose link a test ran on (``GradeTest.describe_link``).

Fair draws: a correct program must never fail by bad luck. A udpr client or
server sends one datagram at a time and resends it after MAX_WAIT, so its tries
are the link's successive loss draws, the forward one for the packet and, where
it got through, the reverse one for its answer; a pattern with MAX_RETRANSMITS
failed tries in a row in the first ``PATTERN_PACKETS`` would lose one packet every
time for a program that reads MAX_RETRANSMITS as its sends in all (a reading the
assignment allows: notebooks/ppcb-protocol.md, Readings), and is passed over for
the next candidate (the userspace link's draws are reproduced:
``wirelab.link.userspace`` seeds each direction's shaper from ``Random(seed)``).

How the grader knows the student: a class folder's sub-folder or archive is
named by the student's id (``handin.submission_name``: ``s1234567.tgz``), a
Gradescope submission by its users (``submission_metadata.json``:
``student_of_metadata``). Without an id a test runs on the catalogue's
``link`` and ``seed``.
"""
from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

from ..link import LinkSpec
from .catalogue import Assignment, GradeTest

__all__ = ["own_link", "own_links", "fair_pattern", "student_of_metadata", "PATTERN_PACKETS"]

#: How many of a direction's loss draws must hold no fatal run (20 KB in 1000 B DATA at 20 % loss: ~30)
PATTERN_PACKETS = 400
#: Candidate loss patterns tried before the last one is taken as it is (at 20 % one in ~40 is passed over)
TRIES = 64


def own_link(test: GradeTest, student: str | None, course: str = "", assignment: Assignment = Assignment()) -> GradeTest:
    """``test`` on ``student``'s own link in ``course`` (``test`` itself when it draws nothing or no student)."""
    if not test.draw or not student or not str(student).strip():
        return test
    from ..exercises import student_rng            # deferred: the exercises module reads every lab
    rng = student_rng(student, course, "grade", test.id)
    values = {key: rng.choice(list(choices)) for key, choices in sorted(test.draw.items())}
    link = {**test.link, **values}
    seed = _fair_seed(rng, LinkSpec.parse(**link), assignment.max_retransmits)
    whose = f"{str(student).strip()}" + (f", course {course}" if course else "")
    return replace(test, link=link, seed=seed, drawn_for=whose)


def own_links(tests, student: str | None, assignment: Assignment) -> list[GradeTest]:
    """Every test of ``tests`` on ``student``'s link (``assignment.course`` the course)."""
    return [own_link(t, student, assignment.course, assignment) for t in tests]


def _fair_seed(rng: random.Random, spec: LinkSpec, retransmits: int) -> int:
    seed = 0
    for _ in range(TRIES):
        seed = rng.getrandbits(31)
        if fair_pattern(seed, spec, retransmits):
            break
    return seed


def fair_pattern(seed: int, spec: LinkSpec, retransmits: int, packets: int = PATTERN_PACKETS) -> bool:
    """No run of ``retransmits`` failed tries in the first ``packets`` tries of a stop-and-wait exchange
    over the userspace link seeded with ``seed``: a try draws the forward direction's loss for its packet and,
    if that got through, the reverse direction's for the answer (a lost answer costs a try too: the sender
    resends after MAX_WAIT and the peer answers again). True where a direction draws for more than loss (its
    draws then interleave with the others' and no run can be foretold)."""
    top = random.Random(seed)
    sides = []
    for direction in (spec.forward, spec.reverse):
        draws = random.Random(top.random())          # as link.userspace._routes seeds each direction's shaper
        if direction.loss and (direction.duplicate or direction.reorder or direction.jitter_s):
            return True
        sides.append((draws, direction.loss or 0.0))
    (forward, p_forward), (reverse, p_reverse) = sides
    run = 0
    for _ in range(packets):
        lost = bool(p_forward) and forward.random() < p_forward
        if not lost and p_reverse:
            lost = reverse.random() < p_reverse
        run = run + 1 if lost else 0
        if run >= retransmits:          # the assignment also allows MAX_RETRANSMITS sends in all
            return False
    return True


def student_of_metadata(path: str | Path) -> str | None:
    """The student of a Gradescope submission (``/autograder/submission_metadata.json``, "Submission
    Metadata": ``users`` with ``sid``, ``email``, ``id``): each user's student id, else e-mail, else
    Gradescope id; a group's, sorted and joined by "+"; None without the file or users."""
    try:
        users = json.loads(Path(path).read_text(encoding="utf-8")).get("users") or []
    except (OSError, ValueError, AttributeError):
        return None
    ids = sorted(str(next((u[k] for k in ("sid", "email", "id") if u.get(k) not in (None, "")), "")).strip()
                 for u in users if isinstance(u, dict))
    ids = [i for i in ids if i]
    return "+".join(ids) or None
