"""The lab's stage for the misbehaving peers' plays (``wirelab.peers``): the kit's own programs, measured.

    stage = KitStage(link, "udpr", port, max_wait=0.5, retransmits=2, deadline=time.monotonic() + 30)
    seen = PLAYS["silent_client"](stage)      # raises peers.Failed where the kit's program broke ppcb.md
    stage.servers[0].ended                    # when each session of the kit's server ended, its Result

Host ``a`` is the clients' side, host ``b`` the servers', on the link the
runner opened. The program under test is the kit's: its server
(``transfer.start_server``, in a thread on host b, keeping the bytes it
delivers) and its client (``send_tcp``/``send_udp`` in a thread on host a).
Where the grader judges a student's program at the end of a play, the lab
notes how and when the kit's ended (``gives_up``: ``gave_up_after_s``, the
error) so that ``labs.peers`` can set it against the protocol's bound.
"""
from __future__ import annotations

import socket
import threading
import time

from .. import transports
from ..peers import Failed, TimedOut
from ..peers.stage import Job
from ..transfer import start_server
from ..wire.ppcb import give_up_s

__all__ = ["KitStage"]


class _Delivered:
    """The kit's server's output: every byte it delivered, in order (a file it writes)."""

    def __init__(self):
        self.data = bytearray()

    def write(self, chunk: bytes) -> int:
        self.data += chunk
        return len(chunk)

    def flush(self) -> None:
        pass


class KitServer:
    """The kit's server on host b; ``ended``: (monotonic time, Result) of each session, as it ended."""

    def __init__(self, stage: "KitStage"):
        self.out, self.ended = _Delivered(), []
        with stage.link.inside("b"):
            _, self.stop, self.thread, _ = start_server(
                stage.proto, host=stage.link.address("b"), port=stage.port, out=self.out, max_wait=stage.max_wait,
                max_retransmits=stage.retransmits, on_result=lambda r: self.ended.append((time.monotonic(), r)))
        self.started = time.monotonic()

    def poll(self) -> int | None:
        return None if self.thread.is_alive() else 0

    def describe_exit(self) -> str:
        return "stopped"

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


class KitClient:
    """The kit's client on host a sending ``data``; like a program: ``poll()`` (None while it runs, 0 after
    RCVD, 1 after an error), ``runtime_s``, ``wait(timeout)``; ``result()`` its Result."""

    def __init__(self, stage: "KitStage", data: bytes):
        host, port = stage.server_address
        self.started = time.monotonic()
        self.ended: float | None = None
        transport = transports.get(stage.proto)
        fn, kwargs = transport.send, {"max_wait": stage.max_wait}
        if not transport.stream:                  # a datagram sender resends
            kwargs["max_retransmits"] = stage.retransmits

        def run():
            try:
                return fn(host, port, data, chunk=stage.chunk, **kwargs)
            finally:
                self.ended = time.monotonic()
        self.job = stage.in_host("a", run)

    def poll(self) -> int | None:
        if not self.job.done():
            return None
        return 0 if self.job.error is None and self.job.value.ok else 1

    @property
    def runtime_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def wait(self, timeout: float) -> int | None:
        self.job.join(timeout)
        return self.poll()

    def result(self):
        return self.job.result()


class KitStage:
    """A play's stage (``wirelab.peers.Stage``) on ``link``: the kit's programs at ``port`` of host b."""
    chunk = 1000

    def __init__(self, link, proto: str, port: int, *, max_wait: float, retransmits: int, deadline: float,
                 seed: int = 1):
        self.link, self.proto, self.port, self.seed = link, proto, port, seed
        self.max_wait, self.retransmits, self.deadline = max_wait, retransmits, deadline
        self.give_up_s = give_up_s(max_wait, retransmits)
        self.kind = transports.get(proto).socket
        self.server_address = link.reach(port, self.kind)
        self.measured: dict = {}
        self.readings: dict[str, str] = {}
        self.servers: list[KitServer] = []
        self.clients: list[KitClient] = []
        self._sockets: list[socket.socket] = []

    def left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def _socket(self, host: str, kind: str) -> socket.socket:
        with self.link.inside(host):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        self._sockets.append(sock)
        return sock

    def udp(self, host: str = "a") -> socket.socket:
        sock = self._socket(host, "udp")
        sock.bind((self.link.address(host), 0))
        return sock

    def tcp(self, host: str = "a", timeout: float = 2.0) -> socket.socket:
        sock = self._socket(host, "tcp")
        sock.settimeout(min(timeout, self.left() or 0.01))
        sock.connect(self.server_address)
        return sock

    def listener(self, kind: str) -> socket.socket:
        sock = self._socket("b", kind)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.link.address("b"), self.port))
        if kind == "tcp":
            sock.listen(8)
        return sock

    def in_host(self, host: str, fn, *args, **kwargs) -> Job:
        return Job(self, self.link.inside(host), fn, args, kwargs)

    def wait_connections(self, count: int, timeout: float = 2.0) -> None:
        """Until ``count`` TCP connections to the server's port are established on host b."""
        end, tick = min(time.monotonic() + timeout, self.deadline), threading.Event()
        while time.monotonic() < end:
            with self.link.inside("b"):
                with open("/proc/thread-self/net/tcp") as table:
                    rows = [line.split() for line in table.readlines()[1:]]
            if sum(int(r[1].split(":")[1], 16) == self.port and r[3] == "01" for r in rows) >= count:
                return
            tick.wait(0.005)
        raise Failed(f"fewer than {count} connections to the server were established within {timeout:g} s")

    # -- the kit's programs under test ------------------------------------------------
    def start_server(self) -> KitServer:
        server = KitServer(self)
        self.servers.append(server)
        return server

    def start_client(self, data: bytes) -> KitClient:
        client = KitClient(self, data)
        self.clients.append(client)
        return client

    def gives_up(self, client: KitClient, bound_s: float, why: str) -> None:
        """Note when and how the kit's client ended (``gave_up_after_s``, its error); it must not succeed."""
        if client.wait(min(bound_s - client.runtime_s + 10.0, self.left())) is None:
            raise TimedOut(f"the client was still running {client.runtime_s:.1f} s after it started ({why})")
        result = client.result()
        self.measured.update(gave_up_after_s=client.runtime_s, client_error=result.error, client_ok=result.ok,
                             conn_resends=result.metadata.get("conn_resends"))
        if result.ok:
            raise Failed(f"the client completed although {why}")

    def finishes(self, client: KitClient) -> None:
        result = client.result()
        if not result.ok:
            raise Failed(f"the client failed: {result.error}")

    def delivered(self, server: KitServer, data: bytes, *, offset: int = 0) -> None:
        """The server's output, from byte ``offset`` on, must become exactly ``data`` within MAX_WAIT."""
        end, tick = time.monotonic() + min(max(self.max_wait, 0.5), self.left()), threading.Event()
        while len(server.out.data) < offset + len(data) and time.monotonic() < end:
            tick.wait(0.01)
        if bytes(server.out.data[offset:]) != data:
            raise Failed(f"the server delivered {len(server.out.data) - offset} B from byte {offset} on, "
                         f"not the {len(data)} B sent")

    def take(self, point: str, form: str) -> None:
        self.readings[point] = form

    def close(self) -> None:
        """Everything the play left: sockets closed, servers stopped, clients waited for."""
        for sock in self._sockets:
            sock.close()
        for server in self.servers:
            server.close()
        for client in self.clients:
            client.wait(self.give_up_s + 2.0)
