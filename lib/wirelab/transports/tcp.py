"""TCP: PPCB over a TCP connection (notebooks/ppcb-protocol.md, "tcp").

The kernel makes it reliable: segments of at most one MSS, its own window,
congestion control and retransmission (RFC 9293); the programs only frame PPCB
on the stream. Its goodput is min(η·C, W/RTT, Mathis, PFTK) or a congestion
control's steady state (``model.tcp``).
"""
from __future__ import annotations

from ..wire.headers import TCP_HEADER
from ..wire.ppcb import PROTOCOL_IDS
from . import Ref, Transport

NAME = "tcp"

TRANSPORT = Transport(
    name=NAME,
    protocol_id=PROTOCOL_IDS[NAME],
    socket="tcp",
    summary="PPCB over a TCP connection: the kernel segments, acknowledges and resends",
    reliable=True,
    retransmits=False,
    acked=False,
    ack_clocked=False,
    header_layers=(("TCP", TCP_HEADER),),
    max_payload=None,
    # lazy: transfer and model sit above this floor and ask the registry themselves
    sender=Ref("wirelab.transfer.tcp:send_tcp"),
    receiver=Ref("wirelab.transfer.tcp:serve_tcp_connection"),
    model=Ref("wirelab.model.prediction:tcp_model"),
    modes=("file", "time", "load", "echo"),
    columns=("congestion_control",),
    peer_scenarios={"client_dies": None, "server_dies": None, "silent_client": "silent_client",
                    "silent_server": "silent_server", "foreign_data": "tcp_foreign_session",
                    "second_client": "tcp_busy"},
    iperf3=True,
    ppcb=True,
    label="TCP",
    log_scale=False,
    order=0,
)
