"""pyshark inside Jupyter: file and live captures, with no tshark or dumpcap left behind.

pyshark drives tshark (and dumpcap, live) through asyncio. In a notebook the
kernel's event loop is already running, and pyshark's own calls fail with
"This event loop is already running"; so every call here runs pyshark in a
worker thread with a fresh event loop of its own. Its processes are ended
before the call returns (pyshark itself leaves tshark running when a loop
over its packets stops early), and their pipes are closed while the loop
still runs, so nothing complains about a closed loop later.

    pyshark_packets("run.pcapng", display_filter="ppcb.type == 5", fields={"no": "ppcb.packet_no"})
    with PysharkLive("lo", bpf_filter="host 127.0.0.77", probe_host="127.0.0.77") as live:
        run_pair("udpr", 10_000, host="127.0.0.77")
    live.packets

The kit's PPCB dissector is loaded (``ppcb=True``), so PPCB reads as PPCB.
"""
from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
import warnings
from pathlib import Path

import pandas as pd

from ...errors import CaptureError
from .ppcb_dissector import tshark_options
from .wireshark import tshark

__all__ = ["pyshark_packets", "PysharkLive"]


def _custom_parameters(ppcb: bool) -> list[str]:
    return tshark_options() if ppcb else []


def _layers(pkt) -> list:
    """The packet's layers without the empty "DATA" layer tshark adds to every frame when
    any Lua dissector is loaded (a ``_ws.lua.fake`` item): it would hide the real ones."""
    return [layer for layer in pkt.layers if list(layer.field_names) != ["_ws_lua_fake"]]


def _field(layers: list, dotted: str):
    """``"layer.field"`` from the first layer of that name that has the field, else None."""
    name, _, attr = dotted.partition(".")
    for layer in layers:
        if layer.layer_name.lower() == name.lower():
            value = layer.get_field_value(attr)
            if value is not None:
                return value
    return None


def _row(pkt, fields: dict[str, str]) -> dict:
    """One packet as a row: frame number, time, highest layer, length and the requested fields."""
    layers = _layers(pkt)
    row = {"frame": int(pkt.number), "time": float(pkt.sniff_timestamp),
           "highest_layer": layers[-1].layer_name.upper() if layers else pkt.highest_layer,
           "length": int(pkt.length)}
    for name, dotted in fields.items():
        row[name] = _field(layers, dotted)
    return row


def _thread_safe_child_watcher() -> None:
    """pyshark used directly in the main thread installs a SafeChildWatcher bound to that
    thread's loop; after that no other thread can start a subprocess ("child watcher is
    not activated"). Put back the default, thread-safe one (Python < 3.14 has watchers)."""
    if not hasattr(asyncio, "ThreadedChildWatcher"):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        safe = (asyncio.ThreadedChildWatcher, getattr(asyncio, "PidfdChildWatcher", ()))
        if isinstance(asyncio.get_child_watcher(), safe):
            return
        if threading.current_thread() is not threading.main_thread():   # it must detach a signal
            raise CaptureError("pyshark, used directly, left asyncio unable to start tshark from threads",
                               "call this once from the main thread (a notebook cell), or restart the kernel")
        asyncio.set_child_watcher(asyncio.ThreadedChildWatcher())


class _Session:
    """One pyshark capture on its own event loop in this thread; ``close`` ends its processes."""

    def __init__(self, capture_class, *args, **kwargs):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.processes: list = []
        self.cap = capture_class(*args, eventloop=self.loop, **kwargs)
        started = self.cap._created_new_process          # pyshark's one hook where a process is born

        def track(parameters, process, process_name="TShark"):
            self.processes.append(process)
            return started(parameters, process, process_name)
        self.cap._created_new_process = track

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    def close(self):
        """Kill and reap dumpcap/tshark, close their pipes while the loop lives, close the loop.
        Returns an error when one of them had ended by itself with a failure (e.g. tshark
        rejected the display filter), else None."""
        try:
            self.run(self.cap.close_async())
        except Exception:  # noqa: BLE001 - pyshark's verdict; ours, from the exit codes, follows
            pass
        finally:
            for process in self.processes:
                if process.returncode is None:
                    process.kill()
                transport = getattr(process, "_transport", None)
                if transport is not None:
                    transport.close()
            self.cap._running_processes.clear()          # or pyshark's __del__ retries on a closed loop
            self.run(asyncio.sleep(0))                       # let those closes complete
            self.loop.close()
        # Killed by us: a negative status. 255: asyncio lost the real status (a kill's poll()
        # reaped the process first), so then its last words decide. Anything else above 0 failed.
        said = self.cap._last_error_line or ""
        for code in [p.returncode for p in self.processes if p.returncode is not None and p.returncode > 0]:
            if code != 255 or said.startswith(("tshark:", "dumpcap:")):
                return RuntimeError(f"exit status {code}: {said or 'no message'}")
        return None


def _in_worker(fn, timeout: float):
    """Run ``fn()`` in a new thread; return its result or raise its error."""
    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed back to the caller
            box["error"] = err

    worker = threading.Thread(target=work, name="wirelab-pyshark", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise CaptureError(f"pyshark took more than {timeout:g} s", "use a display filter or fewer packets")
    if "error" in box:
        raise box["error"]
    return box["value"]


def pyshark_packets(path, *, display_filter: str | None = None, limit: int = 20,
                    fields: dict[str, str] | None = None, ppcb: bool = True,
                    timeout: float = 60) -> pd.DataFrame:
    """The first ``limit`` packets matching ``display_filter``, one row each with the
    requested fields (name → "layer.field", e.g. ``{"rtt": "tcp.analysis_ack_rtt"}`` or
    ``{"no": "ppcb.packet_no"}``) plus frame number, time, highest layer and length."""
    # start-up: pyshark only when pyshark_packets() runs
    import pyshark
    from pyshark.capture.capture import StopCapture

    tshark()
    if not Path(path).exists():
        raise CaptureError(f"no capture file at {path}", "check the path")
    fields, parameters = fields or {}, _custom_parameters(ppcb)
    _thread_safe_child_watcher()

    def read():
        session = _Session(pyshark.FileCapture, str(path), display_filter=display_filter,
                           keep_packets=False, custom_parameters=parameters)
        rows: list[dict] = []

        def take(pkt):
            if len(rows) >= limit:
                raise StopCapture()
            rows.append(_row(pkt, fields))
        try:
            session.run(session.cap.packets_from_tshark(take))
        except Exception as err:  # noqa: BLE001 - pyshark's own errors say little
            session.close()
            raise CaptureError(f"pyshark/tshark failed on {path}: {err}",
                               "check the display filter and that the file opens in Wireshark") from None
        failure = session.close()
        if failure is not None:
            raise CaptureError(f"tshark failed on {path}: {failure}",
                               "check the display filter and that the file opens in Wireshark")
        return rows

    return pd.DataFrame(_in_worker(read, timeout))


class PysharkLive:
    """A live capture through pyshark (dumpcap → tshark), safely inside Jupyter.

        with PysharkLive("lo", bpf_filter="host 127.0.0.77", probe_host="127.0.0.77") as live:
            ...                                   # traffic here is captured and dissected
        live.packets                              # one row per packet (as pyshark_packets)

    Start-up is awaited, not slept through: with ``probe_host`` (an address the
    filter lets through) we send marked datagrams to a socket of ours there until
    pyshark reports one; on exit one more, and once pyshark has reported it every
    packet before it has been read. Probe packets are left out of ``packets``.
    Without a probe nothing proves the capture started: early packets may be missed.
    Every dumpcap and tshark it starts is ended on exit, errors and Ctrl-C included.
    """

    def __init__(self, interface: str = "lo", *, bpf_filter: str | None = None,
                 display_filter: str | None = None, fields: dict[str, str] | None = None,
                 probe_host: str | None = None, limit: int = 10_000, ppcb: bool = True,
                 ready_timeout: float = 15.0, stop_timeout: float = 10.0):
        tshark()
        self.interface, self.bpf_filter, self.display_filter = interface, bpf_filter, display_filter
        self.fields, self.probe_host, self.limit, self.ppcb = fields or {}, probe_host, limit, ppcb
        self.ready_timeout, self.stop_timeout = ready_timeout, stop_timeout
        self.rows: list[dict] = []
        self.error: BaseException | None = None
        self._changed = threading.Condition()
        self._last_probe, self._next_probe = -1, 0       # highest probe number reported; next to send
        self._marker = uuid.uuid4().hex[:12]
        self._sink = self._sender = None
        self._session = self._task = self._worker = None

    @property
    def packets(self) -> pd.DataFrame:
        with self._changed:
            return pd.DataFrame(self.rows)

    # -- probes: numbered datagrams to a socket of ours -----------------------
    def _probe(self, n: int) -> None:
        self._sender.sendto(f"wirelab-probe-{self._marker}-{n}".encode(), self._sink.getsockname())

    def _probe_number(self, pkt) -> int | None:
        """The number of one of our probes, or None for any other packet."""
        data = str(_field(_layers(pkt), "data.data") or "").replace(":", "")
        prefix = f"wirelab-probe-{self._marker}-".encode().hex()
        if not data.startswith(prefix):
            return None
        try:
            return int(bytes.fromhex(data[len(prefix):]).decode())
        except ValueError:
            return None

    def _probe_until_seen(self, first: int, timeout: float) -> bool:
        """Probe until pyshark reports probe ``first`` or a later one: the pipe keeps order,
        so everything captured before probe ``first`` was sent has been read by then."""
        deadline, n = time.monotonic() + timeout, first
        while time.monotonic() < deadline and self._worker.is_alive():
            self._probe(n)
            n += 1
            wait_until = min(deadline, time.monotonic() + 0.25)
            with self._changed:
                while self._last_probe < first and self._worker.is_alive():
                    left = wait_until - time.monotonic()
                    if left <= 0:
                        break
                    self._changed.wait(left)
                if self._last_probe >= first:
                    self._next_probe = n
                    return True
        return False

    # -- the worker ----------------------------------------------------------
    def _work(self, started: threading.Event):
        # start-up: pyshark only when _work() runs
        import pyshark
        from pyshark.capture.capture import StopCapture

        try:
            self._session = _Session(pyshark.LiveCapture, self.interface, bpf_filter=self.bpf_filter,
                                     display_filter=self.display_filter,
                                     custom_parameters=_custom_parameters(self.ppcb))
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            self.error = err
            started.set()
            return

        def seen(pkt):
            number = self._probe_number(pkt) if self.probe_host else None
            with self._changed:
                if number is not None:
                    self._last_probe = max(self._last_probe, number)
                else:
                    self.rows.append(_row(pkt, self.fields))
                self._changed.notify_all()
                if len(self.rows) >= self.limit:
                    raise StopCapture()

        try:
            self._task = self._session.loop.create_task(self._session.cap.packets_from_tshark(seen))
            started.set()
            self._session.run(self._task)
        except asyncio.CancelledError:
            pass                                          # stop() asked for it
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            self.error = err
        finally:
            started.set()
            failure = self._session.close()               # no dumpcap/tshark left behind
            if failure is not None and self.error is None:
                self.error = failure
            with self._changed:
                self._changed.notify_all()

    def start(self) -> "PysharkLive":
        _thread_safe_child_watcher()
        if self.probe_host:
            self._sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self._sink.bind((self.probe_host, 0))
            self._sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        started = threading.Event()
        self._worker = threading.Thread(target=self._work, args=(started,), name="wirelab-pyshark-live",
                                        daemon=True)
        self._worker.start()
        started.wait(self.ready_timeout)
        if self.probe_host and not self._probe_until_seen(self._next_probe, self.ready_timeout):
            self.stop(drain=False)
            if self.error:
                raise CaptureError(f"pyshark could not capture on {self.interface}: {self.error}",
                                   "capturing needs root, or a user in the wireshark group")
            raise CaptureError(f"pyshark saw none of the probes to {self.probe_host} within "
                               f"{self.ready_timeout:g} s", "probe_host must be an address bpf_filter lets through")
        return self

    def stop(self, *, drain: bool = True) -> pd.DataFrame:
        """Stop capturing (with a probe: after pyshark has read everything sent before
        this call) and return the packets."""
        try:
            if self._worker is None:
                return self.packets
            if drain and self.probe_host and self._worker.is_alive():
                self._probe_until_seen(self._next_probe, self.stop_timeout)
            session, task = self._session, self._task
            if session is not None and task is not None and not session.loop.is_closed():
                try:
                    session.loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:                      # the loop closed meanwhile: stopped already
                    pass
            self._worker.join(self.stop_timeout)
            if self._worker.is_alive():
                raise CaptureError(f"pyshark did not stop within {self.stop_timeout:g} s",
                                   "its dumpcap/tshark may still run: check with ps")
            if self.error is not None:
                raise CaptureError(f"pyshark failed: {self.error}", "check the interface and the filters")
            return self.packets
        finally:
            for sock in (self._sink, self._sender):
                if sock is not None:
                    sock.close()
            self._sink = self._sender = None

    def __enter__(self) -> "PysharkLive":
        return self.start()

    def __exit__(self, *exc) -> None:
        try:
            self.stop(drain=exc[0] is None)
        except CaptureError:
            if exc[0] is None:          # never hide the error that ended the block
                raise
