"""Describe a network before building it: hosts, links, one ``LinkSpec`` per link.

A ``Topology`` is plain data (Mininet's ``Topo`` without the rest); a
``Testbed`` acts on it. Two are ready-made:

* ``two_hosts(spec)``: ``a`` 10.77.0.1/24 ── ``b`` 10.77.0.2/24.
* ``broker_network(...)``: document 003's five nodes, each link its own /24::

      s ── b ──┬── r1 ──┬── d      s–b  10.77.1.0/24    b–r1 10.77.2.0/24
               └── r2 ──┘          b–r2 10.77.3.0/24    r1–d 10.77.4.0/24
                                   r2–d 10.77.5.0/24    (first node .1, second .2)

On every host the interface towards a neighbour is called ``to-<neighbour>``.
Document 003's nodes forward at the application layer, so no IP routing is
set up: each host reaches its neighbours only.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ..errors import UsageError
from .spec import LinkSpec

__all__ = ["Link", "Topology", "two_hosts", "broker_network"]

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
                   router_destination: LinkSpec | None = None) -> Topology:
    """Document 003: s —TCP— b —UDP— r1, r2 —UDP— d, with a spec per kind of link."""
    sb = source_broker or LinkSpec()
    br = broker_router or LinkSpec()
    rd = router_destination or LinkSpec()
    links = (Link("s", "b", sb, "10.77.1.0/24"), Link("b", "r1", br, "10.77.2.0/24"),
             Link("b", "r2", br, "10.77.3.0/24"), Link("r1", "d", rd, "10.77.4.0/24"),
             Link("r2", "d", rd, "10.77.5.0/24"))
    return Topology("broker_network", ("s", "b", "r1", "r2", "d"), links)
