"""Exercises seeded per student: an id gives its own link, the model gives the answers."""
import pytest

from wirelab import units
from wirelab.errors import UsageError
from wirelab.exercises import CHOICES, check, describe_link, my_link, seeded_exercises
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
        check("tcp_ts_gbe", 1.0, student=student)          # the shared exercises are not seeded ones
