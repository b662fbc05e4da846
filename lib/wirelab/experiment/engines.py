"""Engines by name: what ``Experiment(engine=...)`` and ``wirelab run --engine`` name.

    wirelab   the kit's own programs (``wirelab_engine``)
    iperf3    iperf3, parsed into the same columns (``iperf3``)

Settings with ``flows`` run several of these side by side on one link (``flows``),
whichever engine the sweep names. A lab that runs something else brings its own engine
object (``run(exp, engine=...)``): document 003's five-node network (``labs.broker``),
document 001 §5's misbehaving peers (``labs.peers``). Each engine module is imported only
when a sweep uses it (they pull in the programs, iperf3's driver, the capture layer).
"""
from __future__ import annotations

from ..errors import UsageError

__all__ = ["ENGINES", "get_engine"]


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
        raise UsageError(f"unknown engine {name_or_engine!r}",
                         f"use one of {', '.join(ENGINES)}, or pass a lab's engine object (run(exp, engine=...))")
    return ENGINES[name_or_engine](**options)
