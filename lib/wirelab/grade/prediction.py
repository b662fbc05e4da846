"""The model's goodput for a transfer test, for exactly its link and the DATA size the programs used.

tcp: ``wirelab.model.predict`` (η·C, W/RTT), less PPCB's 21-byte DATA header
per chunk on the stream; udp: η·C with PPCB's header inside each datagram;
udpr: stop-and-wait (Bertsekas & Gallager §2.4; Kurose & Ross §3.4) with
MAX_WAIT as the timeout, the link's forward and reverse loss. The emulated
wire (IP packet + 14 B) is what both link backends charge. A link without a
rate gets no prediction, and the note says so.

``link_limit_bps`` is the physics every measurement must stay under: η·C
with PPCB's header counted, raised only by tbf's bucket (its ``burst``
bytes cross at once, so a transfer of S bytes on the wire can take
(S − burst)/C). A measured goodput above it is a measurement error, and
the report flags it instead of showing it.
"""
from __future__ import annotations

from .. import transports
from ..errors import WirelabError
from ..link import LinkSpec
from ..model import PPCB_HEADER
from ..wire.ppcb import MAX_DATA
from .catalogue import Assignment, GradeTest

__all__ = ["predict_test"]


def predict_test(test: GradeTest, assignment: Assignment, data_bytes: int | None) -> dict:
    """``pred_goodput_bps``, ``pred_binding``, ``pred_note`` for ``test``."""
    out = {"pred_goodput_bps": None, "pred_binding": None, "pred_note": None, "link_limit_bps": None}
    if test.scenario != "transfer":
        return out
    if not test.link.get("rate"):
        out["pred_note"] = "no rate on this link: nothing for the model to predict"
        return out
    chunk = int(data_bytes or assignment.chunk)
    header = PPCB_HEADER["DATA"]
    try:
        spec = LinkSpec.parse(**test.link)
        transport = transports.get(test.proto)
        # its model counts the PPCB DATA header as a header (udpr's stack has it) or as payload (udp, tcp)
        framed = any(layer == "PPCB DATA" for layer, _ in transport.header_layers)
        if transport.stream:
            p = spec.predict(test.proto, timestamps=True)
            share, note = chunk / (chunk + header), f"{header} B PPCB header per {chunk} B on the stream"
        elif framed:
            p = spec.predict(test.proto, payload=chunk, max_wait_s=assignment.max_wait_s,
                             max_retransmits=assignment.max_retransmits)
            share, note = 1.0, f"{transport.label or test.proto} with {chunk} B DATA"
        else:
            p = spec.predict(test.proto, payload=chunk + header)
            share, note = chunk / (chunk + header), f"{header} B PPCB header per {chunk} B datagram"
        most = int(data_bytes or MAX_DATA)       # unknown DATA size: the largest, whose η is highest
        wire = spec.predict(test.proto, timestamps=True) if transport.stream else \
            spec.predict("udp", payload=most + header)               # the datagrams as plain UDP carries them
        eta_c = wire.limits["link"] * most / (most + header)
    except WirelabError as err:
        out["pred_note"] = f"no prediction: {err}"
        return out
    notes = [note, *p.notes]
    if transports.get(test.proto).stream and spec.rtt_s:
        notes.append("steady state: slow start is not modelled, a short transfer measures less")
    out.update(pred_goodput_bps=p.goodput_bps * share, pred_binding=p.binding, pred_note="; ".join(notes),
               link_limit_bps=_physics(eta_c, spec, test.size))
    return out


def _physics(eta_c: float, spec: LinkSpec, size: int) -> float:
    """η·C, raised by tbf's bucket for a transfer of ``size`` application bytes."""
    on_wire = size * spec.forward.rate_bps / eta_c              # bytes the link carries: size / η
    bucket = spec.burst_for(spec.forward)
    return eta_c * on_wire / (on_wire - bucket) if on_wire > 2 * bucket else float("inf")
