"""Classic pcap and pcapng files → where each packet is, one window of the file at a time.

A reader (``pcap.PcapReader`` or ``pcapng.PcapngReader``, chosen by the
magic number: ``decode.open_reader``) looks at one window of the file's bytes and finds its packet
records (``Scan``): where each starts, its kind, where the next window
must start. It keeps what spans windows (interfaces, byte order, packets so
far). From a block of records' first bytes (``rows``) it reads their
lengths, times and interfaces (``RecordFields``). No packet bytes are
interpreted here: that is ``dissect``.

A damaged file gives the packets before the damage and a note saying where
it stopped; only a file that is no capture at all raises ``CaptureError``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


__all__ = ["Interface", "Scan", "RecordFields", "settle", "MAX_SNAPLEN", "MAX_FRAME",
           "MAX_WINDOW_FOR_ONE_RECORD", "TEN_YEARS"]

MAX_SNAPLEN = 262144
#: a classic pcap record this far in time from the file's first is no record (damage)
TEN_YEARS = 10 * 365 * 86400
#: no frame is longer (Wireshark's biggest snaplen is 256 KiB; 16 MiB leaves room)
MAX_FRAME = 1 << 24
#: a window grows up to this to hold one long record; a longer record is damage
MAX_WINDOW_FOR_ONE_RECORD = MAX_FRAME + (1 << 20)


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
class Scan:
    """The packet records one window holds (offsets within the window, in file order)."""
    offsets: np.ndarray          # where each record starts
    kinds: np.ndarray            # pcapng block type (0 for pcap)
    lengths: np.ndarray          # the whole record, header included
    order: np.ndarray | None = None      # pcapng: True where the record's section is big-endian
    section: np.ndarray | None = None    # pcapng: index of the record's section
    resume: int | None = None    # file offset where the next window starts; None: no more
    notes: list[str] = field(default_factory=list)
    #: the compiled kernels (walk_jit, decode_jit) the window is walked and decoded with; None:
    #: numpy. Decided once per window (``decode.scans`` asks ``jit.kernels``).
    kernels: tuple | None = None


@dataclass
class RecordFields:
    """What the record headers of a block of packets say."""
    cap_len: np.ndarray          # bytes present in the file
    frame_len: np.ndarray        # bytes on the wire
    time: np.ndarray             # seconds since the epoch (NaN: no timestamp)
    iface: np.ndarray            # index into the reader's ``interfaces``


def settle(ends: np.ndarray, n: int, start: int, min_header: int, final: bool):
    """How many of a window's walked records to keep and where the next window starts.

    ``ends``: where each walked record ends (within the window of ``n`` bytes).
    Returns (records kept, resume offset within the window or None, why it stopped):
    a record running past a window that is not the file's last waits for the next
    window; a record the walk could not read ends the file ("damaged"). A record
    longer than the whole window is read again in a bigger window (resume at
    ``start``: the window grows) unless the window is already as big as any
    record can be ("too long": damage too).
    """
    count = ends.size
    e = int(ends[-1]) if count else start
    if final:
        return count, None, None
    if count and e > n:                    # the last record runs past the window
        count, resume = count - 1, (int(ends[-2]) if count > 1 else start)
    elif e + min_header > n:               # the next header is cut by the window
        resume = e
    else:
        return count, None, "damaged"
    if resume == start:
        return (count, start, None) if n < MAX_WINDOW_FOR_ONE_RECORD else (count, None, "too long")
    return count, resume, None
