"""Grades in the platforms' shapes (grade/formats/): the example class's saved grading, written in
each format, is accepted by validators written from each platform's documentation
(tests/platform_schemas.py) and says the same score as ``--json``. No root: nothing is graded
again (``wirelab grade --from``). Each test here takes under 5 s."""
import copy
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from platform_schemas import canvas_problems, gradescope_problems, moodle_problems, prairielearn_problems
from wirelab.grade import Graded, load_catalogue, load_graded
from wirelab.grade.formats import gradescope, leaderboard, prairielearn, write_formats


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def saved():
    return ROOT / "data" / "example-class" / "results.json"


@pytest.fixture(scope="module")
def exported(saved, tmp_path_factory):
    out = tmp_path_factory.mktemp("formats")
    done = subprocess.run([sys.executable, "-m", "wirelab", "grade", "--from", str(saved), "--format",
                           "gradescope,prairielearn", "--format", "gradebook", "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)


def test_every_file_of_the_example_class_is_valid_and_says_the_json_score(exported):
    out, summary = exported
    scores = {s["name"]: s["score"] for s in summary["submissions"]}
    assert len(scores) == 11
    for name, percent in scores.items():
        gs = json.loads((out / name / "gradescope.json").read_text())
        assert gradescope_problems(gs) == []
        total = sum(t["max_score"] for t in gs["tests"])
        assert total == 82                                          # every test ran: the catalogue's points
        assert gs["score"] == pytest.approx(sum(t["score"] for t in gs["tests"]))
        assert 100 * gs["score"] / total == pytest.approx(percent, abs=0.05)
        raw = (out / name / "prairielearn.json").read_bytes()
        assert prairielearn_problems(raw) == []
        assert 100 * json.loads(raw)["score"] == pytest.approx(percent, abs=0.05)
    canvas = (out / "gradebook-canvas.csv").read_text()
    assert canvas_problems(canvas) == []
    rows = list(csv.DictReader(canvas.splitlines()))
    assert rows[0]["Student"] == "Points Possible" and float(rows[0]["PPCB"]) == 82
    assert {r["Student"]: 100 * float(r["PPCB"]) / 82 for r in rows[1:]} == pytest.approx(scores, abs=0.05)
    moodle = (out / "gradebook-moodle.csv").read_text()
    assert moodle_problems(moodle, users=set(scores), identifier="Username", grades=["PPCB"]) == []
    assert {r["Username"]: 100 * float(r["PPCB"]) / 82
            for r in csv.DictReader(moodle.splitlines())} == pytest.approx(scores, abs=0.05)


def test_public_tests_are_visible_hidden_ones_after_the_due_date_and_each_reason_is_its_output(exported, saved):
    out, _ = exported
    catalogue = load_catalogue()
    graded = {g.name: g for g in load_graded(saved)}
    gs = json.loads((out / "accepts-out-of-order" / "gradescope.json").read_text())
    for test, outcome in zip(gs["tests"], graded["accepts-out-of-order"].tests):
        assert test["name"] == outcome.id
        assert test["visibility"] == ("visible" if catalogue[outcome.id].public else "after_due_date")
        assert outcome.reason in test["output"]
        assert test["status"] == ("passed" if outcome.status == "pass" else "failed")
    failing = next(t for t in gs["tests"] if t["name"] == "server-udpr-out-of-order")
    assert failing["score"] == 0 and "expected RJT for packet 2" in failing["output"]
    pl = json.loads((out / "accepts-out-of-order" / "prairielearn.json").read_text())
    hidden = next(t for t in pl["tests"] if t["name"] == "server-tcp-out-of-order")       # a hidden test
    public = next(t for t in pl["tests"] if t["name"] == "server-udpr-out-of-order")
    reason = next(t.reason for t in graded["accepts-out-of-order"].tests if t.id == "server-tcp-out-of-order")
    assert reason not in hidden["message"] and hidden["points"] == 0 and hidden["max_points"] == 1
    assert "expected RJT for packet 2" in public["message"] and public["description"] == \
        catalogue["server-udpr-out-of-order"].checks


def test_the_leaderboard_is_the_median_of_goodput_over_the_model(exported, saved):
    out, _ = exported
    g = next(g for g in load_graded(saved) if g.name == "correct-c")
    ratios = [t.goodput_bps / t.pred_goodput_bps for t in g.tests
              if t.status == "pass" and t.goodput_bps and t.pred_goodput_bps and not t.goodput_flag]
    assert len(ratios) >= 8
    board = {e["name"]: e["value"] for e in json.loads((out / "correct-c" / "gradescope.json").read_text())["leaderboard"]}
    assert board[leaderboard.MEDIAN] == pytest.approx(statistics.median(ratios), abs=1e-3)
    assert board[leaderboard.COMPARED] == len(ratios)
    udpr = [r for t, r in zip([t for t in g.tests if t.status == "pass" and t.goodput_bps and t.pred_goodput_bps
                               and not t.goodput_flag], ratios) if t.proto == "udpr"]
    assert board["udpr goodput ÷ model"] == pytest.approx(statistics.median(udpr), abs=1e-3)
    table = list(csv.DictReader((out / "leaderboard.csv").read_text().splitlines()))
    medians = [float(r[leaderboard.MEDIAN]) for r in table]
    assert medians == sorted(medians, reverse=True) and [int(r["rank"]) for r in table] == list(range(1, 12))


def _with_skipped(g: Graded, ids: set[str]) -> Graded:
    g = copy.deepcopy(g)
    for t in g.tests:
        if t.id in ids:
            t.status, t.points, t.reason = "skipped", 0.0, "not run here: no network namespaces in this container"
    return g


def test_a_test_the_machine_could_not_run_counts_on_neither_side(saved, tmp_path):
    g = next(g for g in load_graded(saved) if g.name == "accepts-out-of-order")
    shaped = {t.id for t in g.tests if t.link != "clean"}
    skipped = _with_skipped(g, shaped)
    ran = [t for t in g.tests if t.id not in shaped]
    assert skipped.max_points == sum(t.max_points for t in ran)
    assert skipped.score == round(100 * sum(t.points for t in ran) / sum(t.max_points for t in ran), 1)
    assert skipped.failed() == g.failed()                      # what ran and failed, nothing skipped
    gs = gradescope.results(skipped, total_points=82)
    assert gradescope_problems(gs) == []
    not_run = [t for t in gs["tests"] if t["name"] in shaped]
    assert not_run and all("score" not in t and "status" not in t and "no network namespaces" in t["output"]
                           for t in not_run)
    assert gs["score"] == pytest.approx(skipped.score * 82 / 100, abs=0.05)     # the --json score, in points
    assert "could not run on this machine" in gs["output"]
    pl = prairielearn.results(skipped, load_catalogue())
    assert prairielearn_problems(json.dumps(pl).encode()) == []
    assert pl["score"] == pytest.approx(skipped.score / 100, abs=5e-4)
    assert all(t["max_points"] == 0 for t in pl["tests"] if t["name"] in shaped)
    files = write_formats([skipped], tmp_path, None, ["gradebook"])
    assert canvas_problems(files["gradebook"][0].read_text()) == []


def test_a_build_that_failed_is_not_gradable_on_prairielearn_and_zero_on_gradescope(saved):
    g = copy.deepcopy(next(g for g in load_graded(saved) if g.name == "correct-c"))
    g.build_error, g.build_log = "make failed (exit status 2)", "ppcbc.c:3: error: expected ';'\n"
    for t in g.tests:
        t.status, t.points, t.reason = "error", 0.0, g.build_error
    pl = prairielearn.results(g)
    assert prairielearn_problems(json.dumps(pl).encode()) == [] and pl["gradable"] is False
    assert pl["format_errors"] == ["make failed (exit status 2)"] and "score" not in pl
    gs = gradescope.results(g, total_points=82)
    assert gradescope_problems(gs) == [] and gs["score"] == 0 and "expected ';'" in gs["output"]


def test_the_validators_refuse_what_the_documentation_does_not_allow():
    good = {"score": 1, "tests": [{"name": "a", "score": 1, "max_score": 1, "visibility": "visible"}],
            "leaderboard": [{"name": "x", "value": 0.9}]}
    assert gradescope_problems(good) == []
    assert gradescope_problems({**good, "grade": 3})                                   # not a field
    assert gradescope_problems({**good, "tests": [{"name": "a", "score": "1"}]})       # a string score
    assert gradescope_problems({**good, "tests": [{"name": "a", "score": 1, "visibility": "later"}]})
    assert gradescope_problems({**good, "tests": [{"name": "a", "score": 1, "status": "ok"}]})
    assert gradescope_problems({"tests": [{"name": "a"}]})                             # no score anywhere
    assert gradescope_problems({**good, "leaderboard": [{"name": "x", "value": 1, "order": "up"}]})
    assert prairielearn_problems(b'{"score": 0.5, "tests": [{"name": "a", "points": 1, "max_points": 2}]}') == []
    assert prairielearn_problems(b'{"score": 1.5}') and prairielearn_problems(b'{"message": "no score"}')
    assert prairielearn_problems(b'{"gradable": false, "format_errors": "does not compile"}') == []
    assert prairielearn_problems(json.dumps({"score": 1, "output": "x" * 1_000_001}).encode())
    assert canvas_problems("Student,ID,SIS User ID,SIS Login ID,Section,A\nx,,,x,,1\n") == []
    assert canvas_problems("Student,ID,SIS User ID,Section,A\nx,,,,1\n")                # no SIS Login ID
    assert canvas_problems("Student,ID,SIS User ID,SIS Login ID,Section,A\nPoints Possible,,,,,5\nx,,,x,,6\n")
    assert moodle_problems("Username,A\nx,1\n", users={"x"}, identifier="Username", grades=["A"]) == []
    assert moodle_problems("Username,A\nPoints Possible,5\nx,1\n", users={"x"}, identifier="Username",
                           grades=["A"])
