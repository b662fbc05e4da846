"""D-SACK blocks (RFC 2883) read from a capture's bytes: the receiver saying "this arrived twice".

The kit's reader does not decode TCP options beyond MSS and the window scale; this
module reads the SACK option (kind 5, RFC 2018 §3) of the ACK segments asked for,
straight from the file's bytes, all rows at once: one step per option byte (at most
40), not a loop over segments. A first SACK block is a D-SACK when it lies at or
below the cumulative ACK, or inside the second block (RFC 2883 §4). A block the
snaplen cut is not read.
"""
from __future__ import annotations

import numpy as np

from ..reader.frames import Frames

__all__ = ["dsack_of"]

SACK = 5
_MAX_OPTIONS = 40                    # bytes of TCP options at most (RFC 9293 §3.1: data offset ≤ 15 words)


def _be32(u8: np.ndarray, at: np.ndarray) -> np.ndarray:
    return (u8[at].astype(np.int64) << 24) | (u8[at + 1].astype(np.int64) << 16) \
        | (u8[at + 2].astype(np.int64) << 8) | u8[at + 3].astype(np.int64)


def dsack_of(f: Frames, buffer, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Of the TCP segments ``rows`` (indices into ``f``; ``buffer``: the capture file's bytes),
    those whose first SACK block is a D-SACK: ``row``, ``left`` and ``right`` (the block's
    edges, raw 32-bit sequence numbers of the other direction)."""
    none = {"row": np.zeros(0, np.int64), "left": np.zeros(0, np.int64), "right": np.zeros(0, np.int64)}
    if buffer is None or not rows.size:
        return none
    u8 = np.frombuffer(buffer, dtype=np.uint8)
    length = f.tcp_opts_len[rows]
    start = f.file_offset[rows] + f.payload_offset[rows] - length
    held = f.file_offset[rows] + f.cap_len[rows]
    ok = (length > 0) & (f.payload_offset[rows] >= 0) & (start + length <= held) & (start + length <= u8.size)
    rows, p, stop = rows[ok], start[ok], (start + length)[ok]
    found = np.full(rows.size, -1, dtype=np.int64)                  # where the SACK option starts
    for _ in range(_MAX_OPTIONS):
        live = (p < stop) & (found < 0)
        if not live.any():
            break
        kind = np.where(live, u8[np.minimum(p, u8.size - 1)], 0)
        live &= kind != 0                                           # end of option list
        size = np.where(kind == 1, 1, u8[np.minimum(p + 1, u8.size - 1)].astype(np.int64))
        sack = live & (kind == SACK) & (p + size <= stop) & (size >= 10)
        found[sack] = p[sack]
        step = np.where(kind == 1, 1, np.where(size >= 2, size, stop - p))   # (a malformed length ends it)
        p = np.where(live & ~sack, p + step, stop)
    have = found >= 0
    rows, at = rows[have], found[have]
    blocks = (u8[at + 1].astype(np.int64) - 2) // 8
    left, right = _be32(u8, at + 2), _be32(u8, at + 6)
    ack = f.tcp_ack[rows]
    below = ((right - ack + 2 ** 31) % 2 ** 32 - 2 ** 31) <= 0       # at or below the cumulative ACK
    second = blocks >= 2
    at2 = np.where(second, at + 10, at + 2)
    left2, right2 = _be32(u8, at2), _be32(u8, at2 + 4)
    inside = second & (((left - left2 + 2 ** 31) % 2 ** 32 - 2 ** 31) >= 0) \
        & (((right2 - right + 2 ** 31) % 2 ** 32 - 2 ** 31) >= 0)
    d = below | inside
    return {"row": rows[d], "left": left[d], "right": right[d]}
