"""Run one wirelab client in its own process and print its Result as JSON.

    python -m wirelab.transfer.client '{"call": "send_tcp", "host": "10.77.0.2", "port": 5000, ...}'

Why a process: the receiver runs as a thread of the experiment; a sender in
another thread of the same process would share its interpreter lock, and a
paced sender that spins for sub-millisecond gaps starves the receiver, which
then loses datagrams no link dropped. In its own process (inside host ``a``
via ``ip netns exec``) the sender cannot disturb the receiver. Both processes
read the same system clock, so one-way delays stay exact.

``call`` is ``send`` (``proto``'s own sender, ``wirelab.transports``), ``send_tcp``,
``send_udp`` or ``measure``; the other keys are that function's arguments; file data is ``size`` reproducible random bytes from ``seed``.
``events`` (a Unix socket's path) and ``event_tags``: the sender reports what it has
done every interval while it runs (``transfer.progress``) to the run's event stream
(``events``); the records also come back in the Result (``metadata["progress"]``).

A new Python process costs 0.1-0.2 s before the client's first packet
(interpreter, imports), more than a short transfer takes. On a link kept
for many runs (``reuse``) a ``WarmClient`` starts once
(``python -m wirelab.transfer.client --warm`` on host ``a``), imports
everything, and for each run forks a fresh process that runs the client call
exactly as above: still a process of its own per run, on the same host, with
nothing running beside it (the warm parent waits), only without the start-up.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

from .. import transports
from ..errors import TransferError
from .measure_client import measure
from .progress import Progress, datagram_sink
from .result import Result
from .run import make_data
from .tcp import send_tcp
from .udp_client import send_udp

__all__ = ["main", "client_argv", "warm_argv", "run_client", "WarmClient"]

#: How long a warm client may take to import and say it is ready.
READY_TIMEOUT_S = 15.0


def client_argv(config: dict) -> list[str]:
    """The argv that runs ``config`` in a new Python process."""
    return [sys.executable, "-m", "wirelab.transfer.client", json.dumps(config)]


def run_client(link, argv: list[str], deadline: float, *, what: str, fix: str):
    """Run a client's ``argv`` on host ``a`` within ``deadline`` (a timeout is a TransferError)."""
    return link.run("a", argv, timeout=deadline - time.monotonic(), what=what, fix=fix)


def warm_argv() -> list[str]:
    """The argv of a warm client (``WarmClient``)."""
    return [sys.executable, "-m", "wirelab.transfer.client", "--warm"]


def _programs():
    """What the calls need (imported here: the first thing a client process does)."""
    for transport in transports.transports():       # every transport's sender, imported now
        transport.sender.resolve()
    return Result, measure, make_data, send_tcp, send_udp


def _call(config: dict) -> str:
    """Run one client call; its Result as JSON (a failure is a Result with ``error``)."""
    Result, measure, make_data, send_tcp, send_udp = _programs()
    config = dict(config)
    call = config.pop("call")
    events, tags = config.pop("events", None), config.pop("event_tags", None)
    sink = datagram_sink(events)
    if events:
        config["progress"] = Progress("probe" if config.get("mode") in ("echo", "ping") else "sender",
                                      emit=sink, tags=tags)
    try:
        if call == "measure":
            result = measure(config.pop("proto"), config.pop("host"), config.pop("port"), **config)
        else:
            data = make_data(config.pop("size"), config.pop("seed", 0))
            if call == "send":      # the transport's own sender (wirelab.transports), proto given to it by name
                send = transports.get(config.pop("proto")).send
            else:
                send = {"send_tcp": send_tcp, "send_udp": send_udp}[call]
            result = send(config.pop("host"), config.pop("port"), data, **config)
    except Exception as err:     # noqa: BLE001 - reported as a failed Result
        result = Result(config.get("proto", "tcp"), error=f"{type(err).__name__}: {err}")
    finally:
        if sink is not None:
            sink.close()
    return result.to_json()


def _serve_warm() -> int:
    """``--warm``: import everything, print ``ready``; then for each config line on stdin fork a
    child that runs it, print ``pid <n>`` at once and, when the child ends, one JSON line
    ``{"status", "stdout", "stderr"}`` (as ``subprocess.run`` would have given them)."""
    _programs()
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        config = json.loads(line)
        read_end, write_end = os.pipe()
        errors = tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:                             # the client, a process of its own
            code = 1
            try:
                os.close(read_end)
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                os.dup2(errors.fileno(), 2)
                os.dup2(errors.fileno(), 1)          # a stray print cannot garble the replies
                signal.signal(signal.SIGINT, signal.default_int_handler)
                os.write(write_end, _call(config).encode() + b"\n")
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        out.write(f"pid {pid}\n".encode())
        out.flush()
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        errors.seek(0)
        reply = {"status": os.waitstatus_to_exitcode(status), "stdout": b"".join(chunks).decode(),
                 "stderr": errors.read().decode(errors="replace")[-4000:]}
        errors.close()
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()
    return 0


class WarmClient:
    """A warm client on host ``a`` of ``link`` (see the module docstring): ``run(config,
    deadline, what, fix)`` → ``subprocess.CompletedProcess``, like ``link.run(client_argv(config))``."""

    def __init__(self, link):
        #: One client at a time on its one pipe: flows running side by side take it in turn, or
        #: start a plain process when it is busy (``WirelabEngine``).
        self.busy = threading.Lock()
        self.proc = link.popen("a", warm_argv(), lasting=True, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=False, bufsize=0)
        self._buffer = b""
        line = self._line(time.monotonic() + READY_TIMEOUT_S)
        if line != "ready":
            self.close()
            raise RuntimeError(f"the warm client did not start ({line or 'no answer'})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, config: dict, deadline: float, *, what: str, fix: str) -> subprocess.CompletedProcess:
        deadline = max(deadline, time.monotonic() + 0.1)      # as ``OpenLink.run`` allows at least
        allowed = deadline - time.monotonic()
        self.proc.stdin.write(json.dumps(config).encode() + b"\n")
        self.proc.stdin.flush()
        line = self._line(deadline)
        pid = int(line.split()[1]) if line and line.startswith("pid ") else None
        reply = self._line(deadline) if pid else None
        if reply is None:                       # late (or the warm client died): stop it all
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.close()
            raise TransferError(f"{what} did not finish within the {allowed:.0f} s left", fix)
        done = json.loads(reply)
        return subprocess.CompletedProcess(["(forked)", *client_argv(config)[1:]], done["status"],
                                           done["stdout"], done["stderr"])

    def _line(self, deadline: float) -> str | None:
        """The next line from the warm client, or None at ``deadline`` or its end."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode().strip()

    def close(self) -> None:
        """Stop the warm client (it also stops with its link)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()            # it ends at the end of its input
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=2)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--warm"]:
        return _serve_warm()
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print(_call(json.loads(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
