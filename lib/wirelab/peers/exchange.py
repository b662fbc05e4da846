"""A socket of the kit's playing a peer, and what is said when the other side does not play along.

``Exchange`` is one UDP socket: it sends, and waits (never past the stage's
deadline, ``stage.left()``) for the packet a play expects next, keeping
everything it received (``seen``: time, bytes, address) for the reason and for
whoever measures. A play raises ``Failed`` when the program under test did
something the specification does not allow, or did not do what it must for the
play to go on, in plain words; ``TimedOut`` when it did not finish in time.
The grader turns these into a test's ``fail``/``timeout`` (``grade.context``
names them so); the lab records them as "not as specified", with the words.
"""
from __future__ import annotations

import select
import socket
import time

from .packets import parse, show

__all__ = ["Exchange", "Failed", "TimedOut"]


class Failed(Exception):
    """The program under test did something the specification does not allow; the message says what."""


class TimedOut(Failed):
    """The program under test did not finish what it had to within the deadline."""


class Exchange:
    """A UDP socket of the kit's playing a peer; ``seen`` keeps (time, raw, address) of all it received."""

    def __init__(self, stage, sock: socket.socket, peer: tuple[str, int] | None = None):
        self.stage, self.sock, self.peer = stage, sock, peer
        self.seen: list[tuple[float, bytes, tuple]] = []

    def send(self, raw: bytes, to: tuple[str, int] | None = None) -> float:
        self.sock.sendto(raw, to or self.peer)
        return time.monotonic()

    def receive(self, timeout: float) -> tuple[bytes, tuple] | None:
        """The next datagram within ``timeout`` (and the deadline), or None."""
        ready, _, _ = select.select([self.sock], [], [], max(min(timeout, self.stage.left()), 0.0))
        if not ready:
            return None
        raw, addr = self.sock.recvfrom(65535)
        self.seen.append((time.monotonic(), raw, addr))
        return raw, addr

    def expect(self, what: str, predicate, timeout: float, *, after: str = "") -> tuple[bytes, tuple]:
        """Wait for a datagram ``predicate(raw)`` accepts; ``Failed`` naming what came instead."""
        end = time.monotonic() + timeout
        others = []
        while (left := end - time.monotonic()) > 0 and self.stage.left() > 0:
            got = self.receive(left)
            if got is None:
                break
            if predicate(got[0]):
                return got
            others.append(show(got[0]))
        came = f"got {', '.join(others[:3])}" if others else "got nothing"
        raise Failed(f"expected {what}{after}, {came} within {timeout:g} s")

    def quiet(self, seconds: float, forbidden, what: str) -> None:
        """For ``seconds``: nothing ``forbidden(raw)`` accepts may arrive (``Failed`` if it does)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            got = self.receive(left)
            if got is None:
                return
            if forbidden(got[0]):
                raise Failed(f"{what}: got {show(got[0])}")

    def kinds(self) -> list[str]:
        """The kinds of packet received, in order (junk as 'junk')."""
        return [packet.kind if (packet := parse(raw)) else "junk" for _, raw, _ in self.seen]

    def close(self) -> None:
        self.sock.close()
