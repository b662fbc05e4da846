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
have ``framing(setting) -> dict`` (how it frames the data, for the model:
``payload``, ``stream_header``, ``udp_header``), ``unsupported(setting) ->
str | None`` (the reason it cannot run a setting: recorded as ``skipped``),
and ``info() -> dict`` (for meta.json).

Every engine returns at least ``goodput_bps`` (at the receiver: the figure to
trust) and, where it knows them, the columns in :data:`MEASURED`: the glossary,
``wirelab.transfer.measures.GLOSSARY``, where every measured column is defined once.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..errors import UsageError
from ..transfer.measures import GLOSSARY

__all__ = ["Engine", "MEASURED", "RESERVED", "get_engine", "ENGINES", "flatten"]

#: Columns the runner owns; an engine's field of the same name is kept as ``result_<name>``.
RESERVED = {"experiment", "run_id", "setting_id", "rep", "status", "error", "engine", "backend",
            "workload", "session", "started_at", "elapsed_s", "seed", "wire", "tc_commands", "deadline_s",
            "capture_file", "raw_file"}

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


def _wirelab(**options):
    from .wirelab_engine import WirelabEngine
    return WirelabEngine(**options)


def _iperf3(**options):
    from .iperf3 import Iperf3Engine
    return Iperf3Engine(**options)


#: Engine name → factory. Tests may add their own.
ENGINES = {"wirelab": _wirelab, "iperf3": _iperf3}


def get_engine(name_or_engine, **options):
    """An engine by name (``"wirelab"``, ``"iperf3"``) or an engine object itself."""
    if not isinstance(name_or_engine, str):
        return name_or_engine
    if name_or_engine not in ENGINES:
        raise UsageError(f"unknown engine {name_or_engine!r}", f"use one of {', '.join(ENGINES)}")
    return ENGINES[name_or_engine](**options)


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
