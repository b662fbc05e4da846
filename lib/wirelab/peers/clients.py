"""Misbehaving clients against a server over udp and udpr: crafted packets from host a.

Each play opens one or two sessions by hand, misbehaves, checks the server's
answers against ppcb.md ("udp server"), and, where the specification says the
server goes on, lets the kit's own client prove it does ("the next client is
served"). A play returns what it saw that a table may show (the lab's columns);
tcp's misbehaving clients are in ``tcp_clients``.
"""
from __future__ import annotations

import time

from .. import transports
from ..transfer import make_data
from ..transports.udpr import TRANSPORT as UDPR        # the crafted CONNs carry udpr's protocol id
from ..wire.ppcb import DATA_HEADER, HEADER_BYTES
from .exchange import Exchange, Failed
from .moves import finish, free_again, open_session, reply_s, send_data
from .packets import OTHER, SID, build, matches, parse, show
from .stage import Stage, next_client_served

__all__ = ["foreign_conn", "foreign_data", "duplicate_conn", "out_of_order_udp", "duplicate_data", "resends_acc",
           "udp_bad_length", "udp_garbage", "silent_client_udp", "client_dies_udp"]


# ------------------------------------------------------------------------- sessions
def foreign_conn(stage: Stage) -> dict:
    """While a session is served, a CONN of another: CONRJT to it at once; the served one completes."""
    server = stage.start_server()
    body = make_data(2000, seed=1)
    served = open_session(stage, len(body))
    intruder = Exchange(stage, stage.udp("a"), stage.server_address)
    intruder.send(build("CONN", OTHER, protocol_id=UDPR.protocol_id, total_length=10))
    intruder.expect(f"CONRJT for session {OTHER.hex()} (a CONN while busy)",
                    lambda r: matches(r, "CONRJT", OTHER), reply_s(stage))
    send_data(served, stage, 0, body[:1000])
    send_data(served, stage, 1, body[1000:])
    finish(served, stage)
    stage.delivered(server, body)
    return {"first_client_got": served.kinds(), "second_waited": False, "second_refused": True}


def foreign_data(stage: Stage) -> dict:
    """While a session is served, a DATA of another session: RJT to the intruder; the served one completes."""
    server = stage.start_server()
    body = make_data(2000, seed=2)
    served = open_session(stage, len(body))
    send_data(served, stage, 0, body[:1000])
    intruder = Exchange(stage, stage.udp("a"), stage.server_address)
    intruder.send(build("DATA", OTHER, b"not yours", packet_no=0))
    raw, _ = intruder.expect(f"RJT for session {OTHER.hex()}, packet 0 (or 1, the number the server expects), "
                             "sent to the intruder", lambda r: matches(r, "RJT", OTHER, 0) or matches(r, "RJT", OTHER, 1),
                             reply_s(stage))
    if parse(raw).packet_no == 1:
        stage.take("rjt_number", "expected")
    send_data(served, stage, 1, body[1000:])
    finish(served, stage)
    stage.delivered(server, body)
    return {"rjt_to_intruder": intruder.kinds().count("RJT"), "served_client_completed": True}


def duplicate_conn(stage: Stage) -> dict:
    """The served session's CONN again: ignored (no CONRJT)."""
    server = stage.start_server()
    body = make_data(1000, seed=3)
    ex = open_session(stage, len(body))
    ex.send(build("CONN", SID, protocol_id=UDPR.protocol_id, total_length=len(body)))
    ex.quiet(stage.max_wait / 2, lambda r: matches(r, "CONRJT"), "a repeated CONN of the served session "
             "must be ignored")
    send_data(ex, stage, 0, body)
    finish(ex, stage)
    stage.delivered(server, body)
    return {}


# ------------------------------------------------------------------------- ordering
def out_of_order_udp(stage: Stage) -> dict:
    """DATA 2 after DATA 0: RJT (for 2, or for 1, the one expected); then the next client is served."""
    server = stage.start_server()
    body = make_data(3000, seed=4)
    ex = open_session(stage, len(body))
    send_data(ex, stage, 0, body[:1000])
    ex.send(build("DATA", SID, body[2000:], packet_no=2))
    raw, _ = ex.expect("RJT for packet 2 (or 1, the packet expected)",
                       lambda r: matches(r, "RJT", SID, 2) or matches(r, "RJT", SID, 1), reply_s(stage),
                       after=" (DATA 2 came after DATA 0: packet 1 is missing)")
    stage.take("rjt_number", "received" if parse(raw).packet_no == 2 else "expected")
    next_client_served(stage, server, earlier=[body[:1000]])
    return {}


def duplicate_data(stage: Stage) -> dict:
    """DATA 0 twice: the second is ignored (no RJT)."""
    server = stage.start_server()
    body = make_data(2000, seed=5)
    ex = open_session(stage, len(body))
    send_data(ex, stage, 0, body[:1000])
    ex.send(build("DATA", SID, body[:1000], packet_no=0))
    ex.quiet(stage.max_wait / 2, lambda r: matches(r, "RJT"), "a duplicate DATA 0 must be ignored")
    send_data(ex, stage, 1, body[1000:])
    finish(ex, stage)
    stage.delivered(server, body)
    return {}


def resends_acc(stage: Stage) -> dict:
    """ACC 0 "lost": DATA 0 again, then nothing; the server resends ACC 0 after MAX_WAIT."""
    server = stage.start_server()
    body = make_data(2000, seed=6)
    ex = open_session(stage, len(body))
    send_data(ex, stage, 0, body[:1000])
    acked = time.monotonic()
    ex.send(build("DATA", SID, body[:1000], packet_no=0))      # "ACC 0 was lost": resend, then wait
    ex.expect("ACC 0 again (the client resent DATA 0 and then waited: the server resends its last ACC "
              "after MAX_WAIT)", lambda r: matches(r, "ACC", SID, 0) or matches(r, "RJT"),
              2 * stage.max_wait + 0.5)
    if matches(ex.seen[-1][1], "RJT"):
        raise Failed(f"a duplicate DATA 0 got {show(ex.seen[-1][1])}; duplicates are ignored in udpr")
    stage.measured["acc_resent_after_s"] = round(ex.seen[-1][0] - acked, 3)
    send_data(ex, stage, 1, body[1000:])
    finish(ex, stage)
    stage.delivered(server, body)
    return {}


# ------------------------------------------------------------------------- validation
def udp_bad_length(stage: Stage) -> dict:
    """A DATA whose data_len says 99 B and carries 3: RJT, or dropped as junk and the session goes on."""
    server = stage.start_server()
    body = make_data(1000, seed=12)
    ex = open_session(stage, len(body))
    ex.send(build("DATA", SID, b"abc", packet_no=0, data_len=99))
    got = ex.receive(stage.max_wait / 2)       # an RJT needs no timer: it comes at once, or not at all
    if got is None:                            # dropped as junk: the session must go on
        stage.take("malformed_data", "ignore")
        send_data(ex, stage, 0, body)
        finish(ex, stage)
        stage.delivered(server, body)
        return {}
    if not matches(got[0], "RJT", SID):
        raise Failed(f"a DATA whose data_len says 99 B but carries 3 got {show(got[0])} (expected RJT, or no "
                     "answer if it is dropped as junk)")
    stage.take("malformed_data", "rjt")
    next_client_served(stage, server)
    return {}


def udp_garbage(stage: Stage) -> dict:
    """Datagrams that are no packet (empty, cut, too long, an unknown type, noise): the server lives on."""
    server = stage.start_server()
    junk = [b"", b"\x00", b"\xff" * 30,
            build("CONN", SID, protocol_id=3, total_length=5)[:HEADER_BYTES["CONN"] - 1],
            build("DATA", SID, b"abc", packet_no=0)[:DATA_HEADER], build("ACC", SID, packet_no=0) + b"tail",
            build(9, SID), make_data(200, seed=7)]
    ex = Exchange(stage, stage.udp("a"), stage.server_address)
    for blob in junk:                          # queued at the server before the next client's CONN
        ex.send(blob)
    if server.poll() is not None:
        raise Failed(f"ppcbs {server.describe_exit()} after junk datagrams")
    next_client_served(stage, server)
    return {}


# ------------------------------------------------------------------------- timeouts and robustness
def silent_client_udp(stage: Stage) -> dict:
    """CONN, then nothing: udp drops the session after MAX_WAIT (the next client is refused until then);
    udpr resends CONACC, MAX_WAIT apart, up to MAX_RETRANSMITS times, then drops it."""
    server = stage.start_server()
    wait = stage.max_wait
    ex = open_session(stage, 1000)
    if not transports.get(stage.proto).retransmits:
        free_again(stage, server, 2 * wait + 0.5, "fell silent")
        return {"replies_to_peer": ex.kinds()}
    first = ex.seen[-1][0]
    end = first + stage.give_up_s + wait / 2
    while ex.receive(end - time.monotonic()) is not None:
        pass
    times = [t for t, raw, _ in ex.seen if matches(raw, "CONACC", SID)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    resends = len(times) - 1
    if not 1 <= resends <= stage.retransmits:
        raise Failed(f"after CONN and then silence, ppcbs resent CONACC {resends} times within "
                     f"{end - first:.1f} s (expected 1 to MAX_RETRANSMITS = {stage.retransmits}, MAX_WAIT apart)")
    if resends >= stage.retransmits - 1:
        stage.take("resend_count", "plus" if resends == stage.retransmits else "total")
    if min(gaps) < wait / 2:
        raise Failed(f"CONACC was resent {min(gaps):.2f} s after the previous one (MAX_WAIT is {wait:g} s)")
    stage.measured["conacc_resends"] = resends
    next_client_served(stage, server)
    return {"replies_to_peer": ex.kinds()}


def client_dies_udp(stage: Stage, *, sent: int = 20) -> dict:
    """CONN for a long file and ``sent`` DATA of it, then nothing more: the server drops the session
    (udp after MAX_WAIT, udpr after resending its last ACC) and serves the next client."""
    server = stage.start_server()
    body = make_data(1000 * sent, seed=13)
    ex = open_session(stage, 250 * len(body))
    for number in range(sent):
        send_data(ex, stage, number, body[1000 * number:1000 * (number + 1)])
    gone = time.monotonic()
    bound = stage.give_up_s if transports.get(stage.proto).retransmits else stage.max_wait
    free_again(stage, server, 2 * bound + 0.5, f"sent {sent} DATA of {250 * len(body)} B and was gone",
               earlier=[body])
    return {"gone_at": gone, "replies_to_peer": ex.kinds()}
