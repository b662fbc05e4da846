"""Exercises per student: a (course, student) pair gives its own link, every lab asks its questions
that depend on a link on it, the model gives the answers, and the instructor's key holds exactly the
answers ``check`` accepts. Each test here takes under 2 s, but the notebook one (about 30 s)."""
import csv
import json
import subprocess
import sys

import pytest

from wirelab import units
from wirelab.errors import UsageError
from wirelab.exercises import (CHOICES, EXERCISES, LABS, answer_key, check, describe_link, my_link, read_roster,
                               seeded_exercises, student_exercises, student_link)
from wirelab.model import predict


def test_a_student_id_always_gives_the_same_link_and_ids_spread_over_the_choices():
    assert my_link("s1234567") == my_link(" s1234567 ")
    links = [my_link(f"s{n:07d}") for n in range(200)]
    assert len({tuple(sorted(link.items())) for link in links}) > 100       # neighbours rarely share a link
    for name, values in CHOICES.items():
        assert {link[name] for link in links} == set(values)
    with pytest.raises(UsageError):
        my_link("  ")


@pytest.mark.parametrize("student", ["s1234567", "alice@example.org", "42"])
def test_each_seeded_exercise_accepts_the_models_answer_and_rejects_a_neighbours(student):
    link = my_link(student)
    rate, delay = units.parse_rate(link["rate"]), units.parse_time(link["delay"])
    exercises = seeded_exercises(student)
    assert exercises["udpr_goodput"].expected() == pytest.approx(
        predict("udpr", rate, payload=link["data"], rtt_s=2 * delay).goodput_bps / 1e6)
    assert exercises["bdp_bytes"].expected() == pytest.approx(rate * 2 * delay / 8)
    for name, exercise in exercises.items():
        assert link["rate"] in exercise.question or "loss" in exercise.question
        assert "correct" in check(name, exercise.expected(), student=student)
        assert "not quite" in check(name, exercise.expected() * 1.5 + 1, student=student)
    assert link["rate"] in describe_link(student)
    with pytest.raises(UsageError):
        check("no_such_exercise", 1.0, student=student)


def test_two_students_of_a_course_differ_the_same_student_is_the_same_and_two_courses_differ():
    assert my_link("s1", "net-2026") != my_link("s2", "net-2026")
    assert my_link("s1", "net-2026") == my_link(" s1 ", "net-2026 ")
    assert my_link("s1", "net-2026") != my_link("s1", "net-2027")
    assert my_link("s1") == my_link("s1", "")                # no course: the links given before courses
    course = [my_link(f"s{n}", "net-2026") for n in range(200)]
    other = [my_link(f"s{n}", "net-2027") for n in range(200)]
    assert sum(a == b for a, b in zip(course, other)) < 20  # the same roster draws anew in another course


def test_every_lab_asks_its_link_questions_on_the_students_link_and_the_rest_as_the_document_does():
    link = student_link("s1", "net-2026")
    mine, documents = student_exercises("s1", "net-2026"), student_exercises()
    assert documents == EXERCISES and set(mine) == set(EXERCISES) | set(seeded_exercises("s1", "net-2026"))
    assert mine["tcp_ts_gbe"].expected() == pytest.approx(predict("tcp", link.rate_bps, timestamps=True).goodput_bps / 1e6)
    assert mine["bdp_100mbit_80ms_bytes"].expected() == pytest.approx(link.rate_bps * 2 * link.delay_s / 8)
    assert f"{link.rate_bps / 1e6:g} Mbit/s" in mine["tcp_ts_gbe"].question
    changed = {n for n in EXERCISES if mine[n].question != EXERCISES[n].question}
    assert changed == {n for n in EXERCISES if mine[n].expected() != pytest.approx(EXERCISES[n].expected())}
    assert len(changed) >= 12                                 # every lab has some (documents 000-004)
    for lab in LABS.values():
        assert changed & set(lab.EXERCISES), lab.__name__
    assert "jain_6_4" not in changed and "pppoe_tcp_payload" not in changed   # no link in them


def test_the_key_holds_each_students_link_and_exactly_the_answers_check_accepts(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Name,Login\nAda,s1\nBob,s2\nAda again,s1\nCy,alice@example.org\n")
    out = tmp_path / "key.csv"
    done = subprocess.run([sys.executable, "-m", "wirelab", "exercises", "key", "--course", "net-2026",
                           "--roster", str(roster), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["student"] for r in rows[::len(student_exercises("s1", "net-2026"))]] == ["s1", "s2", "alice@example.org"]
    for row in rows:
        assert {k: row[k] for k in CHOICES} == {k: str(v) for k, v in my_link(row["student"], "net-2026").items()}
        expected, tolerance = float(row["expected"]), float(row["tolerance"])
        assert "correct" in check(row["exercise"], expected, student=row["student"], course="net-2026")
        wrong = expected * (1 + 3 * tolerance) + 1
        assert "not quite" in check(row["exercise"], wrong, student=row["student"], course="net-2026")
    assert answer_key("net-2026", ["s1"])["expected"].tolist() == \
        [float(r["expected"]) for r in rows if r["student"] == "s1"]


def test_a_roster_reads_its_student_column_or_its_first_and_an_empty_one_is_refused(tmp_path):
    (tmp_path / "a.csv").write_text("student,name\ns9,Ann\n")
    (tmp_path / "b.csv").write_text("who,name\nx1,Ann\n\nx2,Bo\n")
    (tmp_path / "c.csv").write_text("student\n")
    assert read_roster(tmp_path / "a.csv") == ["s9"] and read_roster(tmp_path / "b.csv") == ["x1", "x2"]
    with pytest.raises(UsageError, match="no students"):
        read_roster(tmp_path / "c.csv")
    with pytest.raises(UsageError, match="no roster"):
        read_roster(tmp_path / "missing.csv")


def _questions(notebook) -> list[str]:
    outputs = [o for c in json.loads(notebook.read_text())["cells"] for o in c.get("outputs", [])]
    text = "".join("".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream")
    return [line for line in text.splitlines() if "not answered yet" in line or line.startswith("your link")]


@pytest.mark.notebook
@pytest.mark.slow
def test_a_lab_run_for_two_students_asks_each_their_own_numbers(project_root, tmp_path):
    """Notebook 01 in quick mode (its predictions: nothing measured), for s1 then s2 of one course: its
    link questions differ, the rest not."""
    asked = {}
    for student in ("s1", "s2"):
        out = tmp_path / student
        done = subprocess.run([sys.executable, "-m", "wirelab", "report",
                               str(project_root / "notebooks" / "01-overhead-and-goodput.ipynb"), "--out", str(out),
                               "-p", "STUDENT", student, "-p", "COURSE", "net-2026", "-p", "MEASURE", "False"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        asked[student] = _questions(out / "01-overhead-and-goodput.ipynb")
    assert asked["s1"][0].startswith("your link: ") and asked["s1"][0] != asked["s2"][0]
    first, second = (dict(line.split(":", 1) for line in asked[s][1:]) for s in ("s1", "s2"))
    assert first.keys() == second.keys() == {"udp_ipv6_payload", "tcp_ts_gbe", "udp_fragments_4000",
                                             "delivery_4000_1pct", "pppoe_tcp_payload", "sender_view_short"}
    differ = {name for name in first if first[name] != second[name]}
    mine, theirs = student_exercises("s1", "net-2026"), student_exercises("s2", "net-2026")
    assert differ == {n for n in first if mine[n].question != theirs[n].question}     # as the key says
    assert differ and differ <= {n for n in first if mine[n].question != EXERCISES[n].question}   # a link's only
