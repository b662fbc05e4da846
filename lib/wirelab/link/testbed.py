"""Act on a topology: build it in network namespaces, run things on its hosts, tear it down.

    >>> with Testbed(two_hosts(LinkSpec.parse(rate="10mbit", delay="20ms"))) as tb:  # doctest: +SKIP
    ...     tb.exec("b", ["iperf3", "-s", "-1", "-D"])
    ...     print(tb.exec("a", ["iperf3", "-c", tb.address("b"), "-t", "3"]).stdout)

Each host is a namespace ``wl-<name>-<pid>-<host>`` with one veth per link
(``to-<peer>``), offloads off, IPv6 off, static ARP entries. The link itself:

* ``namespaces`` backend: the two veth ends are joined directly; rate by tbf
  on each sender, delay/jitter/dup/reorder by netem where the kernel has it,
  loss by netem or by ``iptables -m statistic`` at the receiver.
* ``userspace`` backend: each veth ends in a ``-wire`` namespace where one
  wirelab process per testbed (``userspace.py``) forwards the frames,
  applying rate, queue, delay, jitter, loss, duplication and reordering.

Teardown always runs: on leaving the ``with`` block, on an exception, on
Ctrl-C and on SIGTERM/SIGHUP (turned into KeyboardInterrupt while the
testbed is up); a testbed whose owner died is removed by ``cleanup.reap``.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

from ..errors import LinkError, NeedsRootError, UsageError
from . import cleanup, commands, renew
from .detect import backend_for, capabilities
from .netns import inside, run
from .spec import LinkSpec
from .topology import Topology, two_hosts

__all__ = ["Testbed"]

READY_TIMEOUT_S = 15.0


class Testbed:
    """A topology brought to life; use it as a context manager."""

    __test__ = False   # not a pytest test class, despite the name

    def __init__(self, topology: Topology | LinkSpec | None = None, *, name: str = "tb",
                 backend: str = "auto", seed: int | None = None, owner_pid: int | None = None,
                 extra_state: dict | None = None):
        if topology is None or isinstance(topology, LinkSpec):
            topology = two_hosts(topology)
        if not cleanup.valid_name(name):
            raise UsageError(f"testbed name {name!r} is not lowercase letters, digits, - or _",
                             "use a short name like demo or lab3")
        if "wire" in topology.hosts:
            raise UsageError("'wire' is reserved for the userspace link's namespace", "rename that host")
        self.topology = topology
        self.name = name
        self.requested_backend = backend
        self.backend: str | None = None
        self.seed = seed
        self.owner_pid = owner_pid or os.getpid()
        self.id = cleanup.testbed_id(name, self.owner_pid)
        self.namespaces = {host: f"{self.id}-{host}" for host in topology.hosts}
        self.wire_ns = f"{self.id}-wire"
        self.log: list[str] = []            # every command run, in order
        self.tc_commands: list[str] = []    # the commands that shape the links (or would, with netem)
        self.link_counters: dict | None = None
        self.netem = False
        self._extra_state = extra_state or {}
        self._link_proc: subprocess.Popen | None = None
        self._procs: list[subprocess.Popen] = []
        self._lasting: list[subprocess.Popen] = []   # popen(lasting=True): not stopped by renew()
        self._shaping_argvs: list[list[str]] = []    # the tc/iptables commands that shaped it
        self._old_handlers: dict = {}
        self._asking = threading.Lock()              # one question to the link process at a time
        self._up = False
        self._made_in = os.getpid()         # a forked copy of this process must not tear it down

    # -- life cycle ---------------------------------------------------------------------
    def __enter__(self) -> "Testbed":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> "Testbed":
        caps = capabilities()
        self.backend = backend_for([link.spec for link in self.topology.links], self.requested_backend, caps)
        if self.backend == "loopback":
            fix = "without root use wirelab.link.UdpRelay / TcpRelay (the loopback backend)"
            if not caps.root:
                raise NeedsRootError("a testbed of hosts (network namespaces)", f"run with sudo, or {fix}")
            raise UsageError("the loopback backend has no hosts to build", fix)
        self.netem = caps.netem
        cleanup.reap(log=self.log)
        if self.id in cleanup.testbeds():
            raise LinkError(f"testbed {self.id} already exists", f"run `wirelab testbed down {self.name}`")
        self._install_signal_handlers()
        try:
            self._save_state()
            self._build()
            self._up = True
            self._save_state()
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Remove everything this testbed made; safe to call twice. A second Ctrl-C
        cannot interrupt it halfway (SIGINT/SIGTERM wait until it is done). In a copy of the
        process made by fork it does nothing: the original owns the namespaces."""
        if os.getpid() != self._made_in:
            return
        held = {}
        if threading.current_thread() is threading.main_thread():
            held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._teardown()
        finally:
            for sig, handler in held.items():
                signal.signal(sig, handler)
            self._restore_signal_handlers()

    def _teardown(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=3)
        self._procs.clear()
        if self._link_proc is not None:
            self._stop_link()
        all_ns = list(self.namespaces.values()) + ([self.wire_ns] if self.backend == "userspace" else [])
        cleanup.remove({"id": self.id, "namespaces": all_ns}, log=self.log)
        self._up = False

    # -- building -----------------------------------------------------------------------
    def _run(self, argv: list[str]) -> subprocess.CompletedProcess:
        return run(argv, log=self.log)

    def _build(self) -> None:
        userspace = self.backend == "userspace"
        spaces = list(self.namespaces.values()) + ([self.wire_ns] if userspace else [])
        for ns in spaces:
            self._run(commands.netns_add(ns))
            self._run(commands.link_up(ns, "lo"))
            self._run(commands.no_ipv6(ns))
        pairs = []
        for link in self.topology.links:
            a_ns, b_ns = self.namespaces[link.a], self.namespaces[link.b]
            a_dev, b_dev = f"to-{link.b}", f"to-{link.a}"
            ends = [(a_ns, a_dev), (b_ns, b_dev)]
            if userspace:
                wa, wb = f"{link.a}-{link.b}", f"{link.b}-{link.a}"
                self._run(commands.veth_pair(a_ns, a_dev, self.wire_ns, wa))
                self._run(commands.veth_pair(b_ns, b_dev, self.wire_ns, wb))
                ends += [(self.wire_ns, wa), (self.wire_ns, wb)]
                pairs.append({"a": link.a, "b": link.b, "a_dev": wa, "b_dev": wb, "spec": link.spec.to_dict()})
            else:
                self._run(commands.veth_pair(a_ns, a_dev, b_ns, b_dev))
            for ns, dev in ends:
                self._run(commands.link_mtu(ns, dev, link.spec.mtu))
                self._run(commands.offloads_off(ns, dev))
                self._run(commands.link_up(ns, dev))
            self._run(commands.addr_add(a_ns, a_dev, link.cidr(link.a)))
            self._run(commands.addr_add(b_ns, b_dev, link.cidr(link.b)))
            self._run(commands.neigh_permanent(a_ns, a_dev, link.address(link.b), self._mac(b_ns, b_dev)))
            self._run(commands.neigh_permanent(b_ns, b_dev, link.address(link.a), self._mac(a_ns, a_dev)))
            argvs = self._shaping(link)
            self.tc_commands += [" ".join(a) for a in argvs]
            if not userspace:
                for argv in argvs:
                    self._run(argv)
                self._shaping_argvs += argvs
        if userspace:
            self._start_link(pairs)

    def _shaping(self, link) -> list[list[str]]:
        """The commands that shape ``link`` (both directions); the userspace link applies them itself."""
        a_ns, b_ns = self.namespaces[link.a], self.namespaces[link.b]
        ends = [(a_ns, f"to-{link.b}"), (b_ns, f"to-{link.a}")]
        argvs = []
        for direction, (s_ns, s_dev), (r_ns, r_dev) in ((link.spec.forward, ends[0], ends[1]),
                                                        (link.spec.reverse, ends[1], ends[0])):
            argvs += commands.shaping_commands(link.spec, direction, sender_ns=s_ns, sender_dev=s_dev,
                                               receiver_ns=r_ns, receiver_dev=r_dev,
                                               netem_available=self.netem or self.backend == "userspace")
        return argvs

    def _mac(self, ns: str, dev: str) -> str:
        return json.loads(self._run(commands.link_show_json(ns, dev)).stdout)[0]["address"]

    def _start_link(self, pairs: list[dict]) -> None:
        config = {"owner": self.owner_pid, "seed": self.seed, "pairs": pairs, "control": True}
        argv = commands.netns_exec(self.wire_ns, [sys.executable, "-m", "wirelab.link.userspace",
                                                  json.dumps(config)])
        self.log.append(" ".join(argv[:6]) + " CONFIG")
        self._link_proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._save_state()
        ready, _, _ = select.select([self._link_proc.stdout], [], [], READY_TIMEOUT_S)
        line = self._link_proc.stdout.readline() if ready else ""
        if line.strip() != "ready":
            self._link_proc.kill()
            err = self._link_proc.communicate(timeout=5)[1].strip().splitlines()
            raise LinkError(f"the userspace link did not start: {err[-1] if err else 'no answer'}",
                            f"run `{' '.join(argv[:6])} '<config>'` by hand to see why")

    def _ask_link(self, command: str, timeout: float = 5.0) -> dict:
        """One command to the userspace link process, its one-line JSON answer."""
        proc = self._link_proc
        if proc is None:
            raise LinkError("the userspace link process is gone", "open a new link")
        with self._asking:                # a live plot's sampler may ask while a run ends
            try:
                proc.stdin.write(command + "\n")
                proc.stdin.flush()
            except (OSError, ValueError):
                raise LinkError("the userspace link process is gone", "open a new link") from None
            ready, _, _ = select.select([proc.stdout], [], [], timeout)
            line = proc.stdout.readline() if ready else ""
        if not line.startswith("{"):
            raise LinkError(f"the userspace link did not answer `{command}` within {timeout:g} s",
                            "open a new link")
        return json.loads(line)

    def counters(self) -> dict | None:
        """The userspace link's counters now (since it started or was last renewed); after
        teardown, its final ones; None on the kernel backend."""
        if self._link_proc is not None and self._link_proc.poll() is None:
            try:
                return self._ask_link("counters")
            except LinkError:            # it no longer answers: what it said last, if anything
                pass
        return self.link_counters

    def queue(self) -> dict | None:
        """The userspace link's queues now, per direction (``userspace._queues``); None on the
        kernel backend (``link.queues`` reads tbf there) or once the link process is gone."""
        if self._link_proc is None or self._link_proc.poll() is not None:
            return None
        try:
            return self._ask_link("queue", timeout=1.0)
        except LinkError:
            return None

    def _stop_link(self) -> None:
        proc, self._link_proc = self._link_proc, None
        if proc.poll() is None:
            proc.terminate()
        try:
            out, _ = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate(timeout=5)
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                self.link_counters = json.loads(line)
                break

    def _save_state(self) -> None:
        all_ns = list(self.namespaces.values()) + ([self.wire_ns] if self.backend == "userspace" else [])
        cleanup.write_state({
            "id": self.id, "name": self.name, "owner": self.owner_pid,
            "owner_start": cleanup.process_start(self.owner_pid), "backend": self.backend,
            "namespaces": all_ns, "hosts": dict(self.namespaces), "up": self._up,
            "link_pid": self._link_proc.pid if self._link_proc else None,
            "topology": self.topology.name, "interfaces": self.topology.table(),
            "link": "; ".join(f"{l.a}–{l.b} {l.spec.describe()}" for l in self.topology.links),
            "created": time.time(), **self._extra_state})

    # -- signals ------------------------------------------------------------------------
    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[sig] = signal.signal(sig, cleanup.interrupt_in(os.getpid()))
            except (ValueError, OSError):
                pass

    def _restore_signal_handlers(self) -> None:
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()

    # -- using it -----------------------------------------------------------------------
    @property
    def hosts(self) -> tuple[str, ...]:
        return self.topology.hosts

    def namespace(self, host: str) -> str:
        if host not in self.namespaces:
            raise UsageError(f"no host {host!r} in this testbed", f"hosts: {', '.join(self.hosts)}")
        return self.namespaces[host]

    def address(self, host: str, peer: str | None = None) -> str:
        """``host``'s address (on its link towards ``peer`` when it has several)."""
        return self.topology.address(host, peer)

    def exec(self, host: str, argv: list[str], *, timeout: float = 60.0,
             check: bool = False) -> subprocess.CompletedProcess:
        """Run ``argv`` on ``host`` and wait (at most ``timeout``) for it."""
        full = commands.netns_exec(self.namespace(host), argv)
        try:
            return subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=check)
        except subprocess.TimeoutExpired:
            raise LinkError(f"`{' '.join(argv)}` on {host} did not finish in {timeout:g} s",
                            "give it a longer timeout or make it stop by itself") from None

    def popen(self, host: str, argv: list[str], *, lasting: bool = False, **kwargs) -> subprocess.Popen:
        """Start ``argv`` on ``host`` in the background; it is stopped at teardown, and by
        ``renew()`` unless ``lasting`` (a helper meant to serve every run on this testbed)."""
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        kwargs.setdefault("text", True)
        proc = subprocess.Popen(commands.netns_exec(self.namespace(host), argv), **kwargs)
        self._procs.append(proc)
        if lasting:
            self._lasting.append(proc)
        return proc

    def renew(self, seed: int | None = None, topology: Topology | None = None) -> dict:
        """Make this testbed, which carried a run, ready for the next (with ``seed``) as a
        freshly built one, shaped anew for ``topology`` if given (same hosts and cables), and
        check it: ``wirelab.link.renew`` says what is done. Returns what was read back (per
        host, its qdiscs); raises ``LinkError`` when the testbed is not in that state."""
        return renew.renew(self, seed, topology)

    @contextmanager
    def inside(self, host: str):
        """Sockets made in this block live on ``host`` (this thread enters its namespace)."""
        with inside(self.namespace(host)):
            yield

    def describe(self) -> dict:
        """What was built and how: for a result's metadata and for students."""
        userspace = self.backend == "userspace"
        return {
            "testbed": self.id, "backend": self.backend, "topology": self.topology.name,
            "hosts": {h: {"namespace": ns, "addresses": [r["address"] for r in self.topology.table()
                                                         if r["host"] == h]}
                      for h, ns in self.namespaces.items()},
            "links": [{"a": l.a, "b": l.b, "subnet": l.subnet, "spec": l.spec.to_dict(),
                       "describe": l.spec.describe()} for l in self.topology.links],
            "emulated_by": ("wirelab userspace link (python -m wirelab.link.userspace), packet sockets "
                            f"on veths, charges IP packet + {self.topology.links[0].spec.l2_bytes} B per frame"
                            if userspace else
                            "Linux qdiscs (tbf" + (", netem" if self.netem else "") + ") and iptables statistic"),
            "tc_commands": list(self.tc_commands),
            "tc_note": ("equivalent tc/iptables commands on a kernel with netem; the userspace link "
                             "applied them instead" if userspace else "commands run"),
            "offloads": "tso gso gro tx-checksum off", "ipv6": "off", "arp": "static entries",
            "kernel": os.uname().release, "congestion_control": self._sysctl("net/ipv4/tcp_congestion_control"),
        }

    def _sysctl(self, key: str) -> str | None:
        """A network sysctl as host ``a`` (the first host) sees it, e.g. the default congestion control."""
        if not self._up:
            return None
        try:
            with self.inside(self.hosts[0]):
                return open(f"/proc/sys/{key}").read().strip()
        except OSError:
            return None

