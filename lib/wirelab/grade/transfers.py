"""Transfer tests: move ``size`` bytes and check every one, in each of the three roles.

* client: the student's ``ppcbc`` sends to wirelab's server (``wirelab.transfer``) on host b;
  pass when ppcbc exits 0 and the server delivered exactly the input.
* server: wirelab's client on host a sends to the student's ``ppcbs``;
  pass when the client got RCVD, ppcbs's stdout is exactly the input, and ppcbs still runs.
* pair: the student's client sends to the student's server.

Goodput is the glossary's (``wirelab.transfer.measures``): application bytes
delivered × 8 ÷ the time from the first data byte sent to the last one
delivered, both instants on one clock (the grader's two hosts share the
machine's). Where the grader cannot see one instant it takes an earlier
start or a later end it can see, so the figure can read low, never high, and
``goodput_at`` says which instants it used. Completion is the client's wait,
CONN to RCVD (or the closest span the grader sees). Per role:

* client: wirelab's server sees CONN arrive (its CONACC leaves at once; the
  student's first DATA cannot leave before it) and the last byte delivered;
* server: wirelab's client sends the first DATA; ppcbs delivers the last
  byte when it writes it to stdout (the file's modification time);
* pair: ppcbc's start (its set-up included) to ppcbs's last write.
"""
from __future__ import annotations

import hashlib
import time

from ..peers.stage import kit_client
from ..transfer import HashSink, make_data, start_server
from ..transfer.measures import goodput
from .context import Failed, TestContext, stderr_of
from .diagnose import diagnose

__all__ = ["run_transfer"]


def run_transfer(ctx: TestContext) -> None:
    test = ctx.test
    data = make_data(test.size, seed=ctx.seed)
    data_path = ctx.out_dir / "input.bin"
    data_path.write_bytes(data)
    {"client": _student_client, "server": _student_server, "pair": _pair}[test.role](ctx, data, data_path)


class _KeptSink(HashSink):
    """wirelab's server's output, its first ``limit`` bytes kept: a failed test says how it differs from the
    input (diagnose.py); a client sending far more than its input cannot fill the grader's memory."""

    def __init__(self, limit: int):
        super().__init__()
        self.kept, self.limit = bytearray(), limit

    def write(self, data) -> int:
        if len(self.kept) < self.limit:
            self.kept += data[:self.limit - len(self.kept)]
        return super().write(data)


def _student_client(ctx: TestContext, data: bytes, data_path) -> None:
    sink = _KeptSink(2 * len(data) + 1_000_000)        # (what ppcbs's stdout is read to, context.py)
    host, port = ctx.server_address
    with ctx.tb.inside("b"):
        _, stop, thread, results = start_server(ctx.test.proto, host=host, port=port, out=sink,
                                                max_wait=ctx.max_wait, max_retransmits=ctx.retransmits)
    try:
        client = ctx.start_client(data_path)
        code = ctx.wait_exit(client, "a client must exit after RCVD or after its MAX_WAIT bounds")
        end = time.monotonic() + min(ctx.max_wait * 2, ctx.left())
        while not results and time.monotonic() < end:        # the server hands its Result over
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(3)
    served = results[-1] if results else None
    if code != 0:
        got = f"; wirelab's server received {served.bytes_delivered} of {len(data)} B" if served else ""
        raise Failed(f"ppcbc {client.describe_exit()}{got}{stderr_of(client)}"
                     + (f" (server: {served.receiver_error})" if served and served.receiver_error else ""))
    if served is None:
        raise Failed("ppcbc exited 0, but wirelab's server never completed a session (no CONN, or no RCVD sent)")
    if not served.ok or sink.bytes != len(data) or sink.hexdigest() != hashlib.sha256(data).hexdigest():
        chunk = round(served.bytes_received / served.packets_received) if served.packets_received else None
        # the kit's server gave up waiting (its MAX_WAIT and resends spent): the client's stdin is not the
        # suspect, its sending is (a link that lost every try, or a client that stopped resending)
        gave_up = bool(served.receiver_error) and "timeout" in served.receiver_error
        finding = diagnose(data, bytes(sink.kept), chunk, side="client", peer_gave_up=gave_up)
        raise Failed(f"ppcbc exited 0, but wirelab's server delivered {served.bytes_delivered} of {len(data)} B"
                     + (f" ({served.receiver_error})" if served.receiver_error else "")
                     + (f"; {finding}" if finding else ""))
    packets = served.packets_received or 1
    ctx.measured.update(goodput_bps=goodput(served.bytes_delivered, served.receiver_end_time_s
                                            - served.receiver_start_time_s),
                        goodput_at="receiver goodput at wirelab's server, one clock, from CONN received (CONACC "
                                   "leaves at once, before the first DATA can) to the last byte delivered",
                        completion_s=client.runtime_s, completion_at="ppcbc's run time (start to exit, "
                                                                     "reading stdin included)",
                        data_bytes=round(served.bytes_received / packets))


def _student_server(ctx: TestContext, data: bytes, data_path) -> None:
    server = ctx.start_server()
    result = kit_client(ctx, data).result()
    if not result.ok:
        raise Failed(f"wirelab's client failed: {result.error}{stderr_of(server, 'ppcbs')}")
    ctx.delivered(server, data)
    if server.poll() is not None:
        raise Failed(f"ppcbs {server.describe_exit()} after one client (a server must go on serving)")
    last = _last_write(server)
    if last is not None and result.first_data_time_s is not None and last > result.first_data_time_s:
        span, end = last - result.first_data_time_s, "ppcbs's last write to stdout (the file's time)"
    else:                                        # a later end the grader sees: RCVD back at its client
        span, end = result.sender_end_time_s - result.first_data_time_s, "RCVD back at wirelab's client"
    ctx.measured.update(goodput_bps=goodput(len(data), span),
                        goodput_at=f"receiver goodput, one clock, from wirelab's client's first DATA sent to {end}",
                        completion_s=result.completion_s, completion_at="wirelab's client, CONN sent to RCVD received",
                        data_bytes=ctx.assignment.chunk)


def _pair(ctx: TestContext, data: bytes, data_path) -> None:
    server = ctx.start_server()
    client = ctx.start_client(data_path)
    code = ctx.wait_exit(client, "a client must exit after RCVD")
    if code != 0:
        raise Failed(f"ppcbc {client.describe_exit()}{stderr_of(client)}{stderr_of(server, 'ppcbs')}")
    ctx.delivered(server, data)
    last = _last_write(server)
    start = client.started + (time.time() - time.monotonic())        # ppcbc's start on the wall clock
    ctx.measured.update(goodput_bps=goodput(len(data), (last or time.time()) - start),
                        goodput_at="receiver goodput, one clock, from ppcbc's start (its set-up included) to "
                                   "ppcbs's last write to stdout", completion_s=client.runtime_s,
                        completion_at="ppcbc's run time (start to exit, reading stdin included)")


def _last_write(server) -> float | None:
    """When ppcbs last wrote to stdout (wall clock, like the grader's own instants), if it wrote."""
    try:
        return server.stdout_path.stat().st_mtime_ns / 1e9
    except OSError:
        return None
