"""Every frame's time and length from the record headers alone: the packets' bytes not read.

Statistics › I/O Graph of all frames needs no more than these two columns, and a
record's header holds both (pcap: seconds, fraction, lengths; pcapng: the
interface's clock, lengths). ``read_records`` walks the file as ``read_part``
does (the same windows, the same walk: ``decode.scans``) and reads each block's
headers with the reader's own ``fields``, so the times and lengths are the ones
``read_part`` gives, from a sixteenth of the bytes (a 1 GB capture of 1M packets:
~0.06 s against the whole read's 0.09). ``stats.opened`` uses it for a capture
not read yet; ``tests/test_capture_numbered.py`` compares it with the whole read.
"""
from __future__ import annotations

import numpy as np

from . import jit
from .decode import BLOCK_PACKETS, ReadState, scans
from .fields import Headers
from .loader import FIRST_WINDOW, WHOLE_FILE_WINDOW

__all__ = ["read_records"]


def read_records(source) -> dict[str, np.ndarray]:
    """``time`` (float seconds, NaN where a pcapng simple packet block has none) and
    ``frame_len`` of every frame of a capture (path or bytes), in file order. ``CaptureError``
    when it is no capture (notes about damage: ``read_part``'s)."""
    state = ReadState.open(source, WHOLE_FILE_WINDOW, min(FIRST_WINDOW, WHOLE_FILE_WINDOW))
    times, lengths = [], []
    try:
        found = scans(state)
        while (item := next(found, None)) is not None:
            fb, _, scan = item
            del item                  # (no reference to a window outlives it: one is mapped at a time)
            n = scan.offsets.size
            time, frame_len = np.empty(n), np.empty(n, dtype=np.uint32)
            for a in range(0, n, BLOCK_PACKETS):
                _block(state.reader, fb, scan, slice(a, min(a + BLOCK_PACKETS, n)), time, frame_len)
            times.append(time)
            lengths.append(frame_len)
            del fb
    finally:
        state.close()
    return {"time": np.concatenate(times) if times else np.zeros(0),
            "frame_len": np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.uint32)}


def _block(reader, fb, scan, block: slice, time: np.ndarray, frame_len: np.ndarray) -> None:
    """One block's times and lengths: by the compiled kernel where the window is read by it and
    the block is of the usual kind (``decode_jit.params``), else by the reader's ``fields``."""
    described = None if scan.kernels is None else scan.kernels[1].params(reader, scan, block)
    if described is not None:
        fmt, big, ticks, ts_offset = described[:4]
        scan.kernels[1].records(jit.readonly(fb.u8v), np.ascontiguousarray(scan.offsets[block], dtype=np.int64),
                                fmt, bool(big), float(ticks), int(ts_offset), time[block], frame_len[block])
        return
    # (width 0: the record headers' bytes only, where ``fields`` reads)
    h = Headers(fb, scan.offsets[block], reader.lead(scan, block), width=0)
    rec = reader.fields(h, scan, block, fb.n)
    time[block], frame_len[block] = rec.time, rec.frame_len
