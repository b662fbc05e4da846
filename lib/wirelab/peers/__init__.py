"""Document 001 §5's misbehaving peers, once: the lab measures the kit's programs against them, the grader
judges a student's.

A *play* is what a misbehaving client or server does: which packets it sends,
in what order, with what timing, and what it waits for to go on; it raises
``Failed`` (``exchange``) where the other side breaks ppcb.md. It runs on a
``Stage`` (``stage``): sockets on host a (clients) and host b (servers), and
the program under test. The grader's stage (``grade.context``) runs a
student's programs in its sandbox and judges how they end, with its readings;
the lab's (``labs.peers``) runs the kit's own and measures how long they take
to notice, against the protocol's bound. ``PLAYS`` names every play::

    PLAYS["out_of_order"](stage)      # → what it saw, for a table (the lab's columns)

    clients      misbehaving clients over udp and udpr (a foreign CONN or DATA, duplicates,
                 DATA out of order, a bad length, junk, silence, a client gone mid-file)
    tcp_clients  misbehaving tcp clients (a foreign session, a wrong type or length, junk,
                 silence, a second client, a client that hangs up)
    servers      misbehaving servers (silence, one that stops, a lost ACC, CONRJT, RJT,
                 stale and foreign ACCs)
    moves        what they are made of: open a session, send DATA, wait for RCVD
    packets      crafted packets (``wire.ppcb.build``, the one builder) and packets in words

To add a play: a function ``(stage) -> dict`` in one of these, named in ``PLAYS``;
the grader's catalogue (``grade/catalogue.toml``) and the lab (``labs.peers``)
then name it.
"""
from __future__ import annotations

from .. import transports
from . import clients, servers, tcp_clients
from .exchange import Exchange, Failed, TimedOut
from .stage import Stage

__all__ = ["PLAYS", "Stage", "Exchange", "Failed", "TimedOut", "out_of_order", "silent_client", "client_dies"]


def _stream(stage: Stage) -> bool:
    """The program under test speaks PPCB on a TCP stream (the tcp plays), else over datagrams."""
    return transports.get(stage.proto).stream


def out_of_order(stage: Stage) -> dict:
    """DATA 2 right after DATA 0 (tcp: on the stream; udp, udpr: a datagram)."""
    return (tcp_clients.out_of_order_tcp if _stream(stage) else clients.out_of_order_udp)(stage)


def silent_client(stage: Stage) -> dict:
    """A client that connects (tcp) or sends CONN (udp, udpr), then nothing."""
    return (tcp_clients.silent_client_tcp if _stream(stage) else clients.silent_client_udp)(stage)


def client_dies(stage: Stage) -> dict:
    """A client gone mid-file: tcp hangs up after DATA 0; udp and udpr fall silent after 20 DATA."""
    return (tcp_clients.tcp_client_dies if _stream(stage) else clients.client_dies_udp)(stage)


#: Every play by name (the names grade/catalogue.toml uses); each takes a Stage and returns what it saw.
PLAYS = {
    # misbehaving clients, against a server
    "foreign_conn": clients.foreign_conn, "foreign_data": clients.foreign_data,
    "duplicate_conn": clients.duplicate_conn, "out_of_order": out_of_order,
    "duplicate_data": clients.duplicate_data, "resends_acc": clients.resends_acc,
    "udp_bad_length": clients.udp_bad_length, "udp_garbage": clients.udp_garbage,
    "silent_client": silent_client, "client_dies": client_dies,
    "tcp_foreign_session": tcp_clients.tcp_foreign_session, "tcp_wrong_type": tcp_clients.tcp_wrong_type,
    "tcp_bad_length": tcp_clients.tcp_bad_length, "tcp_garbage": tcp_clients.tcp_garbage,
    "tcp_busy": tcp_clients.tcp_busy, "tcp_client_dies": tcp_clients.tcp_client_dies,
    # misbehaving servers, against a client
    "silent_server": servers.silent_server, "server_stops": servers.server_stops, "lost_acc": servers.lost_acc,
    "conrjt": servers.conrjt, "rjt": servers.rjt, "stale_acc": servers.stale_acc,
    "foreign_acc": servers.foreign_acc,
}
