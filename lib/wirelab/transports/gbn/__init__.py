"""Go-Back-N: PPCB's packets over UDP with a window of N DATA, cumulative ACC, one timer
(notebooks/ppcb-protocol.md, "Go-Back-N"). The kit's fourth transport, not the assignment's: CONN
carries protocol 4, outside the assignment's three (1 tcp, 2 udp, 3 udpr), so a strict PPCB server
answers CONRJT instead of misreading a window of DATA as a udpr session out of order.

Every packet is PPCB's (``wirelab.wire.ppcb.TABLE``, same fields, same sizes); what changes is ACC's
meaning and who may be in flight:

* ACC n is **cumulative**: the receiver holds every DATA 0..n, in order; RCVD acknowledges all.
* At most N DATA are unacknowledged; one timer runs, the oldest unacknowledged DATA's (MAX_WAIT after
  its send); when it expires the whole window is sent again, MAX_RETRANSMITS times in a row at most.
* The receiver takes only the next DATA in order; any other is discarded and answered with the ACC of
  the last DATA taken in order (none yet: no answer).

    sender.py    the client: the window, the timer, the whole window again on timeout
    receiver.py  the server: the next DATA in order only, a cumulative ACC for every DATA
    model.py     goodput and a file's time, window-limited and under loss (derived, sources named)

This module holds the facts and the packets (``wirelab.wire`` only: the registry's floor); the three
above are reached by ``Ref`` only, imported when first used.
"""
from __future__ import annotations

from ...errors import UsageError
from ...wire.headers import UDP_HEADER
from ...wire.ppcb import DATA_HEADER, MAX_DATA, PROTOCOL_NAMES, build
from .. import Option, Ref, Transport

__all__ = ["TRANSPORT", "WINDOW", "NAME", "PROTOCOL_ID", "MAX_WINDOW", "window_packets", "conn", "data", "acc",
           "is_ours"]

#: The name the kit's options use (``--proto gbn``).
NAME = "gbn"
#: CONN's protocol field for Go-Back-N: not one of the assignment's (1, 2, 3).
PROTOCOL_ID = 4
assert PROTOCOL_ID not in PROTOCOL_NAMES, "Go-Back-N must not borrow a PPCB protocol id"
#: The largest window: more would only fill the socket buffer; no link in the kit needs it.
MAX_WINDOW = 4096


def window_packets(value) -> int:
    """A window as people give it ("8", 8) → a whole number of DATA in 1..MAX_WINDOW."""
    try:
        number = float(str(value).strip())          # "8", 8, or 8.0 (predict's --window, shared, is a float)
    except ValueError:
        number = None
    if number is None or isinstance(value, bool) or number != int(number) or not 1 <= number <= MAX_WINDOW:
        raise UsageError(f"Go-Back-N's window is a whole number of DATA in 1..{MAX_WINDOW}, not {value!r}",
                         "e.g. --window 8 (1 is stop-and-wait)")
    return int(number)


def conn(session: bytes, total_length: int) -> bytes:
    """CONN announcing a Go-Back-N session of ``total_length`` bytes."""
    return build("CONN", session, protocol_id=PROTOCOL_ID, total_length=total_length)


def data(session: bytes, number: int, body: bytes) -> bytes:
    """DATA ``number`` carrying ``body`` (PPCB's layout, 21 B of header)."""
    return build("DATA", session, body, packet_no=number)


def acc(session: bytes, number: int) -> bytes:
    """ACC ``number``: every DATA 0..``number`` arrived in order."""
    return build("ACC", session, packet_no=number)


def is_ours(packet) -> bool:
    """A CONN (``transfer.ppcb.Packet``) that asks for Go-Back-N."""
    return packet.kind == "CONN" and packet.protocol_id == PROTOCOL_ID


#: N: how many DATA may be unacknowledged at once (1: stop-and-wait, as udpr).
WINDOW = Option("window_packets", parse=window_packets, default=8, column="window_packets", flag="--window",
                help="Go-Back-N's window: DATA sent and not yet acknowledged, at most (1: stop-and-wait)",
                choices=(1, 2, 4, 8, 16))

TRANSPORT = Transport(
    name=NAME,
    protocol_id=PROTOCOL_ID,
    socket="udp",
    summary="PPCB's packets over UDP with a window of N DATA, cumulative ACC, one MAX_WAIT timer; "
            "the whole window resent on timeout, MAX_RETRANSMITS times in a row at most",
    reliable=True,
    retransmits=True,
    acked=True,
    ack_clocked=True,
    header_layers=(("UDP", UDP_HEADER), ("PPCB DATA", DATA_HEADER)),
    max_payload=MAX_DATA,
    # lazy, by Ref: this subpackage's own modules, which import transfer and model
    sender=Ref("wirelab.transports.gbn.sender:send_gbn"),
    receiver=Ref("wirelab.transports.gbn.receiver:serve_session"),
    model=Ref("wirelab.transports.gbn.model:gbn_model"),
    modes=("file",),
    columns=("retransmissions", "max_retransmits"),
    options=(WINDOW,),
    peer_scenarios={},              # the misbehaving peers play the assignment's transports only
    iperf3=False,
    ppcb=False,
    label="Go-Back-N",
    log_scale=True,
    order=3,
)
