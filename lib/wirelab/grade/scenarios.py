"""Every scenario by name, as catalogue.toml's ``scenario`` field names them.

``transfer`` (transfers.py) moves bytes in any role; the others are misbehaving
clients (scenarios_server.py, against the student's server) and misbehaving
servers (scenarios_client.py, against the student's client); scenarios_tcp.py
holds the tcp-only misbehaving clients.
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
