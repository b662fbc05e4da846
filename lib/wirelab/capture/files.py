"""Classic pcap and pcapng files → where each packet is, its lengths, time and link type.

No packet bytes are interpreted here (that is ``dissect``). The result,
``Records``, holds numpy arrays with one entry per packet, in file order.
A damaged file gives the packets before the damage and a note saying where
it stopped; only a file that is no capture at all raises ``CaptureError``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..errors import CaptureError
from .fields import FileBytes, Headers
from .formats import (BLOCK, EPB, IDB, IDB_OPTIONS, ISB, ISB_OPTIONS, PB, PCAP_HEADER_LEN,
                      PCAP_MAGIC, PCAP_RECORD, PCAPNG, SPB)
from .walk import Layout, walk

__all__ = ["Interface", "Records", "read_records"]

MAX_SNAPLEN = 262144


@dataclass
class Interface:
    """One capture interface (pcap has one; pcapng one per IDB)."""
    linktype: int
    snaplen: int = 0
    name: str | None = None
    ticks: int = 1_000_000          # timestamp units per second
    ts_offset: int = 0              # seconds added to every timestamp
    received: int | None = None     # from the last Interface Statistics Block
    dropped: int | None = None      # isb_ifdrop: dropped by the interface/kernel
    os_dropped: int | None = None   # isb_osdrop


@dataclass
class Records:
    """Where each packet is in the file; numpy arrays, one entry per packet."""
    format: str
    start: np.ndarray          # offset of the first packet byte
    cap_len: np.ndarray        # bytes present in the file
    frame_len: np.ndarray      # bytes on the wire
    time: np.ndarray           # seconds since the epoch (NaN: no timestamp)
    iface: np.ndarray          # index into ``interfaces``
    interfaces: list[Interface]
    headers: Headers               # the first bytes of every record, for ``dissect``
    notes: list[str] = field(default_factory=list)

    @property
    def linktype(self) -> np.ndarray:
        table = np.array([i.linktype for i in self.interfaces] + [-1], dtype=np.int64)
        return table[np.where(self.iface < len(self.interfaces), self.iface, -1)]


def read_records(fb: FileBytes) -> Records:
    """Detect the format by its magic number and read every record."""
    if fb.n >= 4:
        magic_le = int(fb.u32(0, False))
        magic_be = int(fb.u32(0, True))
        if magic_le == PCAPNG["shb_type"]:
            return _pcapng(fb)
        for big, magic in ((False, magic_le), (True, magic_be)):
            if magic in PCAP_MAGIC:
                return _pcap(fb, big, *PCAP_MAGIC[magic])
    head = bytes(fb.u8v[:8]).hex() or "empty"
    raise CaptureError(f"not a pcap or pcapng file (starts with {head})",
                       "give a file written by dumpcap, tcpdump, tshark or Wireshark")


# ---------------------------------------------------------------- classic pcap
def _pcap(fb: FileBytes, big: bool, ticks: int, rec_len: int) -> Records:
    if fb.n < PCAP_HEADER_LEN:
        raise CaptureError(f"pcap file header cut short ({fb.n} of 24 bytes)",
                           "the file was truncated; capture it again")
    snaplen = int(fb.u32(16, big))
    linktype = int(fb.u32(20, big)) & 0xFFFF
    n = fb.n
    first_ts = int(fb.u32(PCAP_HEADER_LEN, big)) if n >= PCAP_HEADER_LEN + 4 else 0
    biggest = max(snaplen, MAX_SNAPLEN)

    def step(pos):
        incl = fb.u32(pos + PCAP_RECORD["incl_len"], big).astype(np.int64)
        return pos + rec_len + incl, pos + rec_len <= n

    def plausible(pos):
        good = fb.u32(pos + PCAP_RECORD["ts_frac"], big) < ticks
        idx = np.flatnonzero(good)
        p = pos[idx]
        incl = fb.u32(p + PCAP_RECORD["incl_len"], big)
        orig = fb.u32(p + PCAP_RECORD["orig_len"], big)
        sec = fb.u32(p + PCAP_RECORD["ts_sec"], big).astype(np.int64)
        good[idx] = ((incl <= orig) & (incl <= biggest) & (p + rec_len <= n)
                     & (np.abs(sec - first_ts) < 10 * 365 * 86400))
        return good

    def screen(first, spacing, count, cols):
        u32 = ">u4" if big else "<u4"
        return fb.grid(u32, first + PCAP_RECORD["ts_frac"], spacing, count, cols, 1) < ticks

    offs = walk(Layout(step, plausible, 1, rec_len, screen), n, PCAP_HEADER_LEN)
    h = Headers(fb, offs, rec_len)
    u32 = ">u4" if big else "<u4"
    start = offs + rec_len
    incl = h.raw(u32, PCAP_RECORD["incl_len"])
    cap_len = np.clip(np.minimum(incl, n - start), 0, None)
    h.cap_len = cap_len
    frame_len = h.raw(u32, PCAP_RECORD["orig_len"])
    sec = h.raw(u32, PCAP_RECORD["ts_sec"]).astype(np.float64)
    frac = h.raw(u32, PCAP_RECORD["ts_frac"]).astype(np.float64)
    notes = []
    if offs.size and incl[-1] > cap_len[-1]:
        notes.append(f"the file ends inside packet {offs.size} ({cap_len[-1]} of {incl[-1]} bytes)")
    elif offs.size and start[-1] + incl[-1] < n:
        notes.append(f"{n - start[-1] - incl[-1]} bytes after packet {offs.size} are not a whole record")
    return Records("pcap", start, cap_len, frame_len, sec + frac / ticks,
                   np.zeros(offs.size, dtype=np.int64),
                   [Interface(linktype, snaplen, ticks=ticks)], h, notes)


# ---------------------------------------------------------------------- pcapng
def _section_order(fb: FileBytes, pos: int) -> bool | None:
    """Byte order of the section starting at ``pos`` (True = big-endian), None if unreadable."""
    if pos + 12 > fb.n:
        return None
    bom = int(fb.u32(pos + 8, False))
    if bom == PCAPNG["byte_order_magic"]:
        return False
    if int(fb.u32(pos + 8, True)) == PCAPNG["byte_order_magic"]:
        return True
    return None


def _block_layout(fb: FileBytes, big: bool, section: int, sections: bool) -> Layout:
    """Blocks of one section; with ``sections`` the walk stops at the next section header
    (its byte order may differ). Without, it is faster; ``_pcapng`` re-walks if needed."""
    n = fb.n
    shb = PCAPNG["shb_type"]

    def step(pos):
        length = fb.u32(pos + 4, big).astype(np.int64)
        ok = (length >= PCAPNG["min_block"]) & ((length & 3) == 0) & (pos + 8 <= n)
        if sections:
            new_section = fb.u32(pos, big) == shb
            if new_section.any():        # another section: byte order may change, stop there
                ok &= ~(new_section & (pos != section))
        return pos + length, ok

    def plausible(pos):
        length = fb.u32(pos + 4, big).astype(np.int64)
        return ((length >= PCAPNG["min_block"]) & (length % 4 == 0) & (pos + length <= n)
                & (fb.u32(pos + length - 4, big) == length))

    def screen(first, spacing, count, cols):
        length = fb.grid(">u4" if big else "<u4", first + 4, spacing, count, cols, 4)
        return (length % 4 == 0) & (length >= PCAPNG["min_block"])

    return Layout(step, plausible, 4, 8, screen)


def _options(fb: FileBytes, pos: int, end: int, big: bool) -> dict[int, bytes]:
    """pcapng options (code u16, length u16, value padded to 4) between ``pos`` and ``end``."""
    out: dict[int, bytes] = {}
    raw = bytes(fb.u8v[pos:end])
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


def _pair(h: Headers, col: int, big: bool) -> tuple[np.ndarray, np.ndarray]:
    """Two consecutive u32 fields of every row (at ``col`` and ``col + 4``) in one 8-byte read."""
    word = h.raw(">u8" if big else "<u8", col)       # int64; may wrap negative: mask after shifting
    high, low = (word >> 32) & 0xFFFFFFFF, word & 0xFFFFFFFF
    return (high, low) if big else (low, high)


def _walk_sections(fb: FileBytes, sections: bool) -> tuple[np.ndarray, np.ndarray]:
    """Block offsets and their byte order; ``sections=False`` assumes one byte order (fast)."""
    n = fb.n
    pieces, orders = [], []
    pos, big = 0, _section_order(fb, 0)
    if big is None:
        raise CaptureError("pcapng section header has no valid byte-order magic",
                           "the file is damaged or not pcapng")
    while big is not None:        # one walk per section (byte order may change between them)
        offs = walk(_block_layout(fb, big, pos, sections), n, pos)
        pieces.append(offs)
        orders.append(np.full(offs.size, big))
        if offs.size == 0 or not sections:
            break
        last_len = int(fb.u32(offs[-1] + 4, big))
        pos = int(offs[-1]) + last_len
        big = _section_order(fb, pos) if pos + 8 <= n and \
            int(fb.u32(pos, False)) == PCAPNG["shb_type"] else None
    return np.concatenate(pieces), np.concatenate(orders)


def _pcapng(fb: FileBytes) -> Records:
    n = fb.n
    width = EPB["data"] + 80
    offs, bigs = _walk_sections(fb, False)
    rows = fb.rows(offs, width)              # every block's first bytes, in one gather
    big0 = bool(bigs[0])
    types, lengths = _pair(Headers(fb, offs, 0, rows=rows), 0, big0)     # type and length: one read
    if (types[1:] == BLOCK["shb"]).any():    # several sections (byte orders may differ): walk each
        offs, bigs = _walk_sections(fb, True)
        rows = fb.rows(offs, width)
        types = fb.u32_either(offs, bigs).astype(np.int64)
        lengths = fb.u32_either(offs + 4, bigs).astype(np.int64)

    # interfaces and statistics: few blocks, plain Python
    interfaces: list[Interface] = []
    section_base: list[int] = []
    sec_of_block = np.cumsum(types == BLOCK["shb"]) - 1
    for i in np.flatnonzero((types == BLOCK["shb"]) | (types == BLOCK["idb"])):
        if types[i] == BLOCK["shb"]:
            section_base.append(len(interfaces))
        else:
            interfaces.append(_interface(fb, int(offs[i]), int(lengths[i]), bool(bigs[i])))
    section_base.append(len(interfaces))
    base = np.array(section_base, dtype=np.int64)
    sec_of_block = np.clip(sec_of_block, 0, base.size - 2)
    for i in np.flatnonzero(types == BLOCK["isb"]):
        local = int(fb.u32(offs[i] + ISB["interface"], bool(bigs[i])))
        glob = base[sec_of_block[i]] + local
        if local < base[sec_of_block[i] + 1] - base[sec_of_block[i]]:
            _statistics(fb, int(offs[i]), int(lengths[i]), bool(bigs[i]), interfaces[glob])

    # packets: Enhanced, Simple and obsolete Packet Blocks, vectorised
    is_pkt = (types == BLOCK["epb"]) | (types == BLOCK["spb"]) | (types == BLOCK["pb"])
    span = np.flatnonzero(is_pkt)
    if span.size and is_pkt[span[0]:span[-1] + 1].all():    # the usual file: slices, no copies
        pick = slice(int(span[0]), int(span[-1]) + 1)
    else:
        pick = is_pkt
    p, t, ln, b, sec = offs[pick], types[pick], lengths[pick], bigs[pick], sec_of_block[pick]
    spb = t == BLOCK["spb"]
    pb = t == BLOCK["pb"]
    h = Headers(fb, p, np.where(spb, SPB["data"], EPB["data"]) if spb.any() else EPB["data"],
                rows=rows[pick])
    order = bool(b[0]) if b.size else False
    mixed = bool(b.size) and not (b == order).all()

    def u32(col):
        if not mixed:
            return h.raw(">u4" if order else "<u4", col)
        return np.where(b, h.raw(">u4", col), h.raw("<u4", col))

    local = u32(EPB["interface"])
    if pb.any():
        local[pb] = np.where(b[pb], fb.u16(p[pb] + PB["interface"], True),
                             fb.u16(p[pb] + PB["interface"], False))
    local[spb] = 0
    if base.size == 2:           # one section: no per-packet section lookups
        iface = np.where(local < base[1], local, len(interfaces))
    else:
        iface = np.where(local < base[sec + 1] - base[sec], base[sec] + local, len(interfaces))
    start = h.start
    if not mixed:
        incl, orig = _pair(h, EPB["cap_len"], order)        # captured and original length: one read
    else:
        orig, incl = u32(EPB["orig_len"]), u32(EPB["cap_len"])
    snap = np.array([i.snaplen or MAX_SNAPLEN for i in interfaces] + [MAX_SNAPLEN], dtype=np.int64)
    if spb.any():
        orig[spb] = fb.u32_either(p[spb] + SPB["orig_len"], b[spb])
        incl[spb] = np.minimum(orig[spb], snap[iface[spb]])
    body_room = p + ln - 4 - start
    cap_len = np.clip(np.minimum(np.minimum(incl, body_room), n - start), 0, None)
    h.cap_len = cap_len
    # the 64-bit timestamp in one read: big-endian is high·low already; little-endian swaps halves
    if not mixed:
        word = h.raw(">u8" if order else "<u8", EPB["ts_high"]).astype(np.uint64)
        ts = word if order else (word << np.uint64(32)) | (word >> np.uint64(32))
    else:
        ts = (u32(EPB["ts_high"]).astype(np.uint64) << np.uint64(32)) | u32(EPB["ts_low"]).astype(np.uint64)
    ticks = np.array([i.ticks for i in interfaces] + [1_000_000], dtype=np.float64)
    shift = np.array([i.ts_offset for i in interfaces] + [0], dtype=np.float64)
    if len(interfaces) == 1 and (iface == 0).all():
        time = ts.astype(np.float64) / ticks[0] + shift[0]   # float seconds: ~0.2 µs resolution
    else:
        time = ts.astype(np.float64) / ticks[iface] + shift[iface]
    time[spb] = np.nan
    notes = []
    if offs.size and int(offs[-1]) + int(lengths[-1]) < n:
        notes.append(f"stopped reading at byte {int(offs[-1]) + int(lengths[-1])} of {n}: "
                     "a damaged block")
    elif offs.size and int(offs[-1]) + int(lengths[-1]) > n:
        notes.append("the file ends inside its last block")
    if (iface == len(interfaces)).any():
        notes.append("some packets name an interface the file does not describe")
    return Records("pcapng", start, cap_len, orig, time, iface, interfaces, h, notes)
