"""The misbehaving clients the catalogue sets against the student's server (ppcbs on host b), over udp
and udpr; the tcp-only ones are in scenarios_tcp.py.

The plays are ``wirelab.peers``' (the lab measures the kit's own server
against the same ones); here the grader names those it uses. Its own part is
in the stage the plays run on (context.py): ppcbs's stdout judged
(``delivered``), a reading refused where a test is strict (``take``).
"""
from __future__ import annotations

from ..peers import PLAYS

__all__ = ["SERVER_SCENARIOS"]

SERVER_SCENARIOS = {name: PLAYS[name] for name in (
    "foreign_conn", "foreign_data", "duplicate_conn", "out_of_order", "duplicate_data", "resends_acc",
    "udp_bad_length", "udp_garbage", "silent_client")}
