"""One direction of a TCP connection put back together, in sequence space (for reading what it carried).

``TcpStream(frames, rows, payload)`` takes the segments at ``rows`` (one direction,
with payload) and orders them by sequence number; a byte sent twice counts once,
in the segment that brought it first. It knows which frame brought each byte,
and which bytes the capture holds: a segment may be missing (a hole in the
sequence space) or cut by the snaplen. ``read(position, count)`` gives bytes only
when the capture holds them all. Sequence numbers count from the first segment,
signed modulo 2^32 (a direction under 2 GiB).
"""
from __future__ import annotations

import bisect

import numpy as np

from .reader.frames import Frames

__all__ = ["TcpStream"]


class TcpStream:
    """One direction of a TCP connection in sequence space: each byte's segment (the first copy
    that brought it: a retransmission counts once), and the bytes the capture holds (a snaplen
    may have cut a segment; a segment may be missing: a hole)."""

    def __init__(self, f: Frames, rows: np.ndarray, payload):
        seq = f.tcp_seq[rows]
        at = (seq - seq[0] + 2 ** 31) % 2 ** 32 - 2 ** 31          # (wraps handled for < 2 GiB)
        self.starts, self.ends, self.frames, self.pieces = [], [], [], []
        covered = None
        for k in np.lexsort((rows, at)):
            start, end, piece = int(at[k]), int(at[k]) + int(f.payload_len[rows[k]]), payload(int(rows[k]))
            if covered is not None and end <= covered:
                continue                                  # a retransmission: those bytes came before
            if covered is not None and start < covered:
                piece, start = piece[covered - start:], covered
            self.starts.append(start)
            self.ends.append(end)
            self.frames.append(int(rows[k]))
            self.pieces.append(piece)
            covered = end

    def segment(self, position: int) -> int | None:
        """The segment holding byte ``position`` (None: a hole, or past the end)."""
        i = bisect.bisect_right(self.starts, position) - 1
        return i if i >= 0 and position < self.ends[i] else None

    def read(self, position: int, count: int) -> bytes | None:
        """``count`` bytes from ``position``, or None when the capture does not hold them all."""
        out = b""
        while len(out) < count:
            i = self.segment(position + len(out))
            if i is None:
                return None
            piece = self.pieces[i][position + len(out) - self.starts[i]:]
            if not piece:
                return None                               # cut by the snaplen
            out += piece[:count - len(out)]
        return out

    def after(self, position: int) -> int | None:
        """The start of the first segment after ``position`` (where to try again)."""
        i = bisect.bisect_right(self.starts, position)
        return self.starts[i] if i < len(self.starts) else None
