"""One call that predicts goodput for a protocol on a link, naming the limit that binds."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ModelError
from .efficiency import Packetization, max_payload, packetize
from .headers import TCP_TIMESTAMPS, HeaderStack
from .stopwait import StopAndWait, stop_and_wait
from .tcp import binding_limit, bdp_bytes, tcp_limits

__all__ = ["Prediction", "predict", "SOURCES"]

#: Where each limit comes from (shown beside every prediction).
SOURCES = {
    "link": "η·C, document 002",
    "window": "W/RTT, RFC 1323 §1.1",
    "mathis": "Mathis et al., CCR 1997",
    "padhye": "Padhye et al. (PFTK), SIGCOMM 1998",
    "stop_and_wait": "Bertsekas & Gallager §2.4; Kurose & Ross §3.4",
}


@dataclass(frozen=True)
class Prediction:
    """The model's answer for one setting. Predictions only: nothing here was measured."""
    proto: str
    rate_bps: float
    stack: HeaderStack
    packetization: Packetization
    limits: dict[str, float]
    binding: str
    goodput_bps: float
    rtt_s: float | None = None
    loss: float = 0.0
    delivery_probability: float = 1.0
    stop_and_wait: StopAndWait | None = None
    bdp_bytes: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def efficiency(self) -> float:
        return self.packetization.efficiency

    @property
    def payload_bytes(self) -> int:
        return self.packetization.payload_bytes

    @property
    def wire_bytes(self) -> int:
        return self.packetization.wire_bytes

    @property
    def fragments(self) -> int:
        return self.packetization.packets

    def to_dict(self) -> dict:
        """A JSON-ready dict (what ``wirelab predict --json`` prints)."""
        s = self.stack
        out = {
            "proto": self.proto, "rate_bps": self.rate_bps, "wire": s.wire, "mtu": s.mtu,
            "ip_version": s.ip_version, "tcp_options": s.tcp_options, "vlan": s.vlan,
            "pppoe": s.pppoe, "payload_bytes": self.payload_bytes, "wire_bytes": self.wire_bytes,
            "fragments": self.fragments, "efficiency": self.efficiency,
            "goodput_bps": self.goodput_bps, "limits": dict(self.limits), "binding": self.binding,
            "sources": {k: SOURCES[k] for k in self.limits}, "rtt_s": self.rtt_s, "loss": self.loss,
            "delivery_probability": self.delivery_probability, "bdp_bytes": self.bdp_bytes,
            "notes": list(self.notes),
        }
        if self.stop_and_wait is not None:
            sw = self.stop_and_wait
            out["stop_and_wait"] = {
                "cycle_s": sw.cycle_s, "success_probability": sw.success_probability,
                "expected_retransmissions": sw.expected_retransmissions,
                "time_per_packet_s": sw.time_per_packet_s, "failure_probability": sw.failure_probability}
        return out


def predict(proto: str = "tcp", rate_bps: float = 1e9, *, mtu: int | None = None,
            payload: int | None = None, ip_version: int = 4, tcp_options: int = 0,
            timestamps: bool = False, vlan: bool = False, pppoe: bool = False,
            rtt_s: float | None = None, loss: float = 0.0, loss_reverse: float | None = None,
            window_bytes: float | None = None, wire: str = "real", rto_s: float | None = None,
            max_wait_s: float = 5.0, max_retransmits: int = 5, acked_per_ack: int = 1) -> Prediction:
    """Predict goodput of ``proto`` at ``rate_bps`` (see ``wirelab.model`` for every formula).

    TCP: min(η·C, W/RTT, Mathis, PFTK). UDP: η·C·(1 − p)^k (k fragments).
    UDPR: min(η·C, stop-and-wait). ``loss`` is per packet, forward direction;
    ``loss_reverse`` (default: same as ``loss``) applies to UDPR's ACCs.
    """
    if not 0 <= loss <= 1:
        raise ModelError(f"loss must be between 0 and 100 %, not {loss * 100:g} %", "e.g. --loss 1%")
    if rtt_s is not None and rtt_s < 0:
        raise ModelError(f"RTT cannot be negative ({rtt_s} s)", "e.g. --rtt 40ms")
    if not rate_bps > 0:
        raise ModelError(f"rate must be positive, not {rate_bps!r} bit/s", "e.g. --rate 10mbit")
    options = tcp_options + (TCP_TIMESTAMPS if timestamps else 0)
    stack = HeaderStack(proto, mtu, ip_version, options, vlan, pppoe, wire)
    packets = packetize(stack, payload)
    notes: list[str] = []
    bdp = bdp_bytes(rate_bps, rtt_s) if rtt_s else None
    link = packets.efficiency * rate_bps

    if proto == "tcp":
        mss = min(max_payload(stack), packets.payload_bytes)
        limits = tcp_limits(rate_bps, packets.efficiency, mss, rtt_s=rtt_s, loss=loss,
                            window_bytes=window_bytes, rto_s=rto_s, acked_per_ack=acked_per_ack)
        if loss >= 1:
            limits = {**limits, "padhye": 0.0}
        if (loss > 0 or window_bytes) and not rtt_s:
            notes.append("loss and window limits need an RTT (--rtt); only the link limit applies")
        binding, goodput = binding_limit(limits)
        return Prediction(proto, rate_bps, stack, packets, limits, binding, goodput, rtt_s, loss,
                          1.0, None, bdp, tuple(notes))

    if proto == "udp":
        delivered = packets.delivery_probability(loss)
        if packets.fragmented:
            notes.append(f"{packets.payload_bytes} B > MTU − {stack.l3 + stack.l4}: "
                         f"{packets.packets} IP fragments; one lost fragment loses the datagram")
        limits = {"link": link}
        return Prediction(proto, rate_bps, stack, packets, limits, "link", link * delivered,
                          rtt_s, loss, delivered, None, bdp, tuple(notes))

    reverse = loss if loss_reverse is None else loss_reverse
    if loss >= 1 or reverse >= 1:
        raise ModelError("udpr cannot deliver anything at 100 % loss", "use a loss below 100 %")
    if rtt_s is None:
        notes.append("no --rtt given: stop-and-wait assumes zero propagation delay")
    sw = stop_and_wait(packets.payload_bytes, rate_bps, rtt_s or 0.0, stack=stack,
                       loss_forward=loss, loss_reverse=reverse, timeout_s=max_wait_s,
                       max_retransmits=max_retransmits)
    limits = {"link": link, "stop_and_wait": sw.goodput_bps}
    binding, goodput = binding_limit(limits)
    return Prediction(proto, rate_bps, stack, packets, limits, binding, goodput, rtt_s, loss,
                      sw.success_probability, sw, bdp, tuple(notes))
