"""One rule for a run's status, for every run of every engine, and how a record becomes a row.

    status, error = decide(record, elapsed_s=12.1, deadline_s=40.0)

* ``failed``      the run raised (``error``: recorded with its reason, and the sweep goes
                  on), its record says ``ok: False``, or it measured nothing (no
                  ``goodput_bps``, or the engine's own ``measure``); and a run that ended ok
                  but overran its deadline by more than ``OVERRUN``: its figures then hold
                  time nobody planned for (a machine too loaded for this run)
* ``incomplete``  the protocol's own ending (``outcome: incomplete``: plain udp lost a
                  datagram, iperf3 -n stopped before the data arrived): a result, with the reason
* ``ok``          everything else

A run across hosts whose host left mid-run is ``failed`` with an error that begins with
``LOST``: resume makes it again (the runner does not count it as done).

``skipped`` is decided before a run starts (the engine or the link cannot run the
setting: ``unsupported``), never from a record. The runner asks ``decide`` for each
run's row, and an engine that makes several rows of one run (the flows, one per
stream) asks it for each of them. A run that raised is said in one format,
``failure(err)`` ("UsageError: ..."), the grader's own failures too.

The grader's verdicts (``grade.outcome``: pass, fail, timeout, error, skipped) are
not these: they judge a student's program against its specification, where these
say whether a measurement was made.
"""
from __future__ import annotations

from .engine import flatten

__all__ = ["decide", "fold", "failure", "RESERVED", "OVERRUN", "LOST"]

#: Columns the runner owns; an engine's field of the same name is kept as ``result_<name>``.
RESERVED = {"experiment", "run_id", "setting_id", "rep", "status", "error", "engine", "backend",
            "workload", "session", "started_at", "elapsed_s", "seed", "wire", "tc_commands", "deadline_s",
            "capture_file", "raw_file", "events_file"}
#: A run that took more than this share beyond its deadline failed, whatever it measured.
OVERRUN = 0.05
#: How the error of a run begins when a host of it left the cluster mid-run (``cluster.py``):
#: ``failed``, with that reason, and not the run's own failure, so a resume makes it again.
LOST = "host lost"


def decide(record: dict | None, *, error: str | None = None, elapsed_s: float | None = None,
           deadline_s: float | None = None, measure: str = "goodput_bps") -> tuple[str, str | None]:
    """(status, error) of one run (or one stream of it) from what its engine returned."""
    if error:
        return "failed", error
    record = record or {}
    if record.get("outcome") == "incomplete":
        return "incomplete", record.get("outcome_reason")
    if record.get("ok", True) is False or record.get(measure) is None:
        why = record.get("error") or record.get("receiver_error") or f"no {measure.removesuffix('_bps')} measured"
        return "failed", str(why)
    if elapsed_s is not None and deadline_s is not None and elapsed_s > deadline_s * (1 + OVERRUN):
        return "failed", f"overran its {deadline_s:g} s deadline"
    return "ok", None


def failure(err: BaseException) -> str:
    """How a run that raised is recorded (its row's ``error``): the kind of error and its words."""
    return f"{type(err).__name__}: {err}"


def fold(row: dict, record: dict) -> dict:
    """The record's fields into ``row`` (nested ones flattened); a field named like one of the
    runner's columns or one already in the row is kept as ``result_<name>``."""
    for key, value in flatten(record).items():
        row[f"result_{key}" if key in RESERVED or key in row else key] = value
    return row
