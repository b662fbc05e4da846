"""A declarative experiment: what to vary, how often, with which engine.

An :class:`Experiment` only *describes* a sweep (like Mininet's ``Topo``); the
runner acts on it. Every axis is a list of values typed the way people type
them (``"10mbit"``, ``"20ms"``, ``"1%"``), parsed once here into SI floats::

    exp = Experiment("my-sweep", proto=["tcp", "udp", "udpr"], size="1MB",
                     rate=["10mbit", "20mbit"], delay=["0", "20ms"], loss=["0", "1%"], reps=3)
    len(exp.settings())   # 3 × 2 × 2 × 2 = 24 settings
    len(exp.runs())       # × 3 repetitions = 72 runs

A :class:`Setting` is one point of the grid: a dict of column → value using the
column names of the results table (``rate_bps``, ``delay_s``, ``loss``, …) and
a stable ``setting_id`` so a resumed sweep recognises what it already did.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import dataclass, field

from .. import transports, units
from ..errors import UsageError
from ..link import LinkSpec, backend_for
from ..model.headers import PPPOE_MTU
from .axes import (AXES, LATER_AXES, OPTION_AXES, OPTIONAL_AXES, PROTOCOLS, WORKLOADS, column_for, host_pairs,
                   link_spec, values_of as _values)

__all__ = ["Experiment", "Setting", "AXES", "WORKLOADS", "PROTOCOLS", "column_for", "link_spec", "host_pairs"]
#: the results columns of the transports' own options
_OPTION_COLUMNS = {column for column, _ in OPTION_AXES.values()}

@dataclass(frozen=True)
class Setting:
    """One point of the grid. ``params`` maps results columns to SI values; ``link`` is
    the ``LinkSpec`` they describe, parsed once here and carried to the link layer."""
    params: dict = field(hash=False, compare=True)
    engine: str = "wirelab"
    backend: str = "auto"
    workload: str = "file"
    link: LinkSpec | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.link is None:
            object.__setattr__(self, "link", link_spec(self.params))

    def __getitem__(self, column: str):
        return self.params.get(column)

    def get(self, column: str, default=None):
        value = self.params.get(column)
        return default if value is None else value

    @property
    def proto(self) -> str:
        return self.params["proto"]

    @property
    def setting_id(self) -> str:
        """A short stable hash of everything that defines the setting. Axes added after the
        first results were saved count only when set, so older folders still resume."""
        params = {k: v for k, v in self.params.items() if not (k in LATER_AXES and v is None)}
        key = json.dumps({"params": params, "engine": self.engine, "backend": self.backend,
                          "workload": self.workload}, sort_keys=True, default=str)
        return hashlib.sha1(key.encode()).hexdigest()[:12]

    def columns(self) -> dict:
        """The parameter columns of a results row."""
        return {"setting_id": self.setting_id, "engine": self.engine, "backend": self.backend,
                "workload": self.workload, **self.params}

    def label(self) -> str:
        """Short human text, e.g. ``tcp 10 Mbit/s 20 ms 1 %``."""
        parts = [f"[{self['flows']}]" if self["flows"] else self.proto]
        if self["scenario"]:
            parts.insert(0, self["scenario"])
        if self["rate_bps"] is not None:
            parts.append(units.format_rate(self["rate_bps"], 3))
        if self["delay_s"]:
            parts.append(units.format_time(self["delay_s"], 3))
        if self["loss"]:
            parts.append(units.format_fraction(self["loss"]))
        return " ".join(parts)


@dataclass(frozen=True)
class Experiment:
    """A sweep: the grid of every axis × ``reps`` repetitions.

    Axes take one value or a list (or a comma-separated string): ``proto``,
    workload ``size`` / ``time`` / ``offered`` / ``packet`` / ``echo``, link
    ``rate`` / ``delay`` / ``jitter`` / ``loss`` / ``mtu`` / ``queue``, socket
    options ``sndbuf`` / ``rcvbuf`` / ``cc``, udpr ``max_wait`` /
    ``max_retransmits``, ``qdisc`` (the queue's discipline under tbf: "pfifo" or "fq_codel",
    where the kernel has them; unset: tbf's own FIFO), ``loss_reverse`` (b → a loss, default: as ``loss``),
    ``delay_reverse`` / ``jitter_reverse`` (b → a, default: as ``delay`` / ``jitter``: netem on one host
    delays one direction, ``delay_reverse=0``), ``rate_reverse``
    (b → a rate, the ACKs' way: an FTTC line's other direction; default: as ``rate``), ``window``
    (TCP window: iperf3's ``-w``, and the model's W/RTT limit), ``omit`` (seconds of a
    timed run left out of its goodput: slow start, iperf3's ``-O``), ``wire`` ("real": the
    link charges a cable's 38 B a frame, as document 002 counts; default "emulated", 14 B)
    and ``pppoe`` (8 B a frame more, MTU 1492 unless given), ``read`` (bytes the TCP
    receiver reads per recv: iperf 2's ``-l`` at the server; wirelab engine), ``flows`` (several
    flows at once on one link, each its own rows: ``flows.py``; needs the time workload).
    ``timeout`` is each run's deadline in seconds; unset, it follows the model's
    prediction for the run (``experiment.deadline``).
    ``size`` applies to the ``file`` workload only (it is dropped otherwise).
    ``cases``: settings that are not a grid, e.g. ``[{"delay": "1ms", "jitter": "5ms"},
    {"delay": "20ms", "jitter": "5ms"}]``: the grid of the other axes is made once per case,
    with the case's values in place of those axes.
    ``hosts`` and ``cluster``: run across real machines (``cluster.py``): ``hosts={"a": "pc07",
    "b": "pc08"}`` names the Dask workers of the two ends (a list of such pairs runs them side
    by side; ``"a=pc07,b=pc08"`` is the same as text), ``cluster`` the scheduler's address; the
    backend is then ``hosts``.
    ``precision`` (e.g. 0.10): after ``reps`` runs, settings whose 95 % interval is wider
    than that share of the mean get more runs, up to ``max_reps`` each, while the sweep
    has taken less than ``budget_s`` seconds of runs (``experiment.adaptive``).
    """
    name: str
    proto: object = "tcp"
    workload: str = "file"
    size: object = "1MB"
    time: object = None
    offered: object = None
    packet: object = None
    echo: object = None
    rate: object = "10mbit"
    rate_reverse: object = None
    delay: object = 0
    jitter: object = None
    delay_reverse: object = None
    jitter_reverse: object = None
    loss: object = 0
    loss_reverse: object = None
    mtu: object = None
    queue: object = None
    qdisc: object = None
    wire: object = None
    pppoe: object = None
    window: object = None
    sndbuf: object = None
    rcvbuf: object = None
    read: object = None
    cc: object = None
    max_wait: object = None
    max_retransmits: object = None
    omit: object = None
    flows: object = None
    scenario: object = None
    cases: object = None
    reps: int = 3
    seed: int = 0
    engine: str = "wirelab"
    backend: str = "auto"
    hosts: object = None
    cluster: str | None = None
    timeout: float | None = None
    capture: bool = False
    shuffle: bool = False
    precision: float | None = None
    max_reps: int | None = None
    budget_s: float | None = None
    # each transport's own options (axes.OPTION_AXES, e.g. a window) are fields too, unset by default
    __annotations__.update(dict.fromkeys(OPTION_AXES, "object"))
    vars().update(dict.fromkeys(OPTION_AXES))

    def __post_init__(self):
        if self.workload != "file":          # a file size only means something for file transfers
            object.__setattr__(self, "size", None)
        object.__setattr__(self, "hosts", host_pairs(self.hosts))
        if self.hosts is not None:
            if self.backend not in ("auto", "hosts"):
                raise UsageError(f"hosts and the {self.backend} backend do not go together",
                                 "across hosts the backend is 'hosts' (leave backend unset)")
            if not self.cluster:
                raise UsageError("hosts need a cluster: the address of the Dask scheduler they joined",
                                 "e.g. cluster='tcp://10.0.0.1:8786'")
            object.__setattr__(self, "backend", "hosts")
        elif self.backend == "hosts":
            raise UsageError("the hosts backend needs hosts", "e.g. hosts={'a': 'pc07', 'b': 'pc08'}, cluster=...")
        for case in self._cases():
            unknown = set(case) - set(AXES)
            if unknown:
                raise UsageError(f"a case names {', '.join(sorted(unknown))}, which are not axes",
                                 f"use axes among {', '.join(AXES)}")
        if not self.name or any(c in self.name for c in "/\\\0") or self.name.startswith("."):
            raise UsageError(f"experiment name {self.name!r} cannot be a folder name",
                             "use letters, digits and dashes, e.g. 'rate-sweep'")
        if self.workload not in WORKLOADS:
            raise UsageError(f"unknown workload {self.workload!r}", f"use one of {', '.join(WORKLOADS)}")
        if not isinstance(self.reps, int) or self.reps < 1:
            raise UsageError(f"reps must be a whole number ≥ 1, not {self.reps!r}", "e.g. reps=3")
        if self.precision is not None and not 0 < self.precision < 1:
            raise UsageError(f"precision is a share of the mean, not {self.precision!r}", "e.g. precision=0.10")
        if self.max_reps is not None and (not isinstance(self.max_reps, int) or self.max_reps < self.reps):
            raise UsageError(f"max_reps must be a whole number ≥ reps ({self.reps}), not {self.max_reps!r}",
                             "e.g. reps=3, max_reps=12")
        if self.budget_s is not None and not self.budget_s > 0:
            raise UsageError(f"budget_s must be positive, not {self.budget_s!r}", "e.g. budget_s=120")
        if self.timeout is not None and not self.timeout > 0:
            raise UsageError(f"timeout must be positive, not {self.timeout!r}",
                             "e.g. timeout=60, or leave it unset: each run's deadline then follows the prediction")
        for proto in self.axis_values("proto"):
            transports.get(proto)           # a UsageError naming the known ones
        if self.axis_values("flows") != (None,) and (self.workload != "time" or self.time is None):
            raise UsageError("flows run for a time, side by side",
                             "give workload='time' and time=..., e.g. Experiment(..., flows=[...], "
                             "workload='time', time='5s')")
        for case in self._cases():
            self._case(case)            # its values parse, with the rest of the experiment
        needs = {"time": "time", "load": "offered", "echo": "echo", "scenario": "scenario"}.get(self.workload)
        if needs and self.axis_values(needs) == (None,):
            raise UsageError(f"the {self.workload} workload needs {needs}=...",
                             f"e.g. Experiment(..., workload={self.workload!r}, {needs}=...)")

    def _cases(self) -> list[dict]:
        return [dict(case) for case in (self.cases or [])]

    def _case(self, case: dict) -> "Experiment":
        return Experiment(**{**self.to_dict(), **case, "cases": None})

    def axis_values(self, axis: str) -> tuple:
        if self.cases:
            return tuple(dict.fromkeys(v for case in self._cases() for v in self._case(case).axis_values(axis)))
        return _values(axis, getattr(self, axis))

    def swept(self) -> list[str]:
        """The axes with more than one value (what a plot puts on its x axis)."""
        return [a for a in AXES if len(self.axis_values(a)) > 1]

    def settings(self) -> list[Setting]:
        """Every combination of the axes, protocol first, in a stable order (case by case)."""
        if self.cases:
            made = {s.setting_id: s for case in self._cases() for s in self._case(case).settings()}
            return list(made.values())
        names = list(AXES)
        grids = [self.axis_values(a) for a in names]
        out = []
        for combo in itertools.product(*grids):
            params = {AXES[a][0]: v for a, v in zip(names, combo)
                      if not (v is None and AXES[a][0] in OPTIONAL_AXES)}
            own = {o.column for o in transports.get(params["proto"]).options}
            params = {c: v for c, v in params.items() if c in own or c not in _OPTION_COLUMNS}
            if params["pppoe"] and params["mtu"] is None:      # what the link will have: every
                params["mtu"] = PPPOE_MTU                       # engine and prediction reads mtu
            out.append(Setting(params, self.engine, self.backend, self.workload))
        if _OPTION_COLUMNS:     # another transport's option left out: settings that differed only by it are one
            out = list({s.setting_id: s for s in out}.values())
        return out

    def runs(self, settings: list[Setting] | None = None) -> list[tuple[Setting, int]]:
        """(setting, repetition) pairs: every setting once before any twice,
        so an interrupted sweep has covered the whole grid as early as possible.
        With ``shuffle`` the order within each repetition is random (seeded). ``settings``: this
        experiment's, where the caller has them already (a sweep builds them once)."""
        settings = settings if settings is not None else self.settings()
        out = []
        for rep in range(self.reps):
            order = list(settings)
            if self.shuffle:
                random.Random(self.seed * 1000003 + rep).shuffle(order)
            out.extend((s, rep) for s in order)
        return out

    def chosen_backend(self) -> str:
        """The backend the link layer picks for this sweep (one for every setting; what the
        plan of a sweep of the wirelab or iperf3 engine chooses)."""
        if self.hosts:
            return "hosts"
        return backend_for([s.link for s in self.settings()], self.backend)

    def run_seed(self, setting: Setting, rep: int) -> int:
        """A seed for one run (loss patterns): fixed by the experiment seed, setting and rep."""
        digest = hashlib.sha1(f"{self.seed}:{setting.setting_id}:{rep}".encode()).hexdigest()
        return int(digest[:8], 16)

    def to_dict(self) -> dict:
        """The experiment as written (for meta.json)."""
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name in OPTION_AXES and value is None:
                continue                    # a transport's option unset: meta.json as before
            if name == "hosts" and value is not None:
                value = [{"a": a, "b": b} for a, b in value]
            out[name] = list(value) if isinstance(value, (tuple, set, frozenset, range)) else value
        return out
