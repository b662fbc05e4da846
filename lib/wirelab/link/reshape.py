"""A kept testbed given another shape in place: which changes can be made, and how to undo shaping.

A sweep over rate, delay or loss runs each setting on a link of its own spec.
Building a testbed costs 0.1-0.5 s; changing the shaping of one that stands
costs a few ``tc`` commands (kernel backend) or one line to the link process
(userspace backend). What stays is what the hosts see as their machine:
namespaces, interfaces, addresses, MTU, ARP entries. So a testbed may take
another topology in place only when that topology has the same hosts and the
same cables (ends, subnets, MTU), and its backend can carry every new spec
(the kernel backend has no delay line without netem). ``Testbed.renew(seed,
topology)`` (module ``renew``) does it, between runs, and reads the result back.

Pure functions: nothing here runs a command.
"""
from __future__ import annotations

from .commands import GSO_MAX_SEGS, one_segment
from .topology import Topology

__all__ = ["refusal", "undo_shaping"]


def refusal(old: Topology, new: Topology, *, backend: str, netem: bool) -> str | None:
    """Why a testbed built as ``old`` on ``backend`` cannot take ``new`` in place, or None."""
    if old.hosts != new.hosts:
        return f"other hosts ({', '.join(new.hosts)} instead of {', '.join(old.hosts)})"
    if [(l.a, l.b, l.subnet) for l in old.links] != [(l.a, l.b, l.subnet) for l in new.links]:
        return "other cables between the hosts"
    for before, after in zip(old.links, new.links):
        if before.spec.mtu != after.spec.mtu:
            return f"another MTU on {after.name} ({after.spec.mtu} B instead of {before.spec.mtu} B)"
    if backend not in ("namespaces", "userspace"):
        return f"the {backend} backend has no shaping to change"
    if backend == "namespaces" and not netem and any(l.spec.needs_delay_line for l in new.links):
        return "a delay line on a kernel without netem (only the userspace link has one)"
    return None


def undo_shaping(argvs: list[list[str]]) -> list[list[str]]:
    """The commands that remove what the shaping commands ``argvs`` installed
    (``commands.shaping_commands``): each device's root qdisc deleted once (its netem and tbf
    child with it; the device falls back to its default qdisc, as when it was made), each
    iptables rule appended (``-A``) deleted (``-D``, the same rule), a real wire's one segment
    per packet back to the kernel's default."""
    undo, seen = [], set()
    for argv in argvs:
        if argv[0] == "tc":                      # tc -n NS qdisc replace dev DEV root|parent ...
            ns, dev = argv[2], argv[argv.index("dev") + 1]
            if (ns, dev) not in seen:
                seen.add((ns, dev))
                undo.append(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"])
        elif "iptables" in argv and "-A" in argv:
            at = argv.index("-A")
            undo.append(argv[:at] + ["-D"] + argv[at + 1:])
        elif "gso_max_segs" in argv:             # ip -n NS link set dev DEV gso_max_segs 1
            undo.append(one_segment(argv[2], argv[argv.index("dev") + 1], GSO_MAX_SEGS))
    return undo
