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

import pandas as pd

__all__ = ["udp_end_markers"]


def udp_end_markers(df: pd.DataFrame, *, size: int = 4) -> list[dict]:
    """Each UDP direction (src:sport → dst:dport) whose data ends in ``size``-byte datagrams:
    ``markers`` (how many), ``last_data_s`` (the last record's time), ``marker_times_s``
    and ``gaps_s`` (from the last data to the first marker, then between markers)."""
    udp = df[(df["proto"] == "udp") & df["sport"].notna() & (df["frag_offset"].fillna(0) == 0)]
    if udp.empty:
        return []
    found = []
    for (src, sport, dst, dport), flow in udp.groupby(["src", "sport", "dst", "dport"], observed=True, sort=False):
        short = flow["payload_len"] == size
        sizes = flow.loc[flow["payload_len"] > size, "payload_len"]
        if sizes.empty or not short.any():
            continue
        last = float(flow.loc[flow["payload_len"] == sizes.mode().iloc[0], "time"].max())
        times = sorted(float(t) for t in flow.loc[short & (flow["time"] > last), "time"])
        if times:
            steps = [last] + times
            found.append({"src": f"{src}:{sport}", "dst": f"{dst}:{dport}", "markers": len(times),
                          "last_data_s": last, "marker_times_s": times,
                          "gaps_s": [round(b - a, 6) for a, b in zip(steps, steps[1:])]})
    return found
