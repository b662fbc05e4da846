"""Describe a network before building it: hosts, links, one ``LinkSpec`` per link.

A ``Topology`` is plain data (Mininet's ``Topo`` without the rest); a
``Testbed`` acts on it. Two are ready-made:

* ``two_hosts(spec)``: ``a`` 10.77.0.1/24 ── ``b`` 10.77.0.2/24.
* ``broker_network(...)``: document 003's five nodes, each link its own /24
  and its own spec (``links={"b-r*": LinkSpec.parse(delay="20ms")}``)::

      s ── b ──┬── r1 ──┬── d      s–b  10.77.1.0/24    b–r1 10.77.2.0/24
               └── r2 ──┘          b–r2 10.77.3.0/24    r1–d 10.77.4.0/24
                                   r2–d 10.77.5.0/24    (first node .1, second .2)

On every host the interface towards a neighbour is called ``to-<neighbour>``.
Document 003's nodes forward at the application layer, so no IP routing is
set up: each host reaches its neighbours only.
"""
from __future__ import annotations

import fnmatch
import ipaddress
import re
from dataclasses import dataclass, replace

from ..errors import UsageError
from .spec import LinkSpec

__all__ = ["Link", "Topology", "two_hosts", "broker_network", "with_links", "parse_link_option"]

_HOST = re.compile(r"^[a-z][a-z0-9]{0,5}$")


@dataclass(frozen=True)
class Link:
    """A cable between hosts ``a`` and ``b``; ``spec.forward`` is a → b."""
    a: str
    b: str
    spec: LinkSpec
    subnet: str

    def address(self, host: str) -> str:
        """``host``'s address on this link (no prefix length)."""
        net = ipaddress.ip_network(self.subnet)
        if host not in (self.a, self.b):
            raise UsageError(f"{host!r} is not on the link {self.a}–{self.b}", f"use {self.a} or {self.b}")
        return str(net[1] if host == self.a else net[2])

    def cidr(self, host: str) -> str:
        return f"{self.address(host)}/{ipaddress.ip_network(self.subnet).prefixlen}"

    def peer(self, host: str) -> str:
        return self.b if host == self.a else self.a

    @property
    def name(self) -> str:
        """``a-b``, as ``with_links`` and ``wirelab testbed up --link`` name it."""
        return f"{self.a}-{self.b}"


@dataclass(frozen=True)
class Topology:
    """Hosts and the links between them."""
    name: str
    hosts: tuple[str, ...]
    links: tuple[Link, ...]

    def __post_init__(self):
        for host in self.hosts:
            if not _HOST.match(host):
                raise UsageError(f"host name {host!r} is not short lowercase letters/digits",
                                 "use names like a, b, s, r1 (interface names are limited to 15 chars)")
        for link in self.links:
            if link.a not in self.hosts or link.b not in self.hosts:
                raise UsageError(f"link {link.a}–{link.b} joins an unknown host", "list every host in hosts")

    def link(self, a: str, b: str | None = None) -> Link:
        """The link between ``a`` and ``b`` (``b`` may be left out when ``a`` has one link)."""
        found = [l for l in self.links if a in (l.a, l.b) and (b is None or b in (l.a, l.b))]
        if len(found) != 1:
            raise UsageError(f"{'no' if not found else 'more than one'} link for {a}{'–' + b if b else ''}",
                             f"links: {', '.join(f'{l.a}–{l.b}' for l in self.links)}")
        return found[0]

    def address(self, host: str, peer: str | None = None) -> str:
        """``host``'s address on its link towards ``peer``."""
        return self.link(host, peer).address(host)

    def table(self) -> list[dict]:
        """One row per interface: host, interface, address, peer, the link's spec."""
        rows = []
        for link in self.links:
            for host in (link.a, link.b):
                rows.append({"host": host, "interface": f"to-{link.peer(host)}", "address": link.cidr(host),
                             "peer": link.peer(host), "spec": link.spec.describe()})
        return rows


def two_hosts(spec: LinkSpec | None = None) -> Topology:
    """``a`` (10.77.0.1) and ``b`` (10.77.0.2) joined by one link."""
    return Topology("two_hosts", ("a", "b"), (Link("a", "b", spec or LinkSpec(), "10.77.0.0/24"),))


def broker_network(source_broker: LinkSpec | None = None, broker_router: LinkSpec | None = None,
                   router_destination: LinkSpec | None = None, *, links: dict | None = None) -> Topology:
    """Document 003: s —TCP— b —UDP— r1, r2 —UDP— d, with a spec per kind of link, then
    ``links`` (see ``with_links``) for single links: ``links={"b-r1": LinkSpec.parse(delay="1ms")}``."""
    sb = source_broker or LinkSpec()
    br = broker_router or LinkSpec()
    rd = router_destination or LinkSpec()
    cables = (Link("s", "b", sb, "10.77.1.0/24"), Link("b", "r1", br, "10.77.2.0/24"),
              Link("b", "r2", br, "10.77.3.0/24"), Link("r1", "d", rd, "10.77.4.0/24"),
              Link("r2", "d", rd, "10.77.5.0/24"))
    topology = Topology("broker_network", ("s", "b", "r1", "r2", "d"), cables)
    return with_links(topology, links) if links else topology


def with_links(topology: Topology, links: dict) -> Topology:
    """``topology`` with the links named by each key of ``links`` ("a-b", in either order, or a
    shell pattern like "b-r*") given that ``LinkSpec``; later keys win. A key that names no
    link is an error (a typo must not leave a link unshaped)."""
    changed = list(topology.links)
    for pattern, spec in links.items():
        if not isinstance(spec, LinkSpec):
            raise UsageError(f"the spec for {pattern!r} is a {type(spec).__name__}, not a LinkSpec",
                             "e.g. LinkSpec.parse(delay='20ms')")
        hits = [i for i, l in enumerate(changed)
                if fnmatch.fnmatchcase(l.name, pattern) or fnmatch.fnmatchcase(f"{l.b}-{l.a}", pattern)]
        if not hits:
            raise UsageError(f"no link matches {pattern!r} in {topology.name}",
                             f"links: {', '.join(l.name for l in topology.links)} (patterns like b-r* work)")
        for i in hits:
            changed[i] = replace(changed[i], spec=spec)
    return replace(topology, links=tuple(changed))


def parse_link_option(text: str) -> tuple[str, dict]:
    """``"b-r*:delay=20ms,jitter=5ms"`` → ``("b-r*", {"delay": "20ms", "jitter": "5ms"})``: a link
    name or pattern, then ``LinkSpec.parse`` keywords (what ``wirelab testbed up --link`` takes)."""
    name, sep, rest = text.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"--link {text!r} is not LINK:KEY=VALUE,...", "e.g. --link b-r1:delay=20ms,jitter=5ms")
    options = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"{item!r} in --link {text!r} is not KEY=VALUE", "e.g. rate=10mbit or delay=20ms")
        options[key.strip().replace("-", "_")] = value.strip()
    return name.strip(), options
