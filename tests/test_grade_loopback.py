"""Grading where no network namespace can be made (a course platform's container, emulated by
tests/container.py): the tests on a clean link run on 127.0.0.1, the ones on a shaped link are
skipped, each with the reason, and count on neither side of the score; the submission's disk is
a plain folder where no tmpfs can be mounted, and the report says so. About 15 s."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from wirelab.grade import load_expected
from wirelab.grade.expected import expected_failures

pytestmark = [pytest.mark.root, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
SLICE = ["build-*", "client-udpr-1B", "server-udpr-1B", "pair-udp-10KB", "server-udpr-out-of-order",
         "client-udpr-100KB-10mbit-10ms", "server-udpr-20KB-loss10"]
SHAPED = {"client-udpr-100KB-10mbit-10ms", "server-udpr-20KB-loss10"}


def in_container(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "--net", "--", sys.executable, str(HERE / "container.py"), "--", *argv],
                          capture_output=True, text=True, timeout=timeout)


def test_without_namespaces_the_clean_tests_run_on_loopback_and_the_shaped_ones_say_why(project_root, tmp_path):
    class_dir = project_root / "data" / "example-class"
    done = in_container([sys.executable, "-m", "wirelab", "grade", "--trust", "--json", "--only", ",".join(SLICE),
                         "--out", str(tmp_path), str(class_dir / "correct-c"),
                         str(class_dir / "accepts-out-of-order.diff")], timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]          # accepts-out-of-order fails its test
    graded = {s["name"]: s for s in json.loads(done.stdout)["submissions"]}
    expected = load_expected(class_dir / "expected.toml")
    for name, submission in graded.items():
        tests = {t["id"]: t for t in submission["tests"]}
        for test_id in SHAPED:
            assert tests[test_id]["status"] == "skipped" and tests[test_id]["points"] == 0
            assert "needs two network namespaces" in tests[test_id]["reason"]
        ran = {i for i, t in tests.items() if t["status"] != "skipped"}
        assert ran == {t for t in tests if t not in SHAPED}
        failed = {i for i in ran if tests[i]["status"] != "pass"}
        assert failed == expected_failures(expected[name]["fails"], sorted(ran)), submission
    assert graded["correct-c"]["score"] == 100.0                # out of the tests that ran
    assert graded["accepts-out-of-order"]["score"] == pytest.approx(100 * 5 / 7, abs=0.05)
    report = json.loads((tmp_path / "correct-c" / "report.json").read_text())
    assert "no sandbox (--trust)" in report["confinement"] and "plain folder" in report["confinement"]
    assert "links on 127.0.0.1" in report["confinement"]
    assert report["max_points"] == 7 and report["counts"]["skipped"] == 2


def test_without_namespaces_grading_on_namespaces_is_refused_with_the_reason(project_root, tmp_path):
    done = in_container([sys.executable, "-m", "wirelab", "grade", "--links", "namespaces", "--trust", "--only",
                         "build-*", "--out", str(tmp_path), str(project_root / "data" / "example-class" / "correct-c")], timeout=120)
    assert done.returncode == 2 and "network namespaces" in done.stderr and "--links loopback" in done.stderr


def test_on_loopback_two_submissions_are_never_graded_at_once(project_root, tmp_path):
    done = in_container([sys.executable, "-m", "wirelab", "grade", "--trust", "--jobs", "2", "--only", "build-*",
                         "--out", str(tmp_path), "--class", str(project_root / "data" / "example-class")], timeout=120)
    assert done.returncode == 2 and "--jobs 1" in done.stderr and "127.0.0.1:5000" in done.stderr
