"""The model's prediction for exactly the parameters of one run.

Predictions live in their own columns, all named ``pred_*``, so they can never
be mistaken for measurements: ``pred_goodput_bps``, ``pred_binding`` (which
limit binds: link, window, mathis, padhye, stop_and_wait, offered),
``pred_efficiency``, ``pred_limit_<name>_bps`` for every limit, and
``pred_note`` saying what the prediction assumed.

``wire`` is how the link in use counts bytes: ``"emulated"`` (tbf and the
userspace link charge the IP packet + 14 B Ethernet header), ``"real"`` (a
cable: 38 B per frame) or ``"payload"`` (a relay that paces application bytes:
η = 1). The engine or backend says which.
"""
from __future__ import annotations

import math

from ..errors import WirelabError
from ..model import predict

__all__ = ["predict_columns", "predict_like", "PRED_COLUMNS", "FRAMING_COLUMNS", "WIRES"]

WIRES = ("emulated", "real", "payload", "none")
#: Columns always present (NaN when there is nothing to predict).
PRED_COLUMNS = ["pred_goodput_bps", "pred_binding", "pred_efficiency", "pred_payload_bytes",
                "pred_wire_bytes", "pred_rtt_s", "pred_wire", "pred_note"]
#: How the prediction was asked (so a plot can redraw it for any other value of an axis).
FRAMING_COLUMNS = ["pred_timestamps", "pred_payload_arg", "pred_stream_header_bytes",
                   "pred_udp_header_bytes"]


def _missing(value) -> bool:
    """None, NaN or pandas' NA (a reloaded table has all three)."""
    try:
        return value is None or bool(value != value)
    except TypeError:            # pd.NA refuses to be a bool
        return True


def _get(params: dict, name: str, default=None):
    value = params.get(name)
    return default if _missing(value) else value


def predict_columns(params: dict, *, wire: str = "emulated", timestamps: bool = True,
                    payload: int | None = None, stream_header: int = 0, udp_header: int = 0) -> dict:
    """``pred_*`` columns for one setting's parameters (SI values, results column names).

    ``timestamps``: whether TCP segments carry the 12 B timestamp option (Linux
    does by default: ``net.ipv4.tcp_timestamps = 1``). How the engine frames
    the data (it says so in ``describe``): ``payload`` application bytes per
    datagram/write (default: the ``packet_bytes`` column, else a full packet);
    ``stream_header`` bytes of application framing per ``payload`` inside a TCP
    stream (PPCB's 21 B DATA header per 1000 B chunk costs 2 %);
    ``udp_header`` bytes of such framing inside each UDP datagram.
    ``wire="none"``: nothing shapes the link (loopback), so nothing is predicted.
    """
    out: dict = {c: math.nan for c in PRED_COLUMNS}
    out.update(pred_binding=None, pred_wire=wire, pred_note=None, pred_timestamps=bool(timestamps),
               pred_payload_arg=payload, pred_stream_header_bytes=stream_header,
               pred_udp_header_bytes=udp_header)
    proto, rate = _get(params, "proto", "tcp"), _get(params, "rate_bps")
    if rate is None:
        out["pred_note"] = "no link rate set: nothing limits the transfer that the model knows"
        return out
    if wire == "none":
        out["pred_note"] = "loopback: no link enforces the rate, so the model has nothing to predict"
        return out
    delay = _get(params, "delay_s", 0.0)
    rtt = 2.0 * delay if delay > 0 else None
    notes = []
    try:
        size = payload if payload is not None else _get(params, "packet_bytes")
        if proto == "tcp" and stream_header:
            size = None                       # the stream is cut into full segments anyway
        elif size is not None and udp_header:
            size = size + udp_header
        p = predict(proto, rate, mtu=_get(params, "mtu"), payload=size,
                    timestamps=timestamps and proto == "tcp", rtt_s=rtt,
                    loss=_get(params, "loss", 0.0), loss_reverse=_get(params, "loss_reverse"),
                    window_bytes=_get(params, "window_bytes"),
                    wire="real" if wire == "real" else "emulated",
                    max_wait_s=_get(params, "max_wait_s", 5.0),
                    max_retransmits=int(_get(params, "max_retransmits", 5)))
    except WirelabError as err:
        out["pred_note"] = f"no prediction: {err}"
        return out
    limits = dict(p.limits)
    share = 1.0
    if proto == "tcp" and stream_header:
        chunk = payload or _get(params, "packet_bytes") or 1000
        share = chunk / (chunk + stream_header)
        notes.append(f"{stream_header} B of application framing per {chunk:g} B: ×{share:.4f}")
    elif proto == "udp" and udp_header and p.payload_bytes:
        share = (p.payload_bytes - udp_header) / p.payload_bytes
        notes.append(f"{udp_header} B of application framing per datagram: ×{share:.4f}")
    limits = {name: value * share for name, value in limits.items()}
    if wire == "payload":
        limits["link"] = share * rate * (p.delivery_probability if proto == "udp" else 1.0)
        notes.append("the relay paces application bytes, so η = 1")
    elif proto == "udp":
        limits["link"] = p.goodput_bps * share
    offered = _get(params, "offered_bps")
    if offered is not None and proto == "udp":
        limits["offered"] = offered * p.delivery_probability
    binding = min(limits, key=limits.get)
    notes.extend(p.notes)
    if rtt is None and proto == "tcp":
        notes.append("no delay set: the RTT is the host's own, window and loss limits not modelled")
    out.update(pred_goodput_bps=limits[binding], pred_binding=binding,
               pred_efficiency=1.0 if wire == "payload" else p.efficiency,
               pred_payload_bytes=p.payload_bytes, pred_wire_bytes=p.wire_bytes,
               pred_rtt_s=rtt if rtt is not None else math.nan,
               pred_note="; ".join(notes) or None)
    for name, value in limits.items():
        out[f"pred_limit_{name}_bps"] = value
    return out


def predict_like(row, **changes) -> dict:
    """The prediction of a results row with some parameters changed (e.g. ``delay_s=0.03``):
    the same wire, timestamps and framing the row was predicted with."""
    params = {k: row[k] for k in ("proto", "rate_bps", "delay_s", "loss", "loss_reverse", "mtu",
                                  "packet_bytes", "offered_bps", "window_bytes", "max_wait_s",
                                  "max_retransmits") if k in row}
    params.update(changes)

    def value(name, default):
        v = row.get(name, default) if hasattr(row, "get") else default
        return default if _missing(v) else v
    payload = value("pred_payload_arg", None)
    return predict_columns(params, wire=value("pred_wire", "emulated"),
                           timestamps=bool(value("pred_timestamps", True)),
                           payload=None if payload is None else int(payload),
                           stream_header=int(value("pred_stream_header_bytes", 0)),
                           udp_header=int(value("pred_udp_header_bytes", 0)))
