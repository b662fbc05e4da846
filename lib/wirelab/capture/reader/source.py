"""The bytes of a capture, one window at a time, in a buffer of bounded size.

A file is seen through a memory map of one window (128 MiB by default) at a
time; a file object that is not a plain file is read in windows into one
reused buffer. A window starts where the reader asked (the first record the
last window could not finish), so memory stays the same for a file of any
size. Bytes already in memory are one window. A record longer than a window
is read in a window grown to hold it (up to 17 MiB; longer is damage).
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path
import stat

import numpy as np

from ...errors import CaptureError
from ..._plain import is_file_object

__all__ = ["Windows", "WINDOW_BYTES"]

WINDOW_BYTES = 128 << 20


def _open(source):
    """(file object to read, whether we opened it, the bytes if already in memory)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return None, False, memoryview(source).cast("B")
    if is_file_object(source):
        return source, False, None
    path = Path(os.fspath(source))
    try:
        return open(path, "rb"), True, None
    except FileNotFoundError:
        raise CaptureError(f"no capture file at {path}", "check the path (captures/ has examples)") from None
    except IsADirectoryError:
        raise CaptureError(f"{path} is a directory", "give a .pcap or .pcapng file") from None
    except PermissionError:
        raise CaptureError(f"no permission to read {path}", "check the file's owner and mode") from None


def _map(fileno: int, length: int, offset: int) -> mmap.mmap:
    """A read-only map of the file; on Linux its pages are mapped at once (MAP_POPULATE), cheaper
    than a fault per page when every page holds a record header."""
    if hasattr(mmap, "MAP_POPULATE"):
        return mmap.mmap(fileno, length, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE, prot=mmap.PROT_READ,
                         offset=offset)
    return mmap.mmap(fileno, length, access=mmap.ACCESS_READ, offset=offset)


class Windows:
    """Iterate with ``for base, data, final in windows``; after each window call
    ``resume_at(offset)`` with the file offset the next window must start at."""

    def __init__(self, source, size: int = WINDOW_BYTES, first: int | None = None):
        self.file, self._close, self._memory = _open(source)
        self.size = max(int(size), 1024)
        #: a mapped file's first window, if smaller (``loader.FIRST_WINDOW``)
        self.first = None if first is None else max(int(first), 1024)
        self._buffer = None
        self._resume: int | None = 0

    def head(self, count: int = 64) -> bytes:
        """The file's first ``count`` bytes (to detect the format)."""
        if self._memory is not None:
            return bytes(self._memory[:count])
        first = self._read_some(count)
        if not isinstance(first, (bytes, bytearray)):
            raise CaptureError("the file object gives text, not bytes", "open it with mode 'rb'")
        self._pending = bytes(first)
        return self._pending

    def _read_some(self, count: int):
        try:
            return self.file.read(count)
        except OSError as err:
            raise CaptureError(f"cannot read the capture: {err}", "check the file and the disk") from None

    def size_after(self, offset: int) -> int:
        """Bytes of the file after ``offset`` (0 when unknown: a stream)."""
        if self._memory is not None:
            return max(len(self._memory) - offset, 0)
        size = self._file_size()
        return max(size - offset, 0) if size is not None else 0

    def resume_at(self, offset: int | None) -> None:
        self._resume = offset

    def __iter__(self):
        if self._memory is not None:
            yield 0, self._memory, True
            return
        size = self._file_size()
        yield from (self._mapped(size) if size is not None else self._windows())

    def _file_size(self) -> int | None:
        """The size of a plain file we can map from its start; None for pipes, sockets, BytesIO
        and a file object already read into (it is read on from where it is)."""
        try:
            st = os.fstat(self.file.fileno())
            if not self._close and self.file.tell() != len(getattr(self, "_pending", b"")):
                return None
        except (AttributeError, OSError, ValueError):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _mapped(self, size: int):
        """Windows as memory maps of the file itself: no copy, nothing to allocate."""
        base, span = 0, self.first or self.size
        while base < size or base == 0:
            first = base - base % mmap.ALLOCATIONGRANULARITY
            length = min(size - first, span + (base - first))
            if length <= 0:
                yield base, memoryview(b""), True
                return
            try:
                m = _map(self.file.fileno(), length, first)
            except (OSError, ValueError) as err:
                raise CaptureError(f"cannot read the capture: {err}", "check the file and the disk") from None
            final = first + length >= size
            view = memoryview(m)[base - first:]
            del m
            yield base, view, final             # the map goes when its last view does
            del view
            resume = self._resume
            if final or resume is None or resume < base or resume > first + length:
                return
            if resume == base:                     # one record longer than the window: a bigger one
                self.size = max(self.size, 2 * span)
            base, span = resume, self.size

    def _windows(self):
        buf = self._buffer = mmap.mmap(-1, self.size)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            buf.madvise(mmap.MADV_HUGEPAGE)     # fewer TLB misses when jumping between records
        arr = np.frombuffer(buf, dtype=np.uint8)
        view = memoryview(buf)
        pending = getattr(self, "_pending", b"")
        arr[:len(pending)] = np.frombuffer(pending, dtype=np.uint8)
        base, filled, eof = 0, len(pending), False
        while True:
            while filled < self.size and not eof:          # fill the window
                got = self._read_into(view[filled:])
                eof = got == 0
                filled += got
            yield base, view[:filled], eof
            resume = self._resume
            if resume is None or resume < base or resume > base + filled:
                return
            keep = base + filled - resume                    # bytes of the unfinished record
            if resume > base:
                arr[:keep] = arr[resume - base:filled].copy() if keep else arr[:0]
            elif not eof:                          # one record longer than the window: a bigger one
                bigger = mmap.mmap(-1, 2 * self.size)
                np.frombuffer(bigger, dtype=np.uint8)[:filled] = arr[:filled]
                self.size, buf = 2 * self.size, bigger
                arr, view = np.frombuffer(buf, dtype=np.uint8), memoryview(buf)
            base, filled = resume, keep
            if eof and keep == 0:
                return

    def _read_into(self, view) -> int:
        try:
            if hasattr(self.file, "readinto"):
                return self.file.readinto(view) or 0
            data = self.file.read(len(view))
        except OSError as err:
            raise CaptureError(f"cannot read the capture: {err}", "check the file and the disk") from None
        if not isinstance(data, (bytes, bytearray)):
            raise CaptureError("the file object gives text, not bytes", "open it with mode 'rb'")
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if getattr(self, "_close", False) and self.file is not None:
            self.file.close()
            self.file = None

    def __enter__(self) -> "Windows":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()
