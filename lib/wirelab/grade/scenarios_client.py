"""Misbehaving servers against the student's client (ppcbc on host a): wirelab plays the server on host b.

Each scenario binds the server port on host b itself and answers by hand
(packets built by the scapy layer): silence, CONRJT, RJT, a withheld ACC,
stale and foreign ACCs. A client must then give up within its bounds with
``ERROR: ...`` on stderr and a non-zero status, or carry on and finish.
"""
from __future__ import annotations

import time
import zlib

from ..transfer import make_data
from .context import Failed, TestContext, TimedOut
from .packets import Exchange, build, matches, parse, read_stream_packet, session_of
from .readings import take

__all__ = ["CLIENT_SCENARIOS"]

OTHER = b"NOT-YOUR"


def _input(ctx: TestContext, size: int):
    data = make_data(size, seed=zlib.crc32(ctx.test.id.encode()))
    path = ctx.out_dir / "input.bin"
    path.write_bytes(data)
    return data, ctx.start_client(path)


def _gives_up(ctx: TestContext, client, bound_s: float, why: str) -> None:
    """``client`` must exit non-zero with ERROR on stderr within ``bound_s`` of its start."""
    code = client.wait(max(bound_s - client.runtime_s, 0.0))
    if code is None:
        raise TimedOut(f"ppcbc was still running {client.runtime_s:.1f} s after it started ({why}; "
                       f"it must give up by {bound_s:.1f} s)")
    if "ERROR" not in client.stderr_tail(2000):
        raise Failed(f"ppcbc exited with status {code} but printed no 'ERROR: ...' on stderr ({why})")
    take(ctx, "error_exit", "zero" if code == 0 else "nonzero")


def _finishes(ctx: TestContext, client, got: bytes, data: bytes) -> None:
    code = ctx.wait_exit(client, "a client exits after RCVD")
    if code != 0:
        raise Failed(f"ppcbc exited with status {code}; stderr: {client.stderr_tail()!r}")
    if got != data:
        raise Failed(f"the server received {len(got)} B that differ from the {len(data)} B of input")


def _accept(listener, timeout: float = 2.0):
    listener.settimeout(timeout)
    try:
        return listener.accept()[0]
    except OSError:
        raise Failed(f"ppcbc did not connect to the tcp server within {timeout:g} s") from None
    finally:
        listener.close()


def _conn(ctx: TestContext, ex: Exchange):
    """The client's CONN: (address, session id, total_length)."""
    raw, addr = ex.expect("CONN from ppcbc", lambda r: matches(r, "CONN"), max(2 * ctx.max_wait, 2.0))
    packet = parse(raw)
    return addr, packet.session_id, packet.total_length


def _serve(ctx: TestContext, ex: Exchange, addr, sid: bytes, total: int, before_acc=None) -> bytes:
    """Play a correct udpr server from CONACC to RCVD; ``before_acc(number, first_time)`` may return
    False to withhold that ACC (the client must resend). Returns the bytes delivered."""
    ex.send(build("CONACC", sid), addr)
    got, expected, seen = bytearray(), 0, set()
    while len(got) < total:
        raw, _ = ex.expect(f"DATA {expected}", lambda r: matches(r, "DATA", sid),
                           ctx.assignment.give_up_s + 1.0)
        packet = parse(raw)
        if packet.packet_no == expected:
            first = expected not in seen
            seen.add(expected)
            if before_acc is not None and before_acc(expected, first) is False:
                continue
            got += packet.data
            expected += 1
            ex.send(build("ACC", sid, packet_no=packet.packet_no), addr)
        elif packet.packet_no > expected:
            raise Failed(f"ppcbc sent DATA {packet.packet_no} before ACC {expected}")
    ex.send(build("RCVD", sid), addr)
    return bytes(got)


# ------------------------------------------------------------------------- timeouts
def silent_server(ctx: TestContext) -> None:
    proto, wait = ctx.test.proto, ctx.max_wait
    if proto == "tcp":
        listener = ctx.listener("tcp")
        data, client = _input(ctx, 1000)
        conn = _accept(listener)                 # accept, read CONN, never answer
        with conn:
            read_stream_packet(conn, 1.0)
            _gives_up(ctx, client, wait + 1.5, "the server never sent CONACC")
        return
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 1000)
    tries = 1 + ctx.retransmits if proto == "udpr" else 1
    bound = wait * tries + 1.5
    while client.poll() is None and client.runtime_s < bound:
        ex.receive(0.05)
    conns = [t for t, raw, _ in ex.seen if matches(raw, "CONN")]
    _gives_up(ctx, client, bound, "nobody answered its CONN")
    if proto == "udpr":
        _counted(ctx, len(conns), "CONN", "a silent server")
    elif len(conns) != 1:
        raise Failed(f"ppcbc sent CONN {len(conns)} times to a silent server (expected 1: one send, no resend)")
    gaps = [b - a for a, b in zip(conns, conns[1:])]
    if gaps and min(gaps) < wait / 2:
        raise Failed(f"ppcbc resent CONN {min(gaps):.2f} s after the previous one (MAX_WAIT is {wait:g} s)")


def server_stops(ctx: TestContext) -> None:
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 100_000)
    addr, sid, total = _conn(ctx, ex)
    ex.send(build("CONACC", sid), addr)
    raw, _ = ex.expect("DATA 0", lambda r: matches(r, "DATA", sid, 0), 2 * ctx.max_wait)
    ex.send(build("ACC", sid, packet_no=0), addr)
    bound = client.runtime_s + ctx.assignment.give_up_s + 1.5
    while client.poll() is None and client.runtime_s < bound:       # from now on: silence
        ex.receive(0.05)
    _gives_up(ctx, client, bound, "the server stopped answering after ACC 0")
    last = len(parse(raw).data)
    tries = [t for t, r, _ in ex.seen if matches(r, "DATA", sid, 1)]
    if last < total:
        _counted(ctx, len(tries), "DATA 1", "a server that stopped answering")


def _counted(ctx: TestContext, sends: int, what: str, to: str) -> None:
    """``sends`` of one packet to a peer that never answers: 1 + MAX_RETRANSMITS, or MAX_RETRANSMITS in
    all (readings.py, resend_count)."""
    forms = {1 + ctx.retransmits: "plus", ctx.retransmits: "total"}
    if sends not in forms:
        raise Failed(f"ppcbc sent {what} {sends} times to {to} (expected one send plus MAX_RETRANSMITS = "
                     f"{ctx.retransmits} resends, or {ctx.retransmits} sends in all)")
    take(ctx, "resend_count", forms[sends])


# ------------------------------------------------------------------------- retransmission
def lost_acc(ctx: TestContext) -> None:
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 3000)
    addr, sid, total = _conn(ctx, ex)
    times = []

    def withhold_first(number, first):
        times.append(time.monotonic())
        return not (number == 0 and first)       # the first ACC 0 is "lost"
    got = _serve(ctx, ex, addr, sid, total, withhold_first)
    gap = times[1] - times[0]
    if not ctx.max_wait / 2 <= gap <= 2 * ctx.max_wait + 0.5:
        raise Failed(f"ppcbc resent DATA 0 {gap:.2f} s after the first send (MAX_WAIT is {ctx.max_wait:g} s)")
    ctx.measured["data_resent_after_s"] = round(gap, 3)
    _finishes(ctx, client, got, data)


# ------------------------------------------------------------------------- errors
def conrjt(ctx: TestContext) -> None:
    if ctx.test.proto == "tcp":
        listener = ctx.listener("tcp")
        data, client = _input(ctx, 1000)
        conn = _accept(listener)
        with conn:
            raw, _ = read_stream_packet(conn, 2.0)
            conn.sendall(build("CONRJT", session_of(raw)))
            _gives_up(ctx, client, client.runtime_s + ctx.max_wait + 1.0, "the server answered CONRJT")
        return
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 1000)
    addr, sid, _ = _conn(ctx, ex)
    refused = ex.send(build("CONRJT", sid), addr)
    _gives_up(ctx, client, client.runtime_s + ctx.max_wait + 1.0, "the server answered CONRJT")
    while ex.receive(0.01) is not None:
        pass
    again = [t for t, raw, _ in ex.seen if t > refused + 0.05 and matches(raw, "CONN")]
    if again:
        raise Failed("ppcbc sent CONN again after CONRJT (a refusal is final)")


def rjt(ctx: TestContext) -> None:
    if ctx.test.proto == "tcp":
        listener = ctx.listener("tcp")
        data, client = _input(ctx, 5000)
        conn = _accept(listener)
        with conn:
            raw, _ = read_stream_packet(conn, 2.0)
            sid = session_of(raw)
            conn.sendall(build("CONACC", sid))
            read_stream_packet(conn, 2.0)
            conn.sendall(build("RJT", sid, packet_no=0))
        _gives_up(ctx, client, client.runtime_s + ctx.max_wait + 1.0, "the server answered RJT and closed")
        return
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 5000)
    addr, sid, _ = _conn(ctx, ex)
    ex.send(build("CONACC", sid), addr)
    ex.expect("DATA 0", lambda r: matches(r, "DATA", sid, 0), 2 * ctx.max_wait)
    ex.send(build("RJT", sid, packet_no=0), addr)
    _gives_up(ctx, client, client.runtime_s + ctx.max_wait + 1.0, "the server answered RJT")


# ------------------------------------------------------------------------- ordering and sessions
def stale_acc(ctx: TestContext) -> None:
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 150_000)
    addr, sid, total = _conn(ctx, ex)

    def confuse(number, first):
        if number == 0 and first:
            ex.send(build("CONACC", sid), addr)                      # a repeated CONACC
        if number == 1 and first:
            ex.send(build("ACC", sid, packet_no=0), addr)            # an old ACC
            ex.send(build("CONACC", sid), addr)
            ex.quiet(ctx.max_wait / 2, lambda r: matches(r, "DATA", sid) and parse(r).packet_no >= 2,
                     "ppcbc went on before ACC 1 came (it took an old ACC 0 or a repeated CONACC for it)")
        return True
    got = _serve(ctx, ex, addr, sid, total, confuse)
    _finishes(ctx, client, got, data)


class _GaveUp(Exception):
    """The client ended while wirelab's server played its part."""


def foreign_acc(ctx: TestContext) -> None:
    ex = Exchange(ctx, ctx.listener("udp"))
    data, client = _input(ctx, 150_000)
    addr, sid, total = _conn(ctx, ex)

    def foreign(number, first):
        if number == 0 and first:
            ex.send(build("ACC", OTHER, packet_no=0), addr)
            ex.quiet(ctx.max_wait / 2, lambda r: matches(r, "DATA", sid) and parse(r).packet_no >= 1,
                     f"ppcbc took an ACC of session {OTHER.hex()} for its own")
            if client.poll() is not None:
                raise _GaveUp
        return True
    try:
        got = _serve(ctx, ex, addr, sid, total, foreign)
    except _GaveUp:
        _gives_up(ctx, client, client.runtime_s, f"an ACC of session {OTHER.hex()} came")
        take(ctx, "foreign_at_client", "error")
        return
    take(ctx, "foreign_at_client", "ignore")
    _finishes(ctx, client, got, data)


CLIENT_SCENARIOS = {
    "silent_server": silent_server, "server_stops": server_stops, "lost_acc": lost_acc, "conrjt": conrjt,
    "rjt": rjt, "stale_acc": stale_acc, "foreign_acc": foreign_acc,
}
