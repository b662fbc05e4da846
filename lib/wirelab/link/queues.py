"""The bottleneck queue of an open link, read while a run goes: what waits for the line.

    read = queue_reader(link)          # None: this link has no queue to read
    read()                             # {"backlog_bytes": 60560, "backlog_packets": 40, "dropped": 9,
                                       #  "sent_bytes": ..., "limit_bytes": 100000, "kind": "tbf"}

Each backend keeps the a → b queue in its own place, and each is read its own way:

* **namespaces**: tbf on host a's ``to-b`` (``commands.tbf``); ``tc -s -j qdisc show``
  prints its counters (``backlog`` bytes and ``qlen`` packets waiting, ``drops``,
  ``bytes`` sent), parsed by ``parse_tc_stats`` (tested on recorded output). A child
  qdisc under tbf holds the packets, and tbf's own counters include it;
* **userspace**: the link process's own FIFO (``userspace``'s ``queue`` command);
* **loopback**: the relays' shapers in this process (one queue per relayed port).

``backlog_bytes`` counts what each backend charges (IP packet + 14 B on the emulated
wire), so backlog ÷ rate is the time the last packet in line will wait: the queueing
delay the model predicts from the queue's limit (``model.delay.queueing_delay``).
"""
from __future__ import annotations

import json
import subprocess
import time

from . import commands

__all__ = ["queue_reader", "parse_tc_stats", "tc_latency_s"]

#: The qdiscs whose counters say what waits for the line on a rate-limited device, best first.
_SHAPERS = ("tbf", "htb", "netem")


def parse_tc_stats(text, dev: str | None = None) -> dict | None:
    """The queue of a device from ``tc -s -j qdisc show [dev DEV]`` (JSON text or parsed): the
    shaping qdisc's counters (tbf: its backlog includes its child's), else the root's. None
    when the output holds no qdisc of ``dev``."""
    qdiscs = json.loads(text) if isinstance(text, (str, bytes)) else list(text)
    mine = [q for q in qdiscs if dev is None or q.get("dev", dev) == dev]
    if not mine:
        return None
    shaper = next((q for kind in _SHAPERS for q in mine if q.get("kind") == kind), None)
    chosen = shaper or next((q for q in mine if q.get("root")), mine[0])
    options = chosen.get("options") or {}
    out = {"kind": chosen.get("kind"), "backlog_bytes": chosen.get("backlog"),
           "backlog_packets": chosen.get("qlen"), "dropped": chosen.get("drops"),
           "sent_bytes": chosen.get("bytes"), "sent_packets": chosen.get("packets")}
    children = [q.get("kind") for q in mine if q is not chosen and q.get("parent")]
    if children:
        out["child"] = children[0]
    if chosen.get("kind") == "tbf" and options.get("rate"):
        out["rate_bps"] = 8 * options["rate"]
        out["tbf_latency_s"] = options["lat"] / 1e6 if "lat" in options else None
    return out


def tc_latency_s(limit_bytes: float, rate_bps: float, burst_bytes: float) -> float:
    """tbf's ``latency`` as tc computes and prints it for a ``limit``: (limit − burst) ÷ rate
    (iproute2's tc/q_tbf.c: ``latency = limit / rate − buffer time``): the longest a packet waits
    for tokens after a full bucket's worth left at once. The queue's own wait is limit ÷ rate."""
    return max(0.0, (limit_bytes - burst_bytes) * 8.0 / rate_bps)


def queue_reader(link, *, timeout: float = 1.0):
    """A function returning the a → b queue of ``link`` now (see the module docstring), or None
    when this kind of link has no queue to read (a link of real hosts, an unshaped loopback)."""
    testbed = getattr(link, "testbed", None)
    backend = getattr(link, "backend", None)
    if testbed is not None and tuple(testbed.hosts) != ("a", "b"):
        return None                      # a topology of many links has no one bottleneck to show
    if testbed is not None and backend == "userspace":
        name = f"{testbed.hosts[0]}->{testbed.hosts[1]}"

        def userspace():
            found = testbed.queue()
            return None if not found or name not in found else {"kind": "userspace fifo", **found[name]}
        return userspace
    if testbed is not None and backend == "namespaces":
        argv = commands.qdisc_show_json(testbed.namespace("a"), stats=True) + ["dev", "to-b"]
        limit = link.spec.queue_for(link.spec.forward)

        def kernel():
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
            found = parse_tc_stats(done.stdout) if done.returncode == 0 and done.stdout.strip() else None
            return None if found is None else {**found, "limit_bytes": limit}
        return kernel
    relays = getattr(link, "relays", None)
    if relays is not None:
        def loopback():
            shapers = [relay.forward for relay in list(relays.values())]
            if not shapers:
                return None
            now = time.monotonic()
            return {"kind": "relay", "backlog_bytes": sum(s.backlog_bytes(now) for s in shapers),
                    "dropped": sum(s.counters.dropped_queue for s in shapers),
                    "sent_bytes": sum(s.counters.bytes for s in shapers),
                    "limit_bytes": shapers[0].queue_bytes, "relays": len(shapers)}
        return loopback
    return None
