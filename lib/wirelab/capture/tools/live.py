"""Live capture with dumpcap, as a context manager that knows when capture really runs.

    with LiveCapture("lo", "run.pcapng", capture_filter="tcp port 5201", snaplen=128) as cap:
        ...                                  # traffic here is captured
    print(cap.stats)                         # dumpcap's own received/dropped counts
    df = cap.read()

Start-up is awaited, never slept through: dumpcap's stderr is read in a
thread until it says "Capturing on" and the file has its header; with
``probe`` (a function that sends one packet matching the filter) we also
wait until dumpcap counts a packet, which proves the filter is in place
("Capturing on" alone is not proof: captures/tcp-10mbit.pcapng missed the
first 7 ms of its transfer after dumpcap had printed it).
Stop first lets dumpcap read what the kernel still buffers (another probe,
or until its packet count stops moving), then SIGINT; dumpcap then prints "Packets received/dropped on interface
...", which becomes ``stats``. ``prefix`` runs dumpcap through another
command, e.g. ``["ip", "netns", "exec", "wl-host-a"]`` to capture inside a
testbed host. The dumpcap argv is built by ``dumpcap_argv`` (pure, tested).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import CaptureError, MissingToolError, NeedsRootError, UsageError

__all__ = ["LiveCapture", "dumpcap_argv", "parse_dumpcap_stats", "InterfaceStats"]

_STATS = re.compile(r"Packets received/dropped on interface '([^']*)': (\d+)/(\d+)"
                    r"(?: \(pcap:(\d+)/dumpcap:(\d+)/flushed:(\d+)/ps_ifdrop:(\d+)\))?")
_COUNT = re.compile(r"Packets(?: captured)?: (\d+)")


@dataclass(frozen=True)
class InterfaceStats:
    """dumpcap's end-of-capture line for one interface."""
    interface: str
    received: int
    dropped: int             # pcap + dumpcap + flushed drops, as dumpcap sums them
    kernel_dropped: int = 0  # pcap: dropped by the kernel buffer
    if_dropped: int = 0      # ps_ifdrop: dropped by the interface/driver


def parse_dumpcap_stats(text: str) -> list[InterfaceStats]:
    """The "Packets received/dropped on interface ..." lines of dumpcap's stderr."""
    out = []
    for m in _STATS.finditer(text):
        name, rec, drop, pcap, _dc, _fl, ifdrop = m.groups()
        out.append(InterfaceStats(name, int(rec), int(drop), int(pcap or 0), int(ifdrop or 0)))
    return out


def dumpcap_argv(interface: str | list[str], path: str | os.PathLike, *, capture_filter: str | None = None,
                 snaplen: int | None = None, duration: float | None = None, filesize_kb: int | None = None,
                 packets: int | None = None, buffer_mb: int | None = None,
                 prefix: list[str] | tuple[str, ...] = (), dumpcap: str = "dumpcap") -> list[str]:
    """The argv that captures on ``interface`` into pcapng ``path`` (dumpcap(1) options)."""
    interfaces = [interface] if isinstance(interface, str) else list(interface)
    if not interfaces:
        raise UsageError("no interface to capture on", "e.g. 'lo' or 'eth0'")
    argv = [*prefix, dumpcap]
    for name in interfaces:
        argv += ["-i", name]
        if capture_filter:
            argv += ["-f", capture_filter]
        if snaplen:
            argv += ["-s", str(int(snaplen))]
        if buffer_mb:
            argv += ["-B", str(int(buffer_mb))]
    if duration:
        argv += ["-a", f"duration:{max(int(round(duration)), 1)}"]
    if filesize_kb:
        argv += ["-a", f"filesize:{int(filesize_kb)}"]
    if packets:
        argv += ["-c", str(int(packets))]
    return argv + ["-w", str(path)]


class LiveCapture:
    """A running dumpcap; see the module docstring. All options are keyword-only."""

    def __init__(self, interface: str | list[str] = "lo", path: str | os.PathLike | None = None, *,
                 capture_filter: str | None = None, snaplen: int | None = None,
                 duration: float | None = None, filesize_kb: int | None = None, packets: int | None = None,
                 buffer_mb: int | None = None, prefix: list[str] | tuple[str, ...] = (),
                 probe: Callable[[], object] | None = None, ready_timeout: float = 10.0,
                 stop_timeout: float = 10.0):
        dumpcap = shutil.which("dumpcap") or ("/usr/bin/dumpcap" if Path("/usr/bin/dumpcap").exists() else None)
        if not dumpcap:
            raise MissingToolError("dumpcap", "tshark")
        if path is None:
            path = Path(tempfile.mkdtemp(prefix="wirelab-")) / "capture.pcapng"
        self.path = Path(path)
        self.argv = dumpcap_argv(interface, self.path, capture_filter=capture_filter, snaplen=snaplen,
                                 duration=duration, filesize_kb=filesize_kb, packets=packets,
                                 buffer_mb=buffer_mb, prefix=prefix, dumpcap=dumpcap)
        self.probe = probe
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.stats: list[InterfaceStats] = []
        self.packets = 0
        self._proc: subprocess.Popen | None = None
        self._text = ""
        self._eof = False
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    # -- stderr reader -------------------------------------------------------
    def _read_stderr(self):
        stream = self._proc.stderr
        while True:
            chunk = stream.read1(4096) if hasattr(stream, "read1") else stream.read(1)
            if not chunk:
                break
            with self._changed:
                self._text += chunk.decode("utf-8", "replace")
                counts = _COUNT.findall(self._text[-200:])
                if counts:
                    self.packets = max(self.packets, int(counts[-1]))
                self._changed.notify_all()
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    def _wait_for(self, condition: Callable[[], bool], timeout: float, what: str):
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                if self._proc.poll() is not None and not condition():
                    self._failed()
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 0.05))
            else:
                return
        self.stop(drain=False)   # outside the lock: stop() waits on it too
        raise CaptureError(f"dumpcap did not {what} within {timeout:g} s",
                           f"check the interface and filter; dumpcap said: {self._tail()}")

    def _tail(self) -> str:
        lines = [ln.strip() for ln in self._text.replace("\r", "\n").splitlines() if ln.strip()]
        return " / ".join(lines[-3:]) or "nothing"

    def _failed(self):
        """dumpcap exited: read the rest of what it said (called holding the lock), then explain."""
        deadline = time.monotonic() + 2.0
        while not self._eof and time.monotonic() < deadline:
            self._changed.wait(0.05)
        text = self._text.lower()
        if "permission" in text or "operation not permitted" in text:
            raise NeedsRootError("packet capture", "run as root, or let your user capture: "
                                 "sudo dpkg-reconfigure wireshark-common && sudo usermod -aG wireshark $USER")
        raise CaptureError(f"dumpcap stopped (exit {self._proc.returncode})", self._tail())

    # -- context manager -----------------------------------------------------
    def start(self) -> "LiveCapture":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)       # "the file has its header" must mean this run's file
        self._proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        threading.Thread(target=self._read_stderr, name="wirelab-dumpcap", daemon=True).start()
        try:
            self._wait_for(lambda: "Capturing on" in self._text and self.path.exists()
                           and self.path.stat().st_size > 0, self.ready_timeout, "start capturing")
            if self.probe is not None:
                deadline = time.monotonic() + self.ready_timeout
                while self.packets == 0 and time.monotonic() < deadline and self._proc.poll() is None:
                    self.probe()
                    self._probe_wait(0.2)
                if self.packets == 0:
                    self.stop(drain=False)
                    raise CaptureError("dumpcap saw none of the probe packets",
                                       "the probe must send a packet that matches the capture filter")
        except BaseException:
            self.stop(drain=False)
            raise
        return self

    def _probe_wait(self, timeout: float):
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.packets == 0 and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())

    def _drain(self, quiet: float = 0.6, limit: float = 3.0) -> None:
        """Let dumpcap read what the kernel still holds (SIGINT drops it): with a probe,
        until dumpcap counts one more packet; otherwise until its count stops moving."""
        deadline = time.monotonic() + limit
        with self._changed:
            start = last = self.packets
            quiet_since = time.monotonic()
            while time.monotonic() < deadline and self._proc.poll() is None:
                if self.probe is not None:
                    if self.packets > start:
                        return
                    self._changed.release()
                    try:
                        self.probe()
                    finally:
                        self._changed.acquire()
                    self._changed.wait(0.2)
                    continue
                if self.packets != last:
                    last, quiet_since = self.packets, time.monotonic()
                elif time.monotonic() - quiet_since >= quiet:
                    return
                self._changed.wait(0.05)

    def stop(self, *, drain: bool = True) -> list[InterfaceStats]:
        """Stop dumpcap (SIGINT, then SIGKILL after ``stop_timeout``) and read its statistics;
        ``drain=False`` skips letting it read what the kernel still buffers."""
        proc = self._proc
        if proc is None:
            return self.stats
        if proc.poll() is None and drain:
            self._drain()
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGINT)
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(self.stop_timeout)
            except ProcessLookupError:
                pass
        with self._changed:        # let the reader finish the last lines
            deadline = time.monotonic() + 2.0
            while not self._eof and time.monotonic() < deadline:
                self._changed.wait(0.05)
        self.stats = parse_dumpcap_stats(self._text)
        if self.stats:
            self.packets = max(self.packets, sum(s.received - s.dropped for s in self.stats))
        return self.stats

    @property
    def running(self) -> bool:
        """True while dumpcap runs (it stops by itself at a duration/filesize/packets bound)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def dropped(self) -> int:
        return sum(s.dropped + s.if_dropped for s in self.stats)

    def wait(self, timeout: float) -> None:
        """Wait for dumpcap to stop by itself (duration/filesize/packets bound reached)."""
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise CaptureError(f"dumpcap still running after {timeout:g} s",
                               "give it a duration/filesize bound or call stop()") from None

    def read(self):
        """The capture as a DataFrame (``read_capture``)."""
        # start-up: numpy only when read() runs
        from ..reader.loader import read_capture
        return read_capture(self.path)

    def __enter__(self) -> "LiveCapture":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
