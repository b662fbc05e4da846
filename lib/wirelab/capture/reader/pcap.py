"""Classic pcap (draft-ietf-opsawg-pcap): a 24-byte file header, then records of a
16-byte header (seconds, fraction, captured length, original length) + the packet."""
from __future__ import annotations

import struct

import numpy as np

from ...errors import CaptureError
from . import jit
from .fields import FileBytes, Headers
from .files import MAX_FRAME, MAX_SNAPLEN, TEN_YEARS, Interface, RecordFields, Scan, settle
from .formats import PCAP_HEADER_LEN, PCAP_RECORD
from .walk import Layout, walk

__all__ = ["PcapReader"]


class PcapReader:
    """Reads the records of a classic pcap file, one window at a time."""
    format = "pcap"

    def __init__(self, head: bytes, big: bool, ticks: int, rec_len: int):
        if len(head) < PCAP_HEADER_LEN:
            raise CaptureError(f"pcap file header cut short ({len(head)} of 24 bytes)",
                               "the file was truncated; capture it again")
        order = "big" if big else "little"
        self.big, self.ticks, self.rec_len = big, ticks, rec_len
        self.u32 = ">u4" if big else "<u4"
        snaplen = int.from_bytes(head[16:20], order)
        self.interfaces = [Interface(int.from_bytes(head[20:24], order) & 0xFFFF, snaplen, ticks=ticks)]
        self.biggest = max(snaplen, MAX_SNAPLEN)
        self.first_ts = int.from_bytes(head[24:28], order) if len(head) >= 28 else 0
        self.first_record = PCAP_HEADER_LEN
        self.packets = 0                 # packets in the windows before this one

    def _layout(self, fb: FileBytes, kernels) -> Layout:
        n, big, ticks, rec_len, biggest = fb.n, self.big, self.ticks, self.rec_len, self.biggest
        incl_at = PCAP_RECORD["incl_len"]

        # element i: the captured length of a record starting at byte i (no addition per step)
        incl_view = fb.view(self.u32)[incl_at:]

        def step(pos):                    # every record is readable; all are of one kind (None)
            nxt = pos + incl_view[pos]    # int64 + uint32: int64
            nxt += rec_len
            return nxt, True, None

        def plausible(pos):
            good = fb.u32(pos + PCAP_RECORD["ts_frac"], big) < ticks
            idx = np.flatnonzero(good)
            p = pos[idx]
            incl = fb.u32(p + incl_at, big)
            orig = fb.u32(p + PCAP_RECORD["orig_len"], big)
            sec = fb.u32(p + PCAP_RECORD["ts_sec"], big).astype(np.int64)
            good[idx] = ((incl <= orig) & (incl <= biggest) & (p + rec_len <= n)
                         & (np.abs(sec - self.first_ts) < TEN_YEARS))
            return good

        def screen(starts, cols):
            # the one test random bytes and zero padding rarely pass (a length of 1 to 16 Mi);
            # ``plausible`` tests the other fields of the few candidates that pass it
            orig = fb.windows(self.u32, starts + PCAP_RECORD["orig_len"], cols, 1)
            return orig - 1 < MAX_FRAME

        incl_of = struct.Struct((">" if big else "<") + "I").unpack_from
        buf = fb.buf

        def step1(pos):
            return pos + rec_len + incl_of(buf, pos + incl_at)[0], True, 0

        compiled = jit.walker(kernels, fb, jit.PCAP, big, rec_len=rec_len, ticks=ticks, biggest=biggest,
                              first_ts=self.first_ts)
        return Layout(step, plausible, 1, rec_len, screen, step1, compiled)

    def scan(self, fb: FileBytes, base: int, start: int, final: bool, kernels=None) -> Scan:
        """The records of the window ``fb`` (file bytes from ``base``), from ``start`` on
        (``kernels``: the compiled ones to walk with, None: numpy; ``jit.kernels``)."""
        offs, kinds = walk(self._layout(fb, kernels), fb.n, start)
        # records are back to back: a record's length is where the next one starts (no second
        # read of every header), except for the last
        lengths = np.empty(offs.size, dtype=np.int64)
        np.subtract(offs[1:], offs[:-1], out=lengths[:-1])
        if offs.size:
            lengths[-1] = self.rec_len + int(fb.u32(offs[-1] + PCAP_RECORD["incl_len"], self.big))
        count, resume, why = settle(offs + lengths, fb.n, start, self.rec_len, final)
        scan = Scan(offs[:count], kinds[:count], lengths[:count],
                    resume=None if resume is None else base + resume, kernels=kernels)
        self.packets += count
        end = int(offs[count - 1] + lengths[count - 1]) if count else start
        if why == "too long":
            scan.notes.append(f"stopped reading at byte {base + start}: a record of "
                              f"{int(lengths[0])} bytes, longer than any packet")
        elif why == "damaged":
            scan.notes.append(f"stopped reading at byte {base + end}: what follows packet "
                              f"{self.packets} is not a whole record")
        elif final and count and end > fb.n:
            have, want = fb.n - int(offs[count - 1]), int(lengths[count - 1])
            scan.notes.append(f"the file ends inside packet {self.packets} "
                              f"({have - self.rec_len} of {want - self.rec_len} bytes)")
        elif final and count and end < fb.n:
            scan.notes.append(f"{fb.n - end} bytes after packet {self.packets} are not a whole record")
        return scan

    def lead(self, scan: Scan, pick: slice):
        """Where the packet starts inside each record."""
        return self.rec_len

    def fields(self, h: Headers, scan: Scan, pick: slice, n: int) -> RecordFields:
        """Lengths and times from the record headers (``h``: the records' first bytes)."""
        incl = h.raw(self.u32, PCAP_RECORD["incl_len"])
        cap_len = np.clip(np.minimum(incl, n - h.start), 0, None)
        sec = h.raw(self.u32, PCAP_RECORD["ts_sec"], np.float64)      # (u32 → float64 is exact)
        frac = h.raw(self.u32, PCAP_RECORD["ts_frac"], np.float64)
        return RecordFields(cap_len, h.raw(self.u32, PCAP_RECORD["orig_len"]), sec + frac / self.ticks,
                            np.zeros(incl.size, dtype=np.int64))
