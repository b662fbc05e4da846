"""The seam between a sweep and the programs that move the bytes.

An *engine* runs one setting once across a link the runner opened, and
returns the measurement as a flat dict of Result columns. It knows programs,
never backends: the link (``wirelab.link.open``) says where to send, runs a
program on host ``a`` or ``b`` and describes itself.

The contract is written down twice, as types: :class:`Engine` (a
``typing.Protocol``) has the two members every engine must have::

    name: str
    run(setting, link, *, deadline, seed, workdir, capture=None, [events, event_tags]) -> dict

``deadline`` is a ``time.monotonic()`` value the engine must not overrun
(pass what is left as timeouts to every wait); ``workdir`` is where a run may
leave files; ``capture`` a path for a pcapng of the run. :class:`Capabilities`
holds every member, the optional ones resolved to what the runner does when an
engine lacks them (``capabilities(engine)``: the one place that looks; the runner,
the plan, the flows and the calibration ask the record, never the engine)::

    framing(setting) -> dict     how it frames the data, for the model: ``payload``,
                                 ``stream_header``, ``udp_header`` (absent: no framing)
    predict(setting) -> dict     its own ``pred_*`` columns, where ``wirelab.model``'s
                                 transfer prediction is not what it measures (the
                                 five-node network's path delay, the peers' bounds);
                                 ``pred_transfer_time_s`` sets the run's deadline
                                 (absent: the model's prediction, ``plan``)
    unsupported(setting) -> str | None   why it cannot run a setting (``skipped``; absent: it can)
    topology(setting)            what to open instead of ``setting.link`` (a ``Topology``)
    cannot_carry(setting, link) -> str | None   why this link cannot carry the setting
                                 (``skipped``; absent: ``link.unsupported(setting.proto)``)
    rows(setting, record, row) -> list[dict]   several rows of one run (one per stream,
                                 one per message), each with its status from
                                 ``status.decide``; ``record`` is None when the run failed
                                 (absent: one row, its status decided by the runner)
    keeps_links = True           False: each run on a link of its own (the runner otherwise
                                 keeps one link for consecutive runs: ``reuse``)
    measure = "goodput_bps"      the column whose absence fails a run
    emits_events = False         True: ``run`` takes ``events`` (the run's ``EventStream``);
                                 an engine the flows run (``engines``' names) also
                                 ``event_tags`` (a dict its records are tagged with)
    times_exchanges = False      True: its UDPR records time each DATA→ACC exchange, so the
                                 host's round trip can be probed with it (``calibration``)
    open() / close()             before and after a sweep (absent: nothing to do)
    info() -> dict               what it is, for meta.json (absent: ``{}``)

Every engine returns at least ``goodput_bps`` (at the receiver: the figure to
trust) and, where it knows them, the columns in :data:`MEASURED`: the glossary,
``wirelab.transfer.measures.GLOSSARY``, where every measured column is defined once.
Engines by name: ``engines``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable, Protocol, runtime_checkable

from ..transfer.measures import GLOSSARY

__all__ = ["Engine", "Capabilities", "capabilities", "MEASURED", "flatten", "link_columns"]

#: Measurement columns every engine fills when it can (NaN otherwise), with their one definition.
MEASURED = GLOSSARY


@runtime_checkable
class Engine(Protocol):
    """What every engine has (the module docstring; the optional members: :class:`Capabilities`)."""
    name: str

    def run(self, setting, link, *, deadline: float, seed: int, workdir,
            capture=None) -> dict:  # pragma: no cover
        ...


_ABSENT = object()


def _member(doc: str, default=None, *, required: bool = False):
    """A field of ``Capabilities``: its documentation, and whether an engine must have it."""
    return field(default=default, metadata={"doc": doc, "required": required})


def _no_framing(setting) -> dict:
    return {}


def _can_run(setting) -> None:
    return None


def _own_link(setting):
    return setting.link


def _link_decides(setting, link) -> str | None:
    return link.unsupported(setting.proto)


def _nothing() -> None:
    return None


def _no_info() -> dict:
    return {}


@dataclass(frozen=True)
class Capabilities:
    """Every member of the engine contract, resolved for one engine: its own where it has it,
    else what the runner does without it (each field's ``metadata["doc"]``; ``describe()``).
    ``predict`` and ``rows`` stay None when absent: the runner then does the work itself."""
    name: str = _member("the engine's name (``Experiment(engine=...)``, meta.json); "
                        "absent: its class's name", required=True)
    run: Callable | None = _member("run(setting, link, *, deadline, seed, workdir, capture=None, "
                                   "[events, event_tags]) -> dict: one run, its record", required=True)
    framing: Callable = _member("framing(setting) -> dict: payload, stream_header, udp_header for the "
                                "model; absent: no framing", _no_framing)
    predict: Callable | None = _member("predict(setting) -> dict: its own pred_* columns; absent (None): "
                                       "the model's prediction (plan)")
    unsupported: Callable = _member("unsupported(setting) -> str | None: why it cannot run a setting "
                                    "(skipped); absent: it can run every setting", _can_run)
    topology: Callable = _member("topology(setting): what to open instead of setting.link (a Topology); "
                                 "absent: setting.link", _own_link)
    cannot_carry: Callable = _member("cannot_carry(setting, link) -> str | None: why this link cannot "
                                     "carry the setting (skipped); absent: link.unsupported(proto)", _link_decides)
    rows: Callable | None = _member("rows(setting, record, row) -> list[dict]: several rows of one run, "
                                    "each with its status; absent (None): one row, status by the runner")
    keeps_links: bool = _member("False: a fresh link for each run; absent: True (reuse)", True)
    measure: str = _member("the column whose absence fails a run; absent: goodput_bps", "goodput_bps")
    emits_events: bool = _member("True: run takes events= (and event_tags=, where the flows run it); "
                                 "absent: False", False)
    times_exchanges: bool = _member("True: its UDPR records time each DATA→ACC exchange (calibration's "
                                    "probe); absent: False", False)
    open: Callable = _member("open(): before a sweep; absent: nothing", _nothing)
    close: Callable = _member("close(): after a sweep; absent: nothing", _nothing)
    info: Callable = _member("info() -> dict: what it is, for meta.json; absent: {}", _no_info)

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Member → its documentation, required ones said so."""
        return {f.name: ("required: " if f.metadata["required"] else "optional: ") + f.metadata["doc"]
                for f in fields(cls)}


def capabilities(engine) -> Capabilities:
    """``engine``'s members as a ``Capabilities`` record: the one place an engine is looked at
    for what it has (module docstring); its missing members take their defaults."""
    found = {f.name: getattr(engine, f.name, _ABSENT) for f in fields(Capabilities)}
    found = {name: value for name, value in found.items() if value is not _ABSENT}
    found.setdefault("name", type(engine).__name__)
    return Capabilities(**found)


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
