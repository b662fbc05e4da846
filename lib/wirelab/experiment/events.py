"""One event stream per run: what happens while it runs, JSON lines saved beside its record.

    runs/<run_id>.events.jsonl          one JSON object a line, in the order they arrived

    {"event": "start", "t": 1718000000.0, "run_id": ..., "setting": {...}, "predicted": {...}}
    {"event": "interval", "source": "sender", "t": ..., "bytes": ..., "bps": ..., "cwnd_segments": ...,
     "srtt_s": ..., "retransmissions": ..., "pacing_rate_bps": ...}      (TCP: the kernel's view)
    {"event": "interval", "source": "receiver", "t": ..., "bytes": ..., "bps": ...}
    {"event": "queue", "source": "link", "t": ..., "backlog_bytes": ..., "dropped": ...}
    {"event": "rtt", "source": "probe", "t": ..., "rtt_s": ...}           (a probe flow's echo rounds)
    {"event": "end", "t": ..., "status": "ok", "error": null}

``t`` is the host clock (``time.time()``; both hosts of a namespaces, userspace or
loopback link read the same one). Who writes what:

* the runner: ``start`` (the setting and the model's prediction, before the first
  byte), the link's bottleneck queue every ``QUEUE_INTERVAL_S`` (``link.queues``),
  ``end`` (the run's status);
* the engine: its programs' interval records (``transfer.progress``): the receiver is a
  thread of this process and emits here directly; the sender is a process on host
  ``a`` and sends its records as datagrams to ``address``, a Unix socket this stream
  reads (it reaches into the namespaces, which share the file system); iperf3's
  interval lines (``iperf3``).

Records a program also returns with its Result (``absorb``) are added only if the live
path missed them, so the stream is complete whatever reached it live. Listeners
(``listeners=[f]``: the live plot) get every event in the order of the file, from
the thread that emitted it: they must be quick (store it, draw elsewhere).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

from .._plain import plain

__all__ = ["EventStream", "read_events", "events_path", "QUEUE_INTERVAL_S", "EVENTS_SUFFIX"]

#: How often the runner samples the bottleneck queue (tc -s on the kernel backend).
QUEUE_INTERVAL_S = 0.1
#: The socket reader looks up this often (a bound on every wait: it ends at the stop datagram).
READ_TIMEOUT_S = 1.0
EVENTS_SUFFIX = ".events.jsonl"
_STOP = b"\0"


def events_path(folder: str | Path, run_id: str) -> Path:
    """Where a results folder keeps a run's event stream."""
    return Path(folder) / "runs" / f"{run_id}{EVENTS_SUFFIX}"


def _clean(value):
    """JSON has no NaN: a missing number is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return plain(value)


class EventStream:
    """The event stream of one run (see the module docstring). A context manager: leaving it
    closes it (its samplers stop, an ``end`` event is written if none was)."""

    def __init__(self, path: str | Path | None, run_id: str, *, listeners=()):
        self.path, self.run_id = (Path(path) if path is not None else None), run_id
        self.listeners = list(listeners)
        self.events: list[dict] = []         # every event so far, as written (a run's are a few hundred)
        self._lock = threading.Lock()
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        self._seen: set = set()
        self._samplers: list[tuple[threading.Thread, threading.Event]] = []
        self._socket = self._reader = self._folder = None
        self._opening = threading.Lock()     # flows of one run ask for ``address`` at once, each in its thread
        self._ended = self._closing = False

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------
    def emit(self, event: dict) -> dict:
        """Add one event (``t`` is now if it has none), to the file and to every listener."""
        event = _clean({"t": time.time(), **event})
        key = _key(event)
        with self._lock:
            if key is not None:
                if key in self._seen:
                    return event
                self._seen.add(key)
            if self._file is not None:
                self._file.write(json.dumps(event) + "\n")
                self._file.flush()           # a Ctrl-C or a crash keeps every event so far
            self.events.append(event)
            for listener in self.listeners:
                listener(event)
        return event

    def absorb(self, records) -> int:
        """Records a program returned at its end: those the live path missed are added.
        Returns how many were new."""
        before = len(self.events)
        for record in records or []:
            if isinstance(record, dict):
                self.emit(record)
        return len(self.events) - before

    def sample(self, source: str, read, *, interval_s: float = QUEUE_INTERVAL_S, event: str = "queue") -> None:
        """Call ``read()`` now and every ``interval_s`` until the stream closes; each dict it
        returns becomes an event (None: nothing to say this time). A ``read`` that raises is
        recorded once (``sampler_error``) and sampled no more."""
        stop = threading.Event()

        def loop():
            while True:
                try:
                    found = read()
                except Exception as err:        # noqa: BLE001 - the run goes on without it
                    self.emit({"event": "sampler_error", "source": source, "error": f"{type(err).__name__}: {err}"})
                    return
                if found:
                    self.emit({"event": event, "source": source, **found})
                if stop.wait(interval_s):       # a timer: nobody is waited for
                    return
        thread = threading.Thread(target=loop, name=f"wirelab-sample-{source}", daemon=True)
        self._samplers.append((thread, stop))
        thread.start()

    @property
    def address(self) -> str:
        """A Unix datagram socket's path that programs in other processes (and namespaces) send
        their records to (``transfer.progress.datagram_sink``); opened on first use."""
        with self._opening:
            if self._socket is None:
                folder = tempfile.mkdtemp(prefix="wl-ev-")       # short: a socket path has 108 bytes
                os.chmod(folder, 0o755)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                path = os.path.join(folder, "events")
                sock.bind(path)
                os.chmod(path, 0o777)               # a sender may run as another user (a sandbox)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
                self._folder, self._socket = folder, sock
                self._reader = threading.Thread(target=self._read, name="wirelab-events", daemon=True)
                self._reader.start()
            return os.path.join(self._folder, "events")

    def _read(self) -> None:
        self._socket.settimeout(READ_TIMEOUT_S)
        while True:
            try:
                data = self._socket.recv(65536)  # a record, or the stop datagram ``close`` sends
            except socket.timeout:
                if self._closing:               # closed without its stop datagram arriving
                    return
                continue
            except OSError:
                return
            if data == _STOP:
                return
            try:
                record = json.loads(data)
            except ValueError:
                continue
            if isinstance(record, dict):
                self.emit(record)

    # -- ending -------------------------------------------------------------------------
    def stop_sampling(self) -> None:
        """Stop every ``sample`` now (the link they read is about to go)."""
        for _, stop in self._samplers:
            stop.set()
        for thread, _ in self._samplers:
            thread.join(timeout=5.0)
        self._samplers.clear()

    def _wake_reader(self) -> None:
        """The stop datagram, queued behind what programs already sent. A socket the datagram
        cannot reach (seen once in CI: two flows opened the socket at once, before ``_opening``, and
        the one left bound was closed) must not fail the run: the reader then ends within
        ``READ_TIMEOUT_S`` by itself, what programs sent comes back with their Result (``absorb``),
        and the stream says so."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as waker:
                waker.sendto(_STOP, os.path.join(self._folder, "events"))
        except OSError as err:
            self.emit({"event": "events_socket_error", "error": f"{type(err).__name__}: {err}",
                       "note": "live records may be missing; those a program returned with its Result are absorbed"})

    def close(self, **end) -> None:
        """Stop the samplers and the reader (after what was already sent), write ``end`` (with
        ``end``'s fields: status, error) unless written, and close the file."""
        self.stop_sampling()
        self._closing = True
        if self._socket is not None:
            self._wake_reader()
            self._reader.join(timeout=READ_TIMEOUT_S + 4.0)
            self._socket.close()
            shutil.rmtree(self._folder, ignore_errors=True)
            self._socket = None
        if not self._ended and (end or self._file is not None):
            self._ended = True
            self.emit({"event": "end", "run_id": self.run_id, **end})
        if self._file is not None:
            with self._lock:
                self._file.close()
                self._file = None


def _key(event: dict):
    """What makes a program's record the same one when it comes twice (live, and again with
    its Result): its source, flow, stream and number. None: an event that is always new."""
    if event.get("seq") is None:
        return None
    return (event.get("source"), event.get("flow"), event.get("stream"), event.get("seq"))


def read_events(path: str | Path) -> list[dict]:
    """A saved event stream (a file, or a results folder and run id via ``events_path``),
    every complete line (a run stopped mid-line loses only that line)."""
    out = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
