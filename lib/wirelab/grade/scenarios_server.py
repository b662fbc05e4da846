"""Misbehaving clients against the student's server (ppcbs on host b): crafted packets from host a.

Each scenario plays one or two clients by hand with packets built by the
scapy layer, checks the server's answers against notebooks/ppcb-protocol.md, and then,
where the specification says the server goes on, lets wirelab's own client
prove it does ("the next client is served"). Over udp and udpr here; the
tcp-only ones are in scenarios_tcp.py.
"""
from __future__ import annotations

import time

from ..transfer import make_data
from ..wire.ppcb import DATA_HEADER, HEADER_BYTES, PROTOCOL_IDS
from .context import Failed, TestContext
from .packets import Exchange, build, matches, parse, read_stream_packet, show
from .readings import take
from .transfers import check_output, send

__all__ = ["SERVER_SCENARIOS", "tcp_conn", "tcp_expect_rjt"]

SID, OTHER = b"GRADER-A", b"GRADER-B"
PROTO_ID = {"tcp": 1, "udp": 2, "udpr": 3}


def _reply_s(ctx: TestContext) -> float:
    """How long an answer that needs no timer may take (the server may be busy printing)."""
    return max(2 * ctx.max_wait, 1.0)


def _open(ctx: TestContext, total: int, sid: bytes = SID) -> Exchange:
    """A UDP client on host a with a session accepted by the student's server."""
    ex = Exchange(ctx, ctx.udp("a"), ctx.server_address)
    ex.send(build("CONN", sid, protocol_id=PROTO_ID[ctx.test.proto], total_length=total))
    ex.expect(f"CONACC for session {sid.hex()}", lambda r: matches(r, "CONACC", sid), _reply_s(ctx))
    return ex


def _data(ex: Exchange, ctx: TestContext, number: int, body: bytes, sid: bytes = SID) -> None:
    """Send DATA ``number``; for udpr wait for its ACC."""
    ex.send(build("DATA", sid, packet_no=number, data=body))
    if ctx.test.proto == "udpr":
        ex.expect(f"ACC for packet {number}", lambda r: matches(r, "ACC", sid, number), _reply_s(ctx))


def _finish(ex: Exchange, ctx: TestContext, sid: bytes = SID) -> None:
    ex.expect("RCVD after the last DATA", lambda r: matches(r, "RCVD", sid), _reply_s(ctx))


def _next_client_served(ctx: TestContext, server, size: int = 2000, *, earlier: list[bytes] = ()) -> None:
    """wirelab's client must complete a transfer; stdout must end with its bytes (``earlier``: what
    may come before them)."""
    data = make_data(size, seed=size)
    result = send(ctx, data)
    if not result.ok:
        raise Failed(f"the next client was not served: wirelab's client says {result.error}")
    for offset in sorted({len(e) for e in earlier} | {0}):
        try:
            check_output(ctx, server, data, offset=offset)
            return
        except Failed as err:
            last = err
    raise Failed(f"after the misbehaving client, {last}")


# ------------------------------------------------------------------------- sessions
def foreign_conn(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(2000, seed=1)
    served = _open(ctx, len(body))
    intruder = Exchange(ctx, ctx.udp("a"), ctx.server_address)
    intruder.send(build("CONN", OTHER, protocol_id=3, total_length=10))
    intruder.expect(f"CONRJT for session {OTHER.hex()} (a CONN while busy)",
                    lambda r: matches(r, "CONRJT", OTHER), _reply_s(ctx))
    _data(served, ctx, 0, body[:1000])
    _data(served, ctx, 1, body[1000:])
    _finish(served, ctx)
    check_output(ctx, server, body)


def foreign_data(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(2000, seed=2)
    served = _open(ctx, len(body))
    _data(served, ctx, 0, body[:1000])
    intruder = Exchange(ctx, ctx.udp("a"), ctx.server_address)
    intruder.send(build("DATA", OTHER, packet_no=0, data=b"not yours"))
    raw, _ = intruder.expect(f"RJT for session {OTHER.hex()}, packet 0 (or 1, the number the server expects), "
                             "sent to the intruder", lambda r: matches(r, "RJT", OTHER, 0) or matches(r, "RJT", OTHER, 1),
                             _reply_s(ctx))
    if parse(raw).packet_no == 1:
        take(ctx, "rjt_number", "expected")
    _data(served, ctx, 1, body[1000:])
    _finish(served, ctx)
    check_output(ctx, server, body)


def duplicate_conn(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(1000, seed=3)
    ex = _open(ctx, len(body))
    ex.send(build("CONN", SID, protocol_id=3, total_length=len(body)))
    ex.quiet(ctx.max_wait / 2, lambda r: matches(r, "CONRJT"), "a repeated CONN of the served session "
             "must be ignored")
    _data(ex, ctx, 0, body)
    _finish(ex, ctx)
    check_output(ctx, server, body)


# ------------------------------------------------------------------------- over tcp (scenarios_tcp too)
def tcp_conn(ctx: TestContext, conn, total: int) -> None:
    conn.sendall(build("CONN", SID, protocol_id=PROTOCOL_IDS["tcp"], total_length=total))
    raw, closed = read_stream_packet(conn, _reply_s(ctx))
    if raw is None or not matches(raw, "CONACC", SID):
        raise Failed(f"expected CONACC for session {SID.hex()}, got {show(raw)}"
                     + (" and the connection was closed" if closed else ""))


def tcp_expect_rjt(ctx: TestContext, conn, what: str, number: int | tuple[int, ...] | None = None) -> bytes:
    """RJT (for ``number``, or any of several) and then the connection closed: the RJT's bytes."""
    numbers = (number,) if isinstance(number, int) or number is None else number
    raw, closed = read_stream_packet(conn, _reply_s(ctx))
    if raw is None or not any(matches(raw, "RJT", packet_no=n) for n in numbers):
        wanted = f" for packet {' or '.join(map(str, numbers))}" if number is not None else ""
        raise Failed(f"expected RJT{wanted} after {what}, "
                     f"got {show(raw)}" + (" and the connection was closed" if closed else ""))
    _expect_closed(ctx, conn, f"answered RJT to {what}")
    return raw


def _expect_closed(ctx: TestContext, conn, did: str) -> None:
    _, closed = read_stream_packet(conn, _reply_s(ctx))
    if not closed:
        raise Failed(f"ppcbs {did} but kept the connection open (it must close it)")


# ------------------------------------------------------------------------- ordering
def out_of_order(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(3000, seed=4)
    if ctx.test.proto == "tcp":
        with ctx.tcp("a") as conn:
            tcp_conn(ctx, conn, len(body))
            conn.sendall(build("DATA", SID, packet_no=0, data=body[:1000])
                         + build("DATA", SID, packet_no=2, data=body[2000:]))
            raw = tcp_expect_rjt(ctx, conn, "DATA 2 after DATA 0", number=(2, 1))
    else:
        ex = _open(ctx, len(body))
        _data(ex, ctx, 0, body[:1000])
        ex.send(build("DATA", SID, packet_no=2, data=body[2000:]))
        raw, _ = ex.expect("RJT for packet 2 (or 1, the packet expected)",
                           lambda r: matches(r, "RJT", SID, 2) or matches(r, "RJT", SID, 1), _reply_s(ctx),
                           after=" (DATA 2 came after DATA 0: packet 1 is missing)")
    take(ctx, "rjt_number", "received" if parse(raw).packet_no == 2 else "expected")
    _next_client_served(ctx, server, earlier=[body[:1000]])


def duplicate_data(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(2000, seed=5)
    ex = _open(ctx, len(body))
    _data(ex, ctx, 0, body[:1000])
    ex.send(build("DATA", SID, packet_no=0, data=body[:1000]))
    ex.quiet(ctx.max_wait / 2, lambda r: matches(r, "RJT"), "a duplicate DATA 0 must be ignored")
    _data(ex, ctx, 1, body[1000:])
    _finish(ex, ctx)
    check_output(ctx, server, body)


def resends_acc(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(2000, seed=6)
    ex = _open(ctx, len(body))
    _data(ex, ctx, 0, body[:1000])
    acked = time.monotonic()
    ex.send(build("DATA", SID, packet_no=0, data=body[:1000]))      # "ACC 0 was lost": resend, then wait
    ex.expect("ACC 0 again (the client resent DATA 0 and then waited: the server resends its last ACC "
              "after MAX_WAIT)", lambda r: matches(r, "ACC", SID, 0) or matches(r, "RJT"),
              2 * ctx.max_wait + 0.5)
    if matches(ex.seen[-1][1], "RJT"):
        raise Failed(f"a duplicate DATA 0 got {show(ex.seen[-1][1])}; duplicates are ignored in udpr")
    ctx.measured["acc_resent_after_s"] = round(ex.seen[-1][0] - acked, 3)
    _data(ex, ctx, 1, body[1000:])
    _finish(ex, ctx)
    check_output(ctx, server, body)


# ------------------------------------------------------------------------- validation
def udp_bad_length(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(1000, seed=12)
    ex = _open(ctx, len(body))
    ex.send(build("DATA", SID, packet_no=0, data_len=99, data=b"abc"))
    got = ex.receive(ctx.max_wait / 2)         # an RJT needs no timer: it comes at once, or not at all
    if got is None:                            # dropped as junk: the session must go on
        take(ctx, "malformed_data", "ignore")
        _data(ex, ctx, 0, body)
        _finish(ex, ctx)
        check_output(ctx, server, body)
        return
    if not matches(got[0], "RJT", SID):
        raise Failed(f"a DATA whose data_len says 99 B but carries 3 got {show(got[0])} (expected RJT, or no "
                     "answer if it is dropped as junk)")
    take(ctx, "malformed_data", "rjt")
    _next_client_served(ctx, server)


def udp_garbage(ctx: TestContext) -> None:
    server = ctx.start_server()
    junk = [b"", b"\x00", b"\xff" * 30,
            build("CONN", SID, protocol_id=3, total_length=5)[:HEADER_BYTES["CONN"] - 1],
            build("DATA", SID, packet_no=0, data=b"abc")[:DATA_HEADER], build("ACC", SID, packet_no=0) + b"tail",
            build(9, SID), make_data(200, seed=7)]
    ex = Exchange(ctx, ctx.udp("a"), ctx.server_address)
    for blob in junk:                          # queued at the server before the next client's CONN
        ex.send(blob)
    if server.poll() is not None:
        raise Failed(f"ppcbs {server.describe_exit()} after junk datagrams")
    _next_client_served(ctx, server)


# ------------------------------------------------------------------------- timeouts and robustness
def silent_client(ctx: TestContext) -> None:
    server = ctx.start_server()
    proto, wait = ctx.test.proto, ctx.max_wait
    if proto == "tcp":
        with ctx.tcp("a") as conn:
            start = time.monotonic()
            raw, closed = read_stream_packet(conn, wait + 1.5)
            if not closed:
                raise Failed(f"a client that sends nothing was still connected {time.monotonic() - start:.1f} s "
                             f"later (MAX_WAIT is {wait:g} s)" + (f"; ppcbs sent {show(raw)}" if raw else ""))
    elif proto == "udp":
        _open(ctx, 1000)
        start, data = time.monotonic(), make_data(1000, seed=11)
        while True:                              # poll: the server must be free again after MAX_WAIT
            result = send(ctx, data)
            if result.ok or time.monotonic() - start > 2 * wait + 0.5:
                break
            time.sleep(0.05)                     # poll step: refused (CONRJT) at once, ask again soon
        if not result.ok:
            raise Failed(f"{time.monotonic() - start:.1f} s after a client fell silent (MAX_WAIT is {wait:g} s) "
                         f"ppcbs still refused the next one: {result.error}")
        ctx.measured["free_again_after_s"] = round(time.monotonic() - start, 2)
        check_output(ctx, server, data)
        return
    else:
        ex = _open(ctx, 1000)
        first = ex.seen[-1][0]
        end = first + ctx.assignment.give_up_s + wait / 2
        while ex.receive(end - time.monotonic()) is not None:
            pass
        times = [t for t, raw, _ in ex.seen if matches(raw, "CONACC", SID)]
        gaps = [b - a for a, b in zip(times, times[1:])]
        resends = len(times) - 1
        if not 1 <= resends <= ctx.retransmits:
            raise Failed(f"after CONN and then silence, ppcbs resent CONACC {resends} times within "
                         f"{end - first:.1f} s (expected 1 to MAX_RETRANSMITS = {ctx.retransmits}, MAX_WAIT apart)")
        if resends >= ctx.retransmits - 1:
            take(ctx, "resend_count", "plus" if resends == ctx.retransmits else "total")
        if min(gaps) < wait / 2:
            raise Failed(f"CONACC was resent {min(gaps):.2f} s after the previous one (MAX_WAIT is {wait:g} s)")
        ctx.measured["conacc_resends"] = resends
    _next_client_served(ctx, server)


SERVER_SCENARIOS = {
    "foreign_conn": foreign_conn, "foreign_data": foreign_data, "duplicate_conn": duplicate_conn,
    "out_of_order": out_of_order, "duplicate_data": duplicate_data, "resends_acc": resends_acc,
    "udp_bad_length": udp_bad_length, "udp_garbage": udp_garbage, "silent_client": silent_client,
}
