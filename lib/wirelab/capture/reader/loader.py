"""``read_capture``: a pcap or pcapng file → a pandas DataFrame, one row per frame.

Columns (missing values are <NA>; an unreadable header leaves its fields missing):

    frame         the frame's number, from 1 in file order (Wireshark's frame.number)
    time          seconds since the epoch (float; NaN for pcapng simple packet blocks)
    time_relative seconds since the file's first frame (Wireshark's frame.time_relative)
    frame_len     bytes on the wire (as the capture saw them: no preamble, no FCS)
    cap_len       bytes the file holds (less than frame_len when the snaplen cut it)
    l3            "ipv4", "ipv6", "arp" or "other"
    src, dst      IP addresses as text (categorical)
    proto         "tcp", "udp", "icmp", "icmpv6", ... or "ip-proto-N"
    sport, dport  TCP/UDP ports
    ip_len        IP packet length, header included (IPv6: 40 + payload length)
    ttl           IPv4 TTL or IPv6 hop limit
    frag_offset, more_frags, ip_id     IP fragmentation (IPv6: from the fragment header)
    tcp_seq, tcp_ack, tcp_flags, tcp_win, tcp_hdr_len, tcp_opts_len
    tcp_mss, tcp_wscale                announced in SYN segments only
    payload_len   transport payload bytes in this frame (a later fragment: all its IP data)
    vlan          outer 802.1Q VLAN id
    linktype, iface                    link-layer type and pcapng interface index (-1: not described)
    payload_offset                     where the transport payload starts in the frame
    file_offset                        where the frame starts in the file (to read payload bytes)

``df.attrs["capture"]`` holds the file format, the interfaces (name, link
type, snaplen, drops from pcapng statistics blocks) and notes about damage.

The file is read a window at a time (``decode``; ``WHOLE_FILE_WINDOW``), so
what it costs in memory is the DataFrame and two windows, not the file. For a capture larger than memory, read it
in chunks with ``stream.iter_capture`` or convert it once into a parquet
dataset (``dataset.convert``) and query that with DuckDB.
"""
from __future__ import annotations

import mmap
import os
import stat
from contextlib import ExitStack
from pathlib import Path

from ...errors import CaptureError
from .decode import ReadState, capture_info, decode_into, scans   # (capture_info: exported)
from .part import Part, allocate, grow, shrink
from ..._plain import is_file_object

__all__ = ["read_capture", "read_part", "capture_info"]

#: the window of the file ``read_capture`` maps at a time. Two are mapped at once (one decoded
#: while the next is scanned) and their pages count in the process's resident size: 512 MiB
#: windows made reading a 1 GB capture peak at 1.37x the file's size, 128 MiB at 0.67x, for
#: the same time within the machine's noise (bench/bench_explorer.py); smaller ones cost more
#: per record (32 MiB: 1.5x the time)
WHOLE_FILE_WINDOW = 128 << 20
#: the first window, smaller: nothing is decoded beside its walk, nor is anything walked until
#: it is (a 1M-packet, 1 GB capture: 12 ms of one core alone with 128 MiB, 2 with 16)
FIRST_WINDOW = 16 << 20


def _buffer(source):
    """The file's bytes: a memory map for a path, the contents for a file object
    (for the few readers that jump to payload bytes, e.g. ``udp_loss``)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if is_file_object(source):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise CaptureError("the file object gives text, not bytes", "open it with mode 'rb'")
        return bytes(data)
    path = Path(os.fspath(source))
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise CaptureError(f"no capture file at {path}", "check the path (captures/ has examples)") from None
    except IsADirectoryError:
        raise CaptureError(f"{path} is a directory", "give a .pcap or .pcapng file") from None


def read_capture(source, *, chunk_packets: int | None = None):
    """Read a pcap/pcapng file (path, bytes or binary file object) into a DataFrame.

    Raises ``CaptureError`` only when the input is not a capture at all;
    damage inside the file gives the readable packets and a note in
    ``df.attrs["capture"]["notes"]``. With ``chunk_packets`` it returns an
    iterator of DataFrames of at most that many rows instead (memory stays
    bounded whatever the file's size: ``stream.iter_capture``).
    """
    # pandas only when a DataFrame is asked for: `wirelab analyze` reads columns (start-up)
    from .columns import frame_from_part
    from .stream import iter_capture                 # (start-up: pandas, as above)

    if chunk_packets is not None:
        return iter_capture(source, chunk_packets=chunk_packets)
    return frame_from_part(*read_part(source))


def read_part(source, *, then=None) -> tuple[Part, dict]:
    """The whole capture as numpy columns (``part.Part``) and its file-level facts, without
    pandas: ``read_capture`` makes its DataFrame of them, ``frames.Frames`` its arrays.
    ``then(columns, start, stop)``, if given, is called once rows ``start`` to ``stop`` of the
    columns so far are decoded, window after window in file order, in this thread while the
    next window decodes (``stats.numbered`` numbers conversations there)."""
    if is_file_object(source) and not _is_plain_file(source):
        source = _buffer(source)                 # a stream, BytesIO, a file read into: read it all
    state = ReadState.open(source, WHOLE_FILE_WINDOW, min(FIRST_WINDOW, WHOLE_FILE_WINDOW))
    out, at = None, 0
    found = scans(state)
    decoding = None               # the previous window's decode, running beside the next scan
    # (windows here are memory maps or the bytes in memory, never a reused buffer: a stream was
    # read whole above, so a window stays valid while it decodes)
    then = then or (lambda columns, start, stop: None)
    with ExitStack() as stack:
        stack.callback(state.close)              # (last: after the thread decoding beside has ended)
        background = None
        done = None               # the rows last decoded beside, their ``then`` still to run
        rows = at, at             # (the rows of the window decoding beside)
        while (item := next(found, None)) is not None:
            fb, base, scan = item
            del item              # (no reference to a window outlives its decode: two are mapped at most)
            if decoding is not None:
                decoding.result()                        # (its error, if any, is raised here)
                decoding, done = None, rows
            rows = at, at + scan.offsets.size
            rest = state.windows.size_after(base + fb.n)
            if out is None or rows[1] > out["time"].size:     # room for the rest of the file, estimated
                out = grow(out, at, rows[1] + int(rest * scan.offsets.size / max(fb.n, 1) * 1.05) + 64)
            if rest == 0 and background is None:         # one window: no thread to decode beside
                decode_into(out, at, fb, state.reader, scan, base)
                then(out, *rows)
            else:
                if background is None:
                    # a thread only when there is a next window to scan (start-up: a small capture)
                    from concurrent.futures import ThreadPoolExecutor
                    background = stack.enter_context(ThreadPoolExecutor(1))
                decoding = background.submit(decode_into, out, at, fb, state.reader, scan, base)
            if done is not None:                         # (here: beside the decode just started)
                then(out, *done)
                done = None
            at += scan.offsets.size
            del fb
        if decoding is not None:
            decoding.result()
            then(out, *rows)
    return shrink(out or allocate(0), at), state.info(at)


def _is_plain_file(f) -> bool:
    """A regular file object at its start (read through memory maps, not into memory)."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and f.tell() == 0
    except (AttributeError, OSError, ValueError):
        return False
