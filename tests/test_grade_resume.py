"""A grading resumes as a sweep does: run again into the same report folder, it grades only what is
missing, and again only what changed (the submission's files, the catalogue, the kit, the sandbox or
links); --fresh grades all; a results.json saved before keys were kept means a full regrading."""
import json
import shutil
import signal
import subprocess
import sys
from dataclasses import replace

import pytest

from polling import wait_until
import wirelab.grade.resume as resuming
from wirelab.grade import Graded, Outcome, classroom, find_submissions, load_catalogue, load_graded
from wirelab.grade.jail import Policy
from wirelab.grade.resume import resume, source_digest

NAMES = ("alice", "bob", "carol", "dave")


@pytest.fixture
def class_dir(tmp_path):
    """Four small submissions (folders with ppcbc and ppcbs)."""
    root = tmp_path / "class"
    for name in NAMES:
        folder = root / name
        folder.mkdir(parents=True)
        for program in ("ppcbc", "ppcbs"):
            (folder / program).write_text(f"#!/bin/sh\n# {name}'s {program}\n")
            (folder / program).chmod(0o755)
    return root


@pytest.fixture
def grader(monkeypatch):
    """grade_submission replaced by one that records whom it grades (nothing is run: no root needed)."""
    graded: list[str] = []
    stop_at: list[str] = []

    def grade(name, source, catalogue, report_dir, **kwargs):
        graded.append(name)
        if name in stop_at:
            raise KeyboardInterrupt
        return Graded(name, [Outcome(t.id, "pass", "ok", t.points, t.points) for t in catalogue.tests],
                      source=str(source))
    monkeypatch.setattr(classroom, "grade_submission", grade)
    monkeypatch.setattr(classroom, "require_sandbox", lambda policy: None)
    grade.graded, grade.stop_at = graded, stop_at
    return grade


def _grade(class_dir, catalogue, out, **options):
    subs = [(name, class_dir / name) for name in NAMES]
    return classroom.grade_class(subs, catalogue, out, progress=False, **options)


def _graded_at(out) -> dict[str, str]:
    return {g.name: g.graded_at for g in load_graded(out / "results.json")}


def test_ctrl_c_then_the_same_grading_again_grades_only_the_missing(class_dir, grader, tmp_path, capsys):
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    grader.stop_at.append("carol")
    with pytest.raises(KeyboardInterrupt):
        _grade(class_dir, cat, out)
    assert grader.graded == ["alice", "bob", "carol"]
    before = _graded_at(out)
    assert list(before) == ["alice", "bob"] and all(before.values())
    grader.graded.clear(), grader.stop_at.clear()
    results = _grade(class_dir, cat, out)
    assert grader.graded == ["carol", "dave"]                      # only the missing ones
    assert [g.name for g in results] == list(NAMES)                 # kept and new, in the order given
    after = load_graded(out / "results.json")
    assert [g.name for g in after] == list(NAMES) and all(g.key for g in after)
    assert {n: at for n, at in _graded_at(out).items() if n in before} == before
    assert "kept 2 graded before (same source, catalogue, kit and policy); grading 2: not graded before " \
           "(carol, dave)" in capsys.readouterr().err


def test_a_changed_file_grades_its_submission_again_and_says_why(class_dir, grader, tmp_path, capsys):
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    _grade(class_dir, cat, out)
    before = _graded_at(out)
    grader.graded.clear()
    (class_dir / "bob" / "ppcbs").write_text("#!/bin/sh\n# bob's second try\n")
    (class_dir / "dave" / "__pycache__").mkdir()                   # never laid out: not a change
    (class_dir / "dave" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    capsys.readouterr()
    _grade(class_dir, cat, out)
    assert grader.graded == ["bob"]
    assert "kept 3 graded before" in capsys.readouterr().err
    after = _graded_at(out)
    assert after["bob"] != before["bob"] and all(after[n] == before[n] for n in NAMES if n != "bob")


def test_the_source_digest_is_what_the_grader_lays_out(tmp_path, project_root):
    folder = tmp_path / "sub"
    shutil.copytree(project_root / "data" / "example-class" / "correct-python", folder)
    first = source_digest(folder)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "ppcb_impl.cpython-311.pyc").write_bytes(b"built")
    (folder / "notes.pyc").write_bytes(b"built")
    assert source_digest(folder) == first                        # what lay_out never copies
    (folder / "ppcbc").chmod(0o644)
    assert source_digest(folder) != first                        # "ppcbc is not executable" is a grade
    (folder / "ppcbc").chmod(0o755)
    assert source_digest(folder) == first
    (folder / "README").write_text("hello\n")
    assert source_digest(folder) != first


def test_a_patch_is_graded_again_when_the_folder_it_applies_to_changes(tmp_path, project_root):
    example = project_root / "data" / "example-class"
    shutil.copytree(example / "correct-python", tmp_path / "correct-python")
    patch = shutil.copy(example / "never-retransmits.diff", tmp_path / "never-retransmits.diff")
    first = source_digest(patch)
    with open(tmp_path / "correct-python" / "ppcb_impl.py", "a") as f:
        f.write("# a comment\n")
    assert source_digest(patch) != first


@pytest.mark.parametrize("change", ["points", "deadline", "hidden test", "max_wait", "limit"])
def test_a_changed_catalogue_value_grades_every_submission_again(class_dir, grader, tmp_path, capsys, change,
                                                                  project_root):
    cat, out = load_catalogue().select(["build-*", "pair-udp-10KB"]), tmp_path / "reports"
    _grade(class_dir, cat, out)
    grader.graded.clear()
    first = cat.tests[0]
    changed = {"points": lambda: replace(cat, tests=(replace(first, points=first.points + 1), *cat.tests[1:])),
               "deadline": lambda: replace(cat, tests=(*cat.tests[:-1], replace(cat.tests[-1], deadline_s=99.0))),
               "hidden test": lambda: load_catalogue(extra=[project_root / "data" / "example-class" / "hidden.toml"])
               .select(["build-*", "pair-udp-10KB", "hidden-*"]),
               "max_wait": lambda: replace(cat, assignment=replace(cat.assignment, max_wait_s=0.25)),
               "limit": lambda: replace(cat, limits=replace(cat.limits, cpu_s=30))}[change]()
    assert changed != cat
    capsys.readouterr()
    _grade(class_dir, changed, out)
    assert grader.graded == list(NAMES)
    said = capsys.readouterr().err
    assert "grading all 4 again: catalogue changed (alice, bob, carol, dave)" in said
    grader.graded.clear()
    _grade(class_dir, changed, out)                               # and that grading is kept in turn
    assert grader.graded == []


def test_fresh_grades_every_submission_again(class_dir, grader, tmp_path, capsys):
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    _grade(class_dir, cat, out)
    grader.graded.clear()
    capsys.readouterr()
    _grade(class_dir, cat, out, fresh=True)
    assert grader.graded == list(NAMES)
    assert "--fresh: grading all 4 again" in capsys.readouterr().err


def test_another_sandbox_or_kit_grades_again_and_says_which(class_dir, grader, tmp_path, capsys, monkeypatch):
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    _grade(class_dir, cat, out)
    grader.graded.clear()
    capsys.readouterr()
    _grade(class_dir, cat, out, policy=Policy(trust=True))
    assert grader.graded == list(NAMES)
    assert "policy changed (bubblewrap, links namespaces → trust, links namespaces)" in capsys.readouterr().err
    grader.graded.clear()
    monkeypatch.setattr(resuming, "__version__", "9.9.9")
    _grade(class_dir, cat, out, policy=Policy(trust=True))
    assert grader.graded == list(NAMES)
    assert "kit changed (wirelab" in capsys.readouterr().err


def test_a_results_json_saved_before_keys_loads_and_means_a_full_regrading(class_dir, grader, tmp_path, capsys,
                                                                          project_root):
    # the example class's grading as an older wirelab saved it: no keys, nor when it was graded
    saved = json.loads((project_root / "data" / "example-class" / "results.json").read_text())
    for graded in saved:
        graded.pop("key", None), graded.pop("graded_at", None)
    out = tmp_path / "reports"
    out.mkdir()
    recorded = out / "results.json"
    recorded.write_text(json.dumps(saved))
    old = load_graded(recorded)
    assert old and not any(g.key for g in old)
    names = [g.name for g in old[:3]]
    for name, folder in zip(names, NAMES):
        (class_dir / folder).rename(class_dir / name)
    cat = load_catalogue().select(["build-*"])
    classroom.grade_class([(n, class_dir / n) for n in names], cat, out, progress=False)
    assert grader.graded == names
    assert "holds no keys (written by an older wirelab): grading all 3 again" in capsys.readouterr().err
    assert [g.name for g in load_graded(out / "results.json")] == names


def test_a_lost_grading_is_saved_without_a_key_and_graded_next_time(class_dir, tmp_path):
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    subs = [(name, class_dir / name) for name in NAMES[:2]]
    plan = resume(subs, cat, Policy(), out)
    plan.record(Graded("alice", [], source="alice"))
    plan.record(classroom.lost_submission("bob", class_dir / "bob", cat, "killed"), lost=True)
    again = resume(subs, cat, Policy(), out)
    assert [n for n, _ in again.todo] == ["bob"] and "no key saved" in again.why["bob"]
    assert [g.name for g in again.results()] == ["alice"]


# ------------------------------------------------------------------------------ graded for real
def _example_slice(project_root, into):
    """correct-c (make), correct-python, and never-retransmits (a patch over correct-python)."""
    example = project_root / "data" / "example-class"
    into.mkdir()
    for name in ("correct-c", "correct-python"):
        shutil.copytree(example / name, into / name)
    shutil.copy(example / "never-retransmits.diff", into)
    return into


QUICK = "build-*,pair-udp-10KB,client-udpr-lost-acc"     # the last one never-retransmits fails


def _cli(class_dir, out, *more):
    return [sys.executable, "-m", "wirelab", "grade", "--class", str(class_dir), "--only", QUICK,
            "--out", str(out), "--no-progress", "--no-capture", *more]


def _verdicts(out) -> dict:
    return {g.name: [(t.id, t.status, t.points) for t in g.tests] for g in load_graded(out / "results.json")}


@pytest.mark.root
@pytest.mark.slow
def test_ctrl_c_mid_class_then_again_grades_the_rest_as_a_fresh_grading_would(project_root, tmp_path):
    class_dir = _example_slice(project_root, tmp_path / "class")
    reference = tmp_path / "fresh"
    done = subprocess.run(_cli(class_dir, reference), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]          # never-retransmits fails a test
    out = tmp_path / "reports"
    grading = subprocess.Popen(_cli(class_dir, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (out / "results.json").is_file() and len(json.loads((out / "results.json").read_text())),
                   120, "the first submission graded")
        grading.send_signal(signal.SIGINT)
        _, err = grading.communicate(timeout=120)
    finally:
        if grading.poll() is None:
            grading.kill()
    assert grading.returncode != 0 and "interrupted" in err
    before = _graded_at(out)
    assert 1 <= len(before) < 3, err[-2000:]
    done = subprocess.run(_cli(class_dir, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"kept {len(before)} graded before" in done.stderr
    after = _graded_at(out)
    assert list(after) == ["correct-c", "correct-python", "never-retransmits"]
    assert {n: after[n] for n in before} == before                      # not graded again
    assert _verdicts(out) == _verdicts(reference)
    table = (out / "class.csv").read_text()
    assert all(name in table and name in (out / "index.html").read_text() for name in after)


@pytest.mark.root
@pytest.mark.slow
def test_with_jobs_a_changed_file_grades_again_its_submission_and_the_patches_over_it(project_root, tmp_path):
    class_dir = _example_slice(project_root, tmp_path / "class")
    out = tmp_path / "reports"
    done = subprocess.run(_cli(class_dir, out, "--jobs", "2"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    first = _graded_at(out)
    with open(class_dir / "correct-python" / "ppcb_impl.py", "a") as f:
        f.write("# reviewed\n")
    expected = project_root / "data" / "example-class" / "expected.toml"
    done = subprocess.run(_cli(class_dir, out, "--jobs", "2", "--expect", str(expected)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]       # kept and new alike fail exactly as expected
    assert "kept 1 graded before" in done.stderr
    assert "source changed (correct-python, never-retransmits)" in done.stderr
    second = _graded_at(out)
    assert second["correct-c"] == first["correct-c"]
    assert all(second[n] != first[n] for n in ("correct-python", "never-retransmits"))
    done = subprocess.run(_cli(class_dir, out, "--fresh"), capture_output=True, text=True, timeout=300)
    assert "--fresh: grading all 3 again" in done.stderr
    assert all(_graded_at(out)[n] != second[n] for n in second)


@pytest.mark.root
@pytest.mark.slow
def test_on_a_cluster_a_grading_resumes_the_same_way(project_root, tmp_path):
    distributed = pytest.importorskip("distributed")
    from wirelab.grade.spread import grade_across
    class_dir = _example_slice(project_root, tmp_path / "class")
    subs = [(n, p) for n, p in find_submissions(class_dir=class_dir) if n != "correct-c"]
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        graded = grade_across(subs, cat, out, cluster=cluster.scheduler_address, progress=False)
        first = _graded_at(out)
        assert [g.name for g in graded] == list(first) == ["correct-python", "never-retransmits"]
        again = grade_across(subs, cat, out, cluster=cluster.scheduler_address, progress=False)
        assert _graded_at(out) == first and [g.to_dict() for g in again] == [g.to_dict() for g in graded]
        (class_dir / "never-retransmits.diff").write_text(
            (class_dir / "never-retransmits.diff").read_text() + "\n")
        grade_across(subs, cat, out, cluster=cluster.scheduler_address, progress=False)
        third = _graded_at(out)
        assert third["correct-python"] == first["correct-python"]
        assert third["never-retransmits"] != first["never-retransmits"]


def test_a_grading_again_leaves_only_its_own_captures(class_dir, tmp_path):
    cat, out = load_catalogue().select(["build-*"]), tmp_path / "reports"
    plan = resume([("alice", class_dir / "alice")], cat, Policy(), out)
    captures = out / "alice" / "captures"
    captures.mkdir(parents=True)
    for name in ("old.pcapng", "new.pcapng"):
        (captures / name).write_bytes(b"pcapng")
    failed = Outcome("server-udpr-1B", "fail", "no ACC", 0.0, 1.0, capture="captures/new.pcapng")
    plan.record(Graded("alice", [failed], source="alice"))
    assert sorted(p.name for p in captures.iterdir()) == ["new.pcapng"]
    assert (out / "results.json").stat().st_mode & 0o777 == 0o644
