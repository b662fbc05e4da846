"""The misbehaving tcp clients the catalogue sets against the student's server: wrong session, type or
length, junk, a client that dies, a second client while the first is served (ppcb.md, "tcp server").

The plays are ``wirelab.peers.tcp_clients``'; a wrong DATA must get RJT and
the connection closed, and whatever happens the next client is served.
"""
from __future__ import annotations

from ..peers import PLAYS

__all__ = ["TCP_SCENARIOS"]

TCP_SCENARIOS = {name: PLAYS[name] for name in (
    "tcp_foreign_session", "tcp_wrong_type", "tcp_bad_length", "tcp_garbage", "tcp_busy", "tcp_client_dies")}
