"""What the physics predicts: pure functions, no I/O.

Read in this order: ``headers`` (what each layer adds), ``efficiency``
(payload / bytes on the wire, fragmentation), ``tcp`` (link, window and loss
limits), ``congestion`` (steady state by congestion control: Reno, CUBIC,
BBR), ``slowstart`` (initial window, slow start, the first loss),
``stopwait`` (UDPR), ``transfer_time`` (a whole file: set-up, data, RCVD),
``delay``, and ``predict`` which puts them together for one protocol on one
link. Every formula names its source.
"""
from .headers import (ETHERNET, HeaderStack, PPCB_HEADER, ethernet_overhead,
                      ip_header, transport_header)
from .efficiency import Packetization, efficiency, max_payload, packetize
from .tcp import (bdp_bytes, link_limited, mathis, padhye, window_limited,
                  tcp_limits, binding_limit)
from .congestion import CONGESTION_CONTROLS, SteadyState, cubic, cubic_average_window, steady_state
from .slowstart import handshake_time, initial_window, kurose_ross_latency, slow_start_send
from .stopwait import StopAndWait, UdprTransfer, stop_and_wait, udpr_transfer
from .transfer_time import TransferTime, tcp_transfer, udp_transfer
from .delay import propagation_delay, transmission_delay, one_way_from_rtt
from .predict import Prediction, predict

__all__ = [
    "ETHERNET", "HeaderStack", "PPCB_HEADER", "ethernet_overhead", "ip_header",
    "transport_header", "Packetization", "efficiency", "max_payload", "packetize",
    "bdp_bytes", "link_limited", "mathis", "padhye", "window_limited", "tcp_limits",
    "binding_limit", "StopAndWait", "stop_and_wait", "propagation_delay",
    "transmission_delay", "one_way_from_rtt", "Prediction", "predict",
    "CONGESTION_CONTROLS", "SteadyState", "cubic", "cubic_average_window", "steady_state",
    "handshake_time", "initial_window", "kurose_ross_latency", "slow_start_send",
    "UdprTransfer", "udpr_transfer", "TransferTime", "tcp_transfer", "udp_transfer",
]
