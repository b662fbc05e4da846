"""The seam between a sweep and the programs that move the bytes.

An *engine* runs one setting once across a link the runner opened, and
returns the measurement as a flat dict of Result columns. It knows programs,
never backends: the link (``wirelab.link.open``) says where to send, runs a
program on host ``a`` or ``b`` and describes itself::

    class Engine(Protocol):
        name: str
        def run(self, setting, link, *, deadline, seed, workdir, capture=None) -> dict: ...

``deadline`` is a ``time.monotonic()`` value the engine must not overrun
(pass what is left as timeouts to every wait); ``workdir`` is where a run may
leave files; ``capture`` a path for a pcapng of the run. An engine may also
have (the runner asks with ``hasattr``):

    framing(setting) -> dict     how it frames the data, for the model: ``payload``,
                                 ``stream_header``, ``udp_header``
    predict(setting) -> dict     its own ``pred_*`` columns, where ``wirelab.model``'s
                                 transfer prediction is not what it measures (the
                                 five-node network's path delay, the peers' bounds);
                                 ``pred_transfer_time_s`` sets the run's deadline
    unsupported(setting) -> str | None   why it cannot run a setting (``skipped``)
    topology(setting)            what to open instead of ``setting.link`` (a ``Topology``)
    cannot_carry(setting, link) -> str | None   why this link cannot carry the setting
                                 (``skipped``; default: ``link.unsupported(setting.proto)``)
    rows(setting, record, row) -> list[dict]   several rows of one run (one per stream,
                                 one per message), each with its status from
                                 ``status.decide``; ``record`` is None when the run failed
    keeps_links = False          each run on a link of its own (the runner otherwise keeps
                                 one link for consecutive runs: ``reuse``)
    measure = "goodput_bps"      the column whose absence fails a run
    open() / close()             before and after a sweep;  info() -> dict, for meta.json

Every engine returns at least ``goodput_bps`` (at the receiver: the figure to
trust) and, where it knows them, the columns in :data:`MEASURED`: the glossary,
``wirelab.transfer.measures.GLOSSARY``, where every measured column is defined once.
Engines by name: ``engines``.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..transfer.measures import GLOSSARY

__all__ = ["Engine", "MEASURED", "flatten", "link_columns"]

#: Measurement columns every engine fills when it can (NaN otherwise), with their one definition.
MEASURED = GLOSSARY


@runtime_checkable
class Engine(Protocol):
    name: str

    def run(self, setting, link, *, deadline: float, seed: int, workdir,
            capture=None) -> dict:  # pragma: no cover
        ...


def flatten(record: dict, prefix: str = "") -> dict:
    """Nested dicts → ``a_b`` columns; lists of numbers → count, mean, min and max.

    Keeps a results table flat (one value per cell) so parquet and csv agree;
    the full record is kept beside it as JSON by the store.
    """
    out: dict = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}_"))
        elif isinstance(value, (list, tuple)):
            numbers = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if len(numbers) == len(value):
                out[f"{name}_n"] = len(numbers)
                if numbers:
                    out[f"{name}_mean"] = sum(numbers) / len(numbers)
                    out[f"{name}_min"] = min(numbers)
                    out[f"{name}_max"] = max(numbers)
        elif value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = str(value)
    return out


def link_columns(opened, backend: str, raw: dict) -> dict:
    """The columns saying what carried a run: the link's own description, read after it
    closed (with its final counters) and kept whole in ``raw["link"]``; only the backend
    asked for when no link was opened."""
    if opened is None:
        return {"backend": backend}
    described = opened.describe()
    raw["link"] = described
    described = dict(described)
    columns = {"backend": described.pop("backend"),
               "tc_commands": "\n".join(described.pop("tc_commands", []))}
    columns.update({f"link_{k}": v for k, v in flatten(described).items()})
    return columns
