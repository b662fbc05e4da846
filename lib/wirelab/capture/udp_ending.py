"""nttcp's UDP ending in a capture: the short datagrams that mark where a transmission ended.

A UDP receiver cannot tell the last datagram from a lost one, so nttcp's sender
ends with three 4-byte datagrams 2 s apart (document 002, whose Wireshark showed
them as "Len=4" after the 646 B records, each answered by ICMP port unreachable
once the receiver had gone). wirelab's sender sends the same when asked
(``measure(..., end_markers=3)``). ``udp_end_markers`` finds them in any capture:
per UDP direction that carried data, the datagrams of exactly ``size`` payload
bytes after its last record (a datagram of its most common size), with their
times and the gaps between them; control datagrams of other sizes around them
(wirelab's END, 9 B) do not count.
"""
from __future__ import annotations

import numpy as np

from .conversations import first_seen_ids
from .reader.frames import Frames

__all__ = ["udp_end_markers"]


def udp_end_markers(df, *, size: int = 4) -> list[dict]:
    """Each UDP direction (src:sport → dst:dport) whose data ends in ``size``-byte datagrams:
    ``markers`` (how many), ``last_data_s`` (the last record's time), ``marker_times_s``
    and ``gaps_s`` (from the last data to the first marker, then between markers).
    ``df``: a ``read_capture`` DataFrame, or its ``frames.Frames``."""
    f = df if isinstance(df, Frames) else Frames.of(df)
    udp = np.flatnonzero(f.protocol("udp") & (f.sport >= 0) & (f.frag_offset <= 0))
    if not udp.size:
        return []
    direction, _ = first_seen_ids(np.stack([f.src, f.sport, f.dst, f.dport], axis=1)[udp])
    found = []
    for d in range(int(direction.max()) + 1):
        rows = udp[direction == d]
        payload, time = f.payload_len[rows], f.time[rows]
        short, sizes = payload == size, payload[payload > size]
        if not sizes.size or not short.any():
            continue
        values, counts = np.unique(sizes, return_counts=True)
        record = values[counts == counts.max()].min()          # the most common size (the smallest of ties)
        last = float(time[payload == record].max())
        times = sorted(float(t) for t in time[short & (time > last)])
        if times:
            steps = [last] + times
            i = rows[0]
            found.append({"src": f"{f.addresses[f.src[i]]}:{f.sport[i]}",
                          "dst": f"{f.addresses[f.dst[i]]}:{f.dport[i]}", "markers": len(times),
                          "last_data_s": last, "marker_times_s": times,
                          "gaps_s": [round(b - a, 6) for a, b in zip(steps, steps[1:])]})
    return found
