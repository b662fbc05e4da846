"""One entry to every backend: ``wirelab.link.open(spec)`` → a link ready for a run.

    with wirelab.link.open(LinkSpec.parse(rate="10mbit", delay="20ms")) as link:
        with link.inside("b"):
            server = socket.create_server((link.address("b"), 0))   # a server on host b
        host, port = link.reach(server.getsockname()[1], "tcp")    # where host a sends
        link.exec("a", ["iperf3", "-c", host, "-p", str(port)], timeout=30)
        link.describe()["tc_commands"]                             # what shapes it

The backend is chosen here, once (``capabilities.backend_for``: namespaces,
userspace link, or loopback relays; a sweep's plan asks the same rule and passes its
answer, which is then only checked), and whoever runs programs across the link never
looks at it again. Every kind of link offers the same things: two hosts ``a``
and ``b`` with an address each, ``reach(port)`` (the address host ``a``
sends to for a server on host ``b``), ``exec``/``popen`` on either host,
``inside(host)`` for sockets made in this process, ``capture_point(host)``
(where dumpcap sees what that host receives), ``unsupported(proto)`` (what
it cannot emulate, in words), ``describe()``, and ``renew(seed, spec)`` (ready it
for another run as a new link would be, of the same or of another spec with the same
MTU, where the backend can: namespaces and userspace).

* **namespaces / userspace**: a two-host ``Testbed``; ``reach`` is host b's
  own address. ``describe()["tc_commands"]`` are the commands that ran, or
  (userspace link) the ones it stands for.
* **loopback** (no root): both hosts are 127.0.0.1; ``reach`` puts a relay of
  ``relay.py`` in front of the port (a UDP relay for udp, a TCP relay for
  tcp, both on one port number when asked for both, as iperf3 needs).
  With nothing to shape there is no relay at all.
"""
from __future__ import annotations

import socket
import subprocess
from contextlib import nullcontext
from dataclasses import replace

from ..errors import LinkError, TransferError, UsageError
from . import commands, reshape
from .detect import backend_for
from .cleanup import end_process
from .relay import TcpRelay, UdpRelay
from .spec import LinkSpec
from .testbed import Testbed
from .topology import Topology, two_hosts

__all__ = ["open_link", "wire_of", "carriage", "stands_for", "OpenLink", "TestbedLink", "LoopbackLink",
           "LOOPBACK"]

LOOPBACK = "127.0.0.1"
HOSTS = ("a", "b")


def open_link(spec: LinkSpec | Topology | None = None, *, backend: str = "auto", seed: int | None = None,
              name: str = "run", extra_state: dict | None = None) -> "OpenLink":
    """Build the link ``spec`` describes on ``backend`` (``auto``: the best this machine has).
    ``spec`` may also be a ``Topology`` (e.g. ``broker_network``: namespaces only).
    Use the result as a context manager: leaving it removes everything it made."""
    topology = spec if isinstance(spec, Topology) else two_hosts(spec if spec is not None else LinkSpec())
    if spec is not None and not isinstance(spec, (LinkSpec, Topology)):
        raise UsageError(f"link.open needs a LinkSpec or a Topology, not {type(spec).__name__}",
                         "e.g. link.open(LinkSpec.parse(rate='10mbit'))")
    chosen = backend_for([l.spec for l in topology.links], backend)
    if chosen != "loopback":
        return TestbedLink(topology, chosen, seed=seed, name=name, extra_state=extra_state)
    if topology.hosts != HOSTS:
        raise UsageError(f"the loopback backend has one host, it cannot build {topology.name}",
                         "run as root (sudo) for a topology of namespaces")
    return LoopbackLink(topology.links[0].spec, seed=seed)


class OpenLink:
    """What every backend offers (see the module docstring). Subclasses fill it in."""

    backend: str = ""
    hosts = HOSTS
    #: Do all servers on host b share one bottleneck (one queue per direction)? Flows that
    #: compete for a link need it (``experiment/flows.py``).
    one_queue = True
    #: Do both hosts read one clock (namespaces and loopback: one machine)? Then one-way
    #: delay is receive − send time, with no offset to estimate.
    one_clock = True

    def __init__(self, spec: LinkSpec):
        self.spec = spec

    @property
    def wire(self) -> str:
        """How this link charges bytes, for the model (see ``wire_of``)."""
        return wire_of(self.spec)

    def carriage(self, proto: str) -> str:
        """How this link carries ``proto`` across, for the model (see ``carriage``)."""
        return carriage(self.backend, proto)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:             # pragma: no cover - every subclass has one
        raise NotImplementedError

    def _host(self, host: str) -> str:
        if host not in self.hosts:
            raise UsageError(f"no host {host!r} on this link", "use 'a' (sender side) or 'b' (receiver side)")
        return host

    #: Can ``renew`` make this kind of link ready for another run (see there)?
    renewable = False

    def renew(self, seed: int | None = None, spec: LinkSpec | None = None) -> dict | None:
        """Make this open link, which carried a run, ready for another run (with ``seed``) as a
        freshly opened one would be, and return what was read back to check it; None when this
        kind of link cannot (then open a new one). A sweep keeps its link this way. ``spec``:
        shaped anew as that spec says (where ``can_reshape(spec)``), e.g. the next rate of a sweep."""
        return None

    def can_reshape(self, spec: LinkSpec) -> bool:
        """Can ``renew(seed, spec)`` give this link ``spec`` in place (same hosts, same MTU)?"""
        return False

    def free_port(self, host: str = "b", kind: str = "tcp") -> int:
        """A port nothing uses on ``host`` right now (for a server about to start there)."""
        with self.inside(host):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM) as s:
                s.bind((self.address(host), 0))
                return s.getsockname()[1]

    def run(self, host: str, argv: list[str], *, timeout: float, what: str, fix: str) -> subprocess.CompletedProcess:
        """``exec`` for programs whose lateness is the transfer's failure: a timeout is a
        ``TransferError`` naming ``what`` did not finish, and ``fix``."""
        try:
            return self.exec(host, argv, timeout=max(timeout, 0.1))
        except LinkError:
            raise TransferError(f"{what} did not finish within the {timeout:.0f} s left", fix) from None


class TestbedLink(OpenLink):
    """Two hosts in network namespaces: kernel qdiscs, or wirelab's userspace link."""

    __test__ = False

    def __init__(self, topology: Topology, backend: str, *, seed: int | None = None, name: str = "run",
                 extra_state: dict | None = None):
        super().__init__(topology.links[0].spec)
        self.hosts = topology.hosts
        self.testbed = Testbed(topology, name=name, backend=backend, seed=seed, extra_state=extra_state)
        self.testbed.up()
        self.backend = self.testbed.backend
        self._final: dict | None = None

    def close(self) -> None:
        """Remove the testbed; ``describe()`` still answers, with the link's final counters."""
        if self._final is None:
            final = self.describe()
            self.testbed.down()
            final["counters"] = self.testbed.link_counters
            self._final = final

    @property
    def renewable(self) -> bool:
        return self.backend in ("namespaces", "userspace")

    def renew(self, seed: int | None = None, spec: LinkSpec | None = None) -> dict | None:
        """``Testbed.renew``: the kernel backend's loss draws come from the kernel's own
        unseeded random numbers (``seed`` changes nothing there, on a new link or this one);
        the userspace link starts its draws again from ``seed`` and its counters from zero.
        ``spec``: the link shaped anew for it (``can_reshape``), e.g. another rate, delay or loss."""
        if self._final is not None or not self.renewable:
            return None
        if spec is None or spec == self.spec:
            return self.testbed.renew(seed)
        if not self.can_reshape(spec):
            return None
        found = self.testbed.renew(seed, self._reshaped(spec))
        self.spec = spec
        return found

    def can_reshape(self, spec: LinkSpec) -> bool:
        topology = self.testbed.topology
        return (self._final is None and self.renewable and isinstance(spec, LinkSpec)
                and len(topology.links) == 1
                and reshape.refusal(topology, self._reshaped(spec), backend=self.backend,
                                    netem=self.testbed.netem) is None)

    def _reshaped(self, spec: LinkSpec) -> Topology:
        """This link's topology with its one cable given ``spec``."""
        topology = self.testbed.topology
        return replace(topology, links=(replace(topology.links[0], spec=spec),))

    def address(self, host: str, peer: str | None = None) -> str:
        """``host``'s address (on its link towards ``peer`` when it has several)."""
        return self.testbed.address(self._host(host), peer)

    def reach(self, port: int, kind="tcp") -> tuple[str, int]:
        return self.address("b", "a" if len(self.hosts) > 2 else None), int(port)

    def inside(self, host: str):
        return self.testbed.inside(self._host(host))

    def exec(self, host: str, argv: list[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return self.testbed.exec(self._host(host), argv, timeout=timeout)

    def popen(self, host: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return self.testbed.popen(self._host(host), argv, **kwargs)

    def capture_point(self, host: str = "b", peer: str | None = None) -> tuple[str, list[str]]:
        link = self.testbed.topology.link(self._host(host), peer or ("a" if host == "b" else None))
        return f"to-{link.peer(host)}", commands.netns_exec(self.testbed.namespace(host), [])

    def unsupported(self, proto: str) -> str | None:
        return None                       # the kernel (or the userspace link) does it all

    def describe(self) -> dict:
        if self._final is not None:
            return dict(self._final)
        info = self.testbed.describe()
        named = len(info["links"]) > 1                  # several links: say which is which
        return {"backend": info["backend"],
                "link": "; ".join((f"{l['a']}–{l['b']}: " if named else "") + l["describe"]
                                  for l in info["links"]),
                "hosts": info["hosts"], "tc_commands": info["tc_commands"],
                "tc_note": info["tc_note"], "emulated_by": info["emulated_by"], "testbed": info["testbed"],
                "congestion_control": info["congestion_control"], "counters": self.testbed.counters()}


class LoopbackLink(OpenLink):
    """Both hosts are this machine (127.0.0.1); relays in front of a port apply the spec."""

    backend = "loopback"

    def __init__(self, spec: LinkSpec, *, seed: int | None = None):
        super().__init__(spec)
        self.seed = seed
        self.relays: dict[tuple[str, int], object] = {}
        self._procs: list[subprocess.Popen] = []

    def close(self) -> None:
        for proc in self._procs:
            end_process(proc)
        self._procs.clear()
        for relay in self.relays.values():
            relay.close()

    def address(self, host: str) -> str:
        self._host(host)
        return LOOPBACK

    def reach(self, port: int, kind="tcp") -> tuple[str, int]:
        """Where host a sends to reach ``port``: a relay applying the spec, or the port itself
        when there is nothing to shape. ``kind``: "tcp", "udp" or ("tcp", "udp") on one port number."""
        kinds = (kind,) if isinstance(kind, str) else tuple(kind)
        if not _shapes(self.spec):
            return LOOPBACK, int(port)
        if all((k, port) in self.relays for k in kinds):
            return LOOPBACK, self.relays[(kinds[0], port)].address[1]
        for _ in range(5):        # the same number may be taken for the second kind: try another
            first = self._relay(kinds[0], port, 0)
            try:
                for k in kinds[1:]:
                    self.relays[(k, port)] = self._relay(k, port, first.address[1]).start()
            except OSError:
                first.close()
                continue
            self.relays[(kinds[0], port)] = first.start()
            return LOOPBACK, first.address[1]
        raise TransferError("no free port for the loopback relays", "try again")

    def _relay(self, kind: str, port: int, listen_port: int):
        if kind not in ("tcp", "udp"):
            raise UsageError(f"cannot relay {kind!r}", "use 'tcp' or 'udp'")
        relay = TcpRelay if kind == "tcp" else UdpRelay
        return relay(self.spec, (LOOPBACK, int(port)), listen=(LOOPBACK, listen_port), seed=self.seed)

    @property
    def one_queue(self) -> bool:
        """Every port gets its own relay, so its own shaper: no shared bottleneck once shaped."""
        return not _shapes(self.spec)

    def inside(self, host: str):
        self._host(host)
        return nullcontext()

    def exec(self, host: str, argv: list[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess:
        self._host(host)
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LinkError(f"`{' '.join(argv)}` did not finish in {timeout:g} s",
                            "give it a longer timeout or make it stop by itself") from None

    def popen(self, host: str, argv: list[str], *, lasting: bool = False, **kwargs) -> subprocess.Popen:
        self._host(host)       # ``lasting``: as long as the link, which is not renewed here anyway
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        kwargs.setdefault("text", True)
        proc = subprocess.Popen(argv, **kwargs)
        self._procs.append(proc)
        return proc

    def capture_point(self, host: str = "b") -> tuple[str, list[str]]:
        self._host(host)
        return "lo", []

    def unsupported(self, proto: str) -> str | None:
        forward, reverse = self.spec.forward, self.spec.reverse
        if proto == "tcp" and any(d.loss or d.duplicate or d.reorder for d in (forward, reverse)):
            return ("without root TCP runs through a relay that cannot lose, duplicate or reorder "
                    "segments: run as root (namespaces or userspace backend) for TCP with loss")
        return None

    def describe(self) -> dict:
        if not _shapes(self.spec):
            return {"backend": "loopback", "link": self.spec.describe(), "tc_commands": [],
                    "tc_note": "nothing to shape", "emulated_by": "nothing: both ends on 127.0.0.1"}
        relays = list(self.relays.values())
        emulates = sorted({e for r in relays for e in r.describe()["emulates"]})
        cannot = sorted({e for r in relays for e in r.describe()["cannot_emulate"]})
        kinds = sorted({r.kind for r in relays})
        return {"backend": "loopback", "link": self.spec.describe(),
                "carries_tcp_as": "stream" if "tcp" in kinds else None,
                "tc_commands": stands_for(self.spec),
                "tc_note": "what a namespaces testbed with netem would run; wirelab's loopback relays "
                           "emulated it instead",
                "emulated_by": (f"wirelab {' + '.join(kinds)} relay on 127.0.0.1"
                                + (f" (emulates: {', '.join(emulates)})" if emulates else "")
                                if relays else "wirelab relays on 127.0.0.1 (none started)"),
                "cannot_emulate": cannot,
                # what the link did, per direction, as the other backends count it (the same columns
                # in a results table, not new ones for every relay's port); each relay's own in the list
                "counters": _summed([r.describe()["counters"] for r in relays]),
                "relays": [{"relay": r.kind, "port": r.target[1], "counters": r.describe()["counters"]}
                           for r in relays]}


def _summed(counters: list[dict]) -> dict:
    """Relays' counters per direction added up (the worst lateness kept)."""
    total: dict = {}
    for per_direction in counters:
        for direction, counted in per_direction.items():
            into = total.setdefault(direction, {})
            for key, value in counted.items():
                if isinstance(value, dict):
                    extra = into.setdefault(key, {})
                    for name, n in value.items():
                        extra[name] = extra.get(name, 0) + n
                elif key == "late_s_max":
                    into[key] = max(into.get(key, 0.0), value)
                else:
                    into[key] = into.get(key, 0) + value
    return total


def stands_for(spec: LinkSpec, *, a: str = "a", b: str = "b") -> list[str]:
    """The tc/iptables commands of a two-host testbed with netem for ``spec``, as text
    (what a loopback or userspace link stands for)."""
    lines = []
    for direction, (s, r) in ((spec.forward, (a, b)), (spec.reverse, (b, a))):
        for argv in commands.shaping_commands(spec, direction, sender_ns=s, sender_dev=f"to-{r}",
                                              receiver_ns=r, receiver_dev=f"to-{s}", netem_available=True):
            lines.append(" ".join(argv))
    return lines


def wire_of(spec: LinkSpec) -> str:
    """How a link for ``spec`` charges bytes, whichever backend carries it (tbf, the userspace
    link and the relays alike): its ``spec.wire``, "emulated" (the IP packet + 14 B Ethernet
    header per frame) or "real" (+ 38 B, a cable's framing), or "none" when nothing shapes it."""
    return spec.wire if _shapes(spec) else "none"


def carriage(backend: str, proto: str) -> str:
    """How ``backend`` carries ``proto``: ``"packets"`` (the sender's own packets cross the
    emulated link: namespaces, userspace link, and UDP through the loopback relay) or
    ``"stream"`` (TCP on loopback: the relay terminates each connection and paces the byte
    stream, so the sender sees no slow start across the link, no RTT and no loss)."""
    return "stream" if backend == "loopback" and proto == "tcp" else "packets"


def _shapes(spec: LinkSpec) -> bool:
    """Does ``spec`` ask for anything at all (a rate, delay, jitter, loss, duplication or reordering)?"""
    return any(d.rate_bps or d.delay_s or d.jitter_s or d.loss or d.duplicate or d.reorder
               for d in (spec.forward, spec.reverse))

