"""What the physics predicts: pure functions, no I/O.

Read in this order: ``headers`` (what each layer adds, with the sizes of
``wirelab.wire``), ``packetization`` (``efficiency``: payload / bytes on the wire,
fragmentation), ``tcp`` (link, window and loss
limits), ``congestion`` (steady state by congestion control: Reno, CUBIC,
BBR), ``slowstart`` (initial window, slow start, the first loss), ``bbr_startup``
(BBR's paced start-up, as Linux runs it),
``recovery`` (RACK-TLP, the window's way down), ``ackclock`` (the round with
delayed ACKs), ``window_chain`` (a timed run at random loss: the window's
distribution round by round), ``stopwait`` (UDPR), ``transfer_time`` (a whole
file: set-up, data, RCVD),
``delay``, and ``prediction`` (``predict``) which puts them together for one
protocol on one link; ``load`` (offered load, a burst's delay) and ``partition`` (a
sweep's data split across boards, document 000) stand beside. Every formula names its
source.
"""
from .._exports import lazy

_EXPORTS = {
    "ETHERNET": "headers", "HeaderStack": "headers", "PPCB_HEADER": "headers",
    "ethernet_overhead": "headers", "ip_header": "headers", "transport_header": "headers",
    "Packetization": "packetization", "efficiency": "packetization", "max_payload": "packetization",
    "packetize": "packetization", "bdp_bytes": "tcp", "link_limited": "tcp", "mathis": "tcp",
    "padhye": "tcp", "window_limited": "tcp", "tcp_limits": "tcp", "binding_limit": "tcp",
    "CONGESTION_CONTROLS": "congestion", "SteadyState": "congestion", "cubic": "congestion",
    "cubic_average_window": "congestion", "steady_state": "congestion",
    "handshake_time": "slowstart", "initial_window": "slowstart", "kurose_ross_latency": "slowstart",
    "slow_start_send": "slowstart", "bbr_startup_send": "bbr_startup",
    "StopAndWait": "stopwait", "stop_and_wait": "stopwait", "UdprTransfer": "stopwait",
    "udpr_transfer": "stopwait", "acc_wire_bytes": "stopwait", "ACC_WIRE_BYTES": "stopwait",
    "TransferTime": "transfer_time", "tcp_transfer": "transfer_time",
    "udp_transfer": "transfer_time", "propagation_delay": "delay",
    "transmission_delay": "delay", "one_way_from_rtt": "delay", "Prediction": "prediction",
    "predict": "prediction", "SOURCES": "prediction",
    "delayed_ack_round": "ackclock", "timed_run": "window_chain",
    # a message's delay along a store-and-forward path (document 003)
    "path_delay": "delay", "hop_delays": "delay", "Hop": "delay", "mean_jittered_delay": "delay",
    "queueing_delay": "delay", "loaded_rtt": "delay",
    # a radar sweep's data split across processing boards (document 000)
    "parallel_split": "partition", "round_robin": "partition",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
