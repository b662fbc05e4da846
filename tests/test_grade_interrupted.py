"""Ctrl-C in the middle of a class keeps what was graded, as a sweep keeps its finished runs."""
import pytest

from wirelab.grade import Graded, classroom, load_catalogue, load_graded
from wirelab.grade.jail import Policy


def test_ctrl_c_saves_the_submissions_graded_so_far(tmp_path, monkeypatch):
    def grade(name, source, catalogue, report_dir, **kwargs):
        if name == "third":
            raise KeyboardInterrupt
        return Graded(name, [], source=str(source))
    monkeypatch.setattr(classroom, "grade_submission", grade)
    monkeypatch.setattr(classroom, "require_sandbox", lambda policy: None)      # nothing is run here
    subs = [(name, tmp_path / name) for name in ("first", "second", "third", "fourth")]
    with pytest.raises(KeyboardInterrupt):
        classroom.grade_class(subs, load_catalogue(), tmp_path / "reports", progress=False, policy=Policy())
    kept = load_graded(tmp_path / "reports" / "results.json")
    assert [g.name for g in kept] == ["first", "second"]
