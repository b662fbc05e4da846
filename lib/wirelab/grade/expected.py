"""What a class is expected to fail (data/example-class/expected.toml): the grader's own check.

    >>> expected = load_expected("data/example-class/expected.toml")   # doctest: +SKIP
    >>> check_expected(graded, expected)       # [] when every submission failed exactly its tests
"""
from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from ..errors import UsageError
from .outcome import Graded

__all__ = ["load_expected", "check_expected", "expected_failures"]


def load_expected(path: str | Path) -> dict[str, dict]:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no expectations file {path}", "e.g. data/example-class/expected.toml")
    return tomllib.loads(path.read_text())


def expected_failures(patterns: list[str], test_ids: list[str]) -> set[str]:
    """The ids among ``test_ids`` that ``patterns`` (ids or shell globs) name."""
    return {t for t in test_ids if any(fnmatch.fnmatchcase(t, p) for p in patterns)}


def check_expected(graded: list[Graded], expected: dict[str, dict]) -> list[str]:
    """One line per submission whose failures differ from the expectation (none: all as expected).
    Only the tests that ran are compared: a skipped test (outcome.py) is expected of nobody."""
    problems = []
    for g in graded:
        if g.name not in expected:
            continue
        ids = [t.id for t in g.ran()]
        want = expected_failures(expected[g.name].get("fails", []), ids)
        got = set(g.failed())
        if want != got:
            extra, missing = sorted(got - want), sorted(want - got)
            reasons = {t.id: f"{t.status}: {t.reason}" for t in g.tests}
            problems.append(f"{g.name}: " + "; ".join(
                [f"failed {t} unexpectedly ({reasons[t]})" for t in extra]
                + [f"passed {t}, expected to fail ({expected[g.name].get('bug', '')})" for t in missing]))
    return problems
