"""Engines: the programs a sweep runs across a link, each turned into the same columns.

An engine runs one setting once across a link the runner opened (the seam:
``wirelab.experiment.engine``; by name: ``wirelab.experiment.engines``). Read in this
order: ``wirelab`` (the kit's own programs, ``wirelab.transfer``, their senders started
in a process of their own: ``transfer.client``) and ``iperf3`` (iperf3's one driver:
argv, readiness, parser) with ``iperf3_live`` (its interval reports while it runs).
A lab that runs something else brings its own (``labs.broker``, ``labs.peers``).
"""
from .._exports import lazy

_EXPORTS = {"WirelabEngine": "wirelab", "Iperf3Engine": "iperf3", "goodput_series": "wirelab"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
