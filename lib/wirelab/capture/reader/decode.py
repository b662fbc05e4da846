"""A capture → columns of numpy arrays, one window of the file at a time.

For each window (``source.Windows``) the reader (``pcap``/``pcapng``) finds
the packet records (a ``Scan``); then, a block of 32768 records at a time,
their first bytes are copied into one small array (``fields.Headers``), the
record headers give lengths, times and interfaces, and the packet headers are
read: by ``fastpath`` when most of the block is the usual packet (Ethernet,
IPv4 without options, TCP or UDP), by ``dissect`` for every other packet. A
block's arrays are a few MB, mostly in the processor's caches, so the many
numpy passes over them cost little. Blocks are decoded in two threads at once
(numpy releases the GIL in its loops): measured on a two-core machine, 1.2 to
1.6 times as fast when a core is free, no faster when other work keeps both busy.

Whether a window is read by the compiled kernels or by numpy is decided once,
for the whole window, when it is scanned (``scans`` asks ``jit.kernels``; the
answer travels with the window as ``Scan.kernels``). When they are used, the
walk is ``walk_jit``'s and a block of the usual kind
(classic pcap, or pcapng with one interface) is read instead by one compiled
loop, ``decode_jit``, which writes the same values; ``dissect`` still reads
the packets it leaves.

What one window leaves to the next (the reader, with the interfaces and byte
order found so far; the windows of the file; the notes) is one ``ReadState``.

The columns (``Part``: name → array, and ``name + "_ok"`` → where the value
could be read) are written into arrays allocated for all the packets they
will hold (estimated from the first window), not concatenated afterwards.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ...errors import CaptureError
from . import jit
from .dissect import dissect
from .fastpath import decode_fast
from .fields import FileBytes, Headers
from .files import Scan
from .formats import PCAP_MAGIC, PCAPNG
from .part import ADDRESS6, Part, allocate
from .pcap import PcapReader
from .pcapng import PcapngReader
from .source import WINDOW_BYTES, Windows

__all__ = ["ReadState", "scans", "capture_info", "decode_into", "windows", "BLOCK_PACKETS",
           "open_reader"]

BLOCK_PACKETS = 32768
#: threads decoding blocks at once: one per core, two at most (measured on two cores only)
THREADS = min(os.cpu_count() or 1, 2)
#: the fast path for the usual packet (``fastpath``); False: every packet through ``dissect``
FAST = True


def open_reader(head: bytes):
    """The reader for a file starting with ``head`` (its first bytes), by magic number."""
    if len(head) >= 4:
        magic_le = int.from_bytes(head[:4], "little")
        magic_be = int.from_bytes(head[:4], "big")
        if magic_le == PCAPNG["shb_type"]:
            return PcapngReader(head)
        for big, magic in ((False, magic_le), (True, magic_be)):
            if magic in PCAP_MAGIC:
                return PcapReader(head, big, *PCAP_MAGIC[magic])
    raise CaptureError(f"not a pcap or pcapng file (starts with {bytes(head[:8]).hex() or 'empty'})",
                       "give a file written by dumpcap, tcpdump, tshark or Wireshark")


@dataclass
class ReadState:
    """What reading a capture carries from one window of the file to the next.

    ``reader``: the ``pcap``/``pcapng`` reader (format, interfaces, byte order, packets so
    far); ``windows``: the file, a window at a time (``source.Windows``); ``note_lists``:
    each window's notes, as the list its decode, perhaps still running in a thread, may
    still add to (``notes``)."""
    reader: PcapReader | PcapngReader
    windows: Windows
    note_lists: list[list[str]] = field(default_factory=list)

    @classmethod
    def open(cls, source, window_bytes: int = WINDOW_BYTES, first: int | None = None) -> "ReadState":
        """Open ``source`` (path, bytes or binary file object) and its reader, by magic number;
        ``CaptureError`` when it is no capture."""
        windows = Windows(source, window_bytes, first)
        try:
            return cls(open_reader(windows.head()), windows)
        except BaseException:
            windows.close()
            raise

    def notes(self) -> list[str]:
        """Every note about the file so far, in file order."""
        return [note for found in self.note_lists for note in found]

    def info(self, packets: int) -> dict:
        """File-level facts: format, packets, interfaces (with drop counts), notes."""
        return {"format": self.reader.format, "packets": int(packets), "notes": self.notes(),
                "interfaces": [vars(i).copy() for i in self.reader.interfaces]}

    def close(self) -> None:
        self.windows.close()


def scans(state: ReadState) -> Iterator[tuple]:
    """(file bytes of the window, its offset in the file, the packets it holds) for every window.

    Here, once per window, it is decided whether the compiled kernels read it (``jit.kernels``,
    by the window's size); the walk and the decode of that window both follow the answer
    (``Scan.kernels``)."""
    reader, src = state.reader, state.windows
    start = reader.first_record
    windows = iter(src)
    while (window := next(windows, None)) is not None:
        base, data, final = window
        fb = FileBytes(data)
        del window, data          # no reference to a window outlives it: one is mapped at a time
        scan = reader.scan(fb, base, start - base, final, jit.kernels(fb.n))
        # (the list itself: the decode, perhaps still running in a thread, may add to it)
        state.note_lists.append(scan.notes)
        src.resume_at(scan.resume)
        yield fb, base, scan
        del fb
        if scan.resume is None:
            break
        start = scan.resume


def capture_info(state: ReadState, packets: int) -> dict:
    """File-level facts: format, interfaces (with drop counts), notes."""
    return state.info(packets)


def _store(out: Part, rows, fields: dict, lock: threading.Lock) -> None:
    """Write ``dissect``'s fields into ``out`` at ``rows`` (a slice, or indices)."""
    for name, value in fields.items():
        if not isinstance(value, tuple):
            out[name][rows] = value
            continue
        values, ok = value
        out[name + "_ok"][rows] = ok
        if name in ADDRESS6:
            if not ok.any():
                continue
            with lock:
                for both in ADDRESS6:          # source and destination: both or neither
                    if out[both] is None:
                        out[both] = np.zeros((out["time"].size, 16), dtype=np.uint8)
        out[name][rows] = values


def decode_into(out: Part, at: int, fb: FileBytes, reader, scan: Scan, base: int,
                pick: slice = slice(None)) -> int:
    """Decode the packets ``pick`` of a window's scan into ``out`` from row ``at``; returns
    the number written. Blocks go to ``THREADS`` threads: numpy lets go of the GIL inside
    its loops, and each block writes its own rows of ``out``."""
    first, stop, _ = pick.indices(scan.offsets.size)
    table = np.array([i.linktype for i in reader.interfaces] + [-1], dtype=np.int64)
    lock = threading.Lock()            # the reader's notes and the IPv6 columns are shared
    compiled = scan.kernels if FAST else None          # (None: the numpy path; decided in ``scans``)

    def block(a: int) -> None:
        block = slice(a, min(a + BLOCK_PACKETS, stop))
        rows = slice(at + a - first, at + block.stop - first)
        if compiled is not None and _compiled_block(compiled[1], out, rows, fb, reader, scan, block, base, lock):
            return
        h = Headers(fb, scan.offsets[block], reader.lead(scan, block))
        with lock:
            rec = reader.fields(h, scan, block, fb.n)
        h.cap_len = rec.cap_len
        linktype = table[rec.iface]            # -1 (not described) reads the last entry: -1
        for name, value in (("time", rec.time), ("frame_len", rec.frame_len), ("cap_len", rec.cap_len),
                            ("linktype", linktype), ("iface", rec.iface), ("file_offset", base + h.start)):
            out[name][rows] = value
        misfits = decode_fast(out, rows, h, linktype, rec.frame_len) if FAST else None
        if misfits is None:
            _store(out, rows, dissect(h, linktype, rec.frame_len), lock)
        elif misfits.size:                     # the packets the fast path left: the general decoder
            _store(out, rows.start + misfits, dissect(h.subset(misfits), linktype[misfits],
                                                      rec.frame_len[misfits]), lock)

    starts = range(first, stop, BLOCK_PACKETS)
    if THREADS < 2 or len(starts) < 2:
        for a in starts:
            block(a)
    else:
        from concurrent.futures import ThreadPoolExecutor     # (start-up: a small capture has one block)
        with ThreadPoolExecutor(THREADS) as pool:
            for done in [pool.submit(block, a) for a in starts]:
                done.result()                  # (an error in a block is raised here)
    return stop - first


def _compiled_block(decode_jit, out: Part, rows: slice, fb: FileBytes, reader, scan: Scan, block: slice,
                    base: int, lock: threading.Lock) -> bool:
    """``decode_into``'s block through the compiled kernel (``decode_jit``) when the block is of
    the usual kind (False: it is not, numpy reads it); the packets it leaves go to ``dissect``."""
    described = decode_jit.params(reader, scan, block)
    if described is None:
        return False
    offsets = scan.offsets[block]
    misfits, undescribed = decode_jit.usual(out, rows, jit.readonly(fb.u8v), offsets, scan.lengths[block],
                                            base, described)
    if undescribed:
        with lock:
            reader.note_undescribed(scan)
    if misfits.size:
        h = Headers(fb, offsets[misfits], reader.lead(scan, block))
        at = rows.start + misfits
        h.cap_len = out["cap_len"][at].astype(np.int64)          # (32 bits in ``out``: part.py)
        _store(out, at, dissect(h, out["linktype"][at], out["frame_len"][at].astype(np.int64)), lock)
    return True


def windows(state: ReadState, *, chunk_packets: int | None = None) -> Iterator[Part]:
    """The columns of the capture ``state`` reads, window after window, each cut into parts of
    at most ``chunk_packets`` packets (one pass over the file: for streams); at least one part."""
    any_packets = False
    found = scans(state)
    while (item := next(found, None)) is not None:
        fb, base, scan = item
        del item                  # (so that the window is unmapped before the next one is)
        n = scan.offsets.size
        step = chunk_packets or max(n, 1)
        for a in range(0, n, step):
            pick = slice(a, min(a + step, n))
            out = allocate(pick.stop - a)
            decode_into(out, 0, fb, state.reader, scan, base, pick)
            any_packets = True
            yield out
        del fb
    if not any_packets:            # a capture without packets is one empty part (its facts go with it)
        yield allocate(0)
