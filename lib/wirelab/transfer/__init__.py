"""The transfer programs: TCP, UDP and UDPR senders and receivers students read.

Read in this order: ``ppcb`` (the wire format, one table), ``tcp`` (server and
client), ``udp_server`` and ``udp_client`` (udp and udpr), ``result`` (the one
record every run returns), ``pacing``, ``measure_wire`` (the measurement
modes' format, one table) and ``measure_server``/``measure_client`` (bulk,
offered load, echo; its parts ``measure_options``, ``measure_session`` and
``measure_report``), ``run`` (both ends on loopback in one call),
``broker`` (document 003's five nodes: 32-byte messages stored and forwarded),
``client`` (one client call in a process of its own, as a sweep's runs start
their senders) and ``clockrounds`` (echo rounds before and after a run: two
clocks, one line through them). Each program runs alone:
``python -m wirelab.transfer.tcp serve 5000``.
Standard library only.
"""
from .._exports import lazy

_EXPORTS = {
    "ppcb": "ppcb:__module__", "measures": "measures:__module__", "Result": "result", "merge": "result", "run_pair": "run",
    "start_server": "run", "congestion_unavailable": "sockets",
    "make_data": "run", "HashSink": "run", "measure": "measure_client",
    "MeasureOptions": "measure_options", "listen_tcp": "tcp",
    "serve_tcp": "tcp", "send_tcp": "tcp", "listen_udp": "udp_server", "serve_udp": "udp_server",
    "send_udp": "udp_client", "DEFAULT_HOST": "sockets", "broker": "broker:__module__",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
