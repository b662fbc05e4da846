"""The transfer programs: TCP, UDP and UDPR senders and receivers students read.

Read in this order: ``ppcb`` (the wire format, one table), ``tcp`` (server and
client), ``udp_server`` and ``udp_client`` (udp and udpr), ``result`` (the one
record every run returns), ``pacing`` and ``measure``/``measure_client``
(bulk, offered load, echo), and ``run`` (both ends on loopback in one call).
Each program runs alone: ``python -m wirelab.transfer.tcp serve 5000``.
Standard library only.
"""
from .measure_client import measure
from .result import Result, merge
from .run import HashSink, make_data, run_pair, start_server
from .sockets import DEFAULT_HOST
from .tcp import listen_tcp, send_tcp, serve_tcp
from .udp_client import send_udp
from .udp_server import listen_udp, serve_udp

__all__ = ["Result", "merge", "run_pair", "start_server", "make_data", "HashSink", "measure",
           "listen_tcp", "serve_tcp", "send_tcp", "listen_udp", "serve_udp", "send_udp", "DEFAULT_HOST"]
