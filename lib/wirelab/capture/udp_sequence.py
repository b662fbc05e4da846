"""UDP loss, duplicates and reordering from the sequence numbers inside datagrams.

Plain UDP has no sequence numbers, but the programs that send it for a
measurement put one in each datagram. ``SEQUENCE_FORMATS`` says where:

    wirelab  wirelab's measurement RECORD: type 0x82 at byte 0, u64 seq at 1
             (lib/wirelab/transfer, "RECORD 0x82 · u64 seq · u64 send_ns")
    ppcb     a PPCB DATA packet: type 4 at byte 0, u64 packet_no at 9 (ppcb.md)
    iperf3   iperf3's UDP header: u32 sec, u32 usec, u32 seq at byte 8
             (u64 with --udp-counters-64bit: give size=8)

All big-endian. Only datagrams whose first bytes are in the file count
(a snaplen of at least 42 + 17 bytes keeps them).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..wire import ppcb
from .reader.fields import FileBytes
from .conversations import conversation_ids
from .reader.loader import _buffer

__all__ = ["SEQUENCE_FORMATS", "udp_sequence", "udp_loss"]

#: name → (byte offset of a type byte or None, its value, offset of the sequence number, its size)
SEQUENCE_FORMATS = {
    "wirelab": (0, 0x82, 1, 8),
    "ppcb": (ppcb.OFFSETS["type"], ppcb.CODES["DATA"], ppcb.OFFSETS["packet_no"], ppcb.SIZES["packet_no"]),
    "iperf3": (None, None, 8, 4),
}


def udp_sequence(df: pd.DataFrame, source, *, format: str = "wirelab", seq_at: int | None = None,
                 size: int | None = None) -> pd.Series:
    """The sequence number in each UDP datagram of ``df`` (read from ``source``, the same file);
    <NA> where the datagram is not of that format or its bytes were not captured."""
    if format not in SEQUENCE_FORMATS:
        raise UsageError(f"unknown sequence format {format!r}", f"use one of {', '.join(SEQUENCE_FORMATS)}")
    type_at, type_value, default_at, default_size = SEQUENCE_FORMATS[format]
    seq_at = default_at if seq_at is None else seq_at
    size = default_size if size is None else size
    if size not in (4, 8):
        raise UsageError(f"sequence numbers of {size} bytes are not supported", "use 4 or 8")
    if hasattr(source, "seek"):
        source.seek(0)
    fb = FileBytes(_buffer(source))
    udp = (df["proto"] == "udp").to_numpy() & df["payload_offset"].notna().to_numpy() & \
        (df["frag_offset"].fillna(0) == 0).to_numpy()
    start = df["file_offset"].to_numpy(np.int64) + df["payload_offset"].fillna(0).to_numpy(np.int64)
    room = df["cap_len"].to_numpy(np.int64) - df["payload_offset"].fillna(0).to_numpy(np.int64)
    plen = df["payload_len"].fillna(0).to_numpy(np.int64)
    ok = udp & (room >= seq_at + size) & (plen >= seq_at + size)
    if type_at is not None:
        ok &= room > type_at
        ok[ok] &= fb.u8(start[ok] + type_at) == type_value
    values = np.zeros(len(df), dtype=np.int64)
    idx = np.flatnonzero(ok)
    if size == 4:
        values[idx] = fb.u32(start[idx] + seq_at, True)
    else:
        hi = fb.u32(start[idx] + seq_at, True).astype(np.int64)
        lo = fb.u32(start[idx] + seq_at + 4, True).astype(np.int64)
        values[idx] = (hi << 32) | lo
    return pd.Series(pd.arrays.IntegerArray(values, ~ok), index=df.index, name="udp_seq")


def udp_loss(df: pd.DataFrame, source, *, format: str = "wirelab", seq_at: int | None = None,
             size: int | None = None) -> pd.DataFrame:
    """Per UDP flow direction carrying sequence numbers: expected (highest − lowest + 1),
    received (distinct), lost, duplicates, reordered (arrived after a higher number), loss fraction."""
    seq = udp_sequence(df, source, format=format, seq_at=seq_at, size=size)
    ids = conversation_ids(df)
    have = seq.notna().to_numpy()
    d = pd.DataFrame({"conv": ids["conv"][have], "a_to_b": ids["a_to_b"][have],
                      "src": df["src"][have].astype(str), "dst": df["dst"][have].astype(str),
                      "seq": seq[have].astype(np.int64)})
    rows = []
    for (conv, ab), g in d.groupby(["conv", "a_to_b"], sort=True):
        s = g["seq"].to_numpy()
        distinct = np.unique(s).size
        expected = int(s.max() - s.min() + 1)
        reordered = int((s < np.maximum.accumulate(s)).sum()) - (s.size - distinct)
        rows.append({"conv": conv, "src": g["src"].iloc[0], "dst": g["dst"].iloc[0],
                     "expected": expected, "received": distinct, "lost": expected - distinct,
                     "duplicates": int(s.size - distinct), "reordered": max(reordered, 0),
                     "loss": (expected - distinct) / expected})
    return pd.DataFrame(rows, columns=["conv", "src", "dst", "expected", "received", "lost",
                                       "duplicates", "reordered", "loss"])
