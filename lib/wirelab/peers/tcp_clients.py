"""Misbehaving tcp clients against a server: wrong session, type or length, junk, silence, a client that
dies, a second client while the first is served (ppcb.md, "tcp server").

A wrong DATA must get RJT and the connection closed; whatever happens, the
next client is served. Each play returns what it saw that a table may show.
"""
from __future__ import annotations

import time

from ..transfer import make_data
from .exchange import Failed
from .moves import expect_closed, reply_s, tcp_expect_rjt, tcp_open
from .packets import OTHER, SID, build, matches, parse, read_stream, show
from .stage import Stage, kit_client, next_client_served

__all__ = ["out_of_order_tcp", "silent_client_tcp", "tcp_foreign_session", "tcp_wrong_type", "tcp_bad_length",
           "tcp_garbage", "tcp_busy", "tcp_client_dies"]


def out_of_order_tcp(stage: Stage) -> dict:
    """DATA 0, then DATA 2: RJT (for 2, or 1), the connection closed; then the next client is served."""
    server = stage.start_server()
    body = make_data(3000, seed=4)
    with stage.tcp("a") as conn:
        tcp_open(stage, conn, len(body))
        conn.sendall(build("DATA", SID, body[:1000], packet_no=0) + build("DATA", SID, body[2000:], packet_no=2))
        raw = tcp_expect_rjt(stage, conn, "DATA 2 after DATA 0", number=(2, 1))
    stage.take("rjt_number", "received" if parse(raw).packet_no == 2 else "expected")
    next_client_served(stage, server, earlier=[body[:1000]])
    return {}


def silent_client_tcp(stage: Stage) -> dict:
    """A connection that says nothing: the server closes it after MAX_WAIT, then serves the next client."""
    server = stage.start_server()
    wait = stage.max_wait
    with stage.tcp("a") as conn:
        start = time.monotonic()
        raw, closed = read_stream(conn, wait + 1.5)
        if not closed:
            raise Failed(f"a client that sends nothing was still connected {time.monotonic() - start:.1f} s "
                         f"later (MAX_WAIT is {wait:g} s)" + (f"; ppcbs sent {show(raw)}" if raw else ""))
    next_client_served(stage, server)
    return {"replies_to_peer": [] if raw is None else [show(raw)]}


def tcp_foreign_session(stage: Stage) -> dict:
    """A DATA of another session on the connection: RJT, and the connection closed."""
    _rejects(stage, build("DATA", OTHER, b"x" * 1000, packet_no=0), 2000, "a DATA of another session")
    return {"rjt_to_intruder": 1, "connection_closed": True}


def tcp_wrong_type(stage: Stage) -> dict:
    """A DATA-shaped packet of a type no packet has: RJT, or the connection closed without an answer."""
    wrong = bytearray(build("DATA", SID, b"x" * 10, packet_no=0))
    wrong[0] = 9                               # DATA-shaped, with a type no packet has
    _answers(stage, bytes(wrong), 1000, "a packet of type 9 where DATA was expected", "unknown_type_tcp",
             {"RJT": "rjt", None: "close"})
    return {}


def tcp_bad_length(stage: Stage) -> dict:
    """A DATA longer than what CONN announced: RJT, closed, or the announced bytes taken and RCVD."""
    body = b"y" * 200
    _answers(stage, build("DATA", SID, body, packet_no=0), 100, "a 200-byte DATA when CONN announced 100 B "
             "in all", "overlong_tcp", {"RJT": "rjt", None: "close", "RCVD": "rcvd"},
             written={"rcvd": [body[:100], body]})
    return {}


def tcp_garbage(stage: Stage) -> dict:
    """Connections carrying junk (nothing, noise, a cut CONN, a udp CONN), then EOF: the server lives on."""
    server = stage.start_server()
    for blob in (b"", b"\xff" * 30, build("CONN", SID, protocol_id=1, total_length=5)[:10],
                 build("CONN", SID, protocol_id=2, total_length=5)):
        with stage.tcp("a") as conn:
            conn.sendall(blob)
            if not matches(blob, "CONN"):
                try:
                    conn.shutdown(1)              # junk, then EOF: the server must give up on it
                except OSError:
                    pass                          # it already hung up: fine too
            read_stream(conn, stage.max_wait + 1.0)
    next_client_served(stage, server)
    return {}


def tcp_busy(stage: Stage) -> dict:
    """A second client connects while the first is served: it waits its turn, then is served too."""
    server = stage.start_server()
    first_body, second_body = make_data(1000, seed=8), make_data(1500, seed=9)
    got = []
    with stage.tcp("a") as first:
        tcp_open(stage, first, len(first_body))
        got.append("CONACC")
        second = kit_client(stage, second_body, patience=4)
        stage.wait_connections(2)                 # the second client is connected, queued behind the first
        waited = not second.done()
        first.sendall(build("DATA", SID, first_body, packet_no=0))
        raw, _ = read_stream(first, reply_s(stage))
        if raw is None or not matches(raw, "RCVD", SID):
            raise Failed(f"expected RCVD for the first client, got {show(raw)}")
        got.append("RCVD")
    result = second.result()
    if not result.ok:
        raise Failed(f"a second client that connected while the first was served failed: {result.error}")
    stage.delivered(server, first_body + second_body)
    return {"first_client_got": got, "second_waited": waited, "second_completed": True}


def tcp_client_dies(stage: Stage) -> dict:
    """CONN and DATA 0 of three, then the connection closed: the next client is served."""
    server = stage.start_server()
    body = make_data(3000, seed=10)
    with stage.tcp("a") as conn:
        tcp_open(stage, conn, len(body))
        conn.sendall(build("DATA", SID, body[:1000], packet_no=0))
    next_client_served(stage, server, earlier=[body[:1000]])
    return {}


# ------------------------------------------------------------------------- helpers
def _rejects(stage: Stage, bad: bytes, total: int, what: str) -> None:
    server = stage.start_server()
    with stage.tcp("a") as conn:
        tcp_open(stage, conn, total)
        conn.sendall(bad)
        tcp_expect_rjt(stage, conn, what)
    next_client_served(stage, server)


def _answers(stage: Stage, bad: bytes, total: int, what: str, point: str, forms: dict,
             written: dict | None = None) -> None:
    """Send ``bad`` after CONN; the answer (a packet kind, or None: closed silently) must be one of
    ``forms``' readings of ``point``, followed by the connection closed; then the next client is served
    (``written[form]``: what that reading may have put on the server's output before)."""
    server = stage.start_server()
    with stage.tcp("a") as conn:
        tcp_open(stage, conn, total)
        conn.sendall(bad)
        raw, closed = read_stream(conn, reply_s(stage))
        kind = next((k for k in forms if k and raw is not None and matches(raw, k, SID if k == "RCVD" else None)),
                    None if raw is None and closed else "?")
        if kind == "?":
            answers = " or ".join(k or "the connection closed" for k in forms)
            raise Failed(f"expected {answers} after {what}, got {show(raw)}"
                         + (" and the connection was closed" if closed else ""))
        stage.take(point, forms[kind])
        if kind is not None:
            expect_closed(stage, conn, f"answered {kind} to {what}")
    next_client_served(stage, server, earlier=(written or {}).get(forms[kind], []))
