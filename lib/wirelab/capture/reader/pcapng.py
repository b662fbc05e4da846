"""pcapng (draft-ietf-opsawg-pcapng): blocks of type u32, total length u32, body, length again.

Sections (each starting with a Section Header Block, each with its own byte
order) hold Interface Description Blocks (link type, snaplen, time
resolution), packet blocks (Enhanced, Simple, obsolete Packet Block) and
Interface Statistics Blocks (drop counts). Interfaces are numbered per
section; here they get one global number, in the order they are described.
"""
from __future__ import annotations

import struct

import numpy as np

from ...errors import CaptureError
from . import jit
from .fields import FileBytes, Headers
from .files import MAX_SNAPLEN, Interface, RecordFields, Scan, settle
from .formats import BLOCK, EPB, IDB, IDB_OPTIONS, ISB, ISB_OPTIONS, PB, PCAPNG, SPB
from .walk import Layout, walk

__all__ = ["PcapngReader"]

SHB = PCAPNG["shb_type"]


def _section_order(fb: FileBytes, pos: int) -> bool | None:
    """Byte order of the section starting at ``pos`` (True = big-endian), None if unreadable."""
    if pos + 12 > fb.n:
        return None
    if int(fb.u32(pos + 8, False)) == PCAPNG["byte_order_magic"]:
        return False
    if int(fb.u32(pos + 8, True)) == PCAPNG["byte_order_magic"]:
        return True
    return None


def _layout(fb: FileBytes, big: bool, section: int, sections: bool, kernels) -> Layout:
    """Blocks of one byte order; with ``sections`` the walk stops at the next section header
    (its byte order may differ). Without, it is faster; ``scan`` re-walks if needed."""
    n = fb.n
    word = ">u8" if big else "<u8"

    word_view = fb.view(word)
    low = np.uint64(0xFFFFFFFF)
    # (length - 12) has one of these bits when the length is under 12 or not a multiple of 4
    bad_bits = np.uint64(0xFFFFFFFF00000003)

    def step(pos):
        both = word_view[pos]                  # type and length in one read
        kind, length = (both >> 32, both & low) if big else (both & low, both >> 32)
        ok = ((length - np.uint64(PCAPNG["min_block"])) & bad_bits) == 0
        if sections:
            ok &= (kind != SHB) | (pos == section)     # another section: byte order may change, stop
        return pos + length.astype(np.int64), ok, kind

    def plausible(pos):
        length = fb.u32(pos + 4, big).astype(np.int64)
        return ((length >= PCAPNG["min_block"]) & (length % 4 == 0) & (pos + length <= n)
                & (fb.u32(pos + length - 4, big) == length))

    def screen(starts, cols):         # a block type of the usual kinds (2 to 6, packets mostly)
        kind = fb.windows(">u4" if big else "<u4", starts, cols, 4)
        return kind - 2 <= 4

    head_of = struct.Struct(">II" if big else "<II").unpack_from
    buf = fb.buf

    def step1(pos):
        kind, length = head_of(buf, pos)
        ok = length >= PCAPNG["min_block"] and length & 3 == 0 and (not sections or kind != SHB or pos == section)
        return pos + length, ok, kind

    return Layout(step, plausible, 4, 8, screen, step1,
                  jit.walker(kernels, fb, jit.PCAPNG, big, section=section, sections=sections))


def _options(fb: FileBytes, pos: int, end: int, big: bool) -> dict[int, bytes]:
    """pcapng options (code u16, length u16, value padded to 4) between ``pos`` and ``end``."""
    out: dict[int, bytes] = {}
    raw = bytes(fb.u8v[max(pos, 0):max(end, 0)])
    fmt = ">HH" if big else "<HH"
    i = 0
    while i + 4 <= len(raw):
        code, length = struct.unpack_from(fmt, raw, i)
        if code == 0:
            break
        out[code] = raw[i + 4:i + 4 + length]
        i += 4 + length + (-length % 4)
    return out


def _interface(fb: FileBytes, pos: int, length: int, big: bool) -> Interface:
    linktype = int(fb.u16(pos + IDB["linktype"], big)) if pos + 12 <= fb.n else -1
    snaplen = int(fb.u32(pos + IDB["snaplen"], big)) if pos + 16 <= fb.n else 0
    opts = _options(fb, pos + IDB["options"], min(pos + length - 4, fb.n), big)
    iface = Interface(linktype, snaplen)
    if IDB_OPTIONS["if_name"] in opts:
        iface.name = opts[IDB_OPTIONS["if_name"]].decode("utf-8", "replace")
    res = opts.get(IDB_OPTIONS["if_tsresol"])
    if res:
        exp = min(res[0] & 0x7F, 30 if res[0] & 0x80 else 18)
        iface.ticks = 2 ** exp if res[0] & 0x80 else 10 ** exp
    off = opts.get(IDB_OPTIONS["if_tsoffset"])
    if off and len(off) == 8:
        iface.ts_offset = struct.unpack(">q" if big else "<q", off)[0]
    return iface


def _statistics(fb: FileBytes, pos: int, length: int, big: bool, iface: Interface) -> None:
    opts = _options(fb, pos + ISB["options"], min(pos + length - 4, fb.n), big)
    fmt = ">Q" if big else "<Q"
    for code, name in ((ISB_OPTIONS["isb_ifrecv"], "received"),
                       (ISB_OPTIONS["isb_ifdrop"], "dropped"),
                       (ISB_OPTIONS["isb_osdrop"], "os_dropped")):
        if len(opts.get(code, b"")) == 8:
            setattr(iface, name, struct.unpack(fmt, opts[code])[0])


class PcapngReader:
    """Reads the blocks of a pcapng file, one window at a time."""
    format = "pcapng"

    def __init__(self, head: bytes):
        fb = FileBytes(head)
        self.big = _section_order(fb, 0)
        if self.big is None:
            raise CaptureError("pcapng section header has no valid byte-order magic",
                               "the file is damaged or not pcapng")
        self.interfaces: list[Interface] = []
        self.section_base: list[int] = []      # first global interface number of each section
        self.first_record = 0
        self.unknown_interface = False

    def _walk(self, fb: FileBytes, start: int, sections: bool, kernels):
        """Block offsets, kinds and byte orders from ``start``: one walk per section."""
        pieces = []
        pos, big = start, self.big
        if fb.u32(pos, False) == SHB:
            big = _section_order(fb, pos)
        while big is not None:
            offs, kinds = walk(_layout(fb, big, pos, sections, kernels), fb.n, pos)
            pieces.append((offs, kinds, np.full(offs.size, big)))
            if offs.size == 0 or not sections:
                break
            pos = int(offs[-1]) + int(fb.u32(offs[-1] + 4, big))
            big = _section_order(fb, pos) if pos + 8 <= fb.n and int(fb.u32(pos, False)) == SHB else None
        if not pieces:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
        if len(pieces) == 1:                # one section (the usual file): nothing to join
            return pieces[0]
        return tuple(np.concatenate(p) for p in zip(*pieces))

    def scan(self, fb: FileBytes, base: int, start: int, final: bool, kernels=None) -> Scan:
        """The packet blocks of the window ``fb`` (file bytes from ``base``), from ``start`` on;
        section headers, interfaces and statistics on the way are taken in (``kernels``: the
        compiled ones to walk with, None: numpy; ``jit.kernels``)."""
        offs, kinds, bigs = self._walk(fb, start, False, kernels)
        if (kinds[1:] == SHB).any():          # several sections (byte orders may differ): walk each
            offs, kinds, bigs = self._walk(fb, start, True, kernels)
        lengths = np.empty(offs.size, dtype=np.int64)
        lengths[:-1] = np.diff(offs)
        if offs.size:
            lengths[-1] = int(fb.u32(offs[-1] + 4, bool(bigs[-1])))
        count, resume, why = settle(offs + lengths, fb.n, start, 8, final)
        offs, kinds, bigs, lengths = offs[:count], kinds[:count], bigs[:count], lengths[:count]
        new_section = kinds == SHB
        section = len(self.section_base) - 1 + np.cumsum(new_section)
        is_packet = (kinds == BLOCK["epb"]) | (kinds == BLOCK["spb"]) | (kinds == BLOCK["pb"])
        for i in np.flatnonzero(~is_packet):    # few blocks: plain Python
            pos, length, big = int(offs[i]), int(lengths[i]), bool(bigs[i])
            if kinds[i] == SHB:
                self.section_base.append(len(self.interfaces))
                self.big = big
            elif kinds[i] == BLOCK["idb"]:
                self.interfaces.append(_interface(fb, pos, length, big))
            elif kinds[i] == BLOCK["isb"] and self.section_base:
                glob = self._global(int(section[i]), int(fb.u32(pos + ISB["interface"], big)))
                if glob >= 0:
                    _statistics(fb, pos, length, big, self.interfaces[glob])
        packets = np.flatnonzero(is_packet)
        if packets.size and packets[-1] - packets[0] + 1 == packets.size:
            packets = slice(int(packets[0]), int(packets[-1]) + 1)   # one run (usual): views, no copies
        scan = Scan(offs[packets], kinds[packets], lengths[packets], bigs[packets], section[packets],
                    None if resume is None else base + resume, kernels=kernels)
        if offs.size:
            self.big = bool(bigs[-1])
        end = int(offs[-1] + lengths[-1]) if count else start
        if why == "too long":
            scan.notes.append(f"stopped reading at byte {base + start}: a block longer than any packet")
        elif why == "damaged" or (final and end < fb.n):
            scan.notes.append(f"stopped reading at byte {base + end}"
                              + (f" of {base + fb.n}" if final else "") + ": a damaged block")
        elif final and end > fb.n:
            scan.notes.append("the file ends inside its last block")
        return scan

    def _global(self, section: int, local: int) -> int:
        """Global interface number of interface ``local`` of ``section`` (-1: not described)."""
        if section < 0 or section >= len(self.section_base):
            return -1
        first = self.section_base[section]
        last = self.section_base[section + 1] if section + 1 < len(self.section_base) else len(self.interfaces)
        return first + local if 0 <= local < last - first else -1

    def lead(self, scan: Scan, pick: slice):
        """Where the packet starts inside each block (Simple Packet Blocks are shorter)."""
        spb = scan.kinds[pick] == BLOCK["spb"]
        return np.where(spb, SPB["data"], EPB["data"]) if spb.any() else EPB["data"]

    def fields(self, h: Headers, scan: Scan, pick: slice, n: int) -> RecordFields:
        """Lengths, times and interfaces from the block headers (``h``: the blocks' first bytes)."""
        kinds, bigs, section = scan.kinds[pick], scan.order[pick], scan.section[pick]
        order = bool(bigs[0]) if bigs.size else False
        mixed = bool(bigs.size) and not (bigs == order).all()
        if (not mixed and len(self.section_base) == 1 and len(self.interfaces) == 1
                and (kinds == BLOCK["epb"]).all()):
            return self._one_interface(h, scan, pick, n, ">u4" if order else "<u4")

        def u32(col):
            if not mixed:
                return h.raw(">u4" if order else "<u4", col)
            return np.where(bigs, h.raw(">u4", col), h.raw("<u4", col))

        spb, pb = kinds == BLOCK["spb"], kinds == BLOCK["pb"]
        local = u32(EPB["interface"])
        if pb.any():
            local[pb] = np.where(bigs, h.raw(">u2", PB["interface"]), h.raw("<u2", PB["interface"]))[pb]
        local[spb] = 0
        iface = self._globals(section, local)
        incl, orig = u32(EPB["cap_len"]), u32(EPB["orig_len"])
        snap = np.array([i.snaplen or MAX_SNAPLEN for i in self.interfaces] + [MAX_SNAPLEN], dtype=np.int64)
        if spb.any():
            orig[spb] = u32(SPB["orig_len"])[spb]
            incl[spb] = np.minimum(orig[spb], snap[iface[spb]])
        body_room = scan.offsets[pick] + scan.lengths[pick] - 4 - h.start
        cap_len = np.clip(np.minimum(np.minimum(incl, body_room), n - h.start), 0, None)
        ts = (u32(EPB["ts_high"]).astype(np.uint64) << np.uint64(32)) | u32(EPB["ts_low"]).astype(np.uint64)
        ticks = np.array([i.ticks for i in self.interfaces] + [1_000_000], dtype=np.float64)
        shift = np.array([i.ts_offset for i in self.interfaces] + [0], dtype=np.float64)
        if len(self.interfaces) == 1 and (iface == 0).all():
            time = ts.astype(np.float64) / ticks[0] + shift[0]   # float seconds: ~0.2 µs resolution
        else:
            time = ts.astype(np.float64) / ticks[iface] + shift[iface]
        time[spb] = np.nan
        if (iface < 0).any():
            self.note_undescribed(scan)
        return RecordFields(cap_len, orig, time, iface)

    def _one_interface(self, h: Headers, scan: Scan, pick: slice, n: int, u32: str) -> RecordFields:
        """``fields`` for the usual file (one section, one interface, enhanced packet blocks):
        the same values with fewer passes over the block."""
        undescribed = h.raw(u32, EPB["interface"]) != 0
        any_undescribed = undescribed.any()
        iface = np.where(undescribed, -1, 0) if any_undescribed else np.zeros(h.size, dtype=np.int64)
        incl, orig = h.raw(u32, EPB["cap_len"]), h.raw(u32, EPB["orig_len"])
        body_room = scan.lengths[pick] - (EPB["data"] + 4)       # (every block here is an EPB)
        cap_len = np.clip(np.minimum(np.minimum(incl, body_room), n - h.start), 0, None)
        # the 64-bit timestamp is high word then low word, each in the section's byte order:
        # one read of both (little-endian: the halves come swapped)
        if u32 == ">u4":
            ts = h.raw(">u8", EPB["ts_high"], np.uint64)
        else:
            both = h.raw("<u8", EPB["ts_high"], np.uint64)
            ts = (both << np.uint64(32)) | (both >> np.uint64(32))
        first = self.interfaces[0]
        time = ts.astype(np.float64) / np.float64(first.ticks)
        if first.ts_offset:
            time += np.float64(first.ts_offset)
        if any_undescribed:
            self.note_undescribed(scan)
        return RecordFields(cap_len, orig, time, iface)

    def note_undescribed(self, scan: Scan) -> None:
        """Note (once per file) that packets name an interface no block describes."""
        if not self.unknown_interface:
            self.unknown_interface = True
            scan.notes.append("some packets name an interface the file does not describe")

    def _globals(self, section: np.ndarray, local: np.ndarray) -> np.ndarray:
        """``_global`` for every packet (vectorised; one section is the usual case)."""
        bounds = np.array(self.section_base + [len(self.interfaces)], dtype=np.int64)
        if bounds.size < 2:
            return np.full(local.size, -1, dtype=np.int64)
        sec = np.clip(section, 0, bounds.size - 2)
        first, count = bounds[sec], bounds[sec + 1] - bounds[sec]
        return np.where((local >= 0) & (local < count) & (section >= 0), first + local, -1)
