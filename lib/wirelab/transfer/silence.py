"""Why an answer did not come in time: a peer that stalled, or one still receiving.

A sender that waits for an answer (RCVD, a REPORT, an ECHO reply) on the
connection it sent its data on waits behind what its own socket still holds:
the answer comes only after the peer has read every byte queued before it.
Over a loss-limited link a large send buffer takes seconds to drain, and the
peer, busy all that time, is not stalled. The kernel knows which it is: the
bytes the peer acknowledged (``tcpi_bytes_acked``, RFC 4898's
``ThruOctetsAcked``) keep growing while it receives, and the send queue
(``SIOCOUTQ``: bytes unacknowledged or unsent) says how much is left.

    before = snapshot(sock)          # when the wait starts
    ...                              # recv times out
    raise timeout_error(waited_s, before, snapshot(sock))

Standard library only: this module is read by students.
"""
from __future__ import annotations

import fcntl
import select
import socket
import struct
import time
from typing import NamedTuple

from ..errors import TransferError
from . import tcp_info

__all__ = ["Snapshot", "snapshot", "queued_bytes", "timeout_error", "receiving", "await_answer", "DRAIN_SLACK"]

#: A wait behind this end's own queue may last this many times the drain its rate predicts.
DRAIN_SLACK = 2.0

#: ioctl(SIOCOUTQ) = TIOCOUTQ on Linux: bytes in a TCP socket's send queue, sent-unacked or unsent
#: (tcp(7), "SIOCOUTQ").
SIOCOUTQ = 0x5411


class Snapshot(NamedTuple):
    """One look at this end's socket: when (monotonic s), bytes the peer acknowledged, bytes queued."""
    at_s: float
    acked_bytes: int | None
    queued_bytes: int | None


def queued_bytes(sock: socket.socket) -> int | None:
    """Bytes the socket still holds for the peer (unacknowledged or unsent), or None."""
    try:
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), SIOCOUTQ, b"\0" * 4))[0]
    except (OSError, ValueError):
        return None


def snapshot(sock: socket.socket) -> Snapshot:
    """What the kernel says about the peer's progress now (fields None where it cannot say)."""
    info = tcp_info.read(sock) or {}
    return Snapshot(time.monotonic(), info.get("bytes_acked"), queued_bytes(sock))


def receiving(before: Snapshot | None, after: Snapshot | None) -> bool:
    """Did the peer acknowledge bytes between the two looks (it was receiving, not stalled)?"""
    return (before is not None and after is not None and before.acked_bytes is not None
            and after.acked_bytes is not None and after.acked_bytes > before.acked_bytes)


def timeout_error(waited_s: float, before: Snapshot | None, after: Snapshot | None, *,
                  waiting_for: str | None = None) -> TransferError:
    """The error of a wait that timed out, saying which of the two it was.

    Nothing acknowledged: the peer stalled (or the path is down). Bytes acknowledged: the peer
    was still receiving what this end had queued, and the answer waits behind it: how much, at
    what rate, and how long the rest would take at that rate."""
    what = f" while waiting for {waiting_for}" if waiting_for else ""
    if not receiving(before, after):
        return TransferError(f"timeout: nothing arrived within MAX_WAIT ({waited_s:g} s){what}",
                             "the peer stalled; check it is running")
    span = max(after.at_s - before.at_s, 1e-9)
    acked = after.acked_bytes - before.acked_bytes
    rate = 8.0 * acked / span
    left = after.queued_bytes or 0
    rest = (f"; {left} B are still queued in this end's socket (about {8.0 * left / rate:.1f} s more at "
            "that rate)") if left else ""
    return TransferError(
        f"timeout: still receiving when MAX_WAIT ({waited_s:g} s) passed{what}: the peer acknowledged "
        f"{acked} B in the last {span:.1f} s ({rate / 1e6:.2f} Mbit/s){rest}",
        f"the {waiting_for or 'answer'} waits behind this end's send buffer, which drains at the link's "
        "loss-limited rate: a smaller send buffer (sndbuf) or a larger MAX_WAIT lets it through")


def await_answer(sock: socket.socket, max_wait: float, waiting_for: str) -> float:
    """Wait until the peer's answer can be read. The peer may be silent for MAX_WAIT; while it keeps
    acknowledging what this end queued before the question, the wait goes on, up to MAX_WAIT plus
    ``DRAIN_SLACK`` times the drain of that queue at the rate the first MAX_WAIT measured.
    Returns the seconds waited; raises ``timeout_error``'s TransferError (or says the drain overran)."""
    start = last = snapshot(sock)
    limit = None
    while not select.select([sock], [], [], max_wait)[0]:
        now = snapshot(sock)
        if not receiving(last, now):
            raise timeout_error(max_wait, last, now, waiting_for=waiting_for)
        if limit is None:                 # the drain, predicted from the rate the peer acknowledges at
            rate = (now.acked_bytes - last.acked_bytes) / max(now.at_s - last.at_s, 1e-9)
            limit = start.at_s + max_wait + DRAIN_SLACK * (start.queued_bytes or 0) / rate
        if now.at_s >= limit:
            raise TransferError(
                f"timeout: still receiving {now.at_s - start.at_s:.1f} s after the last write while waiting for "
                f"{waiting_for}, {DRAIN_SLACK:g} × the drain its rate predicted; {now.queued_bytes} B still queued",
                "the link delivers far slower than it did: a smaller send buffer (sndbuf) shortens the drain")
        last = now
    return time.monotonic() - start.at_s
