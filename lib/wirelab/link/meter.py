"""tbf is a meter, not a wire: what that means for a run on the backends whose rate is tbf's.

A cable serializes: a packet of L bytes takes L·8/C on it, whenever it is sent (the userspace
link and the relays do the same: ``emulator``). tbf (tc-tbf(8)) lets a packet out the moment
its bucket holds the packet's length, at the interface's speed, and refills the bucket at C up
to ``burst``: after a pause its first ``burst`` bytes take no time on the link, and a
stop-and-wait DATA that the bucket holds crosses without its transmission time
(``model.stopwait.cycle_time``). ``LinkSpec.burst_for`` keeps that bucket to one frame and
1 ms of the rate (``spec.TBF_SLACK_S``); these functions tell the model and the residuals
where it applies: the namespaces backend, and each sender's interface across hosts
(``hostshaping``).
"""
from __future__ import annotations

from .spec import LinkSpec

__all__ = ["METERED_BACKENDS", "meter_bytes", "burst_at_start"]

#: Backends whose rate is tbf's: a meter, not a wire (``meter_bytes``).
METERED_BACKENDS = ("namespaces", "hosts")


def meter_bytes(backend: str, spec: LinkSpec) -> int | None:
    """tbf's bucket (charged bytes) where ``backend`` shapes ``spec``'s forward rate with tbf, else
    None (the userspace link and the relays serialize like a cable): see the module docstring."""
    if backend in METERED_BACKENDS and spec.forward.rate_bps:
        return spec.burst_for(spec.forward)
    return None


def burst_at_start(backend: str, spec: LinkSpec) -> int:
    """Bytes a fresh link of ``backend`` lets out at the interface's speed before it shapes
    ``spec``'s rate: tbf's bucket starts full (namespaces, hosts: ``meter_bytes``); the userspace
    link and the relays pace from the first byte."""
    return meter_bytes(backend, spec) or 0
