"""Pure builders: a spec in, the argv of `ip`, `tc`, `iptables`, `ethtool` out.

Nothing here runs anything, so every command can be tested (and shown to a
student) without root. ``shlex.join(argv)`` is exactly what wirelab typed::

    >>> " ".join(tbf("wl-demo-1-a", "to-b", rate_bps=10e6, burst_bytes=2764, limit_bytes=125000))
    'tc -n wl-demo-1-a qdisc replace dev to-b root tbf rate 10000000bit burst 2764b limit 125000b'

Rates are written in bit/s and sizes in bytes ("b" is bytes to tc), so what
tc reads is what the spec says, with no rounding through "mbit".

A real wire (``LinkSpec(wire="real")``) is charged with a size table on the tbf
(``man tc-stab``): ``stab overhead 24 linklayer ethernet`` makes every packet
count 24 B more, the preamble, SFD, FCS and gap the skb does not hold, in the
rate, the burst and the queue limit alike; tbf's own ``mpu 84`` lifts a short
frame to the 84 B it takes on a cable (tbf's rate table applies its ``mpu``
after the stab's overhead; tbf's own ``overhead`` would add a second time, so it
stays 0). The stab is charged once per packet the qdisc sees, and Linux TCP hands
it GSO packets of many segments even with offloads off (they are cut after the
qdisc), so a real wire also sets ``gso_max_segs 1`` on the sender's interface:
one segment, one frame, one charge::

    >>> " ".join(tbf("ns", "to-b", rate_bps=10e6, burst_bytes=2788, limit_bytes=125000,
    ...              overhead_bytes=24, min_frame_bytes=84))
    'tc -n ns qdisc replace dev to-b root stab overhead 24 linklayer ethernet tbf rate 10000000bit burst 2788b limit 125000b mpu 84b'
"""
from __future__ import annotations

from .spec import Direction, LinkSpec

__all__ = ["netns_add", "netns_del", "netns_exec", "veth_pair", "link_up", "link_mtu",
           "addr_add", "neigh_permanent", "no_ipv6", "offloads_off", "tbf", "netem",
           "qdisc_del", "iptables_loss", "one_segment", "shaping_commands", "link_show_json",
           "qdisc_show_json", "child_qdisc", "bridge_add", "link_master", "link_to_root", "GSO_MAX_SEGS"]

#: The kernel's default (and largest) segments per GSO packet (include/linux/netdevice.h).
GSO_MAX_SEGS = 65535


def netns_add(ns: str) -> list[str]:
    return ["ip", "netns", "add", ns]


def netns_del(ns: str) -> list[str]:
    return ["ip", "netns", "del", ns]


def netns_exec(ns: str, argv: list[str]) -> list[str]:
    """Run ``argv`` inside namespace ``ns`` (how every tool reaches a host)."""
    return ["ip", "netns", "exec", ns, *argv]


def veth_pair(ns: str, name: str, peer_ns: str, peer: str) -> list[str]:
    """A veth cable: ``name`` in ``ns``, its other end ``peer`` in ``peer_ns``."""
    return ["ip", "-n", ns, "link", "add", name, "type", "veth", "peer", "name", peer, "netns", peer_ns]


def bridge_add(ns: str, name: str) -> list[str]:
    """A switch inside ``ns`` (a room of hosts on one machine, ``room.py``)."""
    return ["ip", "-n", ns, "link", "add", name, "type", "bridge"]


def link_master(ns: str, dev: str, bridge: str) -> list[str]:
    """Plug ``dev`` into the switch ``bridge``."""
    return ["ip", "-n", ns, "link", "set", "dev", dev, "master", bridge]


def link_to_root(ns: str, dev: str) -> list[str]:
    """Move ``dev`` from ``ns`` into the namespace of process 1 (the machine's own)."""
    return ["ip", "-n", ns, "link", "set", "dev", dev, "netns", "1"]


def link_up(ns: str, dev: str) -> list[str]:
    return ["ip", "-n", ns, "link", "set", "dev", dev, "up"]


def link_mtu(ns: str, dev: str, mtu: int) -> list[str]:
    return ["ip", "-n", ns, "link", "set", "dev", dev, "mtu", str(mtu)]


def addr_add(ns: str, dev: str, cidr: str) -> list[str]:
    return ["ip", "-n", ns, "addr", "add", cidr, "dev", dev]


def neigh_permanent(ns: str, dev: str, ip: str, mac: str) -> list[str]:
    """A static ARP entry, so no ARP exchange delays the first packet or clutters captures."""
    return ["ip", "-n", ns, "neigh", "replace", ip, "lladdr", mac, "dev", dev, "nud", "permanent"]


def no_ipv6(ns: str) -> list[str]:
    """IPv6 off inside a host: no router solicitations or MLD reports in the captures."""
    return netns_exec(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                           "net.ipv6.conf.default.disable_ipv6=1"])


def offloads_off(ns: str, dev: str) -> list[str]:
    """Segmentation offloads and checksum offload off, so every packet is wire-sized
    (no 64 KB TSO/GSO super-frames, no GRO merging) and carries a real checksum."""
    return netns_exec(ns, ["ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])


def _tc(ns: str | None) -> list[str]:
    """``tc`` inside namespace ``ns``, or on this host's own interfaces (``None``: a real host)."""
    return ["tc", "-n", ns] if ns else ["tc"]


def tbf(ns: str | None, dev: str, *, rate_bps: float, burst_bytes: int, limit_bytes: int,
        parent: str | None = None, handle: str | None = None, overhead_bytes: int = 0,
        min_frame_bytes: int = 0) -> list[str]:
    """Token bucket filter: ``rate`` on what the qdisc sees (IP packet + 14 B Ethernet), each
    packet counted ``overhead_bytes`` more (a size table, tc-stab) and at least ``min_frame_bytes``
    (tbf's ``mpu``); see the module docstring. tbf is a meter, not a wire (tc-tbf(8)): a packet
    leaves the moment the bucket holds it, so ``burst_bytes`` leave at once after a pause;
    ``LinkSpec.burst_for`` keeps it to one frame and 1 ms of the rate (no ``peakrate``: with a
    one-frame ``mtu`` it lost 2 % of the rate at 10 Mbit/s here, as a one-frame bucket does)."""
    where = ["parent", parent] if parent else ["root"]
    stab = ["stab", "overhead", str(overhead_bytes), "linklayer", "ethernet"] if overhead_bytes else []
    return ([*_tc(ns), "qdisc", "replace", "dev", dev, *where]
            + (["handle", handle] if handle else []) + stab
            + ["tbf", "rate", f"{round(rate_bps)}bit", "burst", f"{burst_bytes}b", "limit", f"{limit_bytes}b"]
            + (["mpu", f"{min_frame_bytes}b"] if min_frame_bytes else []))


def child_qdisc(ns: str, dev: str, parent: str, kind: str, *, limit_packets: int) -> list[str]:
    """A queue discipline under tbf (``parent``: tbf's handle and class, e.g. "2:1") holding at
    most ``limit_packets`` packets: ``pfifo`` (tail drop) or ``fq_codel``."""
    return ["tc", "-n", ns, "qdisc", "replace", "dev", dev, "parent", parent, kind, "limit", str(limit_packets)]


def one_segment(ns: str, dev: str, segments: int = 1) -> list[str]:
    """At most ``segments`` TCP segments per packet the qdisc sees (see the module docstring);
    ``GSO_MAX_SEGS`` undoes it."""
    return ["ip", "-n", ns, "link", "set", "dev", dev, "gso_max_segs", str(segments)]


def _us(seconds: float) -> str:
    return f"{round(seconds * 1e6)}us"


def netem(ns: str | None, dev: str, direction: Direction, *, limit_packets: int = 1000,
          handle: str | None = "1:", parent: str | None = None) -> list[str]:
    """netem: delay (± jitter), loss, duplicate, reorder, on kernels that have it."""
    where = ["parent", parent] if parent else ["root"]
    argv = [*_tc(ns), "qdisc", "replace", "dev", dev, *where] + (["handle", handle] if handle else [])
    argv += ["netem", "limit", str(limit_packets)]
    if direction.delay_s or direction.jitter_s:
        argv += ["delay", _us(direction.delay_s)] + ([_us(direction.jitter_s)] if direction.jitter_s else [])
    for name in ("loss", "duplicate", "reorder"):
        value = getattr(direction, name)
        if value:
            argv += [name, f"{value * 100:.6g}%"]
    return argv


def qdisc_del(ns: str, dev: str) -> list[str]:
    return ["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"]


def iptables_loss(ns: str, dev: str, probability: float) -> list[str]:
    """Random drop of packets arriving on ``dev`` (document 004's method). Document
    004 used the INPUT chain on the receiver; raw PREROUTING drops the same packets
    and works on routers too (forwarded packets never see INPUT)."""
    return netns_exec(ns, ["iptables", "-t", "raw", "-A", "PREROUTING", "-i", dev, "-m", "statistic",
                           "--mode", "random", "--probability", f"{probability:.6g}", "-j", "DROP"])


def shaping_commands(spec: LinkSpec, direction: Direction, *, sender_ns: str, sender_dev: str,
                     receiver_ns: str, receiver_dev: str, netem_available: bool) -> list[list[str]]:
    """What the kernel backend runs for one direction of one link.

    Rate: tbf on the sender's egress, with the spec's framing (a size table and ``mpu``
    for a real wire, and one segment per packet: see the module docstring).
    Delay/jitter/dup/reorder (and loss): netem as the root qdisc with tbf as its child,
    where the kernel has netem. Loss without netem: iptables statistic on the receiver.
    """
    cmds: list[list[str]] = []
    use_netem = netem_available and (direction.needs_delay_line or direction.loss)
    if use_netem:
        cmds.append(netem(sender_ns, sender_dev, direction))
    if direction.rate_bps:
        if spec.overhead_bytes:
            cmds.append(one_segment(sender_ns, sender_dev))
        cmds.append(tbf(sender_ns, sender_dev, rate_bps=direction.rate_bps,
                        burst_bytes=spec.burst_for(direction), limit_bytes=spec.queue_for(direction),
                        parent="1:1" if use_netem else None, handle="2:" if use_netem or spec.qdisc else None,
                        overhead_bytes=spec.overhead_bytes, min_frame_bytes=spec.min_frame_bytes))
        if spec.qdisc:                   # the queue is the child's (tbf's limit holds its default one)
            cmds.append(child_qdisc(sender_ns, sender_dev, "2:1", spec.qdisc, limit_packets=spec.queue_packets))
    if direction.loss and not use_netem:
        cmds.append(iptables_loss(receiver_ns, receiver_dev, direction.loss))
    return cmds


def link_show_json(ns: str, dev: str) -> list[str]:
    return ["ip", "-n", ns, "-j", "link", "show", "dev", dev]


def qdisc_show_json(ns: str, *, stats: bool = False, details: bool = False) -> list[str]:
    """Every qdisc of ``ns`` as JSON; with ``stats`` its counters too (backlog, qlen, drops);
    with ``details`` its size table too (``"stab": {"overhead": ...}``, shown only with -d)."""
    return ["tc", "-n", ns, "-j", *(["-s"] if stats else []), *(["-d"] if details else []), "qdisc", "show"]
