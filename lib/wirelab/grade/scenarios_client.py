"""The misbehaving servers the catalogue sets against the student's client (ppcbc on host a): the kit
plays the server on host b (silence, CONRJT, RJT, a withheld ACC, stale and foreign ACCs).

The plays are ``wirelab.peers.servers``'. The grader's part is in the stage
they run on (context.py): a client must give up within its bounds with
``ERROR: ...`` on stderr (``gives_up``; its exit status is a reading), or
carry on and exit 0 (``finishes``).
"""
from __future__ import annotations

from ..peers import PLAYS

__all__ = ["CLIENT_SCENARIOS"]

CLIENT_SCENARIOS = {name: PLAYS[name] for name in (
    "silent_server", "server_stops", "lost_acc", "conrjt", "rjt", "stale_acc", "foreign_acc")}
