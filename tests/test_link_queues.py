"""The bottleneck queue read while traffic runs: tc's counters parsed from recorded output, and
each backend's queue seen filling under an offered load twice the link's rate."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from wirelab.link import LinkSpec
from link_probe import UdpCounter, udp_blast
from wirelab.link.queues import parse_tc_stats, queue_reader, tc_latency_s

DATA = Path(__file__).parent / "data"


def test_tbfs_counters_from_recorded_tc_output():
    found = parse_tc_stats((DATA / "tc_qdisc_tbf_loaded.json").read_text())
    assert found == {"kind": "tbf", "backlog_bytes": 60560, "backlog_packets": 40, "dropped": 9,
                     "sent_bytes": 6256318, "sent_packets": 4170, "rate_bps": 10_000_000,
                     "tbf_latency_s": 0.077578}
    # tbf with a pfifo under it: tbf's own counters hold its child's packets
    child = parse_tc_stats((DATA / "tc_qdisc_tbf_pfifo_loaded.json").read_text(), "to-b")
    assert child["kind"] == "tbf" and child["child"] == "pfifo" and child["backlog_packets"] == 27
    assert parse_tc_stats("[]") is None


def test_tbfs_latency_is_what_tc_prints_for_a_limit():
    # the recorded tbf: limit 100000 B, burst 3027 B at 10 Mbit/s; tc printed "lat 77.6ms" (77578 µs)
    assert tc_latency_s(100000, 10e6, 3027) == pytest.approx(0.077578, abs=1e-6)


@contextmanager
def sampling(read, every_s: float = 0.02):
    """``read()``'s answers every ``every_s`` while the block runs (the list fills as it goes)."""
    seen, stop = [], threading.Event()

    def sample():
        while not stop.wait(every_s):
            seen.append(read())
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        yield seen
    finally:
        stop.set()
        sampler.join(5)


def _fill(link, seconds: float = 0.6):
    """Offer twice the link's rate from host a for ``seconds``; the queue reader's answers meanwhile."""
    tb = link.testbed
    with UdpCounter((tb.address("b"), 0), netns=tb.namespace("b")) as counter, \
            sampling(queue_reader(link)) as seen:
        rate = 2 * link.spec.forward.rate_bps / (8 * 1000)          # 1000 B datagrams, twice the rate
        udp_blast(counter.address, int(rate * seconds), rate_pps=rate, size=1000, netns=tb.namespace("a"))
    return [s for s in seen if s]


@pytest.mark.root
@pytest.mark.parametrize("backend", ["namespaces", "userspace"])
def test_the_queue_fills_to_its_limit_under_twice_the_rate(backend, testbed):
    spec = LinkSpec.parse(rate="10mbit", queue="30KB")
    link = testbed(spec, backend=backend)
    seen = _fill(link)
    assert seen, "the reader answered"
    limit = spec.queue_for(spec.forward)
    fullest = max(s["backlog_bytes"] for s in seen)
    assert 0.7 * limit < fullest <= limit + spec.frame_bytes          # full, never beyond the limit
    assert seen[-1]["dropped"] > 0 and all(s["limit_bytes"] == limit for s in seen)
    if backend == "namespaces":
        # the second road (netlink, pyroute2) reads the same counters once the queue is idle
        from wirelab.link.inspect import qdiscs
        idle, deadline = queue_reader(link)(), time.monotonic() + 5
        while idle["backlog_bytes"] and time.monotonic() < deadline:     # the queue drains: ~30 ms
            idle = queue_reader(link)()
        (tbf,) = [q for q in qdiscs(link.testbed.namespace("a")) if q["dev"] == "to-b" and q["kind"] == "tbf"]
        assert (idle["sent_bytes"], idle["dropped"], idle["backlog_bytes"]) == \
            (tbf["sent_bytes"], tbf["dropped"], tbf["backlog_bytes"]) == (idle["sent_bytes"], idle["dropped"], 0)


def test_a_loopback_relay_shows_its_queue_and_an_unshaped_link_has_none():
    from wirelab import link as links
    from wirelab.transfer.measure_client import measure
    from wirelab.transfer import start_server
    with links.open(LinkSpec.parse(rate="5mbit", queue="20KB"), backend="loopback") as link:
        port, stop, thread, _ = start_server("udp")
        try:
            target = link.reach(port, "udp")
            with sampling(queue_reader(link)) as seen:
                result = measure("udp", *target, mode="load", rate_bps=10e6, packet=1000, time_s=0.5)
        finally:
            stop.set()
            thread.join(5)
    assert result.bytes_sent > 0
    fullest = max(s["backlog_bytes"] for s in seen if s)
    assert 10_000 < fullest <= 20_000 and seen[-1]["dropped"] > 0
    with links.open(LinkSpec(), backend="loopback") as plain:
        assert queue_reader(plain)() is None             # nothing shapes it: no relay, no queue


def test_a_queue_discipline_goes_under_tbf_where_the_kernel_has_it():
    from wirelab.link import stands_for
    from wirelab.errors import BackendUnavailableError, UsageError
    from wirelab.link.detect import Capabilities, choose_backend
    spec = LinkSpec.parse(rate="10mbit", queue="30280B", qdisc="pfifo")
    assert spec.queue_packets == 20 and "queue pfifo" in spec.describe()
    assert stands_for(spec)[:2] == [
        "tc -n a qdisc replace dev to-b root handle 2: tbf rate 10000000bit burst 2764b limit 30280b",
        "tc -n a qdisc replace dev to-b parent 2:1 pfifo limit 20"]
    with pytest.raises(UsageError):
        LinkSpec.parse(rate="10mbit", qdisc="red")
    flags = dict(root=True, netns=True, veth=True, tbf=True, netem=False, tun=True, packet_socket=True,
                 iptables_statistic=True)
    without = Capabilities(**flags, qdiscs={"pfifo": True, "fq_codel": False},
                           reasons={"qdisc fq_codel": "Specified qdisc kind is unknown."})
    assert choose_backend(spec, caps=without) == "namespaces"
    with pytest.raises(BackendUnavailableError, match="fq_codel.*unknown"):
        choose_backend(spec.with_changes(qdisc="fq_codel"), caps=without)
    with pytest.raises(BackendUnavailableError, match="needs netem"):
        choose_backend(LinkSpec.parse(rate="10mbit", delay="20ms", qdisc="pfifo"), caps=without)
    with pytest.raises(BackendUnavailableError, match="one kind of queue"):
        choose_backend(spec, "userspace", caps=without)


@pytest.mark.root
def test_a_pfifo_under_tbf_fills_to_its_packets(testbed):
    from wirelab.link import capabilities
    if not capabilities().qdiscs.get("pfifo"):
        pytest.skip(capabilities().reasons.get("qdisc pfifo", "no pfifo"))
    spec = LinkSpec.parse(rate="10mbit", queue="30280B", qdisc="pfifo")      # 20 full frames
    link = testbed(spec, backend="namespaces")
    seen = _fill(link)
    assert seen[-1]["child"] == "pfifo" and max(s["backlog_packets"] for s in seen) in (19, 20)
