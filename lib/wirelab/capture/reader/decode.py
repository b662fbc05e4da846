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

When the compiled kernels are loaded (``jit.py``), a block of the usual kind
(classic pcap, or pcapng with one interface) is read instead by one compiled
loop, ``decode_jit``, which writes the same values; ``dissect`` still reads
the packets it leaves.

The columns (``Part``: name → array, and ``name + "_ok"`` → where the value
could be read) are written into arrays allocated for all the packets they
will hold (estimated from the first window), not concatenated afterwards.
"""
from __future__ import annotations

import os
import threading
from typing import Iterator

import numpy as np

from ...errors import CaptureError
from . import jit
from .dissect import dissect
from .fastpath import decode_fast
from .fields import FileBytes, Headers
from .files import Scan
from .formats import PCAP_MAGIC, PCAPNG
from .part import ADDRESS6, Part, allocate, grow, shrink
from .pcap import PcapReader
from .pcapng import PcapngReader
from .source import WINDOW_BYTES, Windows

__all__ = ["scans", "notes", "capture_info", "decode_into", "windows", "BLOCK_PACKETS", "open_reader"]

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


def scans(source, *, window_bytes: int = WINDOW_BYTES, state: dict | None = None) -> Iterator[tuple]:
    """(file bytes of the window, its offset in the file, the packets it holds) for every window.

    ``state`` (a dict) receives ``reader`` (``format``, ``interfaces``), ``note_lists``
    (each window's notes, as a list its decode may still add to: ``notes``) and ``windows``
    (the ``source.Windows``).
    """
    src = Windows(source, window_bytes)
    reader = open_reader(src.head())
    state = {} if state is None else state
    state.update(reader=reader, note_lists=[], windows=src)
    start = reader.first_record
    windows = iter(src)
    while (window := next(windows, None)) is not None:
        base, data, final = window
        fb = FileBytes(data)
        del window, data          # no reference to a window outlives it: one is mapped at a time
        scan = reader.scan(fb, base, start - base, final)
        # (the list itself: the decode, perhaps still running in a thread, may add to it)
        state["note_lists"].append(scan.notes)
        src.resume_at(scan.resume)
        yield fb, base, scan
        del fb
        if scan.resume is None:
            break
        start = scan.resume


def notes(state: dict) -> list[str]:
    """Every note about the file so far, in file order."""
    return [note for found in state["note_lists"] for note in found]


def capture_info(state: dict, packets: int) -> dict:
    """File-level facts: format, interfaces (with drop counts), notes."""
    reader = state["reader"]
    return {"format": reader.format, "packets": int(packets), "notes": notes(state),
            "interfaces": [vars(i).copy() for i in reader.interfaces]}


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
    compiled = jit.kernels(fb.n) if FAST else None     # (None: the numpy path)

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
        h.cap_len = out["cap_len"][at]
        _store(out, at, dissect(h, out["linktype"][at], out["frame_len"][at]), lock)
    return True


def windows(source, *, window_bytes: int = WINDOW_BYTES, chunk_packets: int | None = None,
            state: dict | None = None) -> Iterator[Part]:
    """The columns of ``source``, window after window, each cut into parts of at most
    ``chunk_packets`` packets (one pass over the file: for streams); at least one part."""
    state = {} if state is None else state
    any_packets = False
    found = scans(source, window_bytes=window_bytes, state=state)
    while (item := next(found, None)) is not None:
        fb, base, scan = item
        del item                  # (so that the window is unmapped before the next one is)
        n = scan.offsets.size
        step = chunk_packets or max(n, 1)
        for a in range(0, n, step):
            pick = slice(a, min(a + step, n))
            out = allocate(pick.stop - a)
            decode_into(out, 0, fb, state["reader"], scan, base, pick)
            any_packets = True
            yield out
        del fb
    if not any_packets:            # a capture without packets is one empty part (its facts go with it)
        yield allocate(0)
