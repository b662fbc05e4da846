"""``iter_capture``: a capture of any size as DataFrames of at most ``chunk_packets`` rows.

Each chunk has the columns and types of ``read_capture`` (see ``loader``), in
file order; the memory used is one window of the file plus one chunk, the
same for a 1 MB and a 100 GB capture. ``file_offset`` is where the frame
starts in the file (it grows through the file: sort by it to keep file order).
The categories of ``src``/``dst``/``proto`` are those of each chunk.

    for chunk in iter_capture("big.pcapng", chunk_packets=250_000):
        total += chunk["frame_len"].sum()

``dataset.convert`` writes the chunks as a parquet dataset to query with DuckDB.
"""
from __future__ import annotations

from typing import Iterator

import pandas as pd

from ...errors import UsageError
from .columns import first_time, frame_from_part
from .decode import ReadState, windows
from .source import WINDOW_BYTES

__all__ = ["iter_capture", "CHUNK_PACKETS"]

CHUNK_PACKETS = 250_000


def iter_capture(source, *, chunk_packets: int = CHUNK_PACKETS,
                 window_bytes: int = WINDOW_BYTES) -> Iterator[pd.DataFrame]:
    """Read a pcap/pcapng file (path, bytes or binary file object, a pipe too) in chunks.

    Every chunk's ``attrs["capture"]`` holds the file's facts as known so far
    (format, interfaces, notes); the last chunk's are the whole file's. A
    capture without packets gives one empty chunk.
    Raises ``CaptureError`` (before the first chunk) when the input is not a capture.
    """
    if chunk_packets < 1:
        raise UsageError(f"chunk_packets must be at least 1, not {chunk_packets}", "e.g. 250000")
    state = ReadState.open(source, window_bytes)
    seen, start = 0, None
    try:
        for part in windows(state, chunk_packets=chunk_packets):
            start = first_time(part) if start is None else start       # (the file's first time)
            first, seen = seen + 1, seen + part["time"].size
            yield frame_from_part(part, state.info(seen), first_frame=first, start=start)
    finally:
        state.close()
