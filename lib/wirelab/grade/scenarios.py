"""Every scenario by name, as catalogue.toml's ``scenario`` field names them.

``transfer`` (transfers.py) moves bytes in any role; the others are the plays of
``wirelab.peers`` (document 001 §5's misbehaving peers, which the lab runs
against the kit's own programs too): misbehaving clients against the student's
server (scenarios_server.py, scenarios_tcp.py for tcp) and misbehaving servers
against the student's client (scenarios_client.py). Each runs on the test's
``TestContext``, the grader's stage.
"""
from __future__ import annotations

from .scenarios_client import CLIENT_SCENARIOS
from .scenarios_server import SERVER_SCENARIOS
from .scenarios_tcp import TCP_SCENARIOS
from .transfers import run_transfer

__all__ = ["SCENARIOS", "run_scenario"]

SCENARIOS = {"transfer": run_transfer, **SERVER_SCENARIOS, **TCP_SCENARIOS, **CLIENT_SCENARIOS}


def run_scenario(ctx) -> None:
    """Run the test's scenario; it raises ``Failed``/``TimedOut`` when the submission is wrong."""
    SCENARIOS[ctx.test.scenario](ctx)
