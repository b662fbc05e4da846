"""``wirelab exercises``: each student's link and the answers the labs' exercises accept.

    wirelab exercises key --course net-2026 --roster roster.csv --out key.csv
    wirelab exercises show --course net-2026 --student s1234567

``key`` (for the instructor) writes one row per student and exercise: the course, the student,
their link (rate, delay, loss, DATA size, MAX_WAIT), the lab, the exercise, the question as that
student reads it, and the answer ``check`` accepts (``expected`` within ``tolerance``,
relative), computed by the model. The roster is a CSV with a header row; its student ids sit
under a column named student, id, login, username or email (else its first column).
``show`` prints one student's link and questions, as a lab run with ``-p STUDENT`` asks them.
"""
from __future__ import annotations

from pathlib import Path


def add_parser(subparsers):
    p = subparsers.add_parser("exercises", help="each student's link and the answers the labs' exercises accept",
                              description=__doc__.split("\n\n")[0])
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    k = verbs.add_parser("key", help="write the answer key of a class (CSV)")
    k.add_argument("--course", required=True, help="the course's name, as its labs are run with (-p COURSE ...)")
    k.add_argument("--roster", required=True, metavar="CSV", help="the class's student ids (a CSV with a header)")
    k.add_argument("--out", default="exercise-key.csv", help="the CSV to write (default ./exercise-key.csv)")
    s = verbs.add_parser("show", help="one student's link and questions")
    s.add_argument("--student", required=True)
    s.add_argument("--course", default="", help="the course's name (default: none)")
    return p


def run(args) -> int:
    # start-up: numpy, pandas, pyarrow only when run() runs
    from ..exercises import answer_key, describe_link, read_roster, student_exercises
    if args.verb == "key":
        students = read_roster(args.roster)
        key = answer_key(args.course, students)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        key.to_csv(out, index=False)
        print(f"{out}: {len(students)} students × {key['exercise'].nunique()} exercises of course {args.course!r}")
        return 0
    print(f"{args.student} ({args.course or 'no course'}): {describe_link(args.student, args.course)}")
    for name, exercise in student_exercises(args.student, args.course).items():
        print(f"  {name}: {exercise.question}")
    return 0
