"""When data reached this host, as the kernel saw it, not when a program got round to reading it.

A receiver kept off the CPU (a loaded lab PC, two cores shared with the emulated link) reads late;
timing its reads would stretch the measured transfer by its own delay. The kernel stamps every
datagram as it arrives (socket(7): ``SO_TIMESTAMPNS``), which is what a capture shows too. What a
UDP socket's full buffer dropped is the host's loss, not the link's: proc(5)'s /proc/net/udp counts
it per socket.

Not for TCP: a TCP read's stamp is its last buffer's, and GRO merges segments into one buffer
stamped at its *first* segment's arrival, up to 64 kB early (measured: a PPCB TCP file's end read
that way put goodput at 1.13 × what tbf lets through); TCP's receivers time their reads.
"""
from __future__ import annotations

import os
import socket
import struct
import time

__all__ = ["SO_TIMESTAMPNS", "ANCILLARY_SPACE", "stamp_arrivals", "arrival_ns", "socket_drops", "DatagramReceiver"]

#: asm-generic/socket.h: the option and its control message (a struct timespec) share the number.
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
ANCILLARY_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)


def stamp_arrivals(sock: socket.socket, on: bool = True) -> bool:
    """Ask the kernel to stamp what ``sock`` receives; False where it cannot."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, int(on))
        return True
    except OSError:
        return False


def arrival_ns(ancillary) -> int | None:
    """The kernel's arrival time (ns, the wall clock time.time_ns() reads) in a recvmsg's control
    messages, or None."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            return seconds * 1_000_000_000 + nanoseconds
    return None


def socket_drops(sock: socket.socket) -> int | None:
    """The datagrams this UDP socket's full receive buffer has dropped in its life (proc(5):
    /proc/net/udp's ``drops``, the socket found by its inode), or None where it cannot be read."""
    inode = str(os.fstat(sock.fileno()).st_ino)
    for table in ("/proc/self/net/udp", "/proc/self/net/udp6"):
        try:
            with open(table) as lines:
                next(lines, None)
                for line in lines:
                    fields = line.split()
                    if len(fields) > 12 and fields[9] == inode:
                        return int(fields[12])
        except (OSError, ValueError):
            continue
    return None


class DatagramReceiver:
    """``receive()`` takes one datagram into ``buf``: (bytes, address, arrival ns), the arrival the
    kernel's where it stamps (else the time of the read). ``drops``: what the socket's full buffer
    dropped since this receiver was made (None where the kernel does not say)."""

    def __init__(self, sock: socket.socket, buf: bytearray):
        self.sock, self.buffers = sock, [buf]
        self.stamped = stamp_arrivals(sock)
        self.start = socket_drops(sock)

    @property
    def drops(self) -> int | None:
        now = socket_drops(self.sock)
        return None if now is None or self.start is None else now - self.start

    def __call__(self) -> tuple[int, object, int]:
        if not self.stamped:
            n, addr = self.sock.recvfrom_into(self.buffers[0])
            return n, addr, time.time_ns()
        n, ancillary, _, addr = self.sock.recvmsg_into(self.buffers, ANCILLARY_SPACE)
        stamp = arrival_ns(ancillary)
        return n, addr, stamp if stamp is not None else time.time_ns()
