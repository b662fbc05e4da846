"""UDPR: PPCB over UDP with stop-and-wait (notebooks/ppcb-protocol.md, "udpr").

One DATA at a time: the sender waits for its ACC, resends after MAX_WAIT, at most
MAX_RETRANSMITS times, then gives up. Its goodput is the stop-and-wait cycle's
(``model.stopwait``), bounded by the round trip, so plots show it on a log axis.
"""
from __future__ import annotations

from ..wire.headers import UDP_HEADER
from ..wire.ppcb import DATA_HEADER, MAX_DATA, PROTOCOL_IDS
from . import Ref, Transport

NAME = "udpr"

TRANSPORT = Transport(
    name=NAME,
    protocol_id=PROTOCOL_IDS[NAME],
    socket="udp",
    summary="PPCB over UDP, stop-and-wait: one DATA, its ACC; resent after MAX_WAIT, MAX_RETRANSMITS times",
    reliable=True,
    retransmits=True,
    acked=True,
    ack_clocked=True,
    header_layers=(("UDP", UDP_HEADER), ("PPCB DATA", DATA_HEADER)),
    max_payload=MAX_DATA,
    # the udp program speaks udp and udpr: it is told which (lazy: transfer sits above this floor)
    sender=Ref("wirelab.transfer.udp_client:send_udp", {"proto": NAME}),
    receiver=Ref("wirelab.transfer.udp_server:serve_session"),
    model=Ref("wirelab.model.datagram:stop_and_wait_model"),
    modes=("file",),
    columns=("retransmissions", "max_retransmits"),
    peer_scenarios={"client_dies": None, "server_dies": None, "silent_client": "silent_client",
                    "silent_server": "silent_server", "foreign_data": "foreign_data",
                    "second_client": "foreign_conn"},
    iperf3=False,
    ppcb=True,
    label="UDPR (stop-and-wait)",
    log_scale=True,
    order=2,
)
