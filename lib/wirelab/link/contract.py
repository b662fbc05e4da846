"""What an opened link offers whoever runs programs across it, written as a type.

``wirelab.link.open`` returns an ``OpenLink`` (``opened``: ``TestbedLink``,
``LoopbackLink``; ``hosts.HostsLink`` across real machines). :class:`OpenedLink` (a
``typing.Protocol``) has the members every one of them has::

    backend: str                    the backend that built it (namespaces, userspace, loopback, hosts)
    spec: LinkSpec                  the link it shapes (a topology's first)
    hosts: tuple                    its hosts, ``("a", "b")`` for two
    address(host) -> str            a host's address, for a server to bind
    reach(port, kind="tcp") -> (host, port)   where host a sends to reach ``port`` on host b
    free_port(host="b", kind="tcp") -> int    a port nothing uses there now
    exec(host, argv, *, timeout)    run a program there to its end
    popen(host, argv, **kwargs)     start a program there
    inside(host)                    a context where sockets made in this process are that host's
    capture_point(host="b")         where dumpcap sees what that host receives: (interface, argv prefix)
    unsupported(proto) -> str | None   what it cannot emulate for ``proto``, in words
    describe() -> dict              what it is and what it did (``tc_commands``, counters)
    close()                         remove what it built (also on leaving ``with``)
    wire -> str                     how it charges bytes, for the model (``opened.wire_of``)
    carriage(proto) -> str          how it carries ``proto``, for the model (``opened.carriage``)
    run(host, argv, *, timeout, what, fix)   ``exec`` whose lateness is the transfer's failure

:class:`LinkCapabilities` holds the members only some links have, resolved to what a
sweep does without them (``link_capabilities(link)``, the one place that looks)::

    renewable = False               ``renew`` can make it ready for another run (``reuse``)
    renew(seed, spec=None)          that: what it read back, or None (then a new link is opened)
    can_reshape(spec) -> bool       ``renew`` can give it ``spec`` in place (absent: False)
    one_queue = True                every server on b shares one bottleneck (flows need it)
    one_clock = True                both hosts read one clock (one-way delay needs no offset)
    call(host, fn, *args, timeout)  a function run in that host's own worker (across hosts; absent: None)
    testbed                         the namespaces behind it (absent: None; the queue is read there)
    relays                          the loopback relays behind it (absent: None; the same)

A test's stand-in (``tests/fake_links.py``) needs only what the runner asks:
``unsupported``, ``describe`` and ``with``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable, Protocol, runtime_checkable

__all__ = ["OpenedLink", "LinkCapabilities", "link_capabilities"]

_ABSENT = object()


@runtime_checkable
class OpenedLink(Protocol):
    """What every opened link has (the module docstring; the optional members: ``LinkCapabilities``)."""
    backend: str
    spec: Any
    hosts: tuple

    def address(self, host: str) -> str: ...  # pragma: no cover

    def reach(self, port: int, kind="tcp") -> tuple[str, int]: ...  # pragma: no cover

    def free_port(self, host: str = "b", kind: str = "tcp") -> int: ...  # pragma: no cover

    def exec(self, host: str, argv: list[str], *, timeout: float = 60.0): ...  # pragma: no cover

    def popen(self, host: str, argv: list[str], **kwargs): ...  # pragma: no cover

    def inside(self, host: str): ...  # pragma: no cover

    def capture_point(self, host: str = "b") -> tuple[str, list[str]]: ...  # pragma: no cover

    def unsupported(self, proto: str) -> str | None: ...  # pragma: no cover

    def describe(self) -> dict: ...  # pragma: no cover

    def close(self) -> None: ...  # pragma: no cover

    @property
    def wire(self) -> str: ...  # pragma: no cover

    def carriage(self, proto: str) -> str: ...  # pragma: no cover

    def run(self, host: str, argv: list[str], *, timeout: float, what: str, fix: str): ...  # pragma: no cover


def _member(doc: str, default=None):
    return field(default=default, metadata={"doc": doc})


def _not_renewed(seed=None, spec=None) -> None:
    return None


def _not_reshaped(spec) -> bool:
    return False


@dataclass(frozen=True)
class LinkCapabilities:
    """The optional members of a link, resolved for one link (the module docstring)."""
    renewable: bool = _member("renew can make it ready for another run; absent: False", False)
    renew: Callable = _member("renew(seed, spec=None) -> dict | None: ready again, or None; absent: None",
                              _not_renewed)
    can_reshape: Callable = _member("can_reshape(spec) -> bool: renew can give it spec in place; absent: False",
                                    _not_reshaped)
    one_queue: bool = _member("every server on b shares one bottleneck; absent: True", True)
    one_clock: bool = _member("both hosts read one clock; absent: True", True)
    call: Callable | None = _member("call(host, fn, *args, timeout): fn in that host's worker; absent: None")
    testbed: Any = _member("the namespaces behind it; absent: None")
    relays: Any = _member("the loopback relays behind it; absent: None")

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Member → its documentation."""
        return {f.name: f.metadata["doc"] for f in fields(cls)}


def link_capabilities(link) -> LinkCapabilities:
    """``link``'s optional members as a ``LinkCapabilities`` record, missing ones at their defaults."""
    found = {f.name: getattr(link, f.name, _ABSENT) for f in fields(LinkCapabilities)}
    return LinkCapabilities(**{name: value for name, value in found.items() if value is not _ABSENT})
