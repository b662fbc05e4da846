"""A kept link shaped anew in place (a sweep over rate, delay or loss keeps one testbed): the new
spec is in force afterwards, measured and read back, and nothing of the previous run is left."""
import select
import socket
import struct
import subprocess
import time

import pytest

from wirelab.link import LinkSpec
from wirelab.link.reshape import refusal, undo_shaping
from wirelab.link.detect import capabilities
from wirelab.link.topology import two_hosts

STAMP = struct.Struct("!dI4s")          # send time (this process's clock), number, run tag


def test_only_the_shaping_may_change_in_place():
    base = two_hosts(LinkSpec.parse(rate="10mbit"))
    for other in (LinkSpec.parse(rate="20mbit", loss="1%"), LinkSpec.parse(delay="20ms")):
        assert refusal(base, two_hosts(other), backend="userspace", netem=False) is None
    assert refusal(base, two_hosts(LinkSpec.parse(rate="20mbit", loss="1%")), backend="namespaces",
                   netem=False) is None
    assert "netem" in refusal(base, two_hosts(LinkSpec.parse(delay="20ms")), backend="namespaces", netem=False)
    assert refusal(base, two_hosts(LinkSpec.parse(delay="20ms")), backend="namespaces", netem=True) is None
    assert "MTU" in refusal(base, two_hosts(LinkSpec.parse(rate="10mbit", mtu=1400)), backend="userspace",
                            netem=True)
    assert "loopback" in refusal(base, two_hosts(LinkSpec()), backend="loopback", netem=True)


def test_undoing_the_shaping_removes_each_root_qdisc_once_and_each_loss_rule():
    from wirelab.link import commands
    spec = LinkSpec.parse(rate="10mbit", loss="1%", loss_reverse=0)
    argvs = []
    for direction, s, r in ((spec.forward, ("A", "to-b"), ("B", "to-a")), (spec.reverse, ("B", "to-a"), ("A", "to-b"))):
        argvs += commands.shaping_commands(spec, direction, sender_ns=s[0], sender_dev=s[1], receiver_ns=r[0],
                                           receiver_dev=r[1], netem_available=False)
    argvs.append(commands.netem("A", "to-b", spec.forward))          # netem + tbf child on one device
    undo = undo_shaping(argvs)
    assert undo == [["tc", "-n", "A", "qdisc", "del", "dev", "to-b", "root"],
                    ["ip", "netns", "exec", "B", "iptables", "-t", "raw", "-D", "PREROUTING", "-i", "to-a", "-m",
                     "statistic", "--mode", "random", "--probability", "0.01", "-j", "DROP"],
                    ["tc", "-n", "B", "qdisc", "del", "dev", "to-a", "root"]]


def _send(link, count: int, *, tag: bytes, size: int = 1000, port: int | None = None):
    """``count`` numbered datagrams from host a to host b, back to back; returns the receiving
    socket (on ``port`` if given) and the sending one."""
    with link.inside("b"):
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        rx.bind((link.address("b"), port or 0))
    with link.inside("a"):
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(count):
        tx.sendto(STAMP.pack(time.monotonic(), i, tag).ljust(size, b"\0"), rx.getsockname())
    return rx, tx


def _receive(rx, quiet_s: float = 0.5) -> list[tuple[float, int, bytes, float]]:
    """(sent, number, tag, arrived) of every datagram until nothing more comes for ``quiet_s``."""
    got = []
    while select.select([rx], [], [], quiet_s)[0]:
        data = rx.recv(65536)
        sent, number, tag = STAMP.unpack_from(data)
        got.append((sent, number, tag.rstrip(b"\0"), time.monotonic()))
    return got


def _measure(link, count: int = 25, tag: bytes = b"new", port=None):
    """Least one-way delay, span of arrivals, numbers that arrived (one clock: same process)."""
    rx, tx = _send(link, count, tag=tag, port=port)
    with rx, tx:
        got = _receive(rx)
    assert got, "nothing arrived"
    assert {t for _, _, t, _ in got} == {tag}, "only this measurement's datagrams"
    delays = [arrived - sent for sent, _, _, arrived in got]
    return min(delays), got[-1][3] - got[0][3], {number for _, number, _, _ in got}


def _wire_s(spec: LinkSpec, frames: int, size: int = 1000) -> float:
    """Time ``frames`` datagrams of ``size`` B take on the line (IP + UDP headers + 14 B Ethernet)."""
    return frames * (size + 28 + 14) * 8 / spec.forward.rate_bps


@pytest.mark.root
def test_a_userspace_link_takes_a_new_rate_delay_and_loss_and_forgets_the_previous_run(testbed):
    first = LinkSpec.parse(rate="1mbit", delay="5ms")
    link = testbed(first, backend="userspace", seed=1)
    assert link.can_reshape(LinkSpec.parse(delay="30ms")) and not link.can_reshape(LinkSpec.parse(mtu=1400))
    delay, span, arrived = _measure(link, count=10)          # the 12.5 kB queue holds 12
    least = 0.005 + _wire_s(first, 1)           # the delay after the first frame's transmission
    assert len(arrived) == 10 and least <= delay < least + 0.005, delay
    assert span == pytest.approx(_wire_s(first, 9), rel=0.25)

    # a run that leaves frames queued on the slow line (its sockets are gone when the run ends)
    rx, tx = _send(link, 10, tag=b"old")
    port = rx.getsockname()[1]
    rx.close()
    tx.close()
    second = LinkSpec.parse(rate="4mbit", delay="30ms")
    assert link.renew(seed=2, spec=second) is not None
    assert link.spec == second and link.describe()["link"] == second.describe()
    assert link.describe()["counters"]["a->b"]["packets"] == 0, "the new shapers count from zero"
    assert any("rate 4000000bit" in c for c in link.describe()["tc_commands"])
    delay, span, arrived = _measure(link, port=port)      # the old run's port: none of its frames come
    least = 0.030 + _wire_s(second, 1)
    assert len(arrived) == 25 and least <= delay < least + 0.005, delay
    assert span == pytest.approx(_wire_s(second, 24), rel=0.25)

    lossy = LinkSpec.parse(delay="1ms", loss="30%")
    assert link.renew(seed=11, spec=lossy) is not None
    _, _, kept = _measure(link, count=200)
    fresh = testbed(lossy, backend="userspace", seed=11)
    _, _, new = _measure(fresh, count=200)
    assert kept == new and 100 < len(kept) < 180, "the loss a new link with that seed draws"


def _tc(link, host):
    import json
    done = subprocess.run(["tc", "-n", link.testbed.namespaces[host], "-j", "qdisc", "show"],
                          capture_output=True, text=True, check=True)
    return [q for q in json.loads(done.stdout) if q["kind"] in ("tbf", "netem")]


def _loss_rules(link, host):
    done = subprocess.run(["ip", "netns", "exec", link.testbed.namespaces[host], "iptables", "-t", "raw", "-S",
                           "PREROUTING"], capture_output=True, text=True, check=True)
    return [line for line in done.stdout.splitlines() if "statistic" in line]


@pytest.mark.root
def test_a_namespaces_link_takes_a_new_rate_and_loss_in_its_qdiscs_and_rules(testbed):
    link = testbed(LinkSpec.parse(rate="10mbit", loss="1%"), backend="namespaces")
    assert [len(_loss_rules(link, h)) for h in "ab"] == [1, 1]
    assert link.renew(seed=3, spec=LinkSpec.parse(rate="20mbit")) is not None
    for host in "ab":
        assert [(q["kind"], q["options"]["rate"]) for q in _tc(link, host)] == [("tbf", 20_000_000 // 8)]
        assert _loss_rules(link, host) == [], "the old spec's loss is gone"
    assert link.renew(seed=4, spec=LinkSpec.parse(loss="2%", loss_reverse=0)) is not None
    assert _tc(link, "a") == [] and _tc(link, "b") == [], "no rate: no tbf left"
    assert _loss_rules(link, "a") == [] and len(_loss_rules(link, "b")) == 1
    assert "--probability 0.02" in _loss_rules(link, "b")[0]
    five = LinkSpec.parse(rate="5mbit")
    assert link.renew(seed=5, spec=five) is not None
    assert link.describe()["tc_commands"] == [c for c in link.describe()["tc_commands"] if "5000000bit" in c]
    _, span, arrived = _measure(link, count=40)
    assert len(arrived) == 40
    assert span == pytest.approx(_wire_s(five, 39 - 2), rel=0.3), "tbf at the new rate (after its 2-frame burst)"
    if not capabilities().netem:
        assert not link.can_reshape(LinkSpec.parse(delay="20ms")), "no delay line on this kernel"
