"""Read the same header field from a million packets in one numpy operation.

``FileBytes`` reads integers at any byte position of a capture file (a bytes
object or a memory map) without copying it: a numpy view with a stride of one
byte gives "the 16-bit big-endian integer starting at byte i" for every i.

``Headers`` copies the first bytes of every record (record header + packet
headers) into one (records × width) array, one row per record. A field at
the same column in every row is then a strided slice: no index arrays, one
pass in memory order. A field whose column differs between packets (after a
VLAN tag, after IPv4 options) is read at the most common column for all
rows, and the other rows are fixed up one by one (vectorised). A read beyond
the bytes the capture holds for that packet (``cap_len``) is marked missing.
Every value comes back as int64.
"""
from __future__ import annotations

import numpy as np

__all__ = ["FileBytes", "Headers"]


def _view(buf, n: int, dtype: str) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    if n < size:
        return np.zeros(0, dtype=dtype)
    return np.ndarray((n - size + 1,), dtype=dtype, buffer=buf, offset=0, strides=(1,))


class FileBytes:
    """Integers at arbitrary byte positions of ``buf`` (positions are clipped into range)."""

    def __init__(self, buf):
        self.buf = buf
        self.n = len(buf)
        self.u8v = np.frombuffer(buf, dtype=np.uint8) if self.n else np.zeros(0, np.uint8)
        self._views: dict[str, np.ndarray] = {}

    def view(self, dtype: str) -> np.ndarray:
        """Element i = the integer of type ``dtype`` starting at byte i."""
        if dtype not in self._views:
            self._views[dtype] = _view(self.buf, self.n, dtype)
        return self._views[dtype]

    def get(self, dtype: str, pos) -> np.ndarray:
        view = self.view(dtype)
        if view.size == 0:
            return np.zeros(np.shape(pos), dtype=view.dtype)
        return view[np.minimum(pos, view.size - 1)]      # positions are never negative

    def u8(self, pos):
        return self.get("u1", pos)

    def u16(self, pos, big: bool):
        return self.get(">u2" if big else "<u2", pos)

    def u32(self, pos, big: bool):
        return self.get(">u4" if big else "<u4", pos)

    def windows(self, dtype: str, starts: np.ndarray, cols: int, step: int) -> np.ndarray:
        """Values at ``starts[r] + c*step`` (c < cols) as a (rows × cols) array; positions past
        the end read the last value there is (the caller drops those candidates)."""
        view = self.view(dtype)
        span = (cols - 1) * step
        if view.size <= span:
            return np.zeros((starts.size, cols), dtype=view.dtype)
        slide = np.lib.stride_tricks.as_strided(view, shape=(view.size - span, cols),
                                                strides=(view.strides[0], step * view.strides[0]),
                                                writeable=False)
        return slide[np.minimum(starts, view.size - span - 1)]

    def rows(self, start: np.ndarray, width: int) -> np.ndarray:
        """The ``width`` bytes from each start, as a (len(start) × width) array (zero past the end)."""
        last = self.n - width
        if self.n == 0 or start.size == 0 or last < 0:
            out = np.zeros((start.size, width), dtype=np.uint8)
        else:
            # each row is one item of ``width`` bytes: the gather copies it with one memcpy,
            # not byte by byte as a (rows × width) uint8 gather would
            items = np.ndarray((last + 1,), dtype=f"V{width}", buffer=self.buf, offset=0, strides=(1,))
            out = items[np.minimum(start, last)].view(np.uint8).reshape(start.size, width)
        for i in np.flatnonzero(start > last):        # the last few packets of the file
            chunk = self.u8v[start[i]:start[i] + width]
            out[i] = 0
            out[i, :chunk.size] = chunk
        return out


class Headers:
    """The first bytes of every record, with reads that know each packet's length.

    ``lead`` is where the packet starts inside its record (pcap: 16, pcapng
    enhanced packet block: 28). ``raw(dtype, col)`` reads record-header
    columns; ``read(dtype, at, ok)`` reads packet offsets ``at`` (scalar or
    per packet) where ``ok`` and returns (int64 values, ok & within cap_len).
    """

    def __init__(self, file: FileBytes, rec_start: np.ndarray, lead, width: int = 80,
                 rows: np.ndarray | None = None):
        self.file = file
        self.size = rec_start.size
        self.lead = np.broadcast_to(np.asarray(lead, dtype=np.int64), (self.size,))
        lead_max = int(self.lead.max()) if self.size else 0
        self.start = rec_start + self.lead            # packet starts in the file
        if rows is None:                              # ``rows``: already gathered by the caller
            rows = file.rows(rec_start, lead_max + width)
        self.rows = np.ascontiguousarray(rows)
        self.width = self.rows.shape[1]
        self.flat = self.rows.ravel()
        self.cap_len = np.zeros(self.size, dtype=np.int64)
        self._lead_const = int(self.lead[0]) if self.size and (self.lead == self.lead[0]).all() else None

    def subset(self, which: np.ndarray) -> "Headers":
        """The rows ``which`` (indices) as Headers of their own (their bytes copied, not read again)."""
        lead = self.lead[which]
        sub = Headers(self.file, self.start[which] - lead, lead, rows=self.rows[which])
        sub.cap_len = self.cap_len[which]
        return sub

    def raw(self, dtype: str, col: int, as_type=np.int64) -> np.ndarray:
        """The field at column ``col`` of every row (a strided slice), as int64 (or ``as_type``)."""
        size = np.dtype(dtype).itemsize
        if self.size == 0 or col + size > self.width:
            return np.zeros(self.size, dtype=as_type)
        strided = np.ndarray((self.size,), dtype=dtype, buffer=self.rows, offset=col,
                             strides=(self.width,))
        return strided.astype(as_type)

    def read(self, dtype: str, at, ok) -> tuple[np.ndarray, np.ndarray]:
        """Values at packet offsets ``at`` (never negative) where ``ok`` and within ``cap_len``."""
        size = np.dtype(dtype).itemsize
        if not np.any(ok):          # e.g. IPv6 fields in an IPv4-only capture: skip the pass
            return np.zeros(self.size, dtype=np.int64), np.zeros(self.size, dtype=bool)
        ok = ok & (at + size <= self.cap_len)
        if np.ndim(at) == 0 and self._lead_const is not None:
            common = self._lead_const + int(at)
            other = np.zeros(0, dtype=np.int64)
        else:
            at = np.broadcast_to(np.asarray(at, dtype=np.int64), (self.size,))
            step = max(self.size // 4096, 1)
            sample = (self.lead[::step] + at[::step])[ok[::step]]
            common = int(np.bincount(np.clip(sample, 0, self.width)).argmax()) if sample.size else 0
            if self._lead_const is not None:
                other = np.flatnonzero(ok & (at != common - self._lead_const))
            else:
                other = np.flatnonzero(ok & (self.lead + at != common))
        fits = common + size <= self.width
        if not fits:
            values = np.zeros(self.size, dtype=np.int64)
            other = np.flatnonzero(ok)
        else:
            values = self.raw(dtype, common)
        if other.size:
            c = self.lead[other] + (at[other] if np.ndim(at) else at)
            near = c + size <= self.width
            values[other[near]] = _view(self.flat, self.flat.size, dtype)[other[near] * self.width + c[near]]
            far = other[~near]
            if far.size:      # beyond the copied bytes (long options): read the file itself
                values[far] = self.file.get(dtype, self.start[far] + (at[far] if np.ndim(at) else at))
        return values, ok

    def u8(self, at, ok):
        return self.read("u1", at, ok)

    def be16(self, at, ok):
        return self.read(">u2", at, ok)

    def be32(self, at, ok):
        return self.read(">u4", at, ok)

    def le32(self, at, ok):
        return self.read("<u4", at, ok)

    def block(self, at, length: int, ok) -> tuple[np.ndarray, np.ndarray]:
        """``length`` consecutive bytes at ``at`` (e.g. an IPv6 address) as (n × length) uint8."""
        out = np.zeros((self.size, length), dtype=np.uint8)
        if not np.any(ok):
            return out, np.zeros(self.size, dtype=bool)
        at = np.broadcast_to(np.asarray(at, dtype=np.int64), (self.size,))
        ok = ok & (at >= 0) & (at + length <= self.cap_len)
        idx = np.flatnonzero(ok)
        if idx.size:
            col = self.lead[idx] + at[idx]
            near = col + length <= self.width
            i_near = idx[near]
            out[i_near] = self.rows[i_near[:, None], col[near][:, None] + np.arange(length)]
            i_far = idx[~near]
            if i_far.size:
                out[i_far] = self.file.rows(self.start[i_far] + at[i_far], length)
        return out, ok
