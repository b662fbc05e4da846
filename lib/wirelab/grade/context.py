"""What one running test holds and the verbs its checks use: the grader's stage for a play.

A ``TestContext`` joins a test of the catalogue, the testbed it runs on
(host ``a`` is the client's, host ``b`` the server's), the submission and its
sandbox, and a deadline. Checks call ``ctx.start_server()`` /
``ctx.start_client(data)`` for the student's programs, ``ctx.udp("a")`` /
``ctx.tcp("a")`` for sockets living in a host (to play a peer by hand), and
``ctx.in_host("a", fn)`` to run wirelab's own programs there. A check that
fails raises ``Failed("plain words")``; every wait is bounded by the deadline.

It is the ``wirelab.peers.Stage`` the misbehaving peers' plays run on, and
holds what is the grader's alone: how the student's programs end is *judged*
(``gives_up``: ERROR on stderr within the bound; ``finishes``: exit 0;
``delivered``: ppcbs's stdout is the bytes sent), and a reading the program
took is refused where the test is strict (``take``, readings.py).
"""
from __future__ import annotations

import os
import socket
import threading
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from ..peers.exchange import Failed, TimedOut
from ..peers.stage import Job
from . import readings
from .diagnose import diagnose
from .sandbox import Program
from .. import transports

if TYPE_CHECKING:                  # (annotations only: catalogue sits above the running tests)
    from .catalogue import Assignment, GradeTest, Limits

__all__ = ["TestContext", "Failed", "TimedOut"]


class TestContext:
    __test__ = False   # not a pytest class

    def __init__(self, test: GradeTest, testbed, submission, uid: int, limits: Limits, assignment: Assignment,
                 out_dir: Path, jail):
        self.test, self.tb, self.submission, self.uid, self.jail = test, testbed, submission, uid, jail
        self.limits, self.assignment, self.out_dir = limits, assignment, out_dir
        self.started = time.monotonic()
        self.deadline = self.started + test.deadline_s
        self.programs: list[Program] = []
        self.measured: dict = {}           # goodput and what it was measured on, for the report
        self.expired = threading.Event()
        self._lock = threading.Lock()

    # -- time -------------------------------------------------------------------------
    def left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def max_wait(self) -> float:
        return self.assignment.max_wait_s

    @property
    def retransmits(self) -> int:
        return self.assignment.max_retransmits

    @property
    def give_up_s(self) -> float:
        return self.assignment.give_up_s

    @property
    def chunk(self) -> int:
        return self.assignment.chunk

    @property
    def proto(self) -> str:
        return self.test.proto

    @property
    def seed(self) -> int:
        """The same input bytes for a test every time, different from test to test."""
        return zlib.crc32(self.test.id.encode())

    # -- addresses -------------------------------------------------------------------
    @property
    def server_address(self) -> tuple[str, int]:
        return self.tb.address("b"), self.assignment.port

    # -- the student's programs -------------------------------------------------------
    def _start(self, program: str, args: list[str], host: str, stdin: Path | None) -> Program:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
               "PPCB_MAX_WAIT": f"{self.max_wait:g}", "PPCB_MAX_RETRANSMITS": str(self.retransmits)}
        stdout = self.out_dir / f"{program}-{len(self.programs)}.stdout"
        stderr = self.out_dir / f"{program}-{len(self.programs)}.stderr"
        with open(stdin or os.devnull, "rb") as fin, open(stdout, "wb") as fout, open(stderr, "wb") as ferr:
            popen, cgroup = self.jail.start([self.jail.program(program), *args], key=self.test.id, env=env,
                                            popen=lambda argv, **kw: self.tb.popen(host, argv, **kw),
                                            stdin=fin, stdout=fout, stderr=ferr, text=False,
                                            start_new_session=True)
        started = Program(program, [program, *args], popen, stdout, stderr, cgroup,
                          wrapped=self.jail.sandboxed or cgroup is not None)
        with self._lock:
            self.programs.append(started)
        if self.expired.is_set():
            started.stop()
        return started

    def start_server(self, proto: str | None = None) -> Program:
        """``ppcbs <tcp|udp> PORT`` on host b, waited for until it listens (else ``Failed``)."""
        kind = transports.get(proto or self.test.proto).socket
        server = self._start("ppcbs", [kind, str(self.assignment.port)], "b", None)
        self.wait_listening(server, kind)
        return server

    def start_client(self, data: Path | bytes, proto: str | None = None) -> Program:
        """``ppcbc <proto> 10.77.0.2 PORT < data`` on host a (``data``: a file, or the bytes for one)."""
        if isinstance(data, bytes):
            path = self.out_dir / "input.bin"
            path.write_bytes(data)
            data = path
        host, port = self.server_address
        return self._start("ppcbc", [proto or self.test.proto, host, str(port)], "a", data)

    def wait_listening(self, server: Program, kind: str) -> None:
        """Poll host b's socket table (no connection made) until ``server`` listens on the port."""
        wanted = f":{self.assignment.port:04X}"
        end = min(time.monotonic() + self.limits.listen_s, self.deadline)
        while time.monotonic() < end:
            bound = [row[1].split(":")[0] for row in self._sockets(kind)
                     if row[1].endswith(wanted) and (kind != "tcp" or row[3] == "0A")]    # 0A: LISTEN
            on_loopback = self.tb.address("a") == "127.0.0.1"     # both hosts on 127.0.0.1: it cannot tell
            if bound and all(address == "0100007F" for address in bound) and not on_loopback:
                raise Failed(f"ppcbs listens on 127.0.0.1 only: a server must listen on every address "
                             f"(INADDR_ANY), clients come from {self.tb.address('a')}")
            if bound:
                return
            if server.poll() is not None:
                break
            time.sleep(0.01)
        tail, flood = server.stderr_tail(), server.stdout_size()
        raise Failed(f"ppcbs {server.describe_exit()} and was not listening on {kind} port "
                     f"{self.assignment.port} within {self.limits.listen_s:g} s"
                     + (f"; it wrote {flood} B to stdout, the file-size limit" if flood >= self.limits.file_size_bytes
                        else "") + (f"; its stderr: {tail!r}" if tail else ""))

    def _sockets(self, kind: str) -> list[list[str]]:
        """Host b's socket tables (IPv4, and IPv6 for dual-stack servers): rows of sl,
        local_address (hex ip:port), rem_address, st, ..."""
        rows = []
        with self.tb.inside("b"):
            for table in (kind, kind + "6"):
                path = Path(f"/proc/thread-self/net/{table}")
                if path.exists():
                    rows += [line.split() for line in path.read_text().splitlines()[1:]]
        return rows

    def wait_connections(self, count: int, timeout: float = 2.0) -> None:
        """Until ``count`` TCP connections to the server port are established (accepted or queued)."""
        wanted = f":{self.assignment.port:04X}"
        end = min(time.monotonic() + timeout, self.deadline)
        while time.monotonic() < end:
            if sum(row[1].endswith(wanted) and row[3] == "01" for row in self._sockets("tcp")) >= count:
                return
            time.sleep(0.005)
        raise Failed(f"fewer than {count} connections to ppcbs were established within {timeout:g} s")

    def wait_exit(self, program: Program, what: str, timeout: float | None = None) -> int:
        """Wait (bounded by the deadline) for ``program`` to end; its status, or ``TimedOut``."""
        limit = self.left() if timeout is None else min(timeout, self.left())
        code = program.wait(limit)
        if code is None:
            raise TimedOut(f"{program.name} was still running after {program.runtime_s:.1f} s ({what})")
        return code

    # -- how the student's programs end, judged -----------------------------------------
    def gives_up(self, client: Program, bound_s: float, why: str) -> None:
        """``client`` must exit with ERROR on stderr within ``bound_s`` of its start (its status: a reading)."""
        code = client.wait(max(bound_s - client.runtime_s, 0.0))
        if code is None:
            raise TimedOut(f"ppcbc was still running {client.runtime_s:.1f} s after it started ({why}; "
                           f"it must give up by {bound_s:.1f} s)")
        if "ERROR" not in client.stderr_tail(2000):
            raise Failed(f"ppcbc exited with status {code} but printed no 'ERROR: ...' on stderr ({why})")
        self.take("error_exit", "zero" if code == 0 else "nonzero")

    def finishes(self, client: Program) -> None:
        """``client`` must exit 0 (after RCVD)."""
        code = self.wait_exit(client, "a client exits after RCVD")
        if code != 0:
            raise Failed(f"ppcbc exited with status {code}; stderr: {client.stderr_tail()!r}")

    def delivered(self, server: Program, data: bytes, *, offset: int = 0) -> None:
        """ppcbs's stdout, from byte ``offset`` on, must become exactly ``data`` within MAX_WAIT."""
        want = offset + len(data)
        end = time.monotonic() + min(max(self.max_wait, 0.5), self.left())
        while server.stdout_size() < want and time.monotonic() < end and server.poll() is None:
            time.sleep(0.01)
        with open(server.stdout_path, "rb") as f:
            f.seek(offset)
            got = f.read(2 * len(data) + 1_000_000)        # (a flood is cut: the diagnosis needs its start)
        if got == data:
            return
        finding = diagnose(data, got, self.chunk if self.test.role == "server" else None,
                           side="pair" if self.test.role == "pair" else "server", running=server.poll() is None)
        ended = "" if server.poll() is None else f"; ppcbs {server.describe_exit()}"
        raise Failed(f"{finding.sentence}{ended}: {finding.advice}{stderr_of(server, 'ppcbs')}")

    def take(self, point: str, form: str) -> None:
        """The program took ``form`` where the assignment leaves ``point`` open (refused if strict)."""
        readings.take(self, point, form)

    def stop_programs(self) -> None:
        with self._lock:
            programs = list(self.programs)
        for program in programs:
            program.stop()

    # -- wirelab's side ---------------------------------------------------------------
    def udp(self, host: str = "a") -> socket.socket:
        """A UDP socket bound in ``host`` (port chosen by the kernel)."""
        with self.tb.inside(host):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((self.tb.address(host), 0))
        return sock

    def tcp(self, host: str = "a", timeout: float = 2.0) -> socket.socket:
        """A TCP connection from ``host`` to the student's server."""
        with self.tb.inside(host):
            sock = socket.create_connection(self.server_address, timeout=min(timeout, self.left() or 0.01))
        return sock

    def listener(self, kind: str) -> socket.socket:
        """A bound (and, for tcp, listening) socket on host b at the assignment's port."""
        with self.tb.inside("b"):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(self.server_address)
            if kind == "tcp":
                sock.listen(8)
        return sock

    def in_host(self, host: str, fn, *args, **kwargs) -> Job:
        """Run ``fn`` in a thread inside ``host``'s namespace; ``.result()`` joins it."""
        return Job(self, self.tb.inside(host), fn, args, kwargs)


def stderr_of(program: Program, name: str | None = None) -> str:
    """'; ppcbs's stderr: ...' for a reason, or nothing when it printed nothing."""
    tail = program.stderr_tail()
    return f"; {name or program.name}'s stderr: {tail!r}" if tail else ""
