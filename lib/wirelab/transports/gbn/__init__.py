"""Go-Back-N: PPCB's packets over UDP with a window of N DATA, cumulative ACC, one timer
(notebooks/ppcb-protocol.md, "Go-Back-N"). The kit's fourth transport, not the assignment's:
CONN carries protocol 4, which a strict PPCB peer refuses.

    wire.py      the protocol id and the packets (PPCB's table)
    sender.py    the client: the window, the timer, the whole window again on timeout
    receiver.py  the server: the next DATA in order only, a cumulative ACC for every DATA
    model.py     goodput and a file's time, window-limited and under loss (sources named there)
    predict.py   that model as the registry's ``model`` (``wirelab.model.predict`` calls it)

This module holds the facts only (the registry's floor: ``wirelab.wire`` and the standard library);
the behaviour is named by ``Ref`` and imported when first used.
"""
from __future__ import annotations

from ...errors import UsageError
from ...wire.headers import UDP_HEADER
from ...wire.ppcb import DATA_HEADER, MAX_DATA
from .. import Option, Ref, Transport
from .wire import MAX_WINDOW, NAME, PROTOCOL_ID

__all__ = ["TRANSPORT", "WINDOW", "window_packets"]


def window_packets(value) -> int:
    """A window as people give it ("8", 8) → a whole number of DATA in 1..MAX_WINDOW."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = None
    if number is None or isinstance(value, bool) or not 1 <= number <= MAX_WINDOW \
            or (isinstance(value, float) and value != number):
        raise UsageError(f"Go-Back-N's window is a whole number of DATA in 1..{MAX_WINDOW}, not {value!r}",
                         "e.g. --window-packets 8 (1 is stop-and-wait)")
    return number


#: N: how many DATA may be unacknowledged at once (1: stop-and-wait, as udpr).
WINDOW = Option("window_packets", parse=window_packets, default=8, column="window_packets",
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
    sender=Ref("wirelab.transports.gbn.sender:send_gbn"),
    receiver=Ref("wirelab.transports.gbn.receiver:serve_session"),
    model=Ref("wirelab.transports.gbn.predict:gbn_model"),
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
