"""The kit's own programs as an engine: ``wirelab.transfer`` over a ``wirelab.link`` testbed.

What each (workload, protocol) runs:

    file  tcp   PPCB over TCP (``send_tcp``), ``packet`` B per DATA (default 1000)
          udpr  PPCB stop-and-wait over UDP (``send_udp(proto="udpr")``)
          udp   on a rate-limited link: offered load at the link rate for as long as
                ``size`` takes (PPCB udp has no flow control: flooding a slow link
                only measures the queue's drops, as document 001 found); else PPCB udp.
                ``WirelabEngine(udp_files="ppcb")`` floods anyway, to redo document 001
                (the client's sender-side figure; the transfer fails when a datagram drops)
    time  tcp/udp  bulk for ``time`` seconds (``measure(mode="bulk")``); over tcp the receiver
                counts what arrives within ``time`` and reports then, as iperf3 does: the
                sender's socket buffer is discarded, not waited out (``interval_s``, ``drain_s``)
    load  tcp/udp  ``offered`` bit/s in ``packet``-byte records (``measure(mode="load")``)
    echo  tcp/udp  ``echo`` request/response rounds (RTT samples)

The server runs on host ``b`` of the link the runner opened and the client
on host ``a``: the receiver is a thread of this process whose socket lives
on ``b`` (``link.inside("b")``), the sender a process on ``a`` (``transfer.client``,
so it cannot starve the receiver; on a link a sweep keeps for many runs, forked
by a warm client instead of started anew), sending to ``link.reach(port)``. Both
read one clock (namespaces on one host share it), so one-way delay is exact.
Whether the hosts are namespaces or 127.0.0.1 behind relays is the link's
business, not this engine's.

While a run goes, both ends report to the run's event stream (``events``) every
interval: the receiver (bytes delivered) from its thread here, the sender (bytes
sent; over TCP the kernel's cwnd, RTT, retransmissions and pacing rate) from its
process through the stream's socket, a probe (``echo``) each round trip as it comes.
At the end the receiver's goodput over time, binned from its per-packet delivery
times, joins the stream too (a ``series`` event: what ``analysis.load_series`` plots).
"""
from __future__ import annotations

import hashlib
import math
import threading
import time
import weakref
from contextlib import nullcontext

from .. import transports
from ..errors import UsageError
from ..link.contract import link_capabilities
from ..transfer import Result, merge, start_server
from ..transfer.pacing import PACINGS
from ..transfer.progress import Progress
from ..transfer.run import HashSink, make_data
from ..transfer.sockets import congestion_unavailable
from ..transfer.tcp import TCP_LEAST_WAIT_S
from ..wire.headers import ETHERNET_MTU, tcp_payload, udp_payload
from ..wire.ppcb import DATA_HEADER
from ..transfer.client import WarmClient
from .wirelab_sender import client_config as _client_config, send as _send

__all__ = ["WirelabEngine", "DEFAULT_CHUNK", "goodput_series"]

#: Bytes of file data per DATA packet when ``packet`` is not set (document 001).
DEFAULT_CHUNK = 1000
_WARMING = threading.Lock()      # (module-wide: an engine is pickled to the cluster's workers, a lock is not)
#: The measurement modes' control exchange waits at least this long for an answer: a REPORT
#: of many fragments can lose one to the link's loss, and a short PPCB MAX_WAIT (0.05 s) made
#: such a run fail ("nothing for 0.1 s").
MEASURE_LEAST_WAIT_S = 1.0

def goodput_series(times_s, bytes_per_packet: float, *, bins: int = 20,
                   min_bin_s: float = 0.02) -> list[dict]:
    """Per-packet delivery times → goodput in equal intervals (about ``bins`` of them)."""
    times = sorted(t for t in times_s if t is not None and math.isfinite(t))
    if len(times) < 2:
        return []
    start, span = times[0], times[-1] - times[0]
    width = max(span / bins, min_bin_s)
    count = max(int(math.ceil(span / width)), 1)
    totals = [0.0] * count
    for t in times:
        totals[min(int((t - start) / width), count - 1)] += bytes_per_packet
    return [{"t_s": (i + 1) * width, "bps": 8.0 * b / width} for i, b in enumerate(totals)]


def plan(setting, udp_files: str = "load") -> dict:
    """How a setting is run: ``call`` (file/measure), ``mode``, ``proto``, sizes. Pure.
    ``udp_files``: "load" (udp files on a rate-limited link as offered load) or "ppcb"."""
    proto, workload = setting.proto, setting.workload
    t = transports.get(proto)
    rate, mtu = setting["rate_bps"], int(setting.get("mtu", ETHERNET_MTU))
    if workload == "file":
        if not t.reliable and rate and udp_files != "ppcb":
            seconds = setting.get("size_bytes", 1e6) * 8 / rate
            return {"call": "measure", "mode": "load", "rate_bps": rate, "time_s": seconds,
                    "size_bytes": int(setting.get("size_bytes", 1e6)),
                    "packet": int(setting.get("packet_bytes", udp_payload(mtu))), "payload": None,
                    "note": "udp file on a rate-limited link: offered load at the link rate"}
        chunk = int(setting.get("packet_bytes", DEFAULT_CHUNK))
        return {"call": "file", "mode": "file", "chunk": chunk,
                "payload": chunk if not t.stream else None,
                "stream_header": DATA_HEADER if t.stream else 0,
                "udp_header": DATA_HEADER if not t.stream and not t.ppcb_layer else 0}
    if workload not in ("time", "load", "echo"):
        raise UsageError(f"wirelab's programs have no {workload} workload", "use file, time, load or echo")
    if not t.supports(workload):
        raise UsageError(f"{proto} runs file transfers only, not the {workload} workload",
                         f"use workload='file' for {proto}")
    packet = int(setting.get("packet_bytes", tcp_payload(ETHERNET_MTU) if t.stream else udp_payload(mtu)))
    mode = {"time": "bulk", "load": "load", "echo": "echo"}[workload]
    if setting["read_bytes"] and (not t.stream or mode == "echo"):
        raise UsageError(f"a reader's length (read) for {proto} {workload}", "read is for tcp time or load runs")
    if mode == "echo" and t.socket == "udp" and setting.get("echo_interval_s"):
        mode = "ping"                  # a probe on a timer (flows' ``ping``): a lost round costs no time
    return {"call": "measure", "mode": mode, "time_s": setting.get("time_s", 1.0),
            "rate_bps": setting["offered_bps"], "count": int(setting.get("echo_count", 100)),
            "echo_interval_s": float(setting.get("echo_interval_s", 0.0)),
            "packet": packet, "payload": packet if t.socket == "udp" else None,
            "read_bytes": setting["read_bytes"]}


class WirelabEngine:
    """Runs each setting with wirelab's senders and receivers across the link it is given."""
    name = "wirelab"
    times_exchanges = True         # UDPR records carry each DATA→ACC round trip (calibration's probe)
    emits_events = True            # run(..., events=EventStream): both ends report while it runs

    def __init__(self, *, udp_files: str = "load", pacing: str = "even", end_markers: int = 0,
                 end_marker_gap_s: float = 2.0):
        """``pacing`` of the load workload ("even", or "tick": each second's bytes at a 1 s timer
        tick, document 000's sender); ``end_markers``: udp measurements end with that many 4-byte
        datagrams ``end_marker_gap_s`` apart (nttcp's, document 002)."""
        if udp_files not in ("load", "ppcb"):
            raise UsageError(f"udp_files={udp_files!r}", "use 'load' or 'ppcb'")
        if pacing not in PACINGS:
            raise UsageError(f"pacing={pacing!r}", f"use one of {', '.join(PACINGS)}")
        self.udp_files, self.pacing = udp_files, pacing
        self.end_markers, self.end_marker_gap_s = int(end_markers), float(end_marker_gap_s)
        self._warm: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # link → WarmClient

    def __getstate__(self) -> dict:
        """A sweep across hosts sends its engine to a worker; the warm clients stay here."""
        return {**self.__dict__, "_warm": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _warm=weakref.WeakKeyDictionary())

    def open(self) -> None:
        """Called by the runner before a sweep (nothing to prepare)."""

    def close(self) -> None:
        """After a sweep: stop the warm clients (they stop with their links anyway)."""
        for warm in list(self._warm.values()):
            warm.close()
        self._warm.clear()

    def _warm_client(self, link) -> WarmClient | None:
        """The warm client of a link kept for many runs (``client.py``), started on its first
        run; None on a link used once (there a plain process costs the same)."""
        if not link_capabilities(link).renewable:
            return None
        with _WARMING:                  # a run's flows start together, each in its thread: one client each link
            warm = self._warm.get(link)
            if warm is None or not warm.alive():
                try:
                    warm = self._warm[link] = WarmClient(link)
                except Exception:        # noqa: BLE001 - the plain client process still works
                    return None
        return warm

    def info(self) -> dict:
        return {"programs": "wirelab.transfer (PPCB tcp/udp/udpr, measurement modes)",
                "udp_files": self.udp_files, "pacing": self.pacing, "end_markers": self.end_markers}

    def framing(self, setting) -> dict:
        """How the data is framed, for the model: PPCB's DATA header inside the stream or datagram."""
        try:
            how = plan(setting, self.udp_files)
        except UsageError:
            return {}
        return {"payload": how.get("payload"), "stream_header": how.get("stream_header", 0),
                "udp_header": how.get("udp_header", 0)}

    def _measure_options(self, how: dict, proto: str) -> dict:
        """The engine's options a measurement takes: the load's pacing, a udp run's end markers."""
        out = {}
        if how["call"] == "measure" and how["mode"] == "load" and self.pacing != "even":
            out["pacing"] = self.pacing
        if how["call"] == "measure" and transports.get(proto).socket == "udp" and self.end_markers and how["mode"] not in ("echo", "ping"):
            out.update(end_markers=self.end_markers, end_marker_gap_s=self.end_marker_gap_s)
        if how.get("read_bytes"):
            out["read_bytes"] = how["read_bytes"]
        return out

    def unsupported(self, setting) -> str | None:
        try:
            plan(setting, self.udp_files)
        except UsageError as err:
            return str(err)
        if transports.get(setting.proto).stream:
            return congestion_unavailable(setting["cc"])
        return None

    def run(self, setting, link, *, deadline: float, seed: int = 0, workdir=None, capture=None,
            events=None, event_tags: dict | None = None) -> dict:
        """One run across ``link``. ``capture``: a path for a pcapng of the run's packets as the
        receiver's side of the link saw them (dumpcap; needs root or capture rights). ``events``:
        the run's ``EventStream`` (the module docstring), its records tagged ``event_tags``."""

        how = plan(setting, self.udp_files)
        proto = setting.proto
        transport = transports.get(proto)
        max_wait = _max_wait(setting, transport, how)
        retransmits = int(setting.get("max_retransmits", 5))
        sndbuf = _whole(setting["sndbuf_bytes"] or setting["window_bytes"])
        rcvbuf = _whole(setting["rcvbuf_bytes"] or setting["window_bytes"])
        size = int(setting.get("size_bytes", 1e6))
        warm = self._warm_client(link)
        sink = HashSink()
        receiving = _receiver_progress(how, sink, events, event_tags)
        with link.inside("b"):
            port, stop, thread, server_results = start_server(
                proto, host=link.address("b"), out=sink, max_wait=max_wait,
                max_retransmits=retransmits, rcvbuf=rcvbuf, progress=receiving,
                # a file run is one session; a measurement's server stays to answer a resent END
                sessions=1 if how["call"] == "file" else None)
        if receiving is not None:
            receiving.start()
        kind = transport.socket
        recorder = _capture(capture, link, kind, port) if capture else nullcontext()
        try:
            target = link.reach(port, kind)
            with recorder:
                config = _client_config(how, setting, target[0], target[1], size=size, seed=seed,
                                        max_wait=max_wait, retransmits=retransmits, sndbuf=sndbuf,
                                        same_clock=link.one_clock, **self._measure_options(how, proto))
                if events is not None:
                    config.update(events=events.address, event_tags=event_tags)
                sender, reported = _send(link, config, deadline, warm, events)
                if how["call"] == "file":
                    _await_session(server_results, thread, deadline, max_wait, retransmits)
        finally:
            stop.set()
            thread.join(max_wait + 1.0)
            if receiving is not None:
                receiving.stop()
        if how["call"] == "file":
            result, outcome = _file_result(setting, transport, link, sender, server_results, sink,
                                           size=size, seed=seed)
        else:
            result, outcome = sender, {}
        record = _record(result, outcome, reported, transport, capture=capture, recorder=recorder)
        _attach_series(record, result, how, events, event_tags)
        record["plan"] = how.get("note") or f"{how['call']} {how['mode']}"
        record["max_wait_used_s"] = max_wait
        return record


def _max_wait(setting, transport, how: dict) -> float:
    """How long either end waits for the other (MAX_WAIT): the setting's, raised where the
    exchange needs longer than PPCB's."""
    max_wait = float(setting.get("max_wait_s", 5.0))
    if transport.stream:       # never below what TCP needs to repair a lost SYN itself
        max_wait = max(max_wait, TCP_LEAST_WAIT_S)
    elif how["call"] == "measure":   # the kit's own measurement exchange (HELLO, END, REPORT), not
        max_wait = max(max_wait, MEASURE_LEAST_WAIT_S)   # PPCB's: it must outlast the loss it measures
    return max_wait


def _receiver_progress(how: dict, sink, events, event_tags: dict | None) -> Progress | None:
    """The receiver's live reports to the run's event stream (None: no stream, or an echo run)."""
    if events is None or how["mode"] in ("echo", "ping"):
        return None
    receiving = Progress("receiver", emit=events.emit, tags=event_tags)
    receiving.count = lambda: sink.bytes          # a file's bytes; a measurement counts its own
    return receiving


def _await_session(server_results: list, thread, deadline: float, max_wait: float, retransmits: int) -> None:
    """Let a file run's server end its session by itself (RCVD sent, or MAX_WAIT bounds it)."""
    until = min(deadline, time.monotonic() + max_wait * (retransmits + 1) + 1.0)
    while not server_results and thread.is_alive() and time.monotonic() < until:
        thread.join(0.01)


def _file_result(setting, transport, link, sender, server_results: list, sink, *, size: int, seed: int):
    """(result, outcome) of a file run: both ends merged, whether the file arrived byte for byte,
    and the outcome PPCB defines where plain UDP ends early."""
    receiver = (server_results[0] if server_results
                else Result(setting.proto, receiver_error="server saw no session"))
    result = merge(sender, receiver, same_clock=link.one_clock)
    if not transport.reliable and result.packets_received is not None:
        result.lost = max(len(sender.send_times_s) - len(receiver.receive_times_s), 0)
    payload = make_data(size, seed)
    result.metadata["byte_exact"] = sink.bytes == len(payload) and \
        sink.hexdigest() == hashlib.sha256(payload).hexdigest()
    if transport.reliable:
        return result, {}
    return result, _udp_incomplete(setting, sender, receiver, result)


def _udp_incomplete(setting, sender, receiver, result) -> dict:
    """A plain UDP file run that ended as the protocol says it must: its outcome and why ({}: it did not)."""
    missing = receiver.metadata.get("first_missing_packet")
    if missing is not None:
        # plain UDP cannot recover a lost datagram: PPCB ends the session there. The
        # protocol defines this outcome: it is a result (what arrived), not a failure.
        return {"outcome": "incomplete",
                "outcome_reason": f"datagram {missing} was lost and plain udp does not resend: "
                                  f"{result.delivered_fraction or 0:.1%} of the file arrived"}
    if "no CONACC" in (sender.error or "") and _drops(setting):
        # PPCB's udp client sends CONN once: on a lossy link CONN or CONACC may be lost,
        # and the client then ends as the protocol says, with nothing sent
        return {"outcome": "incomplete",
                "outcome_reason": "CONN or its CONACC was lost and plain udp does not resend "
                                  "them (PPCB: the udp client sends CONN once): 0.0% of the "
                                  "file arrived"}
    return {}


def _record(result, outcome: dict, reported: list, transport, *, capture, recorder) -> dict:
    """The run's record: the result's fields, the kernel's retransmissions, the sending loop's
    rate and the capture's counts."""
    record = {**result.to_dict(samples=False), **outcome}
    kernel = [r for r in reported if r.get("event") == "interval" and r.get("retransmissions") is not None]
    if transport.stream and kernel:      # TCP resends below the program: the kernel counted them
        record["retransmissions"] = kernel[-1]["retransmissions"]
    # the sending loop alone, first DATA to last (what document 001 called udp's sender side)
    loop = result.send_times_s[-1] - result.send_times_s[0] if len(result.send_times_s) > 1 else 0.0
    record["send_loop_bps"] = 8.0 * result.bytes_sent / loop if loop > 0 else None
    if capture:
        record["capture_file"] = str(capture)
        record["capture_packets"] = recorder.packets
        record["capture_dropped"] = recorder.dropped
    return record


def _attach_series(record: dict, result, how: dict, events, event_tags: dict | None) -> None:
    """The receiver's goodput over time: into the run's event stream, or the record without one."""
    series = goodput_series(result.receive_times_s, how.get("chunk") or how.get("packet") or 1000)
    if events is not None and series:     # the run's goodput over time lives in its stream
        events.emit({"event": "series", "source": "receiver", "points": series, **(event_tags or {})})
    elif events is None:
        record["receiver_series"] = series


def _drops(setting) -> bool:
    """Does the link lose packets on purpose (random loss either way)?"""
    return bool(setting["loss"] or setting["loss_reverse"])


def _whole(value) -> int | None:
    return None if value is None else int(value)


def _capture(path, link, kind: str, port: int):
    """dumpcap where the receiver (host b) sees the run's packets."""
    from ..capture import LiveCapture          # start-up: the capture reader (numpy) only when a run captures
    interface, prefix = link.capture_point("b")
    return LiveCapture(interface, path, prefix=prefix, capture_filter=f"{kind} port {port}")
