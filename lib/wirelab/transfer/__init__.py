"""The transfer programs: TCP, UDP and UDPR senders and receivers students read.

Read in this order: ``ppcb`` (the wire format, one table), ``tcp`` (server and
client), ``udp_server`` and ``udp_client`` (udp and udpr), ``result`` (the one
record every run returns), ``pacing`` and ``measure_server``/``measure_client``
(bulk, offered load, echo), and ``run`` (both ends on loopback in one call).
Each program runs alone: ``python -m wirelab.transfer.tcp serve 5000``.
Standard library only.
"""
from __future__ import annotations

import importlib

#: name → the module that defines it (imported on first use, so that
#: ``python -m wirelab.transfer.tcp`` runs the module once, as __main__).
_EXPORTS = {
    "Result": "result", "merge": "result", "run_pair": "run", "start_server": "run",
    "make_data": "run", "HashSink": "run", "measure": "measure_client",
    "listen_tcp": "tcp", "serve_tcp": "tcp", "send_tcp": "tcp",
    "listen_udp": "udp_server", "serve_udp": "udp_server", "send_udp": "udp_client",
    "DEFAULT_HOST": "sockets",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
