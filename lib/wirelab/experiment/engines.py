"""Engines by name: what ``Experiment(engine=...)`` and ``wirelab run --engine`` name.

    wirelab   the kit's own programs (``wirelab.engines.wirelab``)
    iperf3    iperf3, parsed into the same columns (``wirelab.engines.iperf3``)

Settings with ``flows`` run several of these side by side on one link (``flows``),
whichever engine the sweep names. A lab that runs something else brings its own engine
object (``run(exp, engine=...)``): document 003's five-node network (``labs.broker``),
document 001 §5's misbehaving peers (``labs.peers``). Each engine module is imported only
when a sweep uses it (they pull in the programs, iperf3's driver, the capture layer).
``iperf3_run`` runs one iperf3 test across an open link, described as a sweep's setting.
"""
from __future__ import annotations

import time

from ..engines.iperf3 import Iperf3Engine
from ..engines.wirelab import WirelabEngine
from ..errors import UsageError
from .spec import Experiment

__all__ = ["ENGINES", "get_engine", "iperf3_run"]


def _wirelab(**options):
    return WirelabEngine(**options)


def _iperf3(**options):
    return Iperf3Engine(**options)


#: Engine name → factory. Tests may add their own.
ENGINES = {"wirelab": _wirelab, "iperf3": _iperf3}


def get_engine(name_or_engine, **options):
    """An engine by name (``"wirelab"``, ``"iperf3"``) or an engine object itself."""
    if not isinstance(name_or_engine, str):
        return name_or_engine
    if name_or_engine not in ENGINES:
        raise UsageError(f"unknown engine {name_or_engine!r}",
                         f"use one of {', '.join(ENGINES)}, or pass a lab's engine object (run(exp, engine=...))")
    return ENGINES[name_or_engine](**options)


def iperf3_run(link, *, timeout: float = 60.0, **experiment) -> dict:
    """One iperf3 test across an open ``link`` (``wirelab.link.open``), described with
    ``Experiment`` keywords (default: TCP for 3 s, 1 s omitted), e.g.
    ``iperf3_run(link, proto="udp", time="2s", offered="5mbit")``; returns ``parse``'s columns."""
    experiment = {"workload": "time", "time": 3, "omit": 1, "rate": None, **experiment}
    setting = Experiment("iperf3", engine="iperf3", reps=1, **experiment).settings()[0]
    reason = Iperf3Engine().unsupported(setting)
    if reason:
        raise UsageError(reason, "see wirelab.engines.iperf3")
    return Iperf3Engine().run(setting, link, deadline=time.monotonic() + timeout)
