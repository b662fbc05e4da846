"""Shaping a real host's interface towards one peer: the commands, as pure functions.

On a PC the interface carries everything (the Dask worker's own messages, ssh, the room's
other traffic), so only the packets to the peer are shaped. For a → b, on a's interface::

    tc qdisc replace dev eth0 root handle 7a1: htb
    tc class add dev eth0 parent 7a1: classid 7a1:3 htb rate 10gbit ceil 10gbit quantum 60000
    tc filter add dev eth0 parent 7a1: protocol ip prio 1 u32 match ip dst 10.0.0.8/32 \
                                      match ip sport 40211 0xffff flowid 7a1:        (Dask's own: direct)
    tc filter add dev eth0 parent 7a1: protocol ip prio 2 u32 match ip dst 10.0.0.8/32 flowid 7a1:3
    tc qdisc replace dev eth0 parent 7a1:3 handle 7a2: netem limit 1000 delay 20000us   (kernels with netem)
    tc qdisc replace dev eth0 parent 7a2:1 handle 7a3: tbf rate 10000000bit burst 2764b limit 125000b

htb is only the sorter (the classful qdisc every kernel here has; prio is a module some lack):
with no default class, everything the filters do not send to its one class leaves by htb's
direct queue, untouched, and that class is far faster than any rate shaped below it. The
peer's packets meet netem then tbf (a meter with a bucket of one frame and 1 ms of the rate:
``LinkSpec.burst_for``), as ``commands.shaping_commands`` stacks them in a testbed,
except Dask's own: the two workers talk to each other too (a task's result travels from one to
the other), and a 100 kbit/s link that carried them would starve the run that shapes it. The
ports of each side's worker (and of the scheduler, where it lives on one of them: ``Side.keep``)
go to the direct queue first (``flowid 7a1:``, the qdisc itself: htb's "send it direct").
Loss without netem is ``iptables -m statistic`` on the receiver, only for packets from the
peer, marked with a comment so that exactly that rule is deleted (Dask's ports accepted
before it). A real wire's framing
(``LinkSpec(wire="real")``) adds tbf's size table and one segment per packet, as in a
testbed; the interface's own ``gso_max_segs`` is put back afterwards.

Undo is the same on every host: ``tc qdisc del dev eth0 root`` (the kernel puts its default
qdisc back), each iptables rule deleted, ``gso_max_segs`` restored. An interface that has a
qdisc of its own (anything but the kernel's defaults) is not touched: ``refusal`` says why.
``hostguard`` runs these commands and always runs the undo.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import commands
from .spec import Direction, LinkSpec

__all__ = ["Side", "host_commands", "refusal", "DEFAULT_QDISCS", "ROOT", "MARK"]

#: Root qdiscs the kernel puts on an interface by itself: replacing them loses nothing.
DEFAULT_QDISCS = {"noqueue", "mq", "fq_codel", "pfifo_fast", "fq", "noop", "pfifo", "cake", "sfq", None}
#: Our handles: the htb root (its class ``:3`` for the peer), netem in that class, tbf below.
ROOT, NETEM, TBF = "7a1:", "7a2:", "7a3:"
#: The rate of htb's one class: far above any rate shaped below it (htb only sorts).
SORTER_RATE = "10gbit"
#: The comment on our iptables rules.
MARK = "wirelab"


@dataclass(frozen=True)
class Side:
    """One host of a pair, as the shaping sees it: its address towards the peer, the interface
    that carries it, whether its kernel has netem, its root qdisc now, its ``gso_max_segs``, and
    the ports its packets to and from the peer keep unshaped (``keep``: Dask's own, listening here)."""
    name: str
    ip: str
    device: str
    netem: bool = False
    root_qdisc: str | None = None
    gso_max_segs: int = commands.GSO_MAX_SEGS
    keep: tuple[int, ...] = ()


def _shapes(direction: Direction) -> bool:
    return bool(direction.rate_bps or direction.needs_delay_line or direction.loss)


def refusal(spec: LinkSpec, a: Side, b: Side) -> str | None:
    """Why ``spec`` cannot be put on this pair's interfaces (None: it can)."""
    for direction, sender in ((spec.forward, a), (spec.reverse, b)):
        if not _shapes(direction):
            continue
        if direction.needs_delay_line and not sender.netem:
            return (f"{sender.name}'s kernel has no netem, so its interface cannot delay, jitter, duplicate or "
                    "reorder packets: sweep rate and loss there, or load sch_netem (modprobe sch_netem)")
        if sender.root_qdisc not in DEFAULT_QDISCS:
            return (f"{sender.device} on {sender.name} has a qdisc of its own ({sender.root_qdisc}): wirelab "
                    f"does not replace it; remove it (tc qdisc del dev {sender.device} root) to shape there")
    return None


def _iptables_loss(dev: str, source: str, probability: float, verb: str) -> list[str]:
    return ["iptables", "-t", "raw", verb, "PREROUTING", "-i", dev, "-s", f"{source}/32", "-m", "statistic",
            "--mode", "random", "--probability", f"{probability:.6g}", "-m", "comment", "--comment", MARK,
            "-j", "DROP"]


def _iptables_keep(dev: str, source: str, side: str, port: int, verb: str) -> list[str]:
    """Accept Dask's packets from ``source`` (``side``: sport or dport ``port``) before the drop."""
    return ["iptables", "-t", "raw", verb, "PREROUTING", "-i", dev, "-s", f"{source}/32", "-p", "tcp",
            f"--{side}", str(port), "-m", "comment", "--comment", MARK, "-j", "ACCEPT"]


def _exempt(me: Side, peer: Side) -> list[tuple[str, int]]:
    """(field, port) of the packets from ``me`` to ``peer`` that stay Dask's: from a port of mine
    or to one of the peer's."""
    return [("sport", p) for p in me.keep] + [("dport", p) for p in peer.keep]


def _sender(spec: LinkSpec, direction: Direction, me: Side, peer: Side) -> list[list[str]]:
    """The qdiscs on ``me``'s interface for packets to ``peer``."""
    dev, use_netem = me.device, me.netem and (direction.needs_delay_line or direction.loss)
    if not (direction.rate_bps or use_netem):
        return []
    cmds = [["tc", "qdisc", "replace", "dev", dev, "root", "handle", ROOT, "htb"],
            ["tc", "class", "add", "dev", dev, "parent", ROOT, "classid", f"{ROOT}3", "htb", "rate", SORTER_RATE,
             "ceil", SORTER_RATE, "quantum", "60000"],
            *(["tc", "filter", "add", "dev", dev, "parent", ROOT, "protocol", "ip", "prio", "1", "u32",
               "match", "ip", "dst", f"{peer.ip}/32", "match", "ip", field, str(port), "0xffff", "flowid", ROOT]
              for field, port in _exempt(me, peer)),
            ["tc", "filter", "add", "dev", dev, "parent", ROOT, "protocol", "ip", "prio", "2", "u32",
             "match", "ip", "dst", f"{peer.ip}/32", "flowid", f"{ROOT}3"]]
    if use_netem:
        cmds.append(commands.netem(None, dev, direction, handle=NETEM, parent=f"{ROOT}3"))
    if direction.rate_bps:
        if spec.overhead_bytes:
            cmds.append(["ip", "link", "set", "dev", dev, "gso_max_segs", "1"])
        cmds.append(commands.tbf(None, dev, rate_bps=direction.rate_bps, burst_bytes=spec.burst_for(direction),
                                 limit_bytes=spec.queue_for(direction), parent=f"{NETEM}1" if use_netem else f"{ROOT}3",
                                 handle=TBF, overhead_bytes=spec.overhead_bytes,
                                 min_frame_bytes=spec.min_frame_bytes))
    return cmds


def host_commands(spec: LinkSpec, a: Side, b: Side) -> dict[str, dict[str, list[list[str]]]]:
    """``{"a": {"apply": [...], "undo": [...]}, "b": {...}}``: what each host runs to give the
    pair ``spec`` (forward a → b on a's interface, reverse on b's), and what takes it away.
    Nothing to apply on a host: both lists empty."""
    out = {"a": {"apply": [], "undo": []}, "b": {"apply": [], "undo": []}}
    for direction, (s_key, sender), (r_key, receiver) in ((spec.forward, ("a", a), ("b", b)),
                                                          (spec.reverse, ("b", b), ("a", a))):
        qdiscs = _sender(spec, direction, sender, receiver)
        if qdiscs:
            out[s_key]["apply"] += qdiscs
            out[s_key]["undo"].append(["tc", "qdisc", "del", "dev", sender.device, "root"])
            if any(argv[:2] == ["ip", "link"] for argv in qdiscs):
                out[s_key]["undo"].append(["ip", "link", "set", "dev", sender.device, "gso_max_segs",
                                           str(sender.gso_max_segs)])
        if direction.loss and not sender.netem:
            keep = _exempt(sender, receiver)
            out[r_key]["apply"] += [_iptables_keep(receiver.device, sender.ip, f, p, "-A") for f, p in keep]
            out[r_key]["apply"].append(_iptables_loss(receiver.device, sender.ip, direction.loss, "-A"))
            out[r_key]["undo"] += [_iptables_keep(receiver.device, sender.ip, f, p, "-D") for f, p in keep]
            out[r_key]["undo"].append(_iptables_loss(receiver.device, sender.ip, direction.loss, "-D"))
    return out
