"""The test catalogue: tests are data (catalogue.toml), read and checked here.

    >>> cat = load_catalogue()                       # the bundled catalogue
    >>> cat.assignment.max_wait_s, len(cat.public().tests) < len(cat.tests)
    (0.5, True)
    >>> hidden = load_catalogue(extra=["hidden.toml"])   # doctest: +SKIP

An instructor's file (``--tests FILE``) has the same layout; its tests are
added to the bundled ones (its ``[assignment]``/``[limits]``, if any, replace
the bundled values key by key). Every mistake in a file is a ``UsageError``
naming the test and the field.
"""
from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from .. import transports, units
from ..errors import UsageError
from ..wire.ppcb import give_up_s
from .checks_build import BUILD_CHECKS
from .scenarios_client import CLIENT_SCENARIOS
from .scenarios_server import SERVER_SCENARIOS
from .scenarios_tcp import TCP_SCENARIOS

__all__ = ["Assignment", "Limits", "GradeTest", "Catalogue", "load_catalogue", "ROLES", "PROTOS"]

ROLES = ("client", "server", "pair", "build")
#: the assignment's transports (tcp, udp, udpr): a strict PPCB peer knows only their protocol ids
PROTOS = tuple(t.name for t in transports.transports() if t.ppcb)
_TEST_KEYS = {"id", "role", "proto", "scenario", "size", "link", "seed", "points", "deadline_s", "public",
              "topic", "checks", "strict", "draw"}
_LINK_KEYS = {"rate", "delay", "jitter", "loss", "duplicate", "reorder", "mtu", "queue", "loss_unit"}


@dataclass(frozen=True)
class Assignment:
    """The protocol constants the assignment fixed, and where servers listen."""
    max_wait_s: float = 0.5
    max_retransmits: int = 5
    port: int = 5000
    chunk: int = 1000
    course: str = ""     # the course's name as its labs are run with: each student's link is drawn from it (own_link.py)

    @property
    def give_up_s(self) -> float:
        """How long a udpr peer may keep trying: one send plus MAX_RETRANSMITS resends, MAX_WAIT apart."""
        return give_up_s(self.max_wait_s, self.max_retransmits)


@dataclass(frozen=True)
class Limits:
    """What each program of a submission may use (see sandbox.py)."""
    cpu_s: int = 60
    memory_bytes: int = 1_000_000_000       # resident, per program (a cgroup; RLIMIT_AS where none)
    file_size_bytes: int = 64_000_000
    disk_bytes: int = 256_000_000           # everything a submission writes, together (disk.py)
    processes: int = 64
    open_files: int = 256
    build_s: float = 120.0
    listen_s: float = 3.0


@dataclass(frozen=True)
class GradeTest:
    """One test of the catalogue (see catalogue.toml for the meaning of each field)."""
    id: str
    role: str
    proto: str
    points: float
    deadline_s: float
    public: bool
    checks: str
    topic: str = "transfer"
    scenario: str = "transfer"
    size: int = 0
    link: dict = field(default_factory=dict)
    seed: int = 0
    strict: bool = False     # True: only the reading the catalogue's `checks` describes passes (readings.py)
    source: str = "catalogue.toml"
    draw: dict = field(default_factory=dict)   # link option → the values a student's link is drawn from
    drawn_for: str = ""      # whose link `link` is ("s1234567, course net-2026"; own_link.py); "" the catalogue's


    @property
    def shaped(self) -> bool:
        return bool(self.link)

    def describe_link(self) -> str:
        shown = ", ".join(f"{k} {v}" for k, v in self.link.items()) or "clean"
        return f"{shown} (drawn for {self.drawn_for})" if self.drawn_for else shown


@dataclass(frozen=True)
class Catalogue:
    tests: tuple[GradeTest, ...]
    assignment: Assignment = Assignment()
    limits: Limits = Limits()

    def public(self) -> "Catalogue":
        return replace(self, tests=tuple(t for t in self.tests if t.public))

    def select(self, patterns: list[str] | None) -> "Catalogue":
        """Only the tests whose id matches one of ``patterns`` (shell globs: ``server-udpr-*``)."""
        if not patterns:
            return self
        chosen = tuple(t for t in self.tests if any(fnmatch.fnmatchcase(t.id, p) for p in patterns))
        if not chosen:
            raise UsageError(f"no test matches {', '.join(patterns)}", "see `wirelab grade --list`")
        return replace(self, tests=chosen)

    def __getitem__(self, test_id: str) -> GradeTest:
        for test in self.tests:
            if test.id == test_id:
                return test
        raise KeyError(test_id)

    @property
    def total_points(self) -> float:
        return sum(t.points for t in self.tests)


def _read(path: Path | None) -> tuple[dict, str]:
    if path is None:
        text = resources.files(__package__).joinpath("catalogue.toml").read_text(encoding="utf-8")
        return tomllib.loads(text), "catalogue.toml"
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no test file {path}", "give the path of a .toml file laid out like catalogue.toml")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), path.name
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path} is not valid TOML ({err})", "fix the line it names") from None


def _test(raw: dict, source: str, scenarios: set[str]) -> GradeTest:
    name = raw.get("id", "?")
    where = f"test {name!r} in {source}"
    unknown = set(raw) - _TEST_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}",
                         f"the fields are {', '.join(sorted(_TEST_KEYS))}")
    build = raw.get("role") == "build"                # read from the build: no protocol, no testbed
    for key in ("id", "role", "proto", "points", "deadline_s", "public", "checks"):
        if key not in raw and not (build and key in ("proto", "deadline_s")):
            raise UsageError(f"{where}: missing {key!r}", "see the header of catalogue.toml")
    if raw["role"] not in ROLES or raw.get("proto", "") not in PROTOS + (("",) if build else ()):
        raise UsageError(f"{where}: role {raw['role']!r} / proto {raw.get('proto')!r}",
                         f"role is one of {', '.join(ROLES)}; proto one of {', '.join(PROTOS)}")
    scenario = raw.get("scenario", "transfer")
    if (scenario in scenarios["build"]) != build or scenario not in scenarios["build"] | scenarios["run"]:
        raise UsageError(f"{where}: unknown scenario {scenario!r} for role {raw['role']!r}", "choose one of "
                         f"{', '.join(sorted(scenarios['build' if build else 'run']))}")
    link = dict(raw.get("link", {}))
    bad = {k for k in link if k.removesuffix("_reverse") not in _LINK_KEYS}
    if bad:
        raise UsageError(f"{where}: unknown link option(s) {', '.join(sorted(bad))}",
                         f"use {', '.join(sorted(_LINK_KEYS))} (and *_reverse)")
    draw = dict(raw.get("draw", {}))
    for key, values in draw.items():
        if key.removesuffix("_reverse") not in _LINK_KEYS - {"loss_unit", "mtu"} or key not in link:
            raise UsageError(f"{where}: draw names {key!r}, which is not one of the test's link options",
                             "draw rate, delay, jitter, loss, duplicate, reorder or queue of the test's own link, "
                             'e.g. link = { rate = "10mbit" } and draw = { rate = ["5mbit", "10mbit", "20mbit"] }')
        if not isinstance(values, list) or not values:
            raise UsageError(f"{where}: draw.{key} must be a list of values", f'e.g. {key} = ["{link[key]}", ...]')
    size = int(units.parse_size(raw["size"])) if "size" in raw else 0
    if scenario == "transfer" and not 1 <= size <= 100_000_000:
        raise UsageError(f"{where}: a transfer needs a size from 1B to 100MB", 'e.g. size = "100KB"')
    deadline = raw.get("deadline_s", 1)
    if not (raw["points"] >= 0 and deadline > 0):
        raise UsageError(f"{where}: points must be >= 0 and deadline_s > 0", "e.g. points = 1, deadline_s = 10")
    return GradeTest(id=raw["id"], role=raw["role"], proto=raw.get("proto", ""), points=float(raw["points"]),
                     deadline_s=float(deadline), public=bool(raw["public"]), checks=raw["checks"],
                     topic=raw.get("topic", "transfer"), scenario=scenario, size=size, link=link,
                     seed=int(raw.get("seed", 0)), strict=bool(raw.get("strict", False)), source=source, draw=draw)


def _limits(raw: dict, base: Limits) -> Limits:
    sizes = {"memory": "memory_bytes", "file_size": "file_size_bytes", "disk": "disk_bytes"}
    values = {}
    for key, value in raw.items():
        name = sizes.get(key, key)
        if name not in Limits.__dataclass_fields__:
            raise UsageError(f"unknown limit {key!r}", "use cpu_s, memory, file_size, disk, processes, open_files, "
                             "build_s, listen_s")
        values[name] = int(units.parse_size(value)) if key in sizes else value
    return replace(base, **values)


def load_catalogue(path: str | Path | None = None, *, extra: list | tuple = ()) -> Catalogue:
    """The bundled catalogue (or ``path``), plus the tests of every file in ``extra``."""
    names = {"run": {*SERVER_SCENARIOS, *TCP_SCENARIOS, *CLIENT_SCENARIOS, "transfer"}, "build": set(BUILD_CHECKS)}
    assignment, limits, tests = Assignment(), Limits(), []
    for file in [path, *extra]:
        data, source = _read(file)
        try:
            assignment = replace(assignment, **data.get("assignment", {}))
        except TypeError as err:
            raise UsageError(f"{source}: bad [assignment] ({err})",
                             "its keys are max_wait_s, max_retransmits, port, chunk, course") from None
        limits = _limits(data.get("limits", {}), limits)
        tests += [_test(raw, source, names) for raw in data.get("test", [])]
    seen = set()
    for test in tests:
        if test.id in seen:
            raise UsageError(f"test id {test.id!r} appears twice ({test.source})", "give every test its own id")
        seen.add(test.id)
    if not tests:
        raise UsageError("the catalogue has no tests", "add [[test]] tables")
    return Catalogue(tuple(tests), assignment, limits)
