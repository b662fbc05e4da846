"""The example class graded for real: the correct submissions (C and Python) score 100 % on the whole
catalogue; each broken one fails exactly the tests its bug touches (data/example-class/expected.toml),
the ones that loop, fork or flood cost only their own tests, and the grader's reports say why; the
same grading in each platform's shape (--format) is what the platforms' documentation accepts."""
import json
import subprocess
import sys

import pytest

from platform_schemas import canvas_problems, gradescope_problems, moodle_problems, prairielearn_problems
from wirelab.grade import check_expected, find_submissions, grade_class, load_catalogue, load_expected

pytestmark = [pytest.mark.root, pytest.mark.slow]

#: A quick slice of the catalogue that still holds a failing test for every broken submission.
QUICK = ["build-*", "client-udpr-1B", "server-udpr-1B", "pair-udp-10KB", "client-udpr-lost-acc", "server-udpr-resends-acc",
         "server-udpr-out-of-order", "server-tcp-out-of-order", "server-udpr-foreign-conn",
         "server-udpr-foreign-data", "server-udp-silent-client", "client-tcp-silent-server"]


def test_the_class_on_a_quick_slice_fails_exactly_as_expected(project_root, tmp_path):
    class_dir = project_root / "data" / "example-class"
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "wirelab", "grade", "--class", str(class_dir), "--jobs", "4",
                           "--only", ",".join(QUICK), "--out", str(out), "--json",
                           "--format", "gradescope,prairielearn,gradebook",
                           "--expect", str(class_dir / "expected.toml")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]          # --expect: every failure as expected.toml says
    summary = json.loads(done.stdout)
    names = [s["name"] for s in summary["submissions"]]
    assert sorted(names) == sorted(name for name, _ in find_submissions(class_dir=class_dir))
    assert {"never-retransmits", "handed-in-c", "correct-c"} <= set(names)     # patches, archives, folders
    scores = {s["name"]: s["score"] for s in summary["submissions"]}
    assert scores["correct-c"] == scores["correct-python"] == scores["handed-in-c"] == 100.0
    expected = load_expected(class_dir / "expected.toml")
    assert all((scores[n] < 100) == bool(expected[n]["fails"]) for n in names)    # broken ones lose, the rest do not
    order = [t.id for t in load_catalogue().select(QUICK).tests]
    for sub in summary["submissions"]:
        assert [t["id"] for t in sub["tests"]] == order
        assert all(t["status"] in ("pass", "fail", "timeout", "error") and t["reason"] for t in sub["tests"])
    by_name = {s["name"]: {t["id"]: t for t in s["tests"]} for s in summary["submissions"]}
    assert by_name["loops-forever"]["client-udpr-1B"]["status"] == "timeout"
    assert "not listening" in by_name["forks-forever"]["server-udpr-1B"]["reason"]
    assert "expected RJT for packet 2" in by_name["accepts-out-of-order"]["server-udpr-out-of-order"]["reason"]
    assert "CONRJT" in by_name["ignores-foreign-sessions"]["server-udpr-foreign-conn"]["reason"]
    for name in ("index.html", "class.csv", "class.parquet", "results.json"):
        assert (out / name).exists()
    failed = json.loads((out / "accepts-out-of-order" / "report.json").read_text())
    capture = next(t["capture"] for t in failed["tests"] if t["id"] == "server-udpr-out-of-order")
    from scapy.utils import rdpcap
    from wirelab.capture.tools.ppcb_scapy import PPCB, bind_ppcb
    bind_ppcb()                                       # rdpcap: port 5000 is PPCB
    seen = [p[PPCB].mysummary() for p in rdpcap(str(out / "accepts-out-of-order" / capture)) if PPCB in p]
    assert any("DATA" in s and "packet 2" in s for s in seen) and any("ACC" in s and "packet 2" in s for s in seen)
    assert not (out / "correct-c" / "captures" / "server-udpr-out-of-order.pcapng").exists()
    total = sum(t.points for t in load_catalogue().select(QUICK).tests)
    for name, percent in scores.items():                 # each platform's file: valid, and the --json score
        gs = json.loads((out / name / "gradescope.json").read_text())
        assert gradescope_problems(gs) == [] and 100 * gs["score"] / total == pytest.approx(percent, abs=0.05)
        pl = (out / name / "prairielearn.json").read_bytes()
        assert prairielearn_problems(pl) == [] and 100 * json.loads(pl)["score"] == pytest.approx(percent, abs=0.05)
    assert canvas_problems((out / "gradebook-canvas.csv").read_text()) == []
    assert moodle_problems((out / "gradebook-moodle.csv").read_text(), users=set(names), identifier="Username",
                           grades=["PPCB"]) == []


def test_correct_submissions_in_c_and_python_score_100_on_the_whole_catalogue(project_root, tmp_path):
    class_dir = project_root / "data" / "example-class"
    cat = load_catalogue()
    subs = find_submissions([class_dir / "correct-c", class_dir / "correct-python"])
    graded = grade_class(subs, cat, tmp_path, jobs=2, progress=False)
    for g in graded:
        assert g.score == 100.0, [(t.id, t.status, t.reason) for t in g.tests if t.status != "pass"]
        assert len(g.tests) == len(cat.tests)
    assert graded[0].language == "C" and graded[1].language == "Python"
    assert check_expected(graded, load_expected(class_dir / "expected.toml")) == []
    shaped = [t for t in graded[0].tests if t.pred_goodput_bps and t.goodput_bps]
    assert len(shaped) >= 8
    delayed = next(t for t in shaped if t.id == "client-udpr-100KB-10mbit-10ms")
    # stop-and-wait over 20 ms RTT: nothing to hide behind, the measurement sits near the model
    assert 0.7 < delayed.goodput_bps / delayed.pred_goodput_bps < 1.3


def test_a_student_checks_their_own_folder_with_the_public_tests(project_root, tmp_path):
    folder = project_root / "data" / "example-class" / "correct-python"
    done = subprocess.run([sys.executable, "-m", "wirelab", "grade", "--public", ".", "--only", "*-udpr-1B,*-10MB",
                           "--out", str(tmp_path), "--json"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    submission, = json.loads(done.stdout)["submissions"]
    assert submission["name"] == "correct-python" and submission["score"] == 100.0
    assert [t["id"] for t in submission["tests"]] == ["client-udpr-1B", "server-udpr-1B"]   # the 10 MB ones are hidden
