"""Hosts are Dask workers: reach the scheduler, find a host's worker, run something there.

    client = connect("tcp://10.0.0.1:8786")         # a running scheduler (SSHCluster's, or `dask scheduler`)
    pc07 = find(client, ["pc07"])["pc07"]           # by worker name, address or IP
    on(client, pc07, socket.gethostname)            # a function run on that worker, its result

Dask does the reaching (its scheduler, its workers, its comms); nothing here is a scheduler
or an SSH layer. Dask is imported only here and only when a sweep goes across hosts.

What a worker keeps for a run, under the run's token, lives in this module in the worker's
process: the programs it started (``run_here``) and the guards of its shaping
(``guard_here``, ``hostguard``). ``release_here(token)`` ends both; the notebook's side
sends it to both hosts on a Ctrl-C or when one host of a pair is lost, and a ``Peer`` that
waits on the other host gives up as soon as the run's stop event is set (``stop``).
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from ..errors import LinkError, UsageError
from .hostguard import Guard

__all__ = ["Worker", "Peer", "connect", "find", "on", "stop", "run_here", "popen_here", "guard_here", "release_here",
           "PYTHON", "CONNECT_TIMEOUT_S"]

#: Seconds to reach the scheduler before saying it is not there.
CONNECT_TIMEOUT_S = 10.0
#: argv[0] meaning "the Python that runs wirelab on that host" (its path differs from PC to PC).
PYTHON = "{python}"
POLL_S = 0.2


@dataclass(frozen=True)
class Worker:
    """A host: its Dask worker's address (``tcp://IP:PORT``), name and IP."""
    address: str
    name: str
    ip: str


def connect(address: str, *, timeout: float = CONNECT_TIMEOUT_S):
    """A Dask client of the scheduler at ``address`` (``tcp://HOST:8786``)."""
    if not isinstance(address, str) or not address:
        raise UsageError(f"no cluster address ({address!r})", "give the scheduler's address, e.g. "
                         "cluster='tcp://10.0.0.1:8786' (what `dask scheduler` printed)")
    from distributed import Client       # the cluster path only: Dask is heavy to import
    try:
        return Client(address if "://" in address else f"tcp://{address}", timeout=timeout,
                      set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise LinkError(f"cannot reach the Dask scheduler at {address} ({type(err).__name__})",
                        "start it on one PC with `dask scheduler` and give the address it prints "
                        "(tcp://HOST:8786); is a firewall in the way?") from None


def workers_now(client) -> dict[str, Worker]:
    """Every worker the scheduler knows now, by address (asked each time: ``scheduler_info()``
    returns the client's cached copy, which its own periodic refresh keeps without workers)."""
    info = client.sync(client.scheduler.identity, n_workers=-1)["workers"]
    return {address: Worker(address, str(w.get("name", address)), w.get("host") or address.split("://")[-1]
                            .rsplit(":", 1)[0]) for address, w in info.items()}


def find(client, hosts) -> dict[str, Worker]:
    """``{host: Worker}`` for each host given by worker name, address or IP."""
    known = workers_now(client)
    found, missing = {}, []
    for host in hosts:
        match = [w for w in known.values() if host in (w.name, w.address, w.ip)]
        if len(match) != 1:
            missing.append(host)
        else:
            found[host] = match[0]
    if missing:
        names = ", ".join(sorted(w.name for w in known.values())) or "none"
        raise UsageError(f"no worker for {', '.join(missing)} in the cluster (workers now: {names})",
                         f"start it on that PC: dask worker {client.scheduler.address} --name {missing[0]} "
                         "(as root to shape its interface)")
    return found


def on(client, worker: Worker, fn, *args, timeout: float = 60.0):
    """``fn(*args)`` run on ``worker``, and its result (within ``timeout`` seconds)."""
    future = client.submit(fn, *args, workers=[worker.address], allow_other_workers=False, pure=False)
    try:
        return future.result(timeout=timeout)
    except TimeoutError:
        future.cancel()
        raise LinkError(f"{worker.name} did not answer within {timeout:g} s", "is its worker busy or gone?") from None


def stop(client, token: str):
    """The run's stop event (``distributed.Event``): set, the waits of its run give up."""
    # optional: distributed (the [cluster] extra)
    from distributed import Event
    return Event(f"wirelab-stop-{token}", client=client)


class Peer:
    """The other host of a pair, seen from the task on this one: run a program there, shape
    its interface there, let it all go."""

    def __init__(self, client, worker: Worker, token: str):
        self.client, self.worker, self.token = client, worker, token
        self._stop = stop(client, token)

    def _wait(self, future, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(timeout=POLL_S)
            except TimeoutError:
                pass
            if self._stop.is_set():
                future.cancel()
                raise LinkError(f"{what} on {self.worker.name} was stopped (its run was interrupted or a host left)",
                                "run the sweep again: it makes the missing runs")
            if time.monotonic() > deadline:
                future.cancel()
                raise LinkError(f"{what} on {self.worker.name} did not answer within {timeout:g} s",
                                "is its worker busy or gone?")

    def _submit(self, fn, *args):
        return self.client.submit(fn, *args, workers=[self.worker.address], allow_other_workers=False, pure=False)

    def exec(self, argv: list[str], *, timeout: float) -> subprocess.CompletedProcess:
        argv = [PYTHON, *argv[1:]] if argv and argv[0] == sys.executable else list(argv)
        return self._wait(self._submit(run_here, self.token, argv, timeout), timeout + 10.0, f"`{argv[0]}`")

    def call(self, fn, *args, timeout: float):
        """``fn(*args)`` run in that host's worker itself (no program started), and its result."""
        return self._wait(self._submit(fn, *args), timeout, getattr(fn, "__name__", "a call"))

    def guard(self, apply: list[list[str]], undo: list[list[str]], *, timeout: float = 30.0) -> str | None:
        """Apply on that host under a guard; the error, or None when applied."""
        return self._wait(self._submit(guard_here, self.token, apply, undo), timeout, "shaping")

    def release(self) -> None:
        """That host ends the run's programs and undoes its shaping (``release_here``); a stopped run's
        hosts were let go by whoever stopped it (and a lost one is not waited for: 30 s to connect)."""
        if not self._stop.is_set():
            self.client.run(release_here, self.token, workers=[self.worker.address], wait=True)


# -- what runs on a worker ---------------------------------------------------------------
_LOCK = threading.Lock()
_PROCS: dict[str, list[subprocess.Popen]] = {}
_GUARDS: dict[str, list] = {}


def run_here(token: str, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run ``argv`` on this host (``PYTHON`` first: this host's Python) within ``timeout``."""
    if argv and argv[0] == PYTHON:
        argv = [sys.executable, *argv[1:]]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    with _LOCK:
        _PROCS.setdefault(token, []).append(proc)
    try:
        out, err = proc.communicate(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise LinkError(f"`{' '.join(argv[:3])} ...` did not finish in {timeout:.0f} s",
                        "give it a longer timeout or make it stop by itself") from None
    finally:
        with _LOCK:
            if proc in _PROCS.get(token, []):
                _PROCS[token].remove(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def popen_here(token: str, argv: list[str], **kwargs) -> subprocess.Popen:
    """Start ``argv`` on this host in the background, ended by ``release_here(token)``."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    kwargs.setdefault("text", True)
    proc = subprocess.Popen(argv, **kwargs)
    with _LOCK:
        _PROCS.setdefault(token, []).append(proc)
    return proc


def guard_here(token: str, apply: list[list[str]], undo: list[list[str]]) -> str | None:
    """Apply ``apply`` on this host under a guard kept for ``token``; the error, or None."""
    guard = Guard(apply, undo)
    if guard.error:
        return guard.error
    with _LOCK:
        _GUARDS.setdefault(token, []).append(guard)
    return None


def release_here(token: str) -> dict:
    """End what this host keeps for ``token``: its programs killed, its shaping undone."""
    with _LOCK:
        procs, guards = _PROCS.pop(token, []), _GUARDS.pop(token, [])
    for proc in procs:
        if proc.poll() is None:
            proc.kill()         # its reader (run_here, or the engine's end_process) closes its pipes
    return {"killed": len(procs), "released": [guard.release() for guard in guards]}
