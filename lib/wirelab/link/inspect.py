"""Read a link back from the kernel through netlink (pyroute2): the second road.

A testbed is built with `ip`/`tc` argv a student can read and type again
(``commands.py``); this module asks the kernel what it really holds, through
netlink and not through those tools: interfaces (MTU, state, counters) and
qdiscs (kind, rate, limit, and what they sent and dropped). Tests check a
build by another road than the one that made it, and ``wirelab testbed show``
prints it::

    >>> qdiscs("wl-demo-1234-a")                                  # doctest: +SKIP
    [{'dev': 'to-b', 'kind': 'tbf', 'rate_bps': 10000000, 'limit_bytes': 125000,
      'sent_bytes': 1538, 'sent_packets': 1, 'dropped': 0, 'backlog_bytes': 0, ...}]
"""
from __future__ import annotations

import time

from ..errors import LinkError, NeedsRootError
from .netns import NETNS_DIR, is_root

__all__ = ["interfaces", "qdiscs", "wait_for_qdisc"]


def _route(ns: str):
    if not is_root():
        raise NeedsRootError("reading a namespace's links and qdiscs")
    if not (NETNS_DIR / ns).exists():
        raise LinkError(f"no network namespace {ns!r}", "is the testbed up? see `wirelab testbed ls`")
    from pyroute2 import IPRoute      # netlink, imported only here
    return IPRoute(netns=ns)


def interfaces(ns: str) -> list[dict]:
    """Every interface of namespace ``ns``: name, MTU, state and its counters."""
    with _route(ns) as ipr:
        out = []
        for link in ipr.get_links():
            stats = link.get_attr("IFLA_STATS64") or {}
            out.append({"dev": link.get_attr("IFLA_IFNAME"), "index": link["index"],
                        "mtu": link.get_attr("IFLA_MTU"), "state": link.get_attr("IFLA_OPERSTATE"),
                        "address": link.get_attr("IFLA_ADDRESS"),
                        **{k: stats.get(k) for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes",
                                                     "rx_dropped", "tx_dropped")}})
        return out


def qdiscs(ns: str) -> list[dict]:
    """Every qdisc of namespace ``ns``: device, kind, handle, parent, tbf's rate and limit,
    and what it sent, dropped and holds (the kernel's own counters)."""
    with _route(ns) as ipr:
        names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
        out = []
        for q in ipr.get_qdiscs():
            row = {"dev": names.get(q["index"]), "kind": q.get_attr("TCA_KIND"),
                   "handle": f"{q['handle'] >> 16:x}:", "parent": "root" if q["parent"] == 0xFFFFFFFF
                   else f"{q['parent'] >> 16:x}:{q['parent'] & 0xFFFF:x}"}
            options = q.get_attr("TCA_OPTIONS")
            if row["kind"] == "tbf" and options is not None:
                params = options.get_attr("TCA_TBF_PARMS") or {}
                row.update(rate_bps=8 * params.get("rate", 0), limit_bytes=params.get("limit"))
            stats = q.get_attr("TCA_STATS2")
            if stats is not None:
                basic = stats.get_attr("TCA_STATS_BASIC") or {}
                queue = stats.get_attr("TCA_STATS_QUEUE") or {}
                row.update(sent_bytes=basic.get("bytes"), sent_packets=basic.get("packets"),
                           dropped=queue.get("drops"), backlog_bytes=queue.get("backlog"))
            out.append(row)
        return out


def wait_for_qdisc(ns: str, dev: str, kind: str, *, timeout: float = 1.0) -> dict:
    """The ``kind`` qdisc on ``dev`` in ``ns``, polled until it shows (at most ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [q for q in qdiscs(ns) if q["dev"] == dev and q["kind"] == kind]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise LinkError(f"no {kind} qdisc on {dev} in {ns} after {timeout:g} s",
                            "see `wirelab testbed show`; the build may have failed")
        time.sleep(0.01)
