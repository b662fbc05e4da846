"""What every lab module is made of: its sweeps as data, and the values they were made with.

    lab = doc004.link_sweeps(quick=True, seconds=None)   # None: the lab's value (quick mode's here)
    lab.values["seconds"]                                 # 3: what the sweeps were made with
    for name, sweep in lab.items():
        print(name, sweep.describe())                     # "4 runs on the namespaces backend, engine iperf3"
        frame = sweep.run(f"{OUT}/{name}")                # the one runner: resumes, saves, one progress bar

A lab may group sweeps (doc004's ``lab["tasks"]``: task/side → Sweep).

A ``Sweep`` is an ``Experiment`` with what the runner needs to run it besides (the
engine's options, the lab's own engine where it brings one, whether failed runs are
tried again, socket-buffer caps the kernel must allow while it runs): data, like a flent test.
Deadlines are never written here: every run's follows the plan's prediction.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import UsageError
from ..experiment import Experiment, run
from ..link.buffer_caps import raised_caps

__all__ = ["Sweep", "Lab", "Exercise", "Link", "values"]


@dataclass(frozen=True)
class Sweep:
    """One sweep of a lab: its ``Experiment``, the engine's options, the lab's own ``engine`` (a class
    made with those options; None: the experiment's engine by name), whether runs that failed
    before are run again when the sweep resumes (``retry_failed``), and ``buffer_caps``: bytes
    the kernel's socket-buffer caps (rmem_max, wmem_max) are raised to while it runs, as root
    (``wirelab.link.buffer_caps``; None: left as they are)."""
    experiment: Experiment
    engine_options: dict = field(default_factory=dict)
    retry_failed: bool = False
    engine: type | None = None
    buffer_caps: int | None = None

    @property
    def name(self) -> str:
        return self.experiment.name

    def run(self, out: str | Path, **options):
        """Run (or resume) it into ``out``: ``wirelab.experiment.run``'s table."""
        with self.kernel() as caps:
            if caps and caps["why_not"]:
                print(f"{self.name}: {caps['why_not']}")
            if self.engine is not None:
                return run(self.experiment, out=out, engine=self.engine(**self.engine_options),
                           retry_failed=self.retry_failed, **options)
            return run(self.experiment, out=out, engine_options=self.engine_options or None,
                       retry_failed=self.retry_failed, **options)

    def kernel(self):
        """What the kernel must allow while the sweep runs: its buffer caps raised (or nothing)."""
        return raised_caps(self.buffer_caps) if self.buffer_caps else nullcontext()

    def with_backend(self, backend: str) -> "Sweep":
        """The same sweep on ``backend`` (e.g. the one an earlier sweep ran on, to compare like with like)."""
        return replace(self, experiment=Experiment(**{**self.experiment.to_dict(), "backend": backend}))

    def describe(self) -> str:
        exp = self.experiment
        return f"{len(exp.runs())} runs on the {exp.chosen_backend()} backend, engine {exp.engine}"


@dataclass(frozen=True)
class Exercise:
    """A question whose answer ``expected()`` computes from ``wirelab.model`` when asked (never
    stored), within ``tolerance`` (relative), with a ``hint`` (``wirelab.exercises.check``)."""
    question: str
    expected: Callable[[], float]
    tolerance: float
    hint: str


@dataclass(frozen=True)
class Link:
    """The link a lab's exercises are asked on, in SI units: a student's own (``wirelab.exercises``
    draws it from the course and the student). Each lab's ``exercises(link)`` asks its questions that
    depend on a link on this one; ``exercises()`` asks them on the document's own numbers."""
    rate_bps: float
    delay_s: float          # one way: the round trip is twice it
    loss: float             # each way, per packet
    data: int               # bytes of udpr DATA
    max_wait_s: float

    def rate(self) -> str:
        return f"{self.rate_bps / 1e6:g} Mbit/s"

    def delay(self) -> str:
        return f"{self.delay_s * 1e3:g} ms"


class Lab(dict):
    """A lab's sweeps by name (in the order a notebook runs them), with ``values``: the
    parameters they were made with, after quick mode and the caller's choices."""

    def __init__(self, sweeps: dict[str, Sweep], values: dict):
        super().__init__(sweeps)
        self.values = dict(values)


def values(full: dict, quick: dict, is_quick: bool, given: dict) -> dict:
    """The lab's values (``full``), quick mode's (``quick``) in place of some when ``is_quick``,
    and every value the caller gave (not None) over both; a name the lab does not know is an error."""

    unknown = set(given) - set(full)
    if unknown:
        raise UsageError(f"this lab has no value {', '.join(sorted(unknown))}", f"choose among {', '.join(full)}")
    out = {**full, **(quick if is_quick else {})}
    out.update({k: v for k, v in given.items() if v is not None})
    return out
