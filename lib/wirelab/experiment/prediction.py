"""The model's prediction for exactly the parameters of one run.

Predictions live in their own columns, all named ``pred_*``, so they can never
be mistaken for measurements: ``pred_goodput_bps``, ``pred_binding`` (which
limit or term binds: link, window, mathis, padhye, cubic, bbr, slow_start,
propagation, loss_recovery, stop_and_wait, timeouts, offered),
``pred_efficiency``, ``pred_limit_<name>_bps`` for every steady-state limit,
and ``pred_note`` saying what the prediction assumed.

With a file size (the ``size_bytes`` column) the goodput is the finite
transfer's: file bytes / (first data byte sent → last byte delivered), and
``pred_transfer_time_s`` is the whole transfer, first packet to RCVD, with
every term in ``pred_time_<term>_s`` (handshake, conn, link, slow_start,
loss_recovery, propagation, rcvd …); ``pred_steady_goodput_bps`` keeps the
steady state. ``pred_cc`` is the congestion control the TCP prediction assumed
(the ``cc`` column, else the machine's default).

``wire`` is how the link in use counts bytes: ``"emulated"`` (tbf and the
userspace link charge the IP packet + 14 B Ethernet header), ``"real"`` (a
cable: 38 B per frame; ``LinkSpec(wire="real")`` charges it; the ``pppoe``
column adds 8 B to either) or ``"payload"`` (a relay that paces application bytes:
η = 1). The engine or backend says which. ``carriage`` is how the backend carries
TCP (``wirelab.link.carriage``): ``"packets"`` (the sender's own segments cross the
link) or ``"stream"`` (a relay terminates TCP and paces its byte stream: the link
limit and the delay, no slow start or loss; ``model.transfer_time.stream_transfer``).
``meter_bytes`` is tbf's bucket where the backend's rate is tbf's (``wirelab.link.meter_bytes``:
namespaces, hosts), None where the link serializes like a cable: tbf lets a packet out the
moment its bucket holds it, so UDPR's DATA crosses without its transmission time after a
round trip that refilled the bucket, and its ACC at once (``model.stopwait``: the metered
cycle is max(DATA/C, RTT + what exceeds the bucket /C), not DATA/C + RTT + ACC/C). TCP and
UDP keep the wire's η·C: the meter differs only by its full bucket at the start, a few kB,
which ``analysis.residuals`` names ("tbf burst"). Kept as ``pred_meter_bytes`` (NaN: a wire).

``host_rtt_s`` is this machine's own round trip between the two programs (their
processing, the scheduler, the link process or relay), measured by a short
lossless UDPR transfer before the setting's runs (``experiment.calibration``): a stop-and-wait cycle is
DATA/C + RTT + ACC/C with the *whole* round trip (Bertsekas & Gallager §2.4.2 count
processing in it), so UDPR's RTT is 2·delay + host_rtt_s. TCP's data phase runs on
the kernel's ACK clock, which the programs' processing does not slow: not added.
It is kept as ``pred_host_rtt_s``. Given as (median, lowest, highest) of a probe set, the
range is the interval of that input: ``pred_goodput_low_bps`` and ``pred_goodput_high_bps``
are UDPR's goodput predicted at its two ends (``pred_host_rtt_low_s``, ``_high_s``), the
interval on the prediction that the residual check compares with the runs' interval.
"""
from __future__ import annotations

import math

from .. import transports
from ..errors import WirelabError
from ..link.spec import LinkSpec
from ..model import CONGESTION_CONTROLS, predict
from .._plain import field

__all__ = ["predict_columns", "predict_like", "PRED_COLUMNS", "FRAMING_COLUMNS", "WIRES"]

WIRES = ("emulated", "real", "payload", "none")
#: Columns always present (NaN when there is nothing to predict).
PRED_COLUMNS = ["pred_goodput_bps", "pred_binding", "pred_efficiency", "pred_payload_bytes",
                "pred_wire_bytes", "pred_rtt_s", "pred_wire", "pred_note", "pred_cc",
                "pred_steady_goodput_bps", "pred_steady_binding", "pred_transfer_time_s",
                "pred_data_time_s", "pred_transfer_binding", "pred_transfer_std_s", "pred_host_rtt_s",
                "pred_carriage"]
#: How the prediction was asked (so a plot can redraw it for any other value of an axis).
FRAMING_COLUMNS = ["pred_timestamps", "pred_payload_arg", "pred_stream_header_bytes",
                   "pred_udp_header_bytes"]
_TEXT = ("pred_binding", "pred_wire", "pred_note", "pred_cc", "pred_steady_binding", "pred_transfer_binding",
         "pred_carriage")


def _missing(value) -> bool:
    """None, NaN or pandas' NA (a reloaded table has all three)."""
    try:
        return value is None or bool(value != value)
    except TypeError:            # pd.NA refuses to be a bool
        return True


def _get(params: dict, name: str, default=None):
    value = params.get(name)
    return default if _missing(value) else value


def _timed(params: dict) -> tuple[float, float] | None:
    """(omit, time) of a timed TCP run (the ``time_s`` and ``omit_s`` columns), else None."""
    duration = _get(params, "time_s")
    if duration is None or _get(params, "size_bytes") is not None or not duration > 0:
        return None
    return float(_get(params, "omit_s", 0.0)), float(duration)


def _congestion_control(proto: str, params: dict, default_cc, notes: list) -> str | None:
    """The cc column, else the machine's default; None (the classic Reno answer) if unknown."""
    if not transports.get(proto).stream:          # a congestion control is a TCP stream's
        return None
    cc = _get(params, "cc") or (None if _missing(default_cc) else default_cc)
    if cc is not None and cc not in CONGESTION_CONTROLS:
        notes.append(f"no model for congestion control {cc!r}: the classic Reno answer")
        return None
    return cc


def _queue_bytes(params: dict) -> float | None:
    """The bottleneck's tail-drop queue the link builds for these parameters (``queue_packets``
    full frames, else the link's default: ``LinkSpec.queue_for``)."""
    rate = _get(params, "rate_bps")
    if rate is None:
        return None
    try:
        spec = LinkSpec.parse(rate=rate, mtu=_get(params, "mtu"), wire=_get(params, "link_wire", "emulated"),
                              pppoe=bool(_get(params, "pppoe", False)))
    except WirelabError:
        return None
    queue = _get(params, "queue_packets")
    return float(queue) * spec.frame_bytes if queue is not None else float(spec.queue_for(spec.forward))


def predict_columns(params: dict, *, wire: str = "emulated", timestamps: bool = True,
                    payload: int | None = None, stream_header: int = 0, udp_header: int = 0,
                    default_cc: str | None = None, carriage: str = "packets",
                    host_rtt_s: float | tuple | None = None, meter_bytes: float | None = None) -> dict:
    """``pred_*`` columns for one setting's parameters (SI values, results column names).

    ``timestamps``: whether TCP segments carry the 12 B timestamp option (Linux
    does by default: ``net.ipv4.tcp_timestamps = 1``). How the engine frames
    the data (it says so in ``describe``): ``payload`` application bytes per
    datagram/write (default: the ``packet_bytes`` column, else a full packet);
    ``stream_header`` bytes of application framing per ``payload`` inside a TCP
    stream (PPCB's 21 B DATA header per 1000 B chunk costs 2 %);
    ``udp_header`` bytes of such framing inside each UDP datagram.
    ``default_cc``: the machine's ``net.ipv4.tcp_congestion_control``, used when
    the ``cc`` column is empty.
    ``wire="none"``: nothing shapes the link (loopback), so nothing is predicted.
    ``carriage``, ``host_rtt_s`` (seconds, or a probe set's (median, lowest, highest)) and
    ``meter_bytes``: see the module docstring.
    """
    if isinstance(host_rtt_s, (tuple, list)):
        return _host_interval(params, host_rtt_s, dict(
            wire=wire, timestamps=timestamps, payload=payload, stream_header=stream_header,
            udp_header=udp_header, default_cc=default_cc, carriage=carriage, meter_bytes=meter_bytes))
    host = None if _missing(host_rtt_s) else float(host_rtt_s)
    meter = None if _missing(meter_bytes) or wire == "payload" else float(meter_bytes)
    out = _unpredicted(wire=wire, timestamps=timestamps, payload=payload, stream_header=stream_header,
                       udp_header=udp_header, carriage=carriage, host=host, meter=meter)
    proto, rate = _get(params, "proto", "tcp"), _get(params, "rate_bps")
    transport = transports.get(proto)
    if rate is None:
        out["pred_note"] = "no link rate set: nothing limits the transfer that the model knows"
        return out
    if wire == "none":
        out["pred_note"] = "loopback: no link enforces the rate, so the model has nothing to predict"
        return out
    notes: list[str] = []
    rtt = _round_trip(params, transport, host, meter, notes)
    cc = _congestion_control(proto, params, default_cc, notes)
    chunk = payload if payload is not None else _get(params, "packet_bytes")
    file_bytes = _get(params, "size_bytes")
    file_bytes = None if file_bytes is None else int(file_bytes)
    per_packet, carried = _carried(transport, chunk, file_bytes, stream_header, udp_header)
    try:
        p = _ask_model(params, proto, transport, rate, per_packet=per_packet, carried=carried, rtt=rtt, cc=cc,
                       wire=wire, timestamps=timestamps, carriage=carriage, meter=meter)
    except WirelabError as err:
        out["pred_note"] = "; ".join(notes + [f"no prediction: {err}"])
        return out
    share = _framing_share(transport, p, chunk, stream_header, udp_header, notes)
    limits = _limits(params, transport, p, rate, wire, share, notes)
    binding = min(limits, key=limits.get)
    steady_goodput, steady_binding = limits[binding], binding
    goodput = steady_goodput
    if p.transfer is None and p.steady_goodput_bps is not None:      # what a timed run's window sees
        goodput = p.goodput_bps * share
    notes.extend(p.notes)
    if rtt is None and transport.stream and cc is None and carriage == "packets":
        notes.append("no delay set: the RTT is the host's own, window and loss limits not modelled")
    if p.transfer is not None and wire != "payload":
        goodput, binding = _transfer_columns(out, p.transfer, limits, file_bytes, carried)
    elif p.transfer is not None:
        notes.append("the relay paces application bytes: no transfer time predicted")
    elif file_bytes is not None and p.untimed:
        # a file's time is what its runs measure: the steady state instead would be a different quantity
        goodput, binding = math.nan, None
    out.update(pred_goodput_bps=goodput, pred_binding=binding, pred_cc=cc,
               pred_steady_goodput_bps=steady_goodput, pred_steady_binding=steady_binding,
               pred_efficiency=1.0 if wire == "payload" else p.efficiency,
               pred_payload_bytes=p.payload_bytes, pred_wire_bytes=p.wire_bytes,
               pred_rtt_s=rtt if rtt is not None else math.nan,
               pred_round_s=math.nan if p.round_s is None else p.round_s,
               **({f"pred_goodput_{k}": v * share for k, v in p.spread.items() if k != "runs"}
                  if p.spread is not None else {}),
               pred_queue_bytes=math.nan if p.round_s is None else _queue_bytes(params),
               pred_note="; ".join(dict.fromkeys(notes)) or None)
    for name, value in limits.items():
        out[f"pred_limit_{name}_bps"] = value
    return out


def _host_interval(params: dict, host_rtt_s, kwargs: dict) -> dict:
    """The prediction at a probe set's median host round trip, and for an ACK-clocked transport
    the goodput at its two ends (the interval the residual check compares with the runs')."""
    median, low, high = (float(v) for v in host_rtt_s)
    out = predict_columns(params, host_rtt_s=median, **kwargs)
    if transports.get(_get(params, "proto", "tcp")).ack_clocked and math.isfinite(out["pred_goodput_bps"]):
        # a longer host round trip, a lower goodput: the interval's ends swap
        out.update(pred_goodput_low_bps=predict_columns(params, host_rtt_s=high, **kwargs)["pred_goodput_bps"],
                   pred_goodput_high_bps=predict_columns(params, host_rtt_s=low, **kwargs)["pred_goodput_bps"],
                   pred_host_rtt_low_s=low, pred_host_rtt_high_s=high)
    return out


def _unpredicted(*, wire, timestamps, payload, stream_header, udp_header, carriage, host, meter) -> dict:
    """Every column NaN (text None) but how the prediction was asked: the answer when there is
    nothing to predict, and the frame the prediction fills in."""
    out: dict = {c: math.nan for c in PRED_COLUMNS}
    out.update({c: None for c in _TEXT})
    out.update(pred_wire=wire, pred_timestamps=bool(timestamps), pred_payload_arg=payload,
               pred_stream_header_bytes=stream_header, pred_udp_header_bytes=udp_header,
               pred_carriage=carriage, pred_host_rtt_s=math.nan if host is None else host,
               pred_meter_bytes=math.nan if meter is None else meter)
    return out


def _round_trip(params: dict, transport, host: float | None, meter: float | None, notes: list) -> float | None:
    """The RTT the model is given (None: no delay set): the two delays, plus the host's own
    round trip for a stop-and-wait transport (module docstring); notes say what was assumed."""
    there = _get(params, "delay_s", 0.0)
    both = there + _get(params, "delay_reverse_s", there)       # there and back: one way may be 0
    rtt = both if both > 0 else None
    if transport.ack_clocked and host:
        rtt = (rtt or 0.0) + host
        notes.append(f"stop-and-wait RTT = 2·delay + the host's own round trip, {host * 1e3:.2f} ms "
                     "(measured by a lossless UDPR probe at this rate just before the setting's runs)")
    if transport.ack_clocked and meter is not None:
        notes.append(f"tbf meters the rate (a bucket of {meter:.0f} B): a DATA leaves once the bucket holds it, "
                     "not serialized: cycle = max(DATA/C, RTT + what exceeds the bucket /C)")
    return rtt


def _carried(transport, chunk, file_bytes: int | None, stream_header: int,
             udp_header: int) -> tuple[int | None, int | None]:
    """(payload per packet, file bytes) as the transport carries them, application framing included."""
    per_packet, carried = chunk, file_bytes
    if transport.stream and stream_header:
        per_packet = None                            # the stream is cut into full segments anyway
        if file_bytes is not None:
            carried = file_bytes + stream_header * math.ceil(file_bytes / (chunk or 1000))
    elif per_packet is not None and udp_header:
        per_packet = per_packet + udp_header
        if file_bytes is not None:
            carried = file_bytes + udp_header * math.ceil(file_bytes / chunk)
    return per_packet, carried


def _ask_model(params: dict, proto: str, transport, rate: float, *, per_packet, carried, rtt, cc, wire: str,
               timestamps: bool, carriage: str, meter: float | None):
    """``model.predict`` asked with this row's columns and what the engine and link say (raises
    WirelabError where the model has no answer)."""
    return predict(proto, rate, mtu=_get(params, "mtu"), payload=per_packet,
                   timestamps=timestamps and transport.stream, rtt_s=rtt, pppoe=bool(_get(params, "pppoe", False)),
                   loss=_get(params, "loss", 0.0), loss_reverse=_get(params, "loss_reverse"),
                   window_bytes=_get(params, "window_bytes"),
                   wire="real" if wire == "real" else "emulated",
                   max_wait_s=_get(params, "max_wait_s", 5.0),
                   max_retransmits=int(_get(params, "max_retransmits", 5)), cc=cc, size=carried,
                   carriage=carriage if transport.stream else "packets", window_s=_timed(params),
                   queue_bytes=_queue_bytes(params) if wire != "payload" else None,
                   meter_bytes=meter if transport.ack_clocked else None,
                   **transport.option_values({o.column: _get(params, o.column) for o in transport.options}))


def _framing_share(transport, p, chunk, stream_header: int, udp_header: int, notes: list) -> float:
    """The share of the carried bytes that is the application's (framing headers excluded)."""
    share = 1.0
    if transport.stream and stream_header:
        framed = chunk or 1000
        share = framed / (framed + stream_header)
        notes.insert(0, f"{stream_header} B of application framing per {framed:g} B: ×{share:.4f}")
    elif not transport.reliable and udp_header and p.payload_bytes:
        share = (p.payload_bytes - udp_header) / p.payload_bytes
        notes.insert(0, f"{udp_header} B of application framing per datagram: ×{share:.4f}")
    return share


def _limits(params: dict, transport, p, rate: float, wire: str, share: float, notes: list) -> dict[str, float]:
    """Every steady-state limit on application goodput by name (bit/s): the model's, the relay's
    paced link, what an unreliable transport delivers of the link and of the offered load."""
    limits = {name: value * share for name, value in p.limits.items()}
    if wire == "payload":
        limits["link"] = share * rate * (p.delivery_probability if not transport.reliable else 1.0)
        notes.append("the relay paces application bytes, so η = 1")
    elif not transport.reliable:                  # what arrives of what the link carries
        limits["link"] = (p.steady_goodput_bps if p.transfer is not None else p.goodput_bps) * share
    offered = _get(params, "offered_bps")
    if offered is not None and not transport.reliable:
        limits["offered"] = offered * p.delivery_probability
    return limits


def _transfer_columns(out: dict, t, limits: dict, file_bytes: int | None, carried: int | None) -> tuple[float, str]:
    """Put a whole file's time, its terms and extras in ``out``; returns the file's (goodput, binding)."""
    goodput = t.goodput_bps * (file_bytes / carried if carried else 1.0)
    binding = t.binding
    if "offered" in limits and limits["offered"] < goodput:
        goodput, binding = limits["offered"], "offered"
    out.update(pred_transfer_time_s=t.total_s, pred_data_time_s=t.data_time_s,
               pred_transfer_binding=t.transfer_binding,
               pred_transfer_std_s=math.nan if t.std_s is None else t.std_s)
    out.update({f"pred_time_{name}_s": seconds for name, seconds in t.terms().items()})
    out.update({f"pred_{name}": value for name, value in t.extras.items()
                if name not in ("segments", "initial_window", "rto_s")})
    return goodput, binding


def predict_like(row, **changes) -> dict:
    """The prediction of a results row with some parameters changed (e.g. ``delay_s=0.03``):
    the same wire, timestamps, framing and congestion control the row was predicted with."""
    params = {k: row[k] for k in ("proto", "rate_bps", "delay_s", "delay_reverse_s", "loss", "loss_reverse", "mtu",
                                  "packet_bytes", "offered_bps", "window_bytes", "max_wait_s",
                                  "max_retransmits", "size_bytes", "cc", "time_s", "omit_s", "queue_packets",
                                  "link_wire", "pppoe")
              if k in row}
    params.update(changes)

    def value(name, default):
        v = field(row, name, default)
        return default if _missing(v) else v
    payload = value("pred_payload_arg", None)
    host = value("pred_host_rtt_s", None)
    meter = value("pred_meter_bytes", None)
    if host is not None and value("pred_host_rtt_low_s", None) is not None:
        host = (host, value("pred_host_rtt_low_s", host), value("pred_host_rtt_high_s", host))
    return predict_columns(params, wire=value("pred_wire", "emulated"),
                           timestamps=bool(value("pred_timestamps", True)),
                           payload=None if payload is None else int(payload),
                           stream_header=int(value("pred_stream_header_bytes", 0)),
                           udp_header=int(value("pred_udp_header_bytes", 0)),
                           default_cc=value("pred_cc", None), carriage=value("pred_carriage", "packets"),
                           host_rtt_s=host, meter_bytes=meter)
