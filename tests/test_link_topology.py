"""Topologies are data: hosts, links, addresses, interface names."""
import pytest

from wirelab.errors import UsageError
from wirelab.link import LinkSpec, Topology, broker_network, two_hosts


def test_two_hosts_addresses():
    topo = two_hosts(LinkSpec.parse(rate="10mbit"))
    assert topo.hosts == ("a", "b")
    assert topo.address("a") == "10.77.0.1" and topo.address("b") == "10.77.0.2"
    assert {r["interface"] for r in topo.table()} == {"to-a", "to-b"}


def test_broker_network_is_document_003():
    topo = broker_network(LinkSpec(), LinkSpec.parse(delay="20ms"), LinkSpec.parse(delay="20ms"))
    assert topo.hosts == ("s", "b", "r1", "r2", "d")
    assert {(l.a, l.b) for l in topo.links} == {("s", "b"), ("b", "r1"), ("b", "r2"), ("r1", "d"), ("r2", "d")}
    assert len({l.subnet for l in topo.links}) == 5
    assert topo.address("b", "r2") == "10.77.3.1" and topo.address("d", "r1") == "10.77.4.2"
    assert topo.link("s").spec == LinkSpec()
    with pytest.raises(UsageError):
        topo.address("b")        # b has three links: say which


def test_bad_hosts_are_refused():
    with pytest.raises(UsageError):
        Topology("x", ("A-very-long-name",), ())
    with pytest.raises(UsageError):
        two_hosts().link("a", "z")
