"""ping, the kit's way: echo rounds across a link, and their round trips summed up as ping does.

    with wirelab.link.open(LinkSpec.parse(rate="100mbit", delay="80ms", jitter="10ms",
                                          delay_reverse=0, jitter_reverse=0)) as link:
        ping(link, rounds=20)       # {"rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms", "lost", ...}

ping sends ICMP echo requests; here a UDP echo of ``packet`` bytes (64: ping's 56 B of data
and 8 B of ICMP header) leaves host a once every ``interval_s`` and host b's wirelab server
answers at once (``measure(mode="echo")``). Both hosts read one clock, as ping's one host
does. The round trip crosses each direction once, so a delay set on one direction only (as
document 004 set netem on one host) counts once, as it did for ping. How long it may take
follows the link's own round trip (``experiment.deadline``'s slack and margin).
"""
from __future__ import annotations

import math
import statistics

from ..errors import TransferError
from ..transfer.clockrounds import echo_exchange
from ..experiment.deadline import MARGIN_S, SLACK

__all__ = ["ping", "ECHO_BYTES"]

#: One echo's payload: ping's default 56 B of data and its 8 B ICMP header.
ECHO_BYTES = 64


def ping(link, *, rounds: int = 20, interval_s: float = 0.2, packet: int = ECHO_BYTES) -> dict:
    """``rounds`` echo rounds from host a to host b, ``interval_s`` apart: ping's summary line
    (min, avg, max, mdev of the round trips, in ms), how many got no answer, and the rounds."""
    spec = link.spec
    expected = rounds * max(interval_s, spec.rtt_s + spec.forward.jitter_s + spec.reverse.jitter_s)
    result = echo_exchange(link, rounds=rounds, interval_s=interval_s, packet=packet,
                           timeout=SLACK * expected + MARGIN_S, max_wait=max(2.0, 4 * spec.rtt_s), same_clock=True)
    rtts = [r * 1e3 for r in result.get("rtts_s") or []]
    if not rtts:
        raise TransferError(f"no echo round came back ({result.get('error') or 'all lost'})",
                            "check the link is up and the server answers")
    mean = statistics.fmean(rtts)
    return {"rounds": rounds, "answered": len(rtts), "lost": rounds - len(rtts), "rtt_min_ms": min(rtts),
            "rtt_avg_ms": mean, "rtt_max_ms": max(rtts),
            "rtt_mdev_ms": math.sqrt(statistics.fmean((r - mean) ** 2 for r in rtts)), "rtts_ms": rtts,
            "backend": link.backend, "link": spec.describe()}
