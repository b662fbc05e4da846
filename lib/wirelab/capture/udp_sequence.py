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

iperf3's header has no type byte: any datagram of 12 bytes or more has a
"sequence number" there (mDNS, DNS, QUIC...). ``udp_loss(format="iperf3")``
therefore checks the rest of the header, the sender's clock (seconds, then
microseconds under a million; iperf3 ≥ 3.9 counts from boot, not 1970): in a
flow of iperf3's it advances with the capture's, give or take the queues. For
each flow whose datagrams are not iperf3's it warns (``NotThatFormatWarning``):
their "loss" means nothing.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..wire import ppcb
from .reader.fields import FileBytes
from .conversations import conversation_ids
from .reader.loader import _buffer

__all__ = ["SEQUENCE_FORMATS", "udp_sequence", "udp_loss", "NotThatFormatWarning"]

#: name → (byte offset of a type byte or None, its value, offset of the sequence number, its size)
SEQUENCE_FORMATS = {
    "wirelab": (0, 0x82, 1, 8),
    "ppcb": (ppcb.OFFSETS["type"], ppcb.CODES["DATA"], ppcb.OFFSETS["packet_no"], ppcb.SIZES["packet_no"]),
    "iperf3": (None, None, 8, 4),
}


#: iperf3's header (iperf3 src/iperf_udp.c, iperf_udp_send): u32 seconds, u32 microseconds, then the
#: sequence number. The sender's clock minus the capture's stays within this in one flow (the
#: one-way delay varies by the queues' delay, seconds at most)
IPERF3_CLOCK_SLACK_S = 5.0


class NotThatFormatWarning(UserWarning):
    """The datagrams of a flow are not of the sequence format asked for: its loss means nothing."""


def _iperf3_clock(fb: FileBytes, start: np.ndarray) -> np.ndarray:
    """The sender's time in iperf3's header of the datagrams starting at ``start`` (NaN: the
    microseconds are a million or more, no iperf3 header)."""
    usec = fb.u32(start + 4, True)
    return np.where(usec < 1_000_000, fb.u32(start, True) + usec / 1e6, np.nan)


def _iperf3_like(sender: np.ndarray, captured: np.ndarray) -> bool:
    """One flow's datagrams carry iperf3's clock: it advances with the capture's."""
    if np.isnan(sender).any():
        return False
    offset = sender - captured
    return bool(offset.max() - offset.min() <= IPERF3_CLOCK_SLACK_S)


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
    clock = np.zeros(len(df))
    if format == "iperf3" and seq_at >= 8:
        clock[idx] = _iperf3_clock(fb, start[idx])
    if size == 4:
        values[idx] = fb.u32(start[idx] + seq_at, True)
    else:
        hi = fb.u32(start[idx] + seq_at, True).astype(np.int64)
        lo = fb.u32(start[idx] + seq_at + 4, True).astype(np.int64)
        values[idx] = (hi << 32) | lo
    out = pd.Series(pd.arrays.IntegerArray(values, ~ok), index=df.index, name="udp_seq")
    if format == "iperf3":
        out.attrs["sender_clock"] = clock       # (for udp_loss's check)
    return out


def udp_loss(df: pd.DataFrame, source, *, format: str = "wirelab", seq_at: int | None = None,
             size: int | None = None) -> pd.DataFrame:
    """Per UDP flow direction carrying sequence numbers: expected (highest − lowest + 1),
    received (distinct), lost, duplicates, reordered (arrived after a higher number), loss fraction."""
    seq = udp_sequence(df, source, format=format, seq_at=seq_at, size=size)
    ids = conversation_ids(df)
    have = seq.notna().to_numpy()
    d = pd.DataFrame({"conv": ids["conv"][have], "a_to_b": ids["a_to_b"][have],
                      "src": df["src"][have].astype(str), "dst": df["dst"][have].astype(str),
                      "seq": seq[have].astype(np.int64), "time": df["time"].to_numpy(np.float64)[have],
                      "clock": seq.attrs.get("sender_clock", np.zeros(len(df)))[have]})
    rows = []
    for (conv, ab), g in d.groupby(["conv", "a_to_b"], sort=True):
        s = g["seq"].to_numpy()
        if "sender_clock" in seq.attrs and not _iperf3_like(g["clock"].to_numpy(), g["time"].to_numpy()):
            warnings.warn(f"UDP {g['src'].iloc[0]} → {g['dst'].iloc[0]} (conversation {conv}): its "
                          f"{len(g)} datagrams do not carry iperf3's header (a sender's clock, seconds and "
                          "microseconds, advancing with the capture's), so its 'sequence numbers' and this "
                          f"loss are not iperf3's; give the format those datagrams carry "
                          f"({', '.join(SEQUENCE_FORMATS)}) or look at iperf3's flow only (port 5201 by "
                          "default)", NotThatFormatWarning, stacklevel=2)
        distinct = np.unique(s).size
        expected = int(s.max() - s.min() + 1)
        reordered = int((s < np.maximum.accumulate(s)).sum()) - (s.size - distinct)
        rows.append({"conv": conv, "src": g["src"].iloc[0], "dst": g["dst"].iloc[0],
                     "expected": expected, "received": distinct, "lost": expected - distinct,
                     "duplicates": int(s.size - distinct), "reordered": max(reordered, 0),
                     "loss": (expected - distinct) / expected})
    return pd.DataFrame(rows, columns=["conv", "src", "dst", "expected", "received", "lost",
                                       "duplicates", "reordered", "loss"])
