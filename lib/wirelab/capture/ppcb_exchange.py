"""What two PPCB peers exchanged, read back from a capture: what actually crossed the wire.

    packets = exchange("run.pcapng", port=5000)         # one row per PPCB packet (and TCP SYN/FIN/RST)
    collapse(packets)                                    # repeats folded: "DATA 0..57 (58)", "DATA ⇄ ACC"

The packets are the kit's reading (``wirelab.capture.ppcb_reader``), with every
UDP and TCP packet to or from ``port`` taken as PPCB (a peer sending garbage is
worth seeing: what is no well-formed packet becomes a row of kind "not PPCB").
Around them, what a peer did besides: TCP's SYN, FIN and RST, and ICMP port
unreachable, as rows of their own. Times count from the first frame.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .reader.loader import read_capture
from .ppcb_reader import ppcb_packets as read_ppcb
from ..wire.headers import ETHERNET_HEADER

__all__ = ["exchange", "collapse"]

_FLAGS = {0x02: "SYN", 0x01: "FIN", 0x04: "RST"}
COLUMNS = ["time_s", "src", "dst", "transport", "kind", "session", "packet_no", "data_len", "frame"]
#: ``port=None``: every port is read as PPCB
_EVERY_PORT = range(1, 65536)


def exchange(path: str | Path, *, port: int | None = None) -> pd.DataFrame:
    """Every PPCB packet to or from ``port`` (default: every UDP/TCP packet) in the capture at
    ``path``, in time order; ``time_s`` counts from the first frame, ``frame`` is the frame's number as
    Wireshark shows it (1-based; a packet's last frame, where TCP or IP fragments carry it). Bytes that do not parse as
    PPCB become one row of kind "not PPCB" (a peer sending garbage is worth seeing)."""
    frames = read_capture(path)
    if frames.empty:
        return pd.DataFrame(columns=COLUMNS)
    ports = _EVERY_PORT if port is None else [port]
    start = frames["time"].min()
    first = frames["time"].iloc[0]                      # (the reader's times count from frame 1)
    rows = []
    for p in read_ppcb(path, udp_ports=ports, tcp_ports=ports).itertuples():
        ends = {"time_s": p.time + first - start, "src": f"{p.src}:{p.sport}", "dst": f"{p.dst}:{p.dport}",
                "transport": p.transport, "frame": int(p.frame)}
        if p.malformed or p.session_id is None:
            rows.append({**ends, "kind": "not PPCB", "data_len": p.length})
        else:
            rows.append({**ends, "kind": p.type, "session": p.session_id[:8],
                         "packet_no": None if pd.isna(p.packet_no) else int(p.packet_no),
                         "data_len": None if pd.isna(p.data_len) else int(p.data_len)})
    mine = frames[frames["proto"].isin(["udp", "tcp"])]
    if port is not None:
        mine = mine[(mine["sport"] == port) | (mine["dport"] == port)]
    for row in mine[mine["proto"] == "tcp"].itertuples():
        for bit, name in _FLAGS.items():
            if int(row.tcp_flags) & bit:
                rows.append({"time_s": row.time - start, "src": f"{row.src}:{row.sport}",
                             "dst": f"{row.dst}:{row.dport}", "transport": "tcp", "kind": name,
                             "frame": row.Index + 1})
    raw = Path(path).read_bytes()
    for row in frames[frames["proto"] == "icmp"].itertuples():
        unreachable = _unreachable(raw, row, port)
        if unreachable:
            rows.append({"time_s": row.time - start, "src": str(row.src), "dst": str(row.dst),
                         "transport": "icmp", "kind": unreachable, "frame": row.Index + 1})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values("time_s", kind="stable").reset_index(drop=True)


def _unreachable(raw: bytes, row, port) -> str | None:
    """"ICMP port unreachable" when this ICMP message reports a datagram to or from ``port``."""
    frame = raw[int(row.file_offset):int(row.file_offset) + int(row.cap_len)]
    try:
        icmp = ETHERNET_HEADER + (frame[ETHERNET_HEADER] & 0x0F) * 4      # Ethernet, then the IPv4 header
        inner = icmp + 8                                                   # the ICMP header, then the datagram
        ports = frame[inner + (frame[inner] & 0x0F) * 4:][:4]
        if frame[icmp] != 3 or len(ports) < 4:
            return None
        sport, dport = int.from_bytes(ports[:2], "big"), int.from_bytes(ports[2:], "big")
    except IndexError:
        return None
    if port is not None and port not in (sport, dport):
        return None
    return "ICMP port unreachable" if frame[icmp + 1] == 3 else f"ICMP unreachable (code {frame[icmp + 1]})"


def _numbers(first, last) -> str:
    """"7", "0..57", or "" for packets without a number."""
    if first is None or first != first:
        return ""
    return f"{first:.0f}" if last == first or last is None or last != last else f"{first:.0f}..{last:.0f}"


def collapse(packets: pd.DataFrame) -> pd.DataFrame:
    """Fold what repeats: a run of the same kind in the same direction becomes one row (``DATA``
    numbered 0 to 57: ``count`` 58, ``packet_no`` "0..57"), and so does a run of stop-and-wait
    exchanges, each DATA followed by its ACC (kind "DATA ⇄ ACC"), with the first and last times."""
    records = packets.to_dict("records")
    paired = []
    for row in records:
        last = paired[-1] if paired else None
        if (last and row["kind"] == "ACC" and last["kind"] == "DATA" and row["packet_no"] == last["packet_no"]
                and (row["src"], row["dst"]) == (last["dst"], last["src"])):
            last["kind"] = "DATA ⇄ ACC"
            continue
        paired.append(dict(row))
    rows = []
    for row in paired:
        last = rows[-1] if rows else None
        if last and (last["kind"], last["src"], last["dst"]) == (row["kind"], row["src"], row["dst"]) \
                and row["kind"] in ("DATA", "ACC", "DATA ⇄ ACC", "not PPCB"):
            last["count"] += 1
            last["until_s"] = row["time_s"]
            last["last_no"] = row["packet_no"]
            continue
        rows.append({**row, "count": 1, "until_s": row["time_s"], "last_no": row["packet_no"]})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["packet_no"] = [_numbers(a, b) for a, b in zip(out["packet_no"], out["last_no"])]
    return out.drop(columns=["last_no"])[["time_s", "until_s", "src", "dst", "transport", "kind", "count",
                                          "session", "packet_no", "data_len"]]
