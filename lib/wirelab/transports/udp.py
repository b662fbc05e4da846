"""UDP: PPCB over UDP without acknowledgements (notebooks/ppcb-protocol.md, "udp").

The sender sends every DATA without waiting and then waits once, MAX_WAIT, for
RCVD; a lost datagram is lost. Its goodput is the link's, times the chance a
datagram (all its fragments) arrives (``model.packetization``).
"""
from __future__ import annotations

from ..wire.headers import UDP_HEADER
from ..wire.ppcb import PROTOCOL_IDS
from . import Ref, Transport

NAME = "udp"

TRANSPORT = Transport(
    name=NAME,
    protocol_id=PROTOCOL_IDS[NAME],
    socket="udp",
    summary="PPCB over UDP: every DATA sent at once, no ACC, no resend; RCVD at the end",
    reliable=False,
    retransmits=False,
    acked=False,
    ack_clocked=False,
    header_layers=(("UDP", UDP_HEADER),),
    max_payload=None,
    # the udp program speaks udp and udpr: it is told which (lazy: transfer sits above this floor)
    sender=Ref("wirelab.transfer.udp_client:send_udp", {"proto": NAME}),
    receiver=Ref("wirelab.transfer.udp_server:serve_session"),
    model=Ref("wirelab.model.datagram:datagram_model"),
    modes=("file", "time", "load", "echo"),
    columns=("lost",),
    peer_scenarios={"client_dies": "client_dies", "server_dies": None, "silent_client": "silent_client",
                    "silent_server": "silent_server", "foreign_data": "foreign_data",
                    "second_client": "foreign_conn"},
    iperf3=True,
    ppcb=True,
    label="UDP",
    log_scale=False,
    order=1,
)
