"""What grading produced: one ``Outcome`` per test, one ``Graded`` per submission.

Status is one of ``pass``, ``fail`` (the program broke the specification),
``timeout`` (it did not finish in time), ``error`` (it could not be run:
a failed build, a missing program, or a problem of the grader's, named) or
``skipped`` (this machine cannot run the test at all, e.g. a shaped link in a
container without network namespaces: the reason says what is missing). A
skipped test is neither passed nor failed: its points count on neither side
of the score, so a platform's limits never read as the student's zero.
Measurements (``goodput_bps``) and predictions (``pred_*``) stay apart.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import UsageError

__all__ = ["Outcome", "Graded", "STATUSES", "json_summary", "save_graded", "load_graded"]

STATUSES = ("pass", "fail", "timeout", "error", "skipped")


@dataclass
class Outcome:
    """One test of one submission."""
    id: str
    status: str
    reason: str
    points: float                      # earned: the test's points if it passed, else 0
    max_points: float
    role: str = ""
    proto: str = ""
    topic: str = ""
    public: bool = True
    link: str = "clean"
    duration_s: float = 0.0
    goodput_bps: float | None = None   # measured (where: goodput_at)
    goodput_at: str | None = None
    goodput_flag: str | None = None    # set when the measurement is above the link's physics (then not a result)
    completion_s: float | None = None  # the client's wait, CONN to RCVD (where: completion_at)
    completion_at: str | None = None
    data_bytes: int | None = None      # DATA size the programs used, when wirelab saw it
    pred_goodput_bps: float | None = None
    pred_binding: str | None = None
    pred_note: str | None = None
    link_limit_bps: float | None = None  # η·C (with tbf's bucket): no measurement can be above it
    reading: str | None = None         # where the assignment leaves a point open: the reading taken
    capture: str | None = None         # pcapng of a failed test, relative to the report folder
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Graded:
    """One submission: its score (percent of the points) and every test's outcome."""
    name: str
    tests: list[Outcome]
    language: str = "?"
    build_error: str | None = None
    build_log: str = ""
    duration_s: float = 0.0
    source: str = ""
    constants: dict = field(default_factory=dict)   # MAX_WAIT/MAX_RETRANSMITS used, and how (constants.py)
    warnings: list = field(default_factory=list)    # the compiler's warnings
    confinement: str = ""              # how its programs ran: sandbox, memory bound, disk (jail.describe)
    key: dict = field(default_factory=dict)   # what decided its grade (resume.py); {} when unknown
    graded_at: str = ""                # when its grading ended (UTC, ISO 8601)

    @property
    def points(self) -> float:
        return sum(t.points for t in self.tests)

    @property
    def max_points(self) -> float:
        """The points of the tests that ran (a skipped test's points are not counted)."""
        return sum(t.max_points for t in self.ran())

    def ran(self) -> list[Outcome]:
        return [t for t in self.tests if t.status != "skipped"]

    def skipped(self) -> list[Outcome]:
        return [t for t in self.tests if t.status == "skipped"]

    @property
    def score(self) -> float:
        return round(100.0 * self.points / self.max_points, 1) if self.max_points else 0.0

    def counts(self) -> dict[str, int]:
        return {s: sum(t.status == s for t in self.tests) for s in STATUSES}

    def failed(self) -> list[str]:
        """The tests that ran and did not pass."""
        return [t.id for t in self.ran() if t.status != "pass"]

    def to_dict(self) -> dict:
        return {"name": self.name, "score": self.score, "points": self.points, "max_points": self.max_points,
                "language": self.language, "build_error": self.build_error, "build_log": self.build_log,
                "duration_s": self.duration_s, "source": self.source, "constants": self.constants,
                "warnings": self.warnings, "confinement": self.confinement, "counts": self.counts(),
                "key": self.key, "graded_at": self.graded_at, "tests": [t.to_dict() for t in self.tests]}

    @classmethod
    def from_dict(cls, data: dict) -> "Graded":
        tests = [Outcome(**t) for t in data["tests"]]
        return cls(data["name"], tests, data.get("language", "?"), data.get("build_error"),
                   data.get("build_log", ""), data.get("duration_s", 0.0), data.get("source", ""),
                   data.get("constants", {}), data.get("warnings", []), data.get("confinement", ""),
                   data.get("key", {}), data.get("graded_at", ""))


def json_summary(graded: list[Graded]) -> dict:
    """What ``wirelab grade --json`` prints, exactly:
    ``{"submissions": [{"name", "score", "tests": [{"id", "status", "reason", "points"}]}]}``."""
    return {"submissions": [{"name": g.name, "score": g.score,
                             "tests": [{"id": t.id, "status": t.status, "reason": t.reason, "points": t.points}
                                       for t in g.tests]} for g in graded]}


def save_graded(graded: list[Graded], path: str | Path) -> Path:
    """Every outcome of a grading run, to reload later (``load_graded``)."""
    from ..experiment.store import atomic_write    # deferred: keeps start-up fast (the store imports pandas)
    path = Path(path)
    # whole or not at all: a grading saves after every submission, and a kill must not leave half a file
    atomic_write(path, json.dumps([g.to_dict() for g in graded], indent=1, default=str).encode())
    path.chmod(0o644)                              # a report, for reading (the temporary file was 0600)
    return path


def load_graded(path: str | Path) -> list[Graded]:
    """A grading run saved by ``save_graded`` (``results.json`` in every report folder); one saved before
    records kept their ``key`` loads too (its keys are empty)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no saved grading at {path}", "grade first, or give a report folder's results.json")
    return [Graded.from_dict(item) for item in json.loads(path.read_text())]
