"""Misbehaving tcp clients against the student's server: wrong session, type or length, junk,
a client that dies, a second client while the first is served (notebooks/ppcb-protocol.md, "tcp server").

A wrong DATA must get RJT and the connection closed; whatever happens, the
next client is served.
"""
from __future__ import annotations

from ..transfer import make_data, send_tcp
from .context import Failed, TestContext
from .packets import build, matches, read_stream_packet, show
from .readings import take
from .scenarios_server import OTHER, SID, _expect_closed, _next_client_served, _reply_s, tcp_conn, tcp_expect_rjt
from .transfers import check_output

__all__ = ["TCP_SCENARIOS", "tcp_conn", "tcp_expect_rjt"]


def tcp_foreign_session(ctx: TestContext) -> None:
    _rejects(ctx, build("DATA", OTHER, packet_no=0, data=b"x" * 1000), 2000,
                 "a DATA of another session")


def tcp_wrong_type(ctx: TestContext) -> None:
    wrong = bytearray(build("DATA", SID, packet_no=0, data=b"x" * 10))
    wrong[0] = 9                               # DATA-shaped, with a type no packet has
    _answers(ctx, bytes(wrong), 1000, "a packet of type 9 where DATA was expected", "unknown_type_tcp",
             {"RJT": "rjt", None: "close"})


def tcp_bad_length(ctx: TestContext) -> None:
    body = b"y" * 200
    _answers(ctx, build("DATA", SID, packet_no=0, data=body), 100, "a 200-byte DATA when CONN announced 100 B "
             "in all", "overlong_tcp", {"RJT": "rjt", None: "close", "RCVD": "rcvd"},
             written={"rcvd": [body[:100], body]})


def tcp_garbage(ctx: TestContext) -> None:
    server = ctx.start_server()
    for blob in (b"", b"\xff" * 30, build("CONN", SID, protocol_id=1, total_length=5)[:10],
                 build("CONN", SID, protocol_id=2, total_length=5)):
        with ctx.tcp("a") as conn:
            conn.sendall(blob)
            if not matches(blob, "CONN"):
                try:
                    conn.shutdown(1)              # junk, then EOF: the server must give up on it
                except OSError:
                    pass                          # it already hung up: fine too
            read_stream_packet(conn, ctx.max_wait + 1.0)
    _next_client_served(ctx, server)


def tcp_busy(ctx: TestContext) -> None:
    server = ctx.start_server()
    first_body, second_body = make_data(1000, seed=8), make_data(1500, seed=9)
    with ctx.tcp("a") as first:
        tcp_conn(ctx, first, len(first_body))
        second = ctx.in_host("a", _send_tcp_patient, ctx, second_body)
        ctx.wait_connections(2)                   # the second client is connected, queued behind the first
        first.sendall(build("DATA", SID, packet_no=0, data=first_body))
        raw, _ = read_stream_packet(first, _reply_s(ctx))
        if raw is None or not matches(raw, "RCVD", SID):
            raise Failed(f"expected RCVD for the first client, got {show(raw)}")
    result = second.result()
    if not result.ok:
        raise Failed(f"a second client that connected while the first was served failed: {result.error}")
    check_output(ctx, server, first_body + second_body)


def _send_tcp_patient(ctx, data):
    host, port = ctx.server_address
    return send_tcp(host, port, data, max_wait=ctx.max_wait * 4, chunk=ctx.assignment.chunk)


def tcp_client_dies(ctx: TestContext) -> None:
    server = ctx.start_server()
    body = make_data(3000, seed=10)
    with ctx.tcp("a") as conn:
        tcp_conn(ctx, conn, len(body))
        conn.sendall(build("DATA", SID, packet_no=0, data=body[:1000]))
    _next_client_served(ctx, server, earlier=[body[:1000]])


# ------------------------------------------------------------------------- helpers
def _rejects(ctx: TestContext, bad: bytes, total: int, what: str) -> None:
    server = ctx.start_server()
    with ctx.tcp("a") as conn:
        tcp_conn(ctx, conn, total)
        conn.sendall(bad)
        tcp_expect_rjt(ctx, conn, what)
    _next_client_served(ctx, server)


def _answers(ctx: TestContext, bad: bytes, total: int, what: str, point: str, forms: dict,
             written: dict | None = None) -> None:
    """Send ``bad`` after CONN; the answer (a packet kind, or None: closed silently) must be one of
    ``forms``' readings of ``point``, followed by the connection closed; then the next client is served
    (``written[form]``: what that reading may have put on stdout before)."""
    server = ctx.start_server()
    with ctx.tcp("a") as conn:
        tcp_conn(ctx, conn, total)
        conn.sendall(bad)
        raw, closed = read_stream_packet(conn, _reply_s(ctx))
        kind = next((k for k in forms if k and raw is not None and matches(raw, k, SID if k == "RCVD" else None)),
                    None if raw is None and closed else "?")
        if kind == "?":
            answers = " or ".join(k or "the connection closed" for k in forms)
            raise Failed(f"expected {answers} after {what}, got {show(raw)}"
                         + (" and the connection was closed" if closed else ""))
        take(ctx, point, forms[kind])
        if kind is not None:
            _expect_closed(ctx, conn, f"answered {kind} to {what}")
    _next_client_served(ctx, server, earlier=(written or {}).get(forms[kind], []))


TCP_SCENARIOS = {
    "tcp_foreign_session": tcp_foreign_session, "tcp_wrong_type": tcp_wrong_type, "tcp_bad_length": tcp_bad_length,
    "tcp_garbage": tcp_garbage, "tcp_busy": tcp_busy, "tcp_client_dies": tcp_client_dies,
}
