"""A room of PCs on one machine, to practise (and test) labs across hosts: each host a network
namespace plugged into one switch and running a real ``dask worker``; the scheduler on the switch.

    with Room(["a1", "b1"]) as room:                    # needs root
        exp = Experiment("rates", rate=["1mbit", "5mbit"], hosts={"a": "a1", "b": "b1"},
                         cluster=room.address)          # tcp://10.231.7.2:38211, the scheduler

Layout (one /24 a room, one no route here uses): this machine is .1 (a veth into the switch,
so a notebook here reaches the scheduler), the switch's namespace ``wl-<name>-<pid>-sw`` holds
the bridge and the scheduler at .2, and each host ``wl-<name>-<pid>-<host>`` has ``eth0`` at
.11, .12, ... and runs ``dask worker`` there (``--no-nanny``: one process a host, so pulling a
PC's plug is one kill: ``room.kill("b1")``). A host named in ``non_root`` runs its worker as
``nobody``, as on a PC where the student has no sudo.

These are Dask's own programs started as the README tells a lab room to start them (the
scheduler and a worker per PC): no scheduler of our own. The namespaces are named like
testbeds', with a state file, so a room whose owner died is removed by ``cleanup.reap``
(every new testbed calls it) or ``wirelab testbed down``; ``close()`` removes it at once.
"""
from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..errors import LinkError, NeedsRootError, UsageError
from . import cleanup, commands
from .netns import is_root, run
from .workers import workers_now

__all__ = ["Room", "START_TIMEOUT_S"]

#: Seconds the scheduler and the workers may take to start (each imports Dask: ~2 s on 2 cores).
START_TIMEOUT_S = 60.0
FIRST_HOST = 11


class Room:
    """Hosts on one switch, each a Dask worker (see the module docstring)."""

    def __init__(self, hosts=("a1", "b1"), *, name: str = "room", non_root=(), nthreads: int = 1):
        hosts = list(hosts)
        if not hosts or len(set(hosts)) != len(hosts) or any(h in ("sw",) for h in hosts):
            raise UsageError(f"a room needs distinct host names, not {hosts}", "e.g. Room(['a1', 'b1'])")
        if not cleanup.valid_name(name):
            raise UsageError(f"room name {name!r} is not lowercase letters, digits, - or _", "e.g. room")
        self.name, self.hosts, self.non_root, self.nthreads = name, hosts, set(non_root), nthreads
        self.id = cleanup.testbed_id(name, os.getpid())
        self.switch = f"{self.id}-sw"
        self.namespaces = {h: f"{self.id}-{h}" for h in hosts}
        self.subnet: ipaddress.IPv4Network | None = None
        self.address: str | None = None          # the scheduler's, once up
        self.workers: dict[str, subprocess.Popen] = {}
        self._scheduler: subprocess.Popen | None = None
        self._dir: Path | None = None
        self._created = time.time()
        self.log: list[str] = []

    # -- life cycle ---------------------------------------------------------------------
    def __enter__(self) -> "Room":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.close()

    def up(self) -> "Room":
        if not is_root():
            raise NeedsRootError("a room of hosts (network namespaces)", "run it with sudo")
        cleanup.reap(log=self.log)
        self._dir = Path(tempfile.mkdtemp(prefix=f"wirelab-{self.id}-"))
        os.chmod(self._dir, 0o1777)          # a worker run as nobody keeps its scratch space here
        try:
            self.subnet = _free_subnet()
            self._save_state()
            self._build()
            self._start()
            self._save_state()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop every worker and the scheduler, remove the namespaces (safe to call twice)."""
        # the workers first (each leaves the scheduler and its guards remove their tc), then the scheduler
        for group in (list(self.workers.values()), [self._scheduler] if self._scheduler else []):
            for proc in group:
                if proc.poll() is None:
                    proc.terminate()
            for proc in group:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        self.workers.clear()
        self._scheduler = None
        cleanup.remove({"id": self.id, "namespaces": [self.switch, *self.namespaces.values()]}, log=self.log)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # -- building -----------------------------------------------------------------------
    def ip(self, host: str) -> str:
        """The address of ``host`` (``"sw"``: the scheduler's; ``"here"``: this machine's)."""
        index = {"here": 1, "sw": 2}.get(host)
        if index is None:
            index = FIRST_HOST + self.hosts.index(self._host(host))
        return str(self.subnet[index])

    def _host(self, host: str) -> str:
        if host not in self.namespaces:
            raise UsageError(f"no host {host!r} in this room", f"hosts: {', '.join(self.hosts)}")
        return host

    def _run(self, argv: list[str]) -> None:
        run(argv, log=self.log)

    def _build(self) -> None:
        prefix = self.subnet.prefixlen
        sw = self.switch
        for ns in (sw, *self.namespaces.values()):
            self._run(commands.netns_add(ns))
            self._run(commands.link_up(ns, "lo"))
            self._run(commands.no_ipv6(ns))
        self._run(commands.bridge_add(sw, "br0"))
        self._run(commands.addr_add(sw, "br0", f"{self.ip('sw')}/{prefix}"))
        self._run(commands.link_up(sw, "br0"))
        here = f"wr{os.getpid()}"[:15]          # this machine's cable into the switch
        self._run(commands.veth_pair(sw, "uplink", sw, here))
        self._run(commands.link_master(sw, "uplink", "br0"))
        self._run(commands.link_up(sw, "uplink"))
        self._run(commands.link_to_root(sw, here))
        self._run(["ip", "addr", "add", f"{self.ip('here')}/{prefix}", "dev", here])
        self._run(["ip", "link", "set", "dev", here, "up"])
        for host, ns in self.namespaces.items():
            port = f"p-{host}"
            self._run(commands.veth_pair(ns, "eth0", sw, port))
            self._run(commands.link_master(sw, port, "br0"))
            self._run(commands.link_up(sw, port))
            self._run(commands.addr_add(ns, "eth0", f"{self.ip(host)}/{prefix}"))
            self._run(commands.link_up(ns, "eth0"))

    def _start(self) -> None:
        info = self._dir / "scheduler.json"
        self._scheduler = self._spawn(self.switch, "scheduler", [
            "scheduler", "--host", self.ip("sw"), "--port", "0", "--no-dashboard", "--scheduler-file", str(info)])
        deadline = time.monotonic() + START_TIMEOUT_S
        while not info.is_file():
            self._alive(self._scheduler, "the scheduler", deadline)
        self.address = json.loads(info.read_text())["address"]
        for host, ns in self.namespaces.items():
            self.start_worker(host)
        self.wait_for(self.hosts, deadline)

    def start_worker(self, host: str) -> subprocess.Popen:
        """Start (or start again) the ``dask worker`` of ``host``; ``wait_for`` waits for it."""
        scratch = self._dir / host
        scratch.mkdir(exist_ok=True)
        os.chmod(scratch, 0o1777)
        proc = self._spawn(self.namespaces[self._host(host)], host, [
            "worker", self.address, "--name", host, "--host", self.ip(host),
            "--nthreads", str(self.nthreads), "--no-nanny", "--no-dashboard", "--local-directory", str(scratch)],
            as_nobody=host in self.non_root)
        self.workers[host] = proc
        return proc

    def _spawn(self, ns: str, what: str, argv: list[str], *, as_nobody: bool = False) -> subprocess.Popen:
        """``dask ARGV`` (the command the README gives a lab room) inside ``ns``."""
        user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if as_nobody else []
        full = commands.netns_exec(ns, [*user, *_dask(), *argv])
        self.log.append(" ".join(full))
        log = open(self._dir / f"{what}.log", "ab")
        try:
            return subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        finally:
            log.close()

    def _alive(self, proc: subprocess.Popen, what: str, deadline: float) -> None:
        """Poll step of a wait: fail at once if ``proc`` ended, or at ``deadline``."""
        name = "scheduler" if proc is self._scheduler else next(h for h, p in self.workers.items() if p is proc)
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = (self._dir / f"{name}.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise LinkError(f"{what} of the room did not start ({' | '.join(tail) or 'no output'})",
                            "see the log above; is Dask installed (make setup)?")
        time.sleep(0.05)

    def wait_for(self, hosts, deadline: float | None = None) -> None:
        """Poll the scheduler until the workers of ``hosts`` have joined (or fail at the deadline)."""
        from distributed import Client          # the cluster path only: Dask is heavy to import

        deadline = deadline or time.monotonic() + START_TIMEOUT_S
        with Client(self.address, timeout=max(deadline - time.monotonic(), 1.0)) as client:
            while True:
                names = {w.name for w in workers_now(client).values()}
                if set(hosts) <= names:
                    return
                for host in set(hosts) - names:
                    self._alive(self.workers[host], f"the worker of {host}", deadline)

    # -- using it -----------------------------------------------------------------------
    def namespace(self, host: str) -> str:
        return self.namespaces[self._host(host)]

    def kill(self, host: str, sig: int = signal.SIGKILL) -> None:
        """Pull the plug of ``host``: its worker dies at once (its guards then remove their tc)."""
        proc = self.workers[self._host(host)]
        if proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(timeout=10)

    def qdisc(self, host: str) -> list[dict]:
        """The qdiscs on ``host``'s eth0 (``tc -j qdisc show``), read from outside the worker."""
        done = run(["tc", "-n", self.namespace(host), "-j", "qdisc", "show", "dev", "eth0"])
        return json.loads(done.stdout or "[]")

    def _save_state(self) -> None:
        cleanup.write_state({"id": self.id, "name": self.name, "owner": os.getpid(),
                             "owner_start": cleanup.process_start(os.getpid()), "backend": "room", "up": True,
                             "namespaces": [self.switch, *self.namespaces.values()],
                             "hosts": dict(self.namespaces), "subnet": str(self.subnet), "created": self._created,
                             "scratch": str(self._dir) if self._dir else None,
                             "link": f"hosts {', '.join(self.hosts)} on {self.subnet}, scheduler "
                                     f"{self.address or '(starting)'}"})


def _dask() -> list[str]:
    """The ``dask`` command of this Python's environment (beside it), else through Python itself."""
    script = Path(sys.executable).with_name("dask")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "dask"]


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.231.N.0/24 that no route of this machine touches (N from this process's id)."""
    done = subprocess.run(["ip", "-j", "-4", "route", "show", "table", "all"], capture_output=True, text=True,
                          timeout=10)
    taken = [ipaddress.ip_network(r["dst"], strict=False) for r in json.loads(done.stdout or "[]")
             if r.get("dst") and r["dst"] not in ("default",) and r["dst"][0].isdigit()]
    start = os.getpid() % 250
    for step in range(250):
        net = ipaddress.ip_network(f"10.231.{(start + step) % 250 + 1}.0/24")
        if not any(net.overlaps(t) for t in taken):
            return net
    raise LinkError("no free 10.231.N.0/24 for a room", "remove old rooms: wirelab testbed down")
