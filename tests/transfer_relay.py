"""A small lossy UDP relay for tests: drops, duplicates and reorders datagrams in
each direction with a seeded random generator (reproducible). Not a link
emulator: wirelab.link has the real one."""
from __future__ import annotations

import random
import select
import socket
import threading
import time


class LossyRelay:
    """client ⇄ relay ⇄ server on loopback. Use as a context manager; ``port`` is
    where clients send."""

    def __init__(self, server_port: int, *, drop: float = 0.2, duplicate: float = 0.05,
                 reorder: float = 0.05, hold_s: float = 0.02, seed: int = 1):
        self.down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)   # faces the client
        self.down.bind(("127.0.0.1", 0))
        self.up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)     # faces the server
        self.up.bind(("127.0.0.1", 0))
        self.up.connect(("127.0.0.1", server_port))
        self.port = self.down.getsockname()[1]
        self.drop, self.duplicate, self.reorder, self.hold_s = drop, duplicate, reorder, hold_s
        self.rng = [random.Random(seed), random.Random(seed + 1)]      # 0: to server, 1: to client
        self.held: list[tuple[bytes, float] | None] = [None, None]
        self.client = None
        self.stats = {"forwarded": 0, "dropped": 0, "duplicated": 0, "reordered": 0}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="lossy-relay")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(2)
        self.down.close()
        self.up.close()

    def _send(self, direction: int, data: bytes) -> None:
        try:
            if direction == 0:
                self.up.send(data)
            elif self.client:
                self.down.sendto(data, self.client)
            self.stats["forwarded"] += 1
        except OSError:          # the server or client is gone: a real link drops too
            pass

    def _forward(self, direction: int, data: bytes, now: float) -> None:
        rng = self.rng[direction]
        if rng.random() < self.drop:
            self.stats["dropped"] += 1
            return
        copies = 2 if rng.random() < self.duplicate else 1
        self.stats["duplicated"] += copies - 1
        if self.held[direction] is None and rng.random() < self.reorder:
            self.held[direction] = (data, now + self.hold_s)     # let the next one overtake it
            self.stats["reordered"] += 1
            return
        for _ in range(copies):
            self._send(direction, data)
        self._release(direction)

    def _release(self, direction: int) -> None:
        if self.held[direction] is not None:
            self._send(direction, self.held[direction][0])
            self.held[direction] = None

    def _loop(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            for direction, held in enumerate(self.held):
                if held is not None and held[1] <= now:
                    self._release(direction)
            deadlines = [h[1] - now for h in self.held if h is not None]
            ready, _, _ = select.select([self.down, self.up], [], [], max(0.0, min(deadlines + [0.05])))
            now = time.monotonic()
            for sock in ready:
                try:
                    data, addr = sock.recvfrom(65535)
                except OSError:
                    continue
                if sock is self.down:
                    self.client = addr
                    self._forward(0, data, now)
                else:
                    self._forward(1, data, now)
