"""Each student's own link in grading (grade/own_link.py): drawn from the student's (course, student) seed
within the catalogue's values, the same every time, fair to a correct program, and said in the report."""
import itertools
import json
import shutil

import pytest

from wirelab.errors import UsageError
from wirelab.exercises import CHOICES, my_link, student_rng
from wirelab.grade import grade_class, load_catalogue
from wirelab.grade.own_link import fair_pattern, own_link, own_links, student_of_metadata
from wirelab.grade.prediction import predict_test
from wirelab.link import LinkSpec


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def drawing(cat):
    return [t for t in cat.tests if t.draw]


def test_the_performance_and_loss_tests_draw(cat):
    drawn = {t.topic for t in drawing(cat)}
    assert drawn == {"performance", "retransmission"}
    assert all(t.link.get("loss") for t in drawing(cat) if t.topic == "retransmission")


def test_the_same_student_always_gets_the_same_link(cat):
    for test in drawing(cat):
        first, again = own_link(test, "s1234567", "net-2026", cat.assignment), \
            own_link(test, " s1234567 ", "net-2026", cat.assignment)
        assert (first.link, first.seed) == (again.link, again.seed)
        assert "drawn for s1234567, course net-2026" in first.describe_link()


def test_two_students_get_different_links_within_the_ranges(cat):
    students = [f"s{n:07d}" for n in range(40)]
    for test in drawing(cat):
        links = [own_link(test, s, "net-2026", cat.assignment) for s in students]
        assert len({t.seed for t in links}) == len(students), test.id        # never the same packets
        for key, values in test.draw.items():
            got = {t.link[key] for t in links}
            assert got <= set(values) and len(got) > 1, (test.id, key, got)
        untouched = {k: v for k, v in test.link.items() if k not in test.draw}
        assert all({k: t.link[k] for k in untouched} == untouched for t in links)
    a, b = (own_link(drawing(cat)[0], s, "net-2026", cat.assignment) for s in ("s1234567", "s2345678"))
    assert (a.link, a.seed) != (b.link, b.seed)
    other_course = own_link(drawing(cat)[0], "s1234567", "net-2027", cat.assignment)
    assert other_course.seed != a.seed


def test_without_a_student_the_catalogues_link(cat):
    assert own_links(cat.tests, None, cat.assignment) == list(cat.tests)
    assert own_links(cat.tests, "  ", cat.assignment) == list(cat.tests)
    undrawn = next(t for t in cat.tests if not t.draw)
    assert own_link(undrawn, "s1234567", "net-2026", cat.assignment) is undrawn


def test_the_draw_is_the_one_my_link_makes():
    """my_link's values come from student_rng (the grader's seed source), and stay what they were."""
    rng = student_rng("s1234567", "net-2026")
    assert my_link("s1234567", "net-2026") == {k: rng.choice(v) for k, v in CHOICES.items()}
    assert student_rng("s1234567", "net-2026", "grade", "x").random() != student_rng("s1234567", "net-2026").random()


def test_drawn_loss_patterns_cannot_fail_a_correct_program(cat):
    """No MAX_RETRANSMITS lost tries in a row on any student's link (a program may read MAX_RETRANSMITS as its
    sends in all); a pattern that has them is refused."""
    r = cat.assignment.max_retransmits
    for test in drawing(cat):
        for n in range(60):
            t = own_link(test, f"s{n:07d}", "net-2026", cat.assignment)
            assert fair_pattern(t.seed, LinkSpec.parse(**t.link), r), (test.id, n)
    hopeless = LinkSpec.parse(loss="90%", loss_reverse=0)
    assert not fair_pattern(1, hopeless, r)


def test_every_drawn_link_leaves_the_deadline_room(cat):
    """The model's transfer time on the slowest combination a test draws: under half its deadline."""
    for test in drawing(cat):
        keys = sorted(test.draw)
        for values in itertools.product(*(test.draw[k] for k in keys)):
            link = {**test.link, **dict(zip(keys, values))}
            pred = predict_test(test.__class__(**{**test.__dict__, "link": link}), cat.assignment, cat.assignment.chunk)
            seconds = test.size * 8 / pred["pred_goodput_bps"]
            assert seconds < test.deadline_s / 2, (test.id, link, seconds)


def test_a_draw_must_name_the_tests_own_link_options(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[test]]\nid = "hidden-udpr-x"\nrole = "pair"\nproto = "udpr"\nsize = "5KB"\n'
                   'link = { rate = "10mbit" }\ndraw = { delay = ["5ms"] }\n'
                   'points = 1\ndeadline_s = 9\npublic = false\nchecks = "x"\n')
    with pytest.raises(UsageError, match="draw names 'delay'"):
        load_catalogue(extra=[bad])


def test_gradescopes_metadata_names_the_student(tmp_path):
    meta = tmp_path / "submission_metadata.json"
    meta.write_text(json.dumps({"users": [{"email": "b@x.org", "id": 2, "name": "B", "sid": "s2"},
                                          {"email": "a@x.org", "id": 1, "name": "A"}]}))
    assert student_of_metadata(meta) == "a@x.org+s2"
    meta.write_text(json.dumps({"users": [{"id": 7, "name": "C"}]}))
    assert student_of_metadata(meta) == "7"
    assert student_of_metadata(tmp_path / "none.json") is None


@pytest.mark.root
def test_a_correct_program_passes_on_its_students_drawn_link(project_root, tmp_path):
    # two students of one course, one correct program: two links, the same score
    sources = []
    for student in ("s1234567", "s7654321"):
        sources.append((student, tmp_path / "class" / student))
        shutil.copytree(project_root / "data" / "example-class" / "correct-python", sources[-1][1])
    cat = load_catalogue().select(["client-udpr-20KB-loss10"])
    both = grade_class(sources, cat, tmp_path / "out", jobs=1, progress=False, capture=False)
    assert both[0].tests[0].link != both[1].tests[0].link and both[0].score == both[1].score == 100
    graded = both[0]
    test, = graded.tests
    drawn = own_link(cat.tests[0], "s1234567", "", cat.assignment)
    assert test.status == "pass", test.reason
    assert test.link == drawn.describe_link() and "drawn for s1234567" in test.link
    assert test.pred_goodput_bps == pytest.approx(predict_test(drawn, cat.assignment, test.data_bytes)["pred_goodput_bps"])


def test_the_command_line_lists_a_students_links_and_refuses_one_id_for_many():
    import subprocess
    import sys
    listed = subprocess.run([sys.executable, "-m", "wirelab", "grade", "--list", "--course", "net-2026", "--student",
                             "s1234567"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    drawn = [line for line in listed.stdout.splitlines() if "(drawn for s1234567, course net-2026)" in line]
    assert len(drawn) == len(drawing(load_catalogue()))
    many = subprocess.run([sys.executable, "-m", "wirelab", "grade", "--student", "s1", "a", "b"],
                          capture_output=True, text=True, timeout=120)
    assert many.returncode == 2 and "--student names one student" in many.stderr
