"""PPCB packets read from a capture by the kit itself: one row per packet, as Wireshark shows them.

    ppcb_packets("run.pcapng")                  # a DataFrame, one row per PPCB packet
    ppcb_summary(ppcb_packets("run.pcapng"))    # one entry per session (``wirelab analyze`` prints it)

The rules are those of the kit's Wireshark dissector (``ppcb.lua``), so the
two agree (a test checks it on every capture): a UDP conversation is PPCB
from its first datagram that is exactly one well-formed packet on, both
ways; a TCP conversation is PPCB when a direction's first byte starts a CONN
(relative sequence number 1), and its streams are then put back in sequence
order (a retransmission counts once) and cut into packets: the type byte
says how long a header is, a DATA's ``data_len`` how much follows.
``udp_ports``/``tcp_ports`` decode those ports as PPCB whatever they carry.
Fragmented datagrams are reassembled first. Offsets and sizes are the packet
table's (``wirelab.wire.ppcb``).

Columns: frame (1-based, where the packet ends), time (from the first frame),
src, sport, dst, dport, transport, type ("CONN"… or "type N"), session_id (hex),
protocol_id, total_length, packet_no, data_len (missing where a type has
none), malformed (not exactly one well-formed packet: unknown type, cut,
wrong length), length (its bytes). The reading itself is numpy and the
standard library (``packets_of``): ``wirelab analyze`` uses it without pandas.
"""
from __future__ import annotations

import numpy as np

from .. import transports
from ..wire.headers import UDP_HEADER
from ..wire.ppcb import CARRIES, CODES, HEADER_BY_CODE, MAX_DATA, OFFSETS, SIZES, TYPES
from .conversations import conversations_of, first_seen_ids
from .reader.frames import Frames
from .tcp_stream import TcpStream
from .._plain import is_file_object, is_frame
from .reader.loader import _buffer, read_part

__all__ = ["ppcb_packets", "ppcb_summary", "packets_of", "COLUMNS"]

COLUMNS = ["frame", "time", "src", "sport", "dst", "dport", "transport", "type", "session_id", "protocol_id",
           "total_length", "packet_no", "data_len", "malformed", "length"]
#: The fields after the session id, in the order a packet carries them.
_FIELDS = ("protocol_id", "total_length", "packet_no", "data_len")
_CONN, _DATA = CODES["CONN"], CODES["DATA"]
_SESSION_END = OFFSETS["session_id"] + SIZES["session_id"]
_SYN = 0x02


def _field(raw, name: str) -> int:
    at = OFFSETS[name]
    return int.from_bytes(raw[at:at + SIZES[name]], "big")


def packet_fields(raw: bytes, *, datagram: bool) -> dict:
    """One packet's fields as the dissector shows them (``raw``: the packet's bytes)."""
    code = raw[0]
    header = HEADER_BY_CODE.get(code)
    row = {"type": TYPES.get(code, f"type {code}"), "session_id": None, "length": len(raw),
           **dict.fromkeys(_FIELDS)}
    if header is None or len(raw) < header:
        return {**row, "malformed": True}
    row["session_id"] = bytes(raw[OFFSETS["session_id"]:_SESSION_END]).hex()
    for name in _FIELDS:
        if code in CARRIES[name]:
            row[name] = _field(raw, name)
    if code == _DATA:
        bad = not 1 <= row["data_len"] <= MAX_DATA or len(raw) != header + row["data_len"]
    else:
        bad = datagram and len(raw) != header
    return {**row, "malformed": bad}


def _one_packet(raw: bytes) -> bool:
    """Exactly one well-formed packet: what a PPCB datagram is (the dissector's heuristic)."""
    row = packet_fields(raw, datagram=True)
    return not row["malformed"] and (row["type"] != "CONN" or row["protocol_id"] in transports.protocol_names())


class _Bytes:
    """The payload bytes of frames, read from the capture file's bytes."""

    def __init__(self, f: Frames, buffer):
        self.u8 = np.frombuffer(buffer, dtype=np.uint8) if len(buffer) else np.zeros(0, np.uint8)
        self.start = f.file_offset + np.maximum(f.payload_offset, 0)
        # what the file holds of each payload (a snaplen may have cut it)
        self.held = np.clip(np.minimum(f.payload_len, f.cap_len - f.payload_offset), 0, None)
        self.held[(f.payload_offset < 0) | (f.payload_len < 0)] = 0

    def of(self, i: int) -> bytes:
        return self.u8[self.start[i]:self.start[i] + self.held[i]].tobytes()

    def byte(self, rows: np.ndarray, at: int) -> np.ndarray:
        """Byte ``at`` of each payload at ``rows`` (-1 where the payload is shorter)."""
        ok = self.held[rows] > at
        out = np.full(rows.size, -1, dtype=np.int64)
        out[ok] = self.u8[self.start[rows[ok]] + at]
        return out


def packets_of(f: Frames, buffer, *, udp_ports=(), tcp_ports=()) -> list[dict]:
    """Every PPCB packet of the capture whose columns are ``f`` and bytes ``buffer``, in frame
    order, as rows (``COLUMNS``)."""
    data = _Bytes(f, buffer)
    conv, a_to_b = conversations_of(f, later_fragments=False)
    rows = _datagrams(f, data, conv, set(udp_ports)) + _streams(f, data, conv, a_to_b, set(tcp_ports))
    rows.sort(key=lambda r: (r["frame"], r.pop("_order")))
    t0 = f.time[0] if len(f) else 0.0
    for row in rows:
        i = row["frame"]
        row.update(frame=i + 1, time=float(f.time[i] - t0))
    return [{name: row.get(name) for name in COLUMNS} for row in rows]


def _ends(f: Frames, i: int, j: int | None = None) -> dict:
    """The addresses and ports of a packet (``i``: the frame with its ports, ``j``: where it ends)."""
    return {"src": f.addresses[f.src[i]], "dst": f.addresses[f.dst[i]], "sport": int(f.sport[i]),
            "dport": int(f.dport[i]), "frame": i if j is None else j}


# --------------------------------------------------------------------------- UDP
def _datagrams(f: Frames, data: _Bytes, conv: np.ndarray, ports: set) -> list[dict]:
    udp = f.protocol("udp") & (f.sport >= 0)
    whole = np.flatnonzero(udp & (f.frag_offset <= 0) & ~f.more_frags & (data.held > 0))
    joined = _reassembled(f, data, udp)                  # frame completing it → (bytes, first fragment)
    # (sorted, and no frame twice; np.unique without return_* would import numpy.ma: start-up)
    frames = np.sort(np.concatenate([whole, np.fromiter(joined, dtype=np.int64, count=len(joined))]))
    if not frames.size:
        return []
    ports_at = np.array([joined[i][1] if i in joined else i for i in frames.tolist()], dtype=np.int64)
    forced = (np.isin(f.sport[ports_at], list(ports)) | np.isin(f.dport[ports_at], list(ports))) if ports \
        else np.zeros(frames.size, dtype=bool)
    # the heuristic's cheap part on every datagram at once (a big capture of other UDP traffic
    # costs a few numpy passes), the whole check only where it passes
    first, held = data.byte(frames, 0), data.held[frames].copy()
    for k, i in enumerate(frames.tolist()):
        if i in joined:
            first[k], held[k] = joined[i][0][0], len(joined[i][0])

    def payload(k: int) -> bytes:
        i = int(frames[k])
        return joined[i][0] if i in joined else data.of(i)

    since = {}                                            # conversation → PPCB from this datagram on
    for k in np.flatnonzero((held >= _SESSION_END) & np.isin(first, list(HEADER_BY_CODE))):
        c = int(conv[ports_at[k]])
        if c not in since and _one_packet(payload(k)):
            since[c] = int(frames[k])
    out = []
    for k in range(frames.size):
        i, c = int(frames[k]), int(conv[ports_at[k]])
        if forced[k] or (c in since and i >= since[c]):
            out.append({**_ends(f, int(ports_at[k]), i), "transport": "udp", "_order": 0,
                        **packet_fields(payload(k), datagram=True)})
    return out


def _reassembled(f: Frames, data: _Bytes, udp: np.ndarray) -> dict[int, tuple[bytes, int]]:
    """Fragmented UDP datagrams put back together: the frame of the fragment that completed each
    → (its UDP payload, the frame of its first fragment, which has the ports). Later fragments
    carry no ports: they are matched by addresses and IP id."""
    parts = np.flatnonzero(f.protocol("udp") & ((f.frag_offset > 0) | f.more_frags))
    out = {}
    if not parts.size:
        return out
    datagram, _ = first_seen_ids(np.stack([f.src, f.dst, f.ip_id], axis=1)[parts])
    for key in range(int(datagram.max()) + 1):
        pieces = parts[datagram == key].tolist()
        heads = [i for i in pieces if f.frag_offset[i] <= 0 and udp[i]]
        if not heads or all(f.more_frags[i] for i in pieces):
            continue
        # fragment offsets count IP payload bytes, the UDP header included: the first
        # fragment's payload (after that header) is the datagram's first byte
        raw = bytearray()
        for i in sorted(pieces, key=lambda i: max(int(f.frag_offset[i]), 0)):
            at = max(int(f.frag_offset[i]), 0) - (UDP_HEADER if f.frag_offset[i] > 0 else 0)
            if at != len(raw):
                break
            raw += data.of(i)
            if not f.more_frags[i]:
                out[max(pieces)] = (bytes(raw), heads[0])
                break
    return out


# --------------------------------------------------------------------------- TCP
def _streams(f: Frames, data: _Bytes, conv: np.ndarray, a_to_b: np.ndarray, ports: set) -> list[dict]:
    tcp = np.flatnonzero(f.protocol("tcp") & (f.tcp_seq >= 0) & (conv >= 0))
    if not tcp.size:
        return []
    direction, _ = first_seen_ids(np.stack([conv[tcp], a_to_b[tcp]], axis=1))
    # Wireshark's relative sequence numbers: from the SYN, else from the first segment seen (as 1)
    base = np.full(int(direction.max()) + 1, -1, dtype=np.int64)
    syn = (f.tcp_flags[tcp] & _SYN) > 0
    firsts = np.full(base.size, tcp.size, dtype=np.int64)
    np.minimum.at(firsts, direction, np.arange(tcp.size))
    base[:] = f.tcp_seq[tcp[firsts]] - 1
    syn_at = np.full(base.size, tcp.size, dtype=np.int64)
    np.minimum.at(syn_at, direction[syn], np.flatnonzero(syn))
    with_syn = syn_at < tcp.size
    base[with_syn] = f.tcp_seq[tcp[syn_at[with_syn]]]
    relative = (f.tcp_seq[tcp] - base[direction]) % 2 ** 32
    start = tcp[(relative == 1) & (data.held[tcp] >= HEADER_BY_CODE[_CONN])]
    conn = (data.byte(start, 0) == _CONN) & np.isin(data.byte(start, OFFSETS["protocol_id"]),
                                                          list(transports.protocol_names()))
    chosen = {int(conv[i]): int(i) for i in start[conn][::-1]}          # the first CONN of each
    if ports:
        for i in tcp[np.isin(f.sport[tcp], list(ports)) | np.isin(f.dport[tcp], list(ports))]:
            chosen.setdefault(int(conv[i]), -1)                             # from the capture's start
    out = []
    for c, since in chosen.items():
        for side in (True, False):
            rows = tcp[(conv[tcp] == c) & (a_to_b[tcp] == side) & (tcp >= since)]
            out += _walk(f, data, rows)
    return out


def _walk(f: Frames, data: _Bytes, rows: np.ndarray) -> list[dict]:
    """One direction of a TCP conversation cut into packets, in sequence order. A packet ends in
    the frame that brought its last byte. Where the capture lacks a packet's first bytes (a
    segment lost, or cut by the snaplen) the next segment starts afresh, as in Wireshark. Bytes
    that start no packet, or a DATA whose length cannot be (outside 1..64000), put the stream out
    of step: the rest of it is one malformed packet. (Wireshark's dissector tries again at each
    segment, which on a stream that is no PPCB invents packets from chance bytes.) A packet the
    capture ends inside is not shown: Wireshark waits for the rest too."""
    rows = rows[f.payload_len[rows] > 0]
    if not rows.size:
        return []
    stream = TcpStream(f, rows, data.of)
    out, at, n = [], stream.starts[0], stream.ends[-1]
    while at is not None and at < n:
        first = stream.read(at, 1)
        if first is None:
            at = stream.after(at)                         # unreadable: start again at the next segment
            continue
        header = HEADER_BY_CODE.get(first[0])
        fields = stream.read(at, header) if header else None
        if header and fields is None:
            at = stream.after(at)
            continue
        end = at + header if header else n
        if header and first[0] == _DATA:
            data_len = _field(fields, "data_len")
            end = end + data_len if 1 <= data_len <= MAX_DATA else n
        if end > n:
            break
        last = stream.segment(end - 1)
        raw = stream.read(at, end - at) or fields or first
        row = packet_fields(raw, datagram=False)
        row["length"] = end - at                          # (the capture may hold only its first bytes)
        out.append({**_ends(f, int(rows[0]), stream.frames[last] if last is not None else stream.frames[-1]),
                    "transport": "tcp", "_order": at, **row})
        at = end
    return out


def ppcb_packets(source, *, udp_ports=(), tcp_ports=()):
    """One row per PPCB packet of a capture (a path, bytes or a binary file object), as a
    DataFrame (``COLUMNS``; the u64 fields as nullable unsigned integers)."""
    import pandas as pd                                 # (start-up: analyze reads no DataFrame)

    if is_file_object(source):
        source = source.read()                          # (read once: its columns and its bytes)
    f = Frames.of_part(*read_part(source))
    table = pd.DataFrame(packets_of(f, _buffer(source), udp_ports=udp_ports, tcp_ports=tcp_ports),
                         columns=COLUMNS)
    return table.astype({name: "UInt64" for name in _FIELDS} | {"malformed": bool})


def ppcb_summary(packets) -> list[dict]:
    """One entry per session of ``ppcb_packets``' rows (a DataFrame or a list of rows): transport,
    protocol, packets of each type, DATA bytes and the highest packet number seen, refusals."""
    if is_frame(packets):
        packets = packets.astype(object).where(packets.notna(), None).to_dict("records")
    sessions: dict[tuple, list[dict]] = {}
    for row in packets:
        if row["session_id"] is not None:
            sessions.setdefault((row["session_id"], row["transport"]), []).append(row)
    out = []
    for (session, transport), rows in sessions.items():
        conn = [r for r in rows if r["type"] == "CONN"]
        data = [r for r in rows if r["type"] == "DATA"]
        counts = {t: sum(r["type"] == t for r in rows) for t in TYPES.values()}
        out.append({"session_id": session, "transport": transport,
                    "protocol": transports.protocol_names().get(int(conn[0]["protocol_id"]), "?") if conn else None,
                    "total_length": int(conn[0]["total_length"]) if conn else None,
                    "packets": {t: n for t, n in counts.items() if n},
                    "data_bytes": sum(int(r["data_len"]) for r in data if r["data_len"] is not None),
                    "last_packet_no": max(int(r["packet_no"]) for r in data) if data else None,
                    "refused": sum(r["type"] in ("CONRJT", "RJT") for r in rows)})
    return out
