"""PPCB packets read back from a capture: what actually crossed the wire, packet by packet.

    packets = ppcb_packets("run.pcapng", port=5000)     # one row per PPCB packet (and TCP SYN/FIN/RST)
    collapse(packets)                                    # repeats folded: "DATA 0..57 (58)", "DATA ⇄ ACC"

Over UDP each datagram is one PPCB packet (its type byte first, shared/ppcb.md);
over TCP the packets follow each other on the byte stream, so each direction's
segments are put back in sequence order (a retransmitted segment counts once)
and walked packet by packet: the type byte says how long the header is, a
DATA's ``data_len`` how many bytes to skip. A packet's time is the time of the
segment its first byte came in. TCP's SYN, FIN and RST appear as rows of
their own, because how a connection ends is part of what a peer did.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..capture import read_capture
from ..errors import ProtocolError
from ..transfer import ppcb

__all__ = ["ppcb_packets", "collapse"]

_FLAGS = {0x02: "SYN", 0x01: "FIN", 0x04: "RST"}
COLUMNS = ["time_s", "src", "dst", "transport", "kind", "session", "packet_no", "data_len"]


def _payload(raw: bytes, row) -> bytes:
    start = int(row.file_offset) + int(row.payload_offset)
    length = min(int(row.payload_len), int(row.cap_len) - int(row.payload_offset))
    return raw[start:start + max(length, 0)]


def _packet(data: bytes, row, transport: str, time: float) -> dict:
    p = ppcb.unpack(data, stream=transport == "tcp")
    return {"time_s": time, "src": f"{row.src}:{row.sport}", "dst": f"{row.dst}:{row.dport}",
            "transport": transport, "kind": p.kind, "session": p.session_id.hex()[:8],
            "packet_no": p.packet_no, "data_len": p.data_len}


def ppcb_packets(path: str | Path, *, port: int | None = None) -> pd.DataFrame:
    """Every PPCB packet to or from ``port`` (default: every UDP/TCP packet) in the capture at
    ``path``, in time order; ``time_s`` counts from the first frame. Bytes that do not parse as
    PPCB become one row of kind "not PPCB" (a peer sending garbage is worth seeing)."""
    frames = read_capture(path)
    raw = Path(path).read_bytes()
    if frames.empty:
        return pd.DataFrame(columns=COLUMNS)
    start = frames["time"].min()
    mine = frames[frames["proto"].isin(["udp", "tcp"])]
    if port is not None:
        mine = mine[(mine["sport"] == port) | (mine["dport"] == port)]
    rows = []
    for row in mine[(mine["proto"] == "udp") & (mine["frag_offset"].fillna(0) == 0)].itertuples():
        rows.append(_datagram(_payload(raw, row), row, row.time - start))
    for row in frames[frames["proto"] == "icmp"].itertuples():
        unreachable = _unreachable(raw, row, port)
        if unreachable:
            rows.append({"time_s": row.time - start, "src": str(row.src), "dst": str(row.dst),
                         "transport": "icmp", "kind": unreachable})
    tcp = mine[mine["proto"] == "tcp"]
    for row in tcp.itertuples():
        for bit, name in _FLAGS.items():
            if int(row.tcp_flags) & bit:
                rows.append({"time_s": row.time - start, "src": f"{row.src}:{row.sport}",
                             "dst": f"{row.dst}:{row.dport}", "transport": "tcp", "kind": name})
    for _, segments in tcp.groupby(["src", "sport", "dst", "dport"], observed=True):
        rows.extend(_stream(raw, segments, start))
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values("time_s", kind="stable").reset_index(drop=True)


def _unreachable(raw: bytes, row, port) -> str | None:
    """"ICMP port unreachable" when this ICMP message reports a datagram to or from ``port``."""
    frame = raw[int(row.file_offset):int(row.file_offset) + int(row.cap_len)]
    try:
        icmp = 14 + (frame[14] & 0x0F) * 4                      # Ethernet, then the IPv4 header
        inner = icmp + 8
        ports = frame[inner + (frame[inner] & 0x0F) * 4:][:4]
        if frame[icmp] != 3 or len(ports) < 4:
            return None
        sport, dport = int.from_bytes(ports[:2], "big"), int.from_bytes(ports[2:], "big")
    except IndexError:
        return None
    if port is not None and port not in (sport, dport):
        return None
    return "ICMP port unreachable" if frame[icmp + 1] == 3 else f"ICMP unreachable (code {frame[icmp + 1]})"


def _datagram(data: bytes, row, time: float) -> dict:
    try:
        return _packet(data, row, "udp", time)
    except ProtocolError:
        return {"time_s": time, "src": f"{row.src}:{row.sport}", "dst": f"{row.dst}:{row.dport}",
                "transport": "udp", "kind": "not PPCB", "data_len": len(data)}


def _stream(raw: bytes, segments: pd.DataFrame, start: float) -> list[dict]:
    """One direction of a TCP connection, reassembled and walked."""
    data = segments[segments["payload_len"] > 0].sort_values(["tcp_seq", "time"])
    buffer, times, offsets, expected = bytearray(), [], [], None
    for row in data.itertuples():
        seq = int(row.tcp_seq)
        if expected is not None and seq < expected:
            continue                                  # a retransmission: we have those bytes
        offsets.append(len(buffer))
        times.append(row.time - start)
        buffer += _payload(raw, row)
        expected = seq + int(row.payload_len)
    rows, at, segment = [], 0, 0
    first = data.iloc[0] if len(data) else None
    while first is not None and at < len(buffer):
        while segment + 1 < len(offsets) and offsets[segment + 1] <= at:
            segment += 1
        try:
            size = ppcb.header_size(buffer[at])
            packet = _packet(bytes(buffer[at:at + size]), first, "tcp", times[segment])
        except (ProtocolError, IndexError):
            rows.append({"time_s": times[segment], "src": f"{first.src}:{first.sport}",
                         "dst": f"{first.dst}:{first.dport}", "transport": "tcp", "kind": "not PPCB",
                         "data_len": len(buffer) - at})
            break
        rows.append(packet)
        at += size + (packet["data_len"] if packet["kind"] == "DATA" else 0)
    return rows


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
