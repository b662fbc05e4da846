"""What this machine can emulate, found by trying, never assumed.

``capabilities()`` builds a scratch namespace with a veth pair, asks the
kernel for a netem qdisc, a tbf qdisc (and under it each queue discipline of
``spec.QDISCS``: pfifo, fq_codel) and an iptables ``statistic`` rule,
opens a TUN device and a packet socket, then deletes everything. Each answer
comes with the reason (the kernel's own error message when it refused).
``backend_for(specs)`` picks the best backend that can carry every spec (the
one rule: ``wirelab.link.open``, ``Testbed.up`` and a sweep's plan all ask it;
given a backend's name, it only checks that the name can run here):

* ``namespaces``: veth + tbf (+ netem) + iptables: the kernel does everything.
* ``userspace``: veth into a wirelab process (``userspace.py``): for delay,
  jitter, duplication or reordering when the kernel has no netem.
* ``loopback``: no root: UDP/TCP relays on 127.0.0.1 (``relay.py``).
"""
from __future__ import annotations

import os
import shutil
import socket
import threading
from dataclasses import dataclass, field
import fcntl
from functools import lru_cache
import struct

from ..errors import BackendUnavailableError, UsageError
from . import commands
from .netns import inside, is_root, run
from .spec import QDISCS, Direction

__all__ = ["Capabilities", "capabilities", "choose_backend", "backend_for", "BACKENDS"]

BACKENDS = ("auto", "namespaces", "userspace", "loopback")
TOOLS = ("ip", "tc", "iptables", "ethtool", "iperf3", "tshark", "dumpcap")


@dataclass(frozen=True)
class Capabilities:
    """Each feature: True/False, with the reason in ``reasons``."""
    root: bool
    netns: bool
    veth: bool
    tbf: bool
    netem: bool
    tun: bool
    packet_socket: bool
    iptables_statistic: bool
    tools: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)
    #: queue discipline → can it hold tbf's queue here (its reason in ``reasons["qdisc " + kind]``)
    qdiscs: dict = field(default_factory=dict)

    @property
    def backends(self) -> list[str]:
        """Backends that can run here, best first."""
        found = []
        if self.root and self.netns and self.veth:
            found.append("namespaces")
            if self.packet_socket:
                found.append("userspace")
        return found + ["loopback"]

    def to_dict(self) -> dict:
        return {"root": self.root, "netns": self.netns, "veth": self.veth, "tbf": self.tbf,
                "netem": self.netem, "tun": self.tun, "packet_socket": self.packet_socket,
                "iptables_statistic": self.iptables_statistic, "tools": dict(self.tools),
                "reasons": dict(self.reasons), "backends": self.backends, "qdiscs": dict(self.qdiscs)}

    def describe(self) -> str:
        lines = []
        for key in ("root", "netns", "veth", "tbf", "netem", "tun", "packet_socket", "iptables_statistic"):
            lines.append(f"{key:<19} {'yes' if getattr(self, key) else 'no ':<4} {self.reasons.get(key, '')}")
        for kind, there in self.qdiscs.items():
            lines.append(f"{'qdisc ' + kind:<19} {'yes' if there else 'no ':<4} {self.reasons.get('qdisc ' + kind, '')}")
        for tool, path in self.tools.items():
            lines.append(f"{tool:<19} {'yes' if path else 'no ':<4} {path or 'not installed'}")
        lines.append(f"backends           {', '.join(self.backends)}")
        return "\n".join(lines)


def _try(argv: list[str]) -> tuple[bool, str]:
    done = run(argv, check=False, timeout=10)
    text = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode == 0, ("ok" if done.returncode == 0 else (text[-1] if text else "refused"))


_PROBING = threading.Lock()


def capabilities() -> Capabilities:
    """Probe once per process (about 0.2 s as root); threads asking at once share one probe
    (two would race for the same scratch namespace name)."""
    with _PROBING:
        return _probe()


@lru_cache(maxsize=1)
def _probe() -> Capabilities:
    tools = {t: shutil.which(t) or shutil.which(t, path="/usr/sbin:/sbin") for t in TOOLS}
    reasons: dict[str, str] = {}
    root = is_root()
    reasons["root"] = "running as root" if root else f"euid {os.geteuid()}: namespaces and qdiscs need root"
    flags = dict(netns=False, veth=False, tbf=False, netem=False, tun=False, packet_socket=False,
                 iptables_statistic=False)
    if not root or not tools["ip"]:
        why = reasons["root"] if not root else "ip (iproute2) is not installed"
        for key in flags:
            reasons[key] = why
        return Capabilities(root, **flags, tools=tools, reasons=reasons)
    ns = f"wl-probe-{os.getpid()}-x"
    flags["netns"], reasons["netns"] = _try(commands.netns_add(ns))
    if not flags["netns"]:
        for key in set(flags) - {"netns"}:
            reasons[key] = "no network namespaces"
        return Capabilities(root, **flags, tools=tools, reasons=reasons)
    try:
        flags["veth"], reasons["veth"] = _try(commands.veth_pair(ns, "p0", ns, "p1"))
        if flags["veth"] and tools["tc"]:
            flags["netem"], reasons["netem"] = _try(commands.netem(ns, "p0", _probe_direction()))
            if not flags["netem"]:
                reasons["netem"] += " (kernel module sch_netem missing: delay goes through the userspace link)"
            _try(commands.qdisc_del(ns, "p0"))
            flags["tbf"], reasons["tbf"] = _try(commands.tbf(ns, "p1", rate_bps=1e6, burst_bytes=3028,
                                                             limit_bytes=30000))
            qdiscs = _probe_qdiscs(ns, reasons) if flags["tbf"] else {}
        if tools["iptables"]:
            flags["iptables_statistic"], reasons["iptables_statistic"] = _try(
                commands.iptables_loss(ns, "p0", 0.5))
        else:
            reasons["iptables_statistic"] = "iptables is not installed"
        with inside(ns):
            flags["tun"], reasons["tun"] = _probe_tun()
            try:
                socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
                flags["packet_socket"], reasons["packet_socket"] = True, "ok"
            except OSError as err:
                reasons["packet_socket"] = str(err)
    finally:
        run(commands.netns_del(ns), check=False)
    return Capabilities(root, **flags, tools=tools, reasons=reasons, qdiscs=locals().get("qdiscs") or {})


def _probe_qdiscs(ns: str, reasons: dict) -> dict:
    """Each queue discipline of ``QDISCS`` under a tbf on ``p0``, as ``shaping_commands`` builds it."""
    _try(commands.tbf(ns, "p0", rate_bps=1e6, burst_bytes=3028, limit_bytes=30000, handle="2:"))
    found = {}
    for kind in [q for q in QDISCS if q]:
        found[kind], reasons[f"qdisc {kind}"] = _try(commands.child_qdisc(ns, "p0", "2:1", kind, limit_packets=10))
        if not found[kind]:
            reasons[f"qdisc {kind}"] += f" (kernel module sch_{kind} missing)"
    return found


def _probe_direction():
    return Direction(delay_s=0.001)


def _probe_tun() -> tuple[bool, str]:
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
    except OSError as err:
        return False, f"/dev/net/tun: {err.strerror}"
    try:
        fcntl.ioctl(fd, 0x400454CA, struct.pack("16sH", b"wlprobe0", 0x0001 | 0x1000))  # TUNSETIFF, TUN|NO_PI
        return True, "ok"
    except OSError as err:
        return False, f"TUNSETIFF: {err.strerror}"
    finally:
        os.close(fd)


def choose_backend(spec=None, backend: str = "auto", caps: Capabilities | None = None) -> str:
    """The backend to use for ``spec``: the one asked for if it can run, else the best one."""
    if backend == "hosts":               # across machines: a sweep's own link layer (experiment/cluster.py)
        raise UsageError("the hosts backend runs across machines, not on this one alone",
                         "give the hosts and the cluster: Experiment(hosts={'a': ..., 'b': ...}, cluster=...)")
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}", f"choose one of {', '.join(BACKENDS)}")
    qdisc = getattr(spec, "qdisc", None) if spec is not None else None
    if backend == "loopback" and not qdisc:
        return backend
    caps = caps or capabilities()
    needs_delay = bool(spec is not None and spec.needs_delay_line)
    needs_userspace = bool(spec is not None and getattr(spec, "needs_userspace", False))
    if qdisc:                 # only the kernel holds another queue discipline, and only if it has it
        if backend in ("loopback", "userspace"):
            raise BackendUnavailableError(f"the {backend} backend has one kind of queue (a FIFO), not {qdisc}",
                                          "use --backend namespaces (or auto), as root")
        if not caps.qdiscs.get(qdisc):
            raise BackendUnavailableError(f"this machine cannot build a {qdisc} queue "
                                          f"({caps.reasons.get('qdisc ' + qdisc) or caps.reasons.get('root')})",
                                          "leave qdisc unset (tbf's own FIFO), or run on a kernel that has it")
        if needs_delay and not caps.netem:
            raise BackendUnavailableError(f"a {qdisc} queue with a delay needs netem, and this kernel has none",
                                          "drop the delay (the queue's delay is what is measured), or leave qdisc unset")
        backend = "namespaces"
    if backend == "auto":
        if "namespaces" in caps.backends and (caps.netem or not needs_delay) and not needs_userspace:
            return "namespaces"
        if "userspace" in caps.backends:
            return "userspace"
        return "loopback"
    if backend not in caps.backends:
        raise BackendUnavailableError(f"the {backend} backend cannot run here ({caps.reasons['root'] if not caps.root else caps.reasons['netns']})",
                                      "use --backend loopback, or run as root")
    if backend == "namespaces" and needs_userspace:
        raise BackendUnavailableError("the namespaces backend loses each IP fragment alone (tc and iptables "
                                      "see fragments), not whole datagrams",
                                      "use --backend userspace (or auto), or loss_unit='packet'")
    if backend == "namespaces" and needs_delay and not caps.netem:
        raise BackendUnavailableError("the namespaces backend needs netem for delay, jitter, duplication "
                                      f"or reordering, and this kernel has none ({caps.reasons['netem']})",
                                      "use --backend userspace (or auto)")
    return backend


def backend_for(specs, requested: str = "auto", caps: Capabilities | None = None) -> str:
    """The one backend that can carry every spec of a sweep or a topology (so runs never mix kinds
    of link): the spec that needs the most (loss by whole datagrams, then a delay line) decides.
    ``requested`` other than ``auto`` is only checked (``choose_backend``)."""
    specs = [s for s in specs if s is not None]
    probe = next((s for s in specs if getattr(s, "qdisc", None)), None) or \
        next((s for s in specs if getattr(s, "needs_userspace", False)), None) or \
        next((s for s in specs if s.needs_delay_line), specs[0] if specs else None)
    return choose_backend(probe, requested, caps)
