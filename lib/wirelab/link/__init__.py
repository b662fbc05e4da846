"""Where the bytes travel: an emulated link, described then built, always torn down.

Read in this order: ``spec`` (what a link does), ``commands`` (the `tc`/`ip`/
`iptables` argv that do it, pure), ``emulator`` (the same rules packet by
packet), ``topology`` (hosts and links), ``capabilities`` (what this machine
can do), ``testbed`` (build it in namespaces), ``userspace`` (the link
process used where the kernel has no netem), ``relay`` (loopback, no root),
``cleanup`` (names, state, the reaper), ``probe`` and ``iperf`` (measure it),
``goodput`` (document 004's sweeps), ``keeper`` (holds `wirelab testbed up`'s testbeds).

Addresses: two hosts are ``a`` 10.77.0.1/24 and ``b`` 10.77.0.2/24, inside their
namespaces only; the broker network of document 003 uses 10.77.1-5.0/24.
"""
from .capabilities import BACKENDS, Capabilities, capabilities, choose_backend
from .cleanup import reap, remove_all, testbeds
from .emulator import Counters, Shaper
from .relay import TcpRelay, UdpRelay
from .spec import Direction, LinkSpec
from .testbed import Testbed
from .topology import Link, Topology, broker_network, two_hosts

__all__ = [
    "LinkSpec", "Direction", "Shaper", "Counters", "Topology", "Link", "two_hosts",
    "broker_network", "Testbed", "capabilities", "Capabilities", "choose_backend", "BACKENDS",
    "reap", "remove_all", "testbeds", "UdpRelay", "TcpRelay",
]
