"""The lab's own misbehaviour: a *process* of the kit's killed with SIGKILL in the middle of a transfer.

What a dying process leaves is the kernel's doing (a TCP socket that still
sends what it holds, then FIN; a RST for a dead server's connection; nothing
at all over udp), not a packet a peer chooses to send, so these are not plays
of ``wirelab.peers``: they run the kit's client or server as a process on the
lab's stage (``labs.stage``), kill it once ``PROGRESS`` bytes have crossed, and
measure how long its partner takes to notice.
"""
from __future__ import annotations

import math
import os
import select
import subprocess
import sys
import threading
import time

from .. import transports
from ..errors import UsageError
from ..transfer.client import client_argv
from ..peers import Failed
from ..peers.stage import next_client_served
from ..transfer import make_data
from .stage import KitStage

__all__ = ["client_process_dies", "server_process_dies", "BIG", "PROGRESS"]

BIG = 5_000_000            # bytes a dying peer's partner was sending: far more than it gets to
PROGRESS = 20_000          # bytes delivered before the peer is killed


def _wait(predicate, timeout: float, step: float = 0.005) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (a bounded wait on an event we cannot join)."""
    end, tick = time.monotonic() + timeout, threading.Event()
    while time.monotonic() < end:
        if predicate():
            return True
        tick.wait(step)
    return bool(predicate())


def _bound(stage: KitStage) -> float:
    return transports.get(stage.proto).give_up_s(stage.max_wait, stage.retransmits)


def _listening(stage: KitStage) -> bool:
    """Is something bound to the stage's port on host b? (/proc/thread-self/net: this thread's namespace)"""
    with stage.link.inside("b"):
        with open(f"/proc/thread-self/net/{stage.kind}") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    return any(int(r[1].split(":")[1], 16) == stage.port and (stage.kind != "tcp" or r[3] == "0A") for r in rows)


def client_process_dies(stage: KitStage) -> dict:
    """The kit's client (tcp or udpr) as a process, killed mid-transfer: the kit's server gives up
    (udpr after resending its last ACC; tcp when the kernel closes) and serves the next client."""
    server = stage.start_server()
    host, port = stage.server_address
    # a small send buffer: a dead TCP client's socket outlives it and still sends what it holds
    config = {"call": "send", "proto": stage.proto, "host": host, "port": port,
              "size": BIG, "seed": 1, "max_wait": stage.max_wait, "sndbuf": 32768}
    if not transports.get(stage.proto).stream:
        config.update(max_retransmits=stage.retransmits)
    client = stage.link.popen("a", client_argv(config))
    try:
        if not _wait(lambda: len(server.out.data) >= PROGRESS, 20):
            raise UsageError("the client delivered nothing to kill it in the middle of", "check the link")
        client.kill()
        killed = time.monotonic()
        _wait(lambda: server.ended, _bound(stage) + 10)
        gave_up = (server.ended[0][0] if server.ended else time.monotonic()) - killed
        served = server.ended[0][1] if server.ended else None
        try:
            next_client_served(stage, server, earlier=[bytes(server.out.data)])
            next_ok = True
        except Failed:
            next_ok = False
    finally:
        client.kill()
        client.wait(5)
    # tcp: no MAX_WAIT bound: the kernel sends the dead client's buffered bytes, then FIN
    bound = math.nan if transports.get(stage.proto).stream else _bound(stage)
    failed = served is not None and not served.ok
    return {"peer": "the client process is killed (SIGKILL) mid-transfer",
            "server_error": served.receiver_error if served else "no result",
            "bytes_delivered": served.bytes_delivered if served else len(server.out.data), "elapsed_s": gave_up,
            "bound_s": bound, "as_specified": failed and (math.isnan(bound) or gave_up <= bound + 0.5),
            "next_client_served": next_ok}


def server_process_dies(stage: KitStage) -> dict:
    """The kit's server as a process, killed mid-transfer: the kit's client fails with ERROR within
    its bound."""
    program = (["wirelab.transfer.tcp", "serve", str(stage.port), stage.link.address("b")] if stage.kind == "tcp"
               else ["wirelab.transfer.udp_server", str(stage.port), stage.link.address("b")])
    server = stage.link.popen("b", [sys.executable, "-m", *program], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=False)
    try:
        if not _wait(lambda: _listening(stage), 15):
            raise UsageError("the server process did not start listening", "run it by hand to see why")
        client = stage.start_client(make_data(BIG, 1))
        got, end = 0, time.monotonic() + 20
        while got < PROGRESS and time.monotonic() < end:      # the server writes what it received
            ready, _, _ = select.select([server.stdout], [], [], 0.1)
            if ready:
                got += len(os.read(server.stdout.fileno(), 1 << 16))
        server.kill()
        killed = time.monotonic()
        client.wait(_bound(stage) + 10)
        failed_after = (client.ended or time.monotonic()) - killed
    finally:
        server.kill()
        server.wait(5)
    result = client.result() if client.poll() is not None else None
    bound = _bound(stage)
    failed = result is not None and not result.ok
    return {"peer": "the server process is killed (SIGKILL) mid-transfer",
            "client_error": result.error if result else "client still running", "bytes_delivered": got,
            "elapsed_s": failed_after, "bound_s": bound, "as_specified": failed and failed_after <= bound + 0.5}
