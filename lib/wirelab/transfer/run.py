"""Run a server and a client together on loopback, in one call, and join their Results.

    >>> r = run_pair("udpr", data=100_000, max_wait=0.5)        # doctest: +SKIP
    >>> r.ok, r.bytes_delivered, r.metadata["byte_exact"]        # doctest: +SKIP
    (True, 100000, True)

The server runs in a thread of this process (so both ends share one clock:
one-way delay per packet is exact); the client runs in the caller's thread.
Across a testbed, run ``python -m wirelab.transfer.<module>`` (or ``wirelab
serve``/``wirelab send``) at each end instead.
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
import threading
import time

from .. import transports
from ..errors import TransferError, UsageError
from ..units import parse_size
from .measure_client import measure
from .result import Result, merge
from .sockets import DEFAULT_HOST, Stop
from .tcp import listen_tcp, serve_tcp
from .udp_server import listen_udp, serve_udp

__all__ = ["run_pair", "make_data", "HashSink", "start_server"]


#: run_pair's measurement modes as the transports' workloads (``Transport.modes``)
_WORKLOADS = {"bulk": "time"}


class HashSink:
    """A file-like sink that keeps only a byte count and a SHA-256 (no memory for big runs)."""

    def __init__(self):
        self.bytes = 0
        self._hash = hashlib.sha256()

    def write(self, data) -> int:
        self._hash.update(data)
        self.bytes += len(data)
        return len(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def make_data(size: int, seed: int = 0) -> bytes:
    """``size`` reproducible pseudo-random bytes (incompressible, unlike zeros)."""
    return random.Random(seed).randbytes(int(size))


def start_server(proto: str, *, host: str = DEFAULT_HOST, port: int = 0, out=None, max_wait: float = 5.0,
                 max_retransmits: int = 5, rcvbuf: int | None = None, sndbuf: int | None = None,
                 sessions: int | None = None, progress=None, on_result=None):
    """Start a tcp or udp server in a background thread.

    Returns ``(port, stop, thread, results)``: set ``stop`` and join ``thread``
    to end it; ``results`` fills with one Result per client (``on_result(result)``
    is called too, the moment a client's session ends). ``progress``: what a
    measurement session counts into while it runs (``serve_tcp``).
    """
    kind = transports.get(proto).socket
    sock = (listen_tcp if kind == "tcp" else listen_udp)(host, port, rcvbuf=rcvbuf, sndbuf=sndbuf)
    stop, results = Stop(), []      # setting it wakes the server at once
    serve = serve_tcp if kind == "tcp" else serve_udp
    kwargs = {"max_retransmits": max_retransmits} if kind == "udp" else {}

    def keep(result) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    def loop():
        try:
            serve(sock, out=out, max_wait=max_wait, sessions=sessions, stop=stop,
                  on_result=keep, progress=progress, **kwargs)
        finally:
            sock.close()
            stop.close()

    thread = threading.Thread(target=loop, name=f"wirelab-{kind}-server", daemon=True)
    thread.start()
    return sock.getsockname()[1], stop, thread, results


def run_pair(proto: str = "tcp", data: bytes | int = 1_000_000, *, mode: str = "file",
             chunk: int = 1000, time_s: float = 1.0, rate_bps: float | None = None, packet: int = 1400,
             count: int = 100, max_wait: float = 5.0, max_retransmits: int = 5,
             sndbuf: int | None = None, rcvbuf: int | None = None, congestion: str | None = None,
             deadline: float = 120.0, host: str = DEFAULT_HOST, **options) -> Result:
    """One transfer on loopback, both ends, one Result.

    ``mode="file"``: PPCB (``proto`` tcp, udp or udpr) moves ``data`` (bytes, or
    a size for reproducible random bytes) in ``chunk``-byte DATA packets;
    ``metadata["byte_exact"]`` says whether the receiver got exactly those bytes.
    ``mode`` "bulk", "load" or "echo": a measurement mode (tcp or udp), see
    ``measure_client.measure``. ``rcvbuf`` sizes the receiver's buffer,
    ``sndbuf`` the sender's. ``options``: the transport's own (``wirelab.transports.Option``), for its
    sender. Raises TransferError when ``deadline`` passes.
    """
    transport = transports.get(proto)
    workload = _WORKLOADS.get(mode, mode)
    if workload in transports.MODES and not transport.supports(workload):
        raise UsageError(f"{proto} has no {mode} mode (it runs {', '.join(transport.modes)})",
                         f"use mode='file' for {proto}")
    given = transport.option_values(options)
    payload = make_data(data) if isinstance(data, int) else bytes(data) if mode == "file" else b""
    sink = HashSink()
    port, stop, thread, server_results = start_server(
        proto, host=host, out=sink, max_wait=max_wait, max_retransmits=max_retransmits,
        rcvbuf=rcvbuf)
    outcome: list[Result] = []

    failure: list[BaseException] = []

    def client():
        try:
            run_client()
        except BaseException as err:          # handed to the caller below
            failure.append(err)

    def run_client():
        if mode != "file":
            outcome.append(measure(transport.socket, host, port, mode=mode, time_s=time_s,
                                   rate_bps=rate_bps, packet=packet, count=count, max_wait=max_wait,
                                   max_retransmits=max_retransmits, sndbuf=sndbuf, congestion=congestion))
        else:        # the transport's own sender: a stream's takes a congestion control, a datagram's resends
            socket_kind = {"congestion": congestion} if transport.stream else {"max_retransmits": max_retransmits}
            outcome.append(transport.send(host, port, payload, max_wait=max_wait, chunk=chunk, sndbuf=sndbuf,
                                          **socket_kind, **given))

    worker = threading.Thread(target=client, name="wirelab-client", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(deadline)
    # The server ends its session by itself (RCVD sent, or its own MAX_WAIT bounds it).
    wait_until = time.monotonic() + min(max(0.0, deadline - (time.monotonic() - started)),
                                        max_wait * (max_retransmits + 1) + 1.0)
    while not server_results and not failure and thread.is_alive() and time.monotonic() < wait_until:
        thread.join(0.01)
    stop.set()
    thread.join(max_wait + 1.0)
    if failure:
        raise failure[0]
    if worker.is_alive() or not outcome:
        raise TransferError(f"{proto} transfer did not finish within {deadline:g} s",
                            "raise deadline=, or lower MAX_WAIT/MAX_RETRANSMITS")
    sender = outcome[0]
    if mode != "file":
        sender.rcvbuf_requested_bytes = rcvbuf
        sender.metadata["backend"] = "loopback, server thread in this process"
        return sender
    receiver = server_results[0] if server_results else Result(proto, receiver_error="server saw no session")
    result = merge(sender, receiver, same_clock=True)
    result.rcvbuf_requested_bytes = rcvbuf
    if not transport.stream and result.packets_received is not None:
        delivered = len(receiver.receive_times_s)
        result.lost = 0 if transport.reliable else max(len(sender.send_times_s) - delivered, 0)
    elif transport.stream:
        result.lost = 0
    result.metadata["byte_exact"] = sink.bytes == len(payload) and \
        sink.hexdigest() == hashlib.sha256(payload).hexdigest()
    result.metadata["backend"] = "loopback, server thread in this process"
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m wirelab.transfer.run PROTO [SIZE]``: one loopback transfer, its Result as JSON."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in transports.names():
        print(f"usage: python -m wirelab.transfer.run {{{'|'.join(transports.names())}}} [SIZE, e.g. 1MB]",
              file=sys.stderr)
        return 2
    result = run_pair(argv[0], data=int(parse_size(argv[1])) if len(argv) > 1 else 1_000_000)
    print(result.summary(), file=sys.stderr)
    print(result.to_json(indent=1, default=str) if "--samples" in argv else
          json.dumps(result.to_dict(samples=False), indent=1))
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
