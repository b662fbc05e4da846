"""The moves a misbehaving client is made of: open a session, send DATA, wait for RCVD, over udp or tcp.

A move waits only for what it needs to go on (CONACC before DATA, udpr's ACC
before the next DATA) and raises ``Failed`` naming what came instead.
"""
from __future__ import annotations

import time

from .. import transports
from ..transfer import make_data
from ..wire.ppcb import PROTOCOL_IDS
from .exchange import Exchange, Failed
from .packets import SID, build, matches, read_stream, show
from .stage import Stage, delivered_after, kit_client

__all__ = ["reply_s", "open_session", "send_data", "finish", "tcp_open", "tcp_expect_rjt", "expect_closed",
           "free_again"]


def reply_s(stage: Stage) -> float:
    """How long an answer that needs no timer may take (the server may be busy printing)."""
    return max(2 * stage.max_wait, 1.0)


def open_session(stage: Stage, total: int, sid: bytes = SID) -> Exchange:
    """A UDP client on host a with a session the server accepted (CONN, then CONACC)."""
    ex = Exchange(stage, stage.udp("a"), stage.server_address)
    ex.send(build("CONN", sid, protocol_id=PROTOCOL_IDS[stage.proto], total_length=total))
    ex.expect(f"CONACC for session {sid.hex()}", lambda r: matches(r, "CONACC", sid), reply_s(stage))
    return ex


def send_data(ex: Exchange, stage: Stage, number: int, body: bytes, sid: bytes = SID) -> None:
    """Send DATA ``number``; for udpr wait for its ACC."""
    ex.send(build("DATA", sid, body, packet_no=number))
    if transports.get(stage.proto).acked:
        ex.expect(f"ACC for packet {number}", lambda r: matches(r, "ACC", sid, number), reply_s(stage))


def finish(ex: Exchange, stage: Stage, sid: bytes = SID) -> None:
    ex.expect("RCVD after the last DATA", lambda r: matches(r, "RCVD", sid), reply_s(stage))


def tcp_open(stage: Stage, conn, total: int) -> None:
    """CONN on a TCP connection, then CONACC."""
    conn.sendall(build("CONN", SID, protocol_id=PROTOCOL_IDS["tcp"], total_length=total))
    raw, closed = read_stream(conn, reply_s(stage))
    if raw is None or not matches(raw, "CONACC", SID):
        raise Failed(f"expected CONACC for session {SID.hex()}, got {show(raw)}"
                     + (" and the connection was closed" if closed else ""))


def tcp_expect_rjt(stage: Stage, conn, what: str, number: int | tuple[int, ...] | None = None) -> bytes:
    """RJT (for ``number``, or any of several) and then the connection closed: the RJT's bytes."""
    numbers = (number,) if isinstance(number, int) or number is None else number
    raw, closed = read_stream(conn, reply_s(stage))
    if raw is None or not any(matches(raw, "RJT", packet_no=n) for n in numbers):
        wanted = f" for packet {' or '.join(map(str, numbers))}" if number is not None else ""
        raise Failed(f"expected RJT{wanted} after {what}, "
                     f"got {show(raw)}" + (" and the connection was closed" if closed else ""))
    expect_closed(stage, conn, f"answered RJT to {what}")
    return raw


def expect_closed(stage: Stage, conn, did: str) -> None:
    _, closed = read_stream(conn, reply_s(stage))
    if not closed:
        raise Failed(f"ppcbs {did} but kept the connection open (it must close it)")


def free_again(stage: Stage, server, within_s: float, why: str, *, earlier=()) -> float:
    """Seconds until the kit's client is served after a client ``why`` (the server refuses others until it
    drops that session: ``measured["free_again_after_s"]``); it must be by ``within_s``. The server's
    output must end with the bytes sent (after nothing, or after one of ``earlier``)."""
    start, data = time.monotonic(), make_data(1000, seed=11)
    while True:                              # poll: the server must be free again
        result = kit_client(stage, data).result()
        if result.ok or time.monotonic() - start > within_s:
            break
        time.sleep(0.05)                     # poll step: refused (CONRJT) at once, ask again soon
    if not result.ok:
        raise Failed(f"{time.monotonic() - start:.1f} s after a client {why} (MAX_WAIT is {stage.max_wait:g} s) "
                     f"ppcbs still refused the next one: {result.error}")
    took = stage.measured["free_again_after_s"] = round(time.monotonic() - start, 2)
    if earlier:
        delivered_after(stage, server, data, earlier)
    else:
        stage.delivered(server, data)
    return took
