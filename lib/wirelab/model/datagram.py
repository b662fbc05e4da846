"""The models of the transports over UDP datagrams (``wirelab.transports``' udp and udpr name them).

UDP: η·C·(1 − p)^k, k the fragments of one datagram (Kent & Mogul 1987).
UDPR: min(η·C, stop-and-wait) (Bertsekas & Gallager §2.4; Kurose & Ross §3.4).
``model.prediction.predict`` calls them through the registry with all its parameters by name.
"""
from __future__ import annotations

from ..errors import ModelError
from .prediction import Prediction, finish
from .stopwait import stop_and_wait, udpr_transfer
from .tcp import binding_limit
from .transfer_time import from_udpr, udp_transfer

__all__ = ["datagram_model", "stop_and_wait_model"]


def datagram_model(stack, packets, rate_bps, *, notes, rtt_s, loss, loss_reverse, size, loss_unit,
                   **_) -> Prediction:
    """UDP: the link's rate times the chance a datagram (every fragment of it) arrives."""
    delivered = packets.delivery_probability(loss, loss_unit)
    if packets.fragmented and loss_unit == "packet":
        notes.append(f"{packets.payload_bytes} B > MTU − {stack.l3 + stack.l4}: "
                     f"{packets.packets} IP fragments; one lost fragment loses the datagram")
    link = packets.efficiency * rate_bps
    transfer = None if size is None else udp_transfer(
        size, rate_bps, datagram_payload=packets.payload_bytes, datagram_wire_bytes=packets.wire_bytes,
        header_bytes=stack.l2 + stack.l3 + stack.l4, delivery_probability=delivered, rtt_s=rtt_s or 0.0,
        loss=loss, loss_reverse=loss_reverse)
    return finish(stack.proto, rate_bps, stack, packets, {"link": link}, "link", link * delivered, notes,
                  rtt_s=rtt_s, loss=loss, delivered=delivered, transfer=transfer)


def stop_and_wait_model(stack, packets, rate_bps, *, notes, rtt_s, loss, loss_reverse, size, loss_unit,
                        max_wait_s, max_retransmits, meter_bytes, **_) -> Prediction:
    """UDPR: one DATA, its ACC; the link's limit or the stop-and-wait cycle's, whichever binds."""
    reverse = loss if loss_reverse is None else loss_reverse
    if loss >= 1 or reverse >= 1:
        raise ModelError(f"{stack.proto} cannot deliver anything at 100 % loss", "use a loss below 100 %")
    if rtt_s is None:
        notes.append("no --rtt given: stop-and-wait assumes zero propagation delay")
    sw = stop_and_wait(packets.payload_bytes, rate_bps, rtt_s or 0.0, stack=stack,
                       loss_forward=loss, loss_reverse=reverse, timeout_s=max_wait_s,
                       max_retransmits=max_retransmits, loss_unit=loss_unit, meter_bytes=meter_bytes)
    limits = {"link": packets.efficiency * rate_bps, "stop_and_wait": sw.goodput_bps}
    binding, goodput = binding_limit(limits)
    transfer = None
    if size is not None:
        whole = udpr_transfer(size, rate_bps, rtt_s or 0.0, chunk_bytes=packets.payload_bytes, stack=stack,
                              loss_forward=loss, loss_reverse=reverse, timeout_s=max_wait_s,
                              max_retransmits=max_retransmits, loss_unit=loss_unit, meter_bytes=meter_bytes)
        transfer = from_udpr(whole, rtt_s or 0.0)
    return finish(stack.proto, rate_bps, stack, packets, limits, binding, goodput, notes, rtt_s=rtt_s, loss=loss,
                  delivered=sw.success_probability, sw=sw, transfer=transfer)
