"""What one end of a transfer has done so far, reported every interval while it runs.

    progress = Progress("sender", emit=datagram_sink("/tmp/wl-ev-x/events"))
    progress.watch(sock)             # TCP: the kernel's own view (``tcp_info``) in each record
    progress.start()
    ...                              # the program counts: progress.bytes += n (or progress.count
                                     # = a function returning its own count, read each interval)
    records = progress.stop()        # a last record at the end; every record, in order

Each record is one JSON-ready dict::

    {"event": "interval", "source": "sender", "seq": 3, "t": 1718000000.4,
     "bytes": 375000, "bps": 9.9e6, "cwnd_segments": 31, "srtt_s": 0.0431, ...}

``t`` is this host's clock (``time.time()``), ``bytes`` what the program counted so far
(the sender: handed to the kernel; the receiver: delivered), ``bps`` the rate over the
interval that ends at ``t``. A record is taken by a thread of its own every
``interval_s`` (0.1 s: the program's loop is never asked to stop and report; during
the first ``FIRST_S`` every ``FIRST_INTERVAL_S``, since slow start is over within a
few round trips), and
handed to ``emit``: a live reader in another process gets it at once through a Unix
datagram socket (``datagram_sink``, which drops a record rather than ever make the
sender wait), and the records are kept to be returned at the end as well, so none is
lost when the live path is missing (another host) or full.
"""
from __future__ import annotations

import json
import socket
import threading
import time

from . import tcp_info

__all__ = ["Progress", "datagram_sink", "INTERVAL_S"]

#: Seconds between two records (ten a second: a live plot moves, a run's stream stays small) ...
INTERVAL_S = 0.1
#: ... but closer at first: slow start doubles the window every round trip and is over within a
#: few of them (10 → 80 segments in 3 round trips of 40 ms), so the first half second is
#: recorded every 20 ms.
FIRST_S, FIRST_INTERVAL_S = 0.5, 0.02


class Progress:
    """Interval records of one end (see the module docstring)."""

    def __init__(self, source: str, *, emit=None, interval_s: float = INTERVAL_S, tags: dict | None = None):
        self.source, self.emit, self.interval_s = source, emit, interval_s
        self.tags = dict(tags or {})
        self.bytes = 0                   # the program adds to it; read by the reporting thread
        self.count = None                # ... or gives a function that says how many so far
        self.sock: socket.socket | None = None
        self.records: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = (None, 0)           # (t, bytes) of the record before

    def watch(self, sock: socket.socket) -> None:
        """A TCP socket whose TCP_INFO goes into every record from now on."""
        self.sock = sock if sock.type == socket.SOCK_STREAM else None

    def start(self) -> "Progress":
        self._last = (time.time(), self.bytes)
        self._thread = threading.Thread(target=self._loop, name=f"wirelab-progress-{self.source}", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        began = time.monotonic()
        while not self._stop.wait(FIRST_INTERVAL_S if time.monotonic() - began < FIRST_S
                                  else self.interval_s):  # a timer: nobody is waited for
            self.record()

    def record(self, event: str = "interval") -> dict:
        """Take one record now (the thread does, every interval), keep it and emit it."""
        now, count = time.time(), self.count() if self.count is not None else self.bytes
        then, before = self._last
        self._last = (now, count)
        record = {"event": event, "source": self.source, "seq": len(self.records), "t": now, "bytes": count,
                  "bps": 8.0 * (count - before) / (now - then) if then is not None and now > then else None,
                  **self.tags}
        if self.sock is not None:
            record.update(tcp_info.summary(tcp_info.read(self.sock)))
        self.records.append(record)
        if self.emit is not None:
            self.emit(record)
        return record

    def event(self, event: str, **fields) -> dict:
        """One record of something that happened now (an echo round answered: ``rtt``)."""
        record = {"event": event, "source": self.source, "seq": len(self.records), "t": time.time(),
                  **self.tags, **fields}
        self.records.append(record)
        if self.emit is not None:
            self.emit(record)
        return record

    def stop(self) -> list[dict]:
        """Stop the thread, take the last record (the end of the transfer); every record."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
            self.record()
        return list(self.records)


def datagram_sink(path: str | None):
    """A function that sends each record as one datagram to the Unix socket at ``path``
    (a live reader: ``wirelab.experiment.events``), or None when there is no such reader.
    It never blocks: a record that does not fit the socket's queue is left out (the
    records come back with the Result anyway)."""
    if not path:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)

    def send(record: dict) -> bool:
        try:
            sock.sendto(json.dumps(record).encode(), path)
            return True
        except OSError:                  # full, or the reader is gone: never stall the program
            return False
    send.close = sock.close
    return send
