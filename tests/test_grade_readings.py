"""Readings the assignment leaves open: every careful one passes, each recorded, and a catalogue that
pins one (strict = true) fails the others. ``other-readings`` (data/example-class) takes every
reading that is not the catalogue's own; ``correct-python`` takes the catalogue's."""
from dataclasses import replace
from types import SimpleNamespace

import pytest

from wirelab.grade import find_submissions, grade_class, load_catalogue
from wirelab.grade.context import Failed
from wirelab.grade.readings import READINGS, describe, take

#: A test for every point of READINGS.
READING_TESTS = ["server-udp-out-of-order", "server-tcp-out-of-order", "server-tcp-bad-length",
                 "server-tcp-wrong-type", "server-udpr-bad-length", "server-udpr-silent-client",
                 "client-udpr-silent-server", "client-udpr-server-stops", "client-udpr-conrjt",
                 "client-udpr-foreign-acc"]


def _ctx(strict):
    return SimpleNamespace(test=SimpleNamespace(strict=strict), measured={})


def test_take_records_every_form_and_strict_keeps_only_the_pinned_one():
    for point, reading in READINGS.items():
        for form in reading.forms:
            ctx = _ctx(strict=False)
            take(ctx, point, form)
            assert ctx.measured["readings"] == {point: form}
            strict = _ctx(strict=True)
            if form == reading.pinned:
                take(strict, point, form)
            else:
                with pytest.raises(Failed, match="strict"):
                    take(strict, point, form)
    assert "the number expected next" in describe({"rjt_number": "expected"})


def test_a_strict_field_is_read_from_the_catalogue(tmp_path):
    file = tmp_path / "pinned.toml"
    file.write_text('[[test]]\nid = "server-udp-ooo-pinned"\nrole = "server"\nproto = "udp"\n'
                    'scenario = "out_of_order"\npoints = 1\ndeadline_s = 8\npublic = false\nstrict = true\n'
                    'checks = "RJT for packet 2, nothing else"\n')
    test = load_catalogue(extra=[file])["server-udp-ooo-pinned"]
    assert test.strict and not load_catalogue()["server-udp-out-of-order"].strict


@pytest.mark.root
@pytest.mark.slow
def test_every_reading_passes_unless_the_catalogue_pins_one(project_root, tmp_path):
    base = load_catalogue().select(READING_TESTS)
    pinned = tuple(replace(t, id=f"{t.id}-strict", strict=True) for t in base.tests)
    cat = replace(base, tests=base.tests + pinned)
    subs = [s for s in find_submissions(class_dir=project_root / "data" / "example-class")
            if s[0] in ("other-readings", "correct-python")]
    graded = {g.name: {t.id: t for t in g.tests} for g in grade_class(subs, cat, tmp_path, jobs=2, progress=False)}
    others, pinned_taker = graded["other-readings"], graded["correct-python"]
    taken = set()
    for test in base.tests:
        mine = others[test.id]
        assert mine.status == "pass", (test.id, mine.reason)
        assert mine.reading, test.id                       # the report says which reading it took
        taken |= {part.split(":")[0] for part in mine.reading.split("; ")}
        strict = others[f"{test.id}-strict"]
        assert strict.status == "fail" and "strict" in strict.reason, (test.id, strict.reason)
        for outcome in (pinned_taker[test.id], pinned_taker[f"{test.id}-strict"]):
            assert outcome.status == "pass", (outcome.id, outcome.reason)
    assert taken == set(READINGS)                          # every point met, in its other form
