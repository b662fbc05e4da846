"""Misbehaving servers against a client: the kit plays the server on host b, by hand.

Each play binds the server's port on host b itself and answers with crafted
packets: silence, CONRJT, RJT, a withheld ACC, stale and foreign ACCs. The
client under test must then give up within its bounds (``stage.gives_up``:
the grader judges ``ERROR: ...`` and the exit status, the lab measures the
time), or carry on and finish (``stage.finishes``).
"""
from __future__ import annotations

import time

from .. import transports
from ..transfer import make_data
from .exchange import Exchange, Failed
from .packets import OTHER, build, matches, parse, read_stream, session_of
from .stage import Stage

__all__ = ["silent_server", "server_stops", "lost_acc", "conrjt", "rjt", "stale_acc", "foreign_acc"]


def _client(stage: Stage, size: int):
    data = make_data(size, seed=stage.seed)
    return data, stage.start_client(data)


def _accept(listener, timeout: float = 2.0):
    listener.settimeout(timeout)
    try:
        return listener.accept()[0]
    except OSError:
        raise Failed(f"ppcbc did not connect to the tcp server within {timeout:g} s") from None
    finally:
        listener.close()


def _conn(stage: Stage, ex: Exchange):
    """The client's CONN: (address, session id, total_length)."""
    raw, addr = ex.expect("CONN from ppcbc", lambda r: matches(r, "CONN"), max(2 * stage.max_wait, 2.0))
    packet = parse(raw)
    return addr, packet.session_id, packet.total_length


def _serve(stage: Stage, ex: Exchange, addr, sid: bytes, total: int, before_acc=None) -> bytes:
    """Play a correct udpr server from CONACC to RCVD; ``before_acc(number, first_time)`` may return
    False to withhold that ACC (the client must resend). Returns the bytes delivered."""
    ex.send(build("CONACC", sid), addr)
    got, expected, seen = bytearray(), 0, set()
    while len(got) < total:
        raw, _ = ex.expect(f"DATA {expected}", lambda r: matches(r, "DATA", sid), stage.give_up_s + 1.0)
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


def _finishes(stage: Stage, client, got: bytes, data: bytes) -> None:
    stage.finishes(client)
    if got != data:
        raise Failed(f"the server received {len(got)} B that differ from the {len(data)} B of input")


def _counted(stage: Stage, sends: int, what: str, to: str) -> None:
    """``sends`` of one packet to a peer that never answers: 1 + MAX_RETRANSMITS, or MAX_RETRANSMITS in
    all (the reading ``resend_count``)."""
    forms = {1 + stage.retransmits: "plus", stage.retransmits: "total"}
    if sends not in forms:
        raise Failed(f"ppcbc sent {what} {sends} times to {to} (expected one send plus MAX_RETRANSMITS = "
                     f"{stage.retransmits} resends, or {stage.retransmits} sends in all)")
    stage.take("resend_count", forms[sends])


# ------------------------------------------------------------------------- timeouts
def silent_server(stage: Stage) -> dict:
    """A server that never answers: tcp accepts and reads CONN; udp takes every datagram. The client
    gives up (udpr after resending CONN, MAX_WAIT apart)."""
    proto, wait = stage.proto, stage.max_wait
    if transports.get(proto).stream:
        listener = stage.listener("tcp")
        data, client = _client(stage, 1000)
        conn = _accept(listener)                 # accept, read CONN, never answer
        with conn:
            read_stream(conn, 1.0)
            stage.gives_up(client, wait + 1.5, "the server never sent CONACC")
        return {}
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 1000)
    resends = transports.get(proto).retransmits
    tries = 1 + stage.retransmits if resends else 1
    bound = wait * tries + 1.5
    while client.poll() is None and client.runtime_s < bound:
        ex.receive(0.05)
    conns = [t for t, raw, _ in ex.seen if matches(raw, "CONN")]
    stage.gives_up(client, bound, "nobody answered its CONN")
    if resends:
        _counted(stage, len(conns), "CONN", "a silent server")
    elif len(conns) != 1:
        raise Failed(f"ppcbc sent CONN {len(conns)} times to a silent server (expected 1: one send, no resend)")
    gaps = [b - a for a, b in zip(conns, conns[1:])]
    if gaps and min(gaps) < wait / 2:
        raise Failed(f"ppcbc resent CONN {min(gaps):.2f} s after the previous one (MAX_WAIT is {wait:g} s)")
    return {"conns": len(conns)}


def server_stops(stage: Stage) -> dict:
    """CONACC and ACC 0, then silence: the client resends DATA 1, then gives up."""
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 100_000)
    addr, sid, total = _conn(stage, ex)
    ex.send(build("CONACC", sid), addr)
    raw, _ = ex.expect("DATA 0", lambda r: matches(r, "DATA", sid, 0), 2 * stage.max_wait)
    ex.send(build("ACC", sid, packet_no=0), addr)
    bound = client.runtime_s + stage.give_up_s + 1.5
    while client.poll() is None and client.runtime_s < bound:       # from now on: silence
        ex.receive(0.05)
    stage.gives_up(client, bound, "the server stopped answering after ACC 0")
    last = len(parse(raw).data)
    tries = [t for t, r, _ in ex.seen if matches(r, "DATA", sid, 1)]
    if last < total:
        _counted(stage, len(tries), "DATA 1", "a server that stopped answering")
    return {}


# ------------------------------------------------------------------------- retransmission
def lost_acc(stage: Stage) -> dict:
    """The first ACC 0 is withheld ("lost"): the client resends DATA 0 after MAX_WAIT, then finishes."""
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 3000)
    addr, sid, total = _conn(stage, ex)
    times = []

    def withhold_first(number, first):
        times.append(time.monotonic())
        return not (number == 0 and first)       # the first ACC 0 is "lost"
    got = _serve(stage, ex, addr, sid, total, withhold_first)
    gap = times[1] - times[0]
    if not stage.max_wait / 2 <= gap <= 2 * stage.max_wait + 0.5:
        raise Failed(f"ppcbc resent DATA 0 {gap:.2f} s after the first send (MAX_WAIT is {stage.max_wait:g} s)")
    stage.measured["data_resent_after_s"] = round(gap, 3)
    _finishes(stage, client, got, data)
    return {}


# ------------------------------------------------------------------------- errors
def conrjt(stage: Stage) -> dict:
    """CONRJT for the client's CONN: it gives up, and never sends CONN again."""
    if transports.get(stage.proto).stream:
        listener = stage.listener("tcp")
        data, client = _client(stage, 1000)
        conn = _accept(listener)
        with conn:
            raw, _ = read_stream(conn, 2.0)
            conn.sendall(build("CONRJT", session_of(raw)))
            stage.gives_up(client, client.runtime_s + stage.max_wait + 1.0, "the server answered CONRJT")
        return {}
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 1000)
    addr, sid, _ = _conn(stage, ex)
    refused = ex.send(build("CONRJT", sid), addr)
    stage.gives_up(client, client.runtime_s + stage.max_wait + 1.0, "the server answered CONRJT")
    while ex.receive(0.01) is not None:
        pass
    again = [t for t, raw, _ in ex.seen if t > refused + 0.05 and matches(raw, "CONN")]
    if again:
        raise Failed("ppcbc sent CONN again after CONRJT (a refusal is final)")
    return {}


def rjt(stage: Stage) -> dict:
    """RJT for DATA 0 (tcp: then the connection closed): the client gives up."""
    if transports.get(stage.proto).stream:
        listener = stage.listener("tcp")
        data, client = _client(stage, 5000)
        conn = _accept(listener)
        with conn:
            raw, _ = read_stream(conn, 2.0)
            sid = session_of(raw)
            conn.sendall(build("CONACC", sid))
            read_stream(conn, 2.0)
            conn.sendall(build("RJT", sid, packet_no=0))
        stage.gives_up(client, client.runtime_s + stage.max_wait + 1.0, "the server answered RJT and closed")
        return {}
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 5000)
    addr, sid, _ = _conn(stage, ex)
    ex.send(build("CONACC", sid), addr)
    ex.expect("DATA 0", lambda r: matches(r, "DATA", sid, 0), 2 * stage.max_wait)
    ex.send(build("RJT", sid, packet_no=0), addr)
    stage.gives_up(client, client.runtime_s + stage.max_wait + 1.0, "the server answered RJT")
    return {}


# ------------------------------------------------------------------------- ordering and sessions
def stale_acc(stage: Stage) -> dict:
    """A repeated CONACC and an old ACC 0 while DATA 1 waits for its ACC: the client must not go on."""
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 150_000)
    addr, sid, total = _conn(stage, ex)

    def confuse(number, first):
        if number == 0 and first:
            ex.send(build("CONACC", sid), addr)                      # a repeated CONACC
        if number == 1 and first:
            ex.send(build("ACC", sid, packet_no=0), addr)            # an old ACC
            ex.send(build("CONACC", sid), addr)
            ex.quiet(stage.max_wait / 2, lambda r: matches(r, "DATA", sid) and parse(r).packet_no >= 2,
                     "ppcbc went on before ACC 1 came (it took an old ACC 0 or a repeated CONACC for it)")
        return True
    got = _serve(stage, ex, addr, sid, total, confuse)
    _finishes(stage, client, got, data)
    return {}


class _GaveUp(Exception):
    """The client ended while the kit's server played its part."""


def foreign_acc(stage: Stage) -> dict:
    """An ACC of another session: the client ignores it and waits for its own, or gives up."""
    ex = Exchange(stage, stage.listener("udp"))
    data, client = _client(stage, 150_000)
    addr, sid, total = _conn(stage, ex)

    def foreign(number, first):
        if number == 0 and first:
            ex.send(build("ACC", OTHER, packet_no=0), addr)
            ex.quiet(stage.max_wait / 2, lambda r: matches(r, "DATA", sid) and parse(r).packet_no >= 1,
                     f"ppcbc took an ACC of session {OTHER.hex()} for its own")
            if client.poll() is not None:
                raise _GaveUp
        return True
    try:
        got = _serve(stage, ex, addr, sid, total, foreign)
    except _GaveUp:
        stage.gives_up(client, client.runtime_s, f"an ACC of session {OTHER.hex()} came")
        stage.take("foreign_at_client", "error")
        return {}
    stage.take("foreign_at_client", "ignore")
    _finishes(stage, client, got, data)
    return {}
