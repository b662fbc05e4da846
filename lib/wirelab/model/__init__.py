"""What the physics predicts: pure functions, no I/O.

Read in this order: ``headers`` (what each layer adds), ``efficiency``
(payload / bytes on the wire, fragmentation), ``tcp`` (link, window and loss
limits), ``stopwait`` (UDPR), ``delay``, and ``predict`` which puts them
together for one protocol on one link. Every formula names its source.
"""
from .headers import (ETHERNET, HeaderStack, PPCB_HEADER, ethernet_overhead,
                      ip_header, transport_header)
from .efficiency import Packetization, efficiency, max_payload, packetize
from .tcp import (bdp_bytes, link_limited, mathis, padhye, window_limited,
                  tcp_limits, binding_limit)
from .stopwait import StopAndWait, stop_and_wait
from .delay import propagation_delay, transmission_delay, one_way_from_rtt
from .predict import Prediction, predict

__all__ = [
    "ETHERNET", "HeaderStack", "PPCB_HEADER", "ethernet_overhead", "ip_header",
    "transport_header", "Packetization", "efficiency", "max_payload", "packetize",
    "bdp_bytes", "link_limited", "mathis", "padhye", "window_limited", "tcp_limits",
    "binding_limit", "StopAndWait", "stop_and_wait", "propagation_delay",
    "transmission_delay", "one_way_from_rtt", "Prediction", "predict",
]
