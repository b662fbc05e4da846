"""Where the bytes travel: an emulated link, described then built, always torn down.

The one entry: ``wirelab.link.open(spec, backend="auto")`` chooses the backend
(once) and returns a link with two hosts, ``a`` and ``b`` (``opened``).

Read in this order: ``spec`` (what a link does), ``commands`` (the `tc`/`ip`/
`iptables` argv that do it, pure), ``emulator`` (the same rules packet by
packet), ``topology`` (hosts and links), ``detect`` (``capabilities()``: what this
machine can do, and which backend to use), ``opened`` (the one entry), ``testbed``
(build a topology in namespaces), ``renew`` (a kept testbed made ready for the
next run) with ``reshape`` (which other shapes it may take in place),
``userspace`` (the link process used where the kernel has no netem), ``meter`` (tbf
lets a packet out when its bucket holds it: where, and by how much), ``relay``
(loopback, no root), ``cleanup`` (names, state, the reaper), ``inspect`` (read
kernel state back through netlink), ``keeper`` (holds `wirelab testbed up`'s
testbeds). Across real machines: ``hosts`` (a link between two Dask workers), with
``workers`` (reaching them through Dask), ``hostshaping`` (tc on a real interface, for
one peer only), ``hostguard`` (what undoes it, whatever happens) and ``room`` (a room
of namespaces on one machine, each running a real ``dask worker``, to practise and test).

Addresses: two hosts are ``a`` 10.77.0.1/24 and ``b`` 10.77.0.2/24, inside their
namespaces only; the broker network of document 003 uses 10.77.1-5.0/24.
"""
from .._exports import lazy

_EXPORTS = {
    "LinkSpec": "spec", "Direction": "spec",
    "open": "opened:open_link", "backend_for": "detect", "wire_of": "opened", "carriage": "opened",
    "burst_at_start": "meter", "meter_bytes": "meter", "METERED_BACKENDS": "meter",
    "stands_for": "opened",
    "OpenLink": "opened",
    "capabilities": "detect", "Capabilities": "detect", "choose_backend": "detect",
    "BACKENDS": "detect",
    "shaping_commands": "commands",
    "Shaper": "emulator", "Counters": "emulator",
    "Topology": "topology", "Link": "topology", "two_hosts": "topology", "broker_network": "topology",
    "Testbed": "testbed", "UdpRelay": "relay", "TcpRelay": "relay",
    "reap": "cleanup", "end_process": "cleanup", "remove_all": "cleanup", "testbeds": "cleanup",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
