"""One call that predicts goodput for a protocol on a link, naming the limit that binds.

With ``size`` it also predicts the whole file's transfer time (``transfer_time``),
and the goodput becomes that of the finite transfer: size / (first data byte sent
→ last byte delivered). With ``cc`` the steady state is that congestion
control's (``congestion``); ``cc=None`` keeps the classic answer: min(η·C, W/RTT,
Mathis, PFTK), Reno's, without the retransmissions' share of the link.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import ModelError
from .congestion import CONGESTION_CONTROLS, SteadyState, steady_state
from ..wire.headers import TCP_TIMESTAMPS
from .packetization import Packetization, max_payload, packetize
from .headers import HeaderStack
from .slowstart import LINUX_INITIAL_WINDOW
from .stopwait import StopAndWait
from .tcp import binding_limit, bdp_bytes, tcp_limits
from .transfer_time import BETA, TransferTime, stream_transfer, tcp_transfer, timed_goodput

__all__ = ["Prediction", "predict", "finish", "tcp_model", "SOURCES"]

#: Where each limit comes from (shown beside every prediction).
SOURCES = {
    "link": "η·C, document 002",
    "window": "W/RTT, RFC 1323 §1.1",
    "mathis": "Mathis et al., CCR 1997",
    "padhye": "Padhye et al. (PFTK), SIGCOMM 1998",
    "stop_and_wait": "Bertsekas & Gallager §2.4; Kurose & Ross §3.4",
    "cubic": "RFC 9438 §5 eq. 5; Reno-friendly AIMD, no growth in recovery (RFC 5681 §3.2)",
    "bbr": "η·C·(1 − p), Cardwell et al., ACM Queue 2016",
    "reno": "RFC 5681 AIMD at random loss, run by run as Linux runs it (model.window_runs)",
    "chain": "RFC 9438 (CUBIC) / RFC 5681 (Reno) at random loss as Linux runs it: window_chain's long run "
             "(whole segments, delayed ACKs, the recovery round, the link's cap)",
}
#: Where each term of a transfer time comes from.
TERM_SOURCES = {
    "handshake": "Cardwell, Savage & Anderson, INFOCOM 2000, eq. 4",
    "conn": "PPCB CONN/CONACC: one RTT, lost ones per Cardwell eq. 4 / stop-and-wait",
    "link": "η·C, document 002",
    "slow_start": "Kurose & Ross §3.7 from IW (RFC 6928)",
    "startup": "BBR v1's STARTUP, paced: Linux tcp_bbr.c and tcp_rate.c segment by segment (model.bbr_startup)",
    "queue_overflow": "BBR v1's start-up overshoot tail-dropped at the bottleneck's queue, found by RACK-TLP "
                      "(RFC 8985) and resent after a round of packet conservation (tcp_bbr.c; model.bbr_startup)",
    "loss_recovery": "Cardwell et al. 2000, eq. 20; with a named cc, RACK-TLP's probe timeout (RFC 8985) and "
                     "the expected RTO (model.recovery)",
    "reno": "Reno's window after slow start, run by run (RFC 5681, RFC 6675, RFC 8985; model.window_runs)",
    "cubic": "CUBIC's window after slow start, run by run (RFC 9438, HyStart; model.window_runs)",
    "propagation": "one-way delay of the last byte, RTT/2",
    "stop_and_wait": "one RTT per DATA, Kurose & Ross §3.4",
    "timeouts": "MAX_WAIT per lost DATA or ACC (stopwait)",
    "rcvd": "RCVD back to the client, RTT/2",
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
    cc: str | None = None
    transfer: TransferTime | None = None        # with ``size``: the whole file's time
    steady_goodput_bps: float | None = None     # the steady state, when ``goodput_bps`` is a finite transfer's
    steady_binding: str | None = None
    round_s: float | None = None                # the ACK clock's mean round a timed run's prediction assumed
    spread: dict | None = None                  # a timed run's goodput, run by run: std_bps, q05_bps, q95_bps, runs
    sources: dict | None = None                 # a transport's own limits' sources, beside ``SOURCES``
    untimed: str | None = None                  # a file's time was asked for and the model cannot give it: why

    def source(self, limit: str) -> str:
        """Where the limit ``limit`` comes from: the transport's model's word, else ``SOURCES``."""
        return (self.sources or {}).get(limit) or SOURCES.get(limit, limit)

    @property
    def transfer_time_s(self) -> float | None:
        """Expected seconds from the client's first packet to RCVD (None without ``size``)."""
        return None if self.transfer is None else self.transfer.total_s

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
            "sources": {k: self.source(k) for k in self.limits}, "rtt_s": self.rtt_s, "loss": self.loss,
            "delivery_probability": self.delivery_probability, "bdp_bytes": self.bdp_bytes,
            "notes": list(self.notes), "cc": self.cc,
            "steady_goodput_bps": self.steady_goodput_bps, "steady_binding": self.steady_binding,
        }
        if self.transfer is not None:
            t = self.transfer
            out["transfer"] = {
                "size_bytes": t.size_bytes, "total_s": t.total_s, "data_time_s": t.data_time_s,
                "goodput_bps": t.goodput_bps, "binding": t.binding, "transfer_binding": t.transfer_binding,
                "setup": dict(t.setup), "data": dict(t.data), "final": dict(t.final), "std_s": t.std_s,
                "extras": dict(t.extras), "notes": list(t.notes)}
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
            max_wait_s: float = 5.0, max_retransmits: int = 5, acked_per_ack: int = 1,
            cc: str | None = None, size: int | None = None,
            initial_window: int = LINUX_INITIAL_WINDOW, carriage: str = "packets",
            window_s: tuple[float, float] | None = None, queue_bytes: float | None = None,
            loss_unit: str = "packet", meter_bytes: float | None = None, **transport_options) -> Prediction:
    """Predict goodput of ``proto`` at ``rate_bps`` (see ``wirelab.model`` for every formula).

    TCP: min(η·C, W/RTT, Mathis, PFTK), or with ``cc`` ("reno", "cubic", "bbr") that
    algorithm's steady state. UDP: η·C·(1 − p)^k (k fragments). UDPR: min(η·C,
    stop-and-wait). ``loss`` is per packet, forward direction; ``loss_reverse``
    (default: same as ``loss``) applies to ACKs, ACCs, CONACC and RCVD;
    ``loss_unit="datagram"``: a fragmented datagram is lost as one packet (a test link's
    choice, ``LinkSpec.loss_unit``), not fragment by fragment.
    ``size``: bytes of one file (TCP: of the stream; UDP: of datagram payloads):
    adds ``transfer`` (the time from the first packet to RCVD, by cause) and makes
    ``goodput_bps``/``binding`` those of the finite transfer.
    ``carriage="stream"``: TCP's byte stream is relayed and paced (``stream_transfer``),
    not carried as the sender's own segments: the link limit only, no slow start or loss.
    ``window_s=(start, duration)``: TCP's goodput as a timed run measures it, from ``start``
    to ``start + duration`` seconds after the first byte (``transfer_time.timed_goodput``);
    the steady state stays in ``steady_goodput_bps``. With loss and a loss-based ``cc`` (reno,
    cubic) the window's distribution is carried through the run (``window_chain``), delayed ACKs
    included; ``queue_bytes`` is the bottleneck's tail-drop queue (slow start overflows it).
    ``meter_bytes``: the rate is a meter with this bucket (tbf), not a wire: UDPR's cycle is the
    meter's (``stopwait.cycle_time``). ``transport_options``: the transport's own options
    (``wirelab.transports.Option``), e.g. a window; each transport's module names its model.
    """
    if not 0 <= loss <= 1:
        raise ModelError(f"loss must be between 0 and 100 %, not {loss * 100:g} %", "e.g. --loss 1%")
    if rtt_s is not None and rtt_s < 0:
        raise ModelError(f"RTT cannot be negative ({rtt_s} s)", "e.g. --rtt 40ms")
    if not rate_bps > 0:
        raise ModelError(f"rate must be positive, not {rate_bps!r} bit/s", "e.g. --rate 10mbit")
    if loss_unit not in ("packet", "datagram"):
        raise ModelError(f"unknown loss unit {loss_unit!r}", "use 'packet' or 'datagram'")
    if cc is not None and cc not in CONGESTION_CONTROLS:
        raise ModelError(f"no model for congestion control {cc!r}", f"use one of {', '.join(CONGESTION_CONTROLS)}")
    if size is not None and (isinstance(size, bool) or size < 0):
        raise ModelError(f"size must be a number of bytes ≥ 0, not {size!r}", "e.g. --size 200KB")
    options = tcp_options + (TCP_TIMESTAMPS if timestamps else 0)
    stack = HeaderStack(proto, mtu, ip_version, options, vlan, pppoe, wire)
    transport = stack.transport
    unknown = set(transport_options) - {o.name for o in transport.options}
    if unknown:
        raise ModelError(f"{proto} has no option {', '.join(sorted(unknown))}",
                         f"{proto}'s options: {', '.join(o.name for o in transport.options) or 'none'}")
    packets = packetize(stack, payload)
    if carriage not in ("packets", "stream"):
        raise ModelError(f"unknown carriage {carriage!r}", "use 'packets' or 'stream'")
    notes: list[str] = []
    if cc is not None and not transport.stream:
        notes.append(f"{cc} is a TCP congestion control: it does not apply to {proto}")
    # each transport's own model (its module names it): the parameters by name, its options' values too
    return transport.model(stack, packets, rate_bps, notes=notes, rtt_s=rtt_s, loss=loss, loss_reverse=loss_reverse,
                           window_bytes=window_bytes, rto_s=rto_s, max_wait_s=max_wait_s,
                           max_retransmits=max_retransmits, acked_per_ack=acked_per_ack, cc=cc,
                           size=None if size is None else int(size), initial_window=initial_window,
                           carriage=carriage, window_s=window_s, queue_bytes=queue_bytes, loss_unit=loss_unit,
                           meter_bytes=meter_bytes, **transport.option_values(transport_options))


def tcp_model(stack, packets, rate_bps, *, notes, rtt_s, loss, carriage, cc, size, window_bytes, rto_s,
              loss_reverse, acked_per_ack, initial_window, window_s, queue_bytes, **_) -> Prediction:
    """TCP's model (``transports.tcp``): the relayed stream's link limit, or the classic limits / a
    congestion control's steady state, then the transfer."""
    common = dict(rtt_s=rtt_s, loss=loss, bdp_bytes=bdp_bytes(rate_bps, rtt_s) if rtt_s else None)
    if carriage == "stream":
        return _stream(stack, packets, rate_bps, notes, common, size=size, cc=cc)
    return _tcp(stack, packets, rate_bps, notes, common, cc=cc, size=size, window_bytes=window_bytes,
                rto_s=rto_s, loss_reverse=loss_reverse, acked_per_ack=acked_per_ack,
                initial_window=initial_window, window_s=window_s, queue_bytes=queue_bytes)


def finish(proto, rate_bps, stack, packets, limits, binding, goodput, notes, *, rtt_s, loss, delivered=1.0,
           sw=None, transfer=None, cc=None, steady=None, round_s=None, sources=None) -> Prediction:
    """The Prediction a transport's model returns (see ``_finish``); the BDP from ``rate_bps`` and ``rtt_s``.
    ``sources``: where the model's own limits come from (a limit ``SOURCES`` names otherwise)."""
    common = dict(rtt_s=rtt_s, loss=loss, bdp_bytes=bdp_bytes(rate_bps, rtt_s) if rtt_s else None)
    p = _finish(proto, rate_bps, stack, packets, limits, binding, goodput, notes, common, delivered=delivered,
                sw=sw, transfer=transfer, cc=cc, steady=steady, round_s=round_s)
    return replace(p, sources=dict(sources)) if sources else p


def _finish(proto, rate_bps, stack, packets, limits, binding, goodput, notes, common, *,
            delivered=1.0, sw=None, transfer=None, cc=None, steady=None, round_s=None) -> Prediction:
    """The Prediction; with a transfer, goodput and binding become the finite transfer's
    (``steady``: (goodput, binding) of the steady state when ``goodput`` is a timed run's)."""
    steady_goodput, steady_binding = steady or (goodput, binding)
    if transfer is not None:
        goodput, binding = transfer.goodput_bps, transfer.binding
        notes = notes + [n for n in transfer.notes if n not in notes]
    finite = transfer is not None or steady is not None
    return Prediction(proto, rate_bps, stack, packets, limits, binding, goodput, common["rtt_s"],
                      common["loss"], delivered, sw, common["bdp_bytes"], tuple(notes), cc, transfer,
                      steady_goodput if finite else None, steady_binding if finite else None, round_s)


def _stream(stack, packets, rate_bps, notes, common, *, size, cc) -> Prediction:
    """TCP through a relay that paces the byte stream: η·C, and the stream's transfer time."""
    if common["loss"] > 0:
        raise ModelError("a relayed TCP stream cannot lose segments: no model for loss on it",
                         "use a namespaces testbed (root) for TCP with loss")
    notes.append("TCP relayed as a paced byte stream: the link limit only (no slow start, window or loss)")
    link = packets.efficiency * rate_bps
    transfer = None if size is None else stream_transfer(
        size, rate_bps, eta=packets.efficiency, header_bytes=stack.l2 + stack.l3 + stack.l4,
        delay_s=(common["rtt_s"] or 0.0) / 2)
    return _finish("tcp", rate_bps, stack, packets, {"link": link}, "link", link, notes, common,
                   transfer=transfer, cc=cc)


def _tcp(stack, packets, rate_bps, notes, common, *, cc, size, window_bytes, rto_s, loss_reverse,
         acked_per_ack, initial_window, window_s=None, queue_bytes=None) -> Prediction:
    """TCP: the classic limits (cc None) or a congestion control's steady state, then the transfer."""
    rtt_s, loss = common["rtt_s"], common["loss"]
    mss = min(max_payload(stack), packets.payload_bytes)
    eta = packets.efficiency
    header = stack.l2 + stack.l3 + stack.l4                  # a frame without payload: an ACK
    if cc is None:
        limits = tcp_limits(rate_bps, eta, mss, rtt_s=rtt_s, loss=loss, window_bytes=window_bytes,
                            rto_s=rto_s, acked_per_ack=acked_per_ack)
        if loss >= 1:
            limits = {**limits, "padhye": 0.0}
        if (loss > 0 or window_bytes) and not rtt_s:
            notes.append("loss and window limits need an RTT (--rtt); only the link limit applies")
        binding, goodput = binding_limit(limits)
        steady = SteadyState("reno", limits, binding, goodput, retransmissions_on_link=False)
    else:
        if loss >= 1:
            raise ModelError("TCP delivers nothing at 100 % loss", "use a loss below 100 %")
        if rtt_s is None:
            notes.append("no RTT given: the propagation delay is taken as 0")
        round_s = (rtt_s or 0.0) + 8.0 * (mss / eta + header) / rate_bps
        cited = steady = steady_state(cc, rate_bps, eta, mss, rtt_s=round_s, loss=loss, window_bytes=window_bytes,
                                      rto_s=rto_s)
        if steady.covered and cc in BETA and 0 < loss <= _chain_loss_limit():
            # start-up: numpy only when _tcp() runs
            from .window_chain import chain_setting, settled_state
            steady = settled_state(cited, chain_setting(cited, rate_bps, eta, mss, header, rtt_s or 0.0, loss,
                                                        window_bytes, queue_bytes), mss, initial_window)
        limits, binding, goodput = dict(steady.limits), steady.binding, steady.goodput_bps
        notes.extend(steady.notes)
    transfer = untimed = None

    def whole(nbytes):
        return tcp_transfer(nbytes, rate_bps, eta=eta, mss_bytes=mss, header_bytes=header, rtt_s=rtt_s or 0.0,
                            steady=steady, loss=loss, loss_reverse=loss_reverse, iw=initial_window,
                            window_bytes=window_bytes, rto_s=rto_s, recovery="classic" if cc is None else "linux",
                            queue_bytes=queue_bytes)
    timeable = steady.covered and not (cc is None and loss > 0 and not rtt_s)
    if size is not None and steady.covered:
        if not timeable:
            notes.append("the transfer time with loss needs an RTT (--rtt): not predicted")
        else:
            try:
                transfer = whole(size)
            except ModelError as err:
                untimed = str(err)
                notes.append(f"transfer time not predicted: {err}")
    elif window_s is not None and timeable and 0 < loss <= _chain_loss_limit() and cc in BETA:
        return _timed_chain(stack, packets, rate_bps, notes, common, limits=limits, steady=steady,
                            setting=_setting(cited, rate_bps, eta, mss, header, rtt_s or 0.0, loss,
                                             window_bytes, queue_bytes),
                            mss=mss, window_s=window_s, iw=initial_window)
    elif window_s is not None and timeable and 0 < loss <= _chain_loss_limit() and cc == "bbr":
        segment = 8.0 * mss / (eta * rate_bps)
        setting = dict(loss=loss, segment_s=segment, base_s=(rtt_s or 0.0) + segment + 8.0 * header / rate_bps,
                       queue=None if queue_bytes is None else queue_bytes * eta / mss,
                       cap=None if window_bytes is None else max(window_bytes / mss, 2.0))
        return _timed_chain(stack, packets, rate_bps, notes, common, limits=limits, steady=steady, setting=setting,
                            mss=mss, window_s=window_s, iw=initial_window)
    elif window_s is not None and timeable:
        start, duration = window_s
        if loss > _chain_loss_limit() and cc in BETA:
            notes.append(f"above {_chain_loss_limit():.0%} loss retransmission timeouts shape a timed run and "
                         "window_chain leaves them out: Cardwell et al.'s transient on the steady state instead")
        timed = timed_goodput(lambda n: whole(int(n)).data_time_s, start, duration,
                              most_bytes=eta * rate_bps * (start + duration) / 8.0 + 10 * mss)
        if abs(timed - goodput) > 0.01 * goodput:
            notes.append(f"a timed run from {start:g} s to {start + duration:g} s: "
                         f"{timed / 1e6:.3f} Mbit/s, the steady state {goodput / 1e6:.3f} (slow start, "
                         "and the window's way down after the first loss, still show)")
        return _finish("tcp", rate_bps, stack, packets, limits, binding, timed, notes, common, cc=cc,
                       steady=(goodput, binding))
    p = _finish("tcp", rate_bps, stack, packets, limits, binding, goodput, notes, common, transfer=transfer, cc=cc)
    return replace(p, untimed=untimed) if untimed else p


def _chain_loss_limit() -> float:
    # window_chain needs numpy: imported only when a timed run is predicted, so that
    # `wirelab --help` (which imports this module) starts without it
    from .window_chain import CHAIN_LOSS_LIMIT
    return CHAIN_LOSS_LIMIT


def _setting(*args):
    from .window_chain import chain_setting         # numpy: only when a timed run at loss is predicted
    return chain_setting(*args)


#: A timed run followed run by run for at most this many rounds; a longer one (seconds at a round of a
#: millisecond) takes the chain's expectation, which the runs equal on average (tests).
_MOST_TIMED_ROUNDS = 6000


def _timed_chain(stack, packets, rate_bps, notes, common, *, limits, steady, setting, mss, window_s,
                 iw) -> Prediction:
    """A timed run at random loss from ``start`` to ``start + duration`` after the first byte: Linux's
    rules run by run (``window_runs.timed_runs``: the mean and one run's spread), or for a run of very many
    rounds the expectation of the window's Markov chain (``window_chain``)."""
    import numpy as np                              # numpy: only when a timed run at loss is predicted
    # start-up: numpy only when _timed_chain() runs
    from .window_chain import timed_run
    from .window_runs import RUNS, timed_runs
    start, duration = window_s
    base = setting["base_s"]
    chain = steady.cc != "bbr"                      # BBR has no window chain: its runs only
    run = timed_run(until_s=start + duration, iw=iw, **setting) if chain else None
    round_s = run.round_s(start, duration) if chain else None
    spread = None
    if not chain or (start + duration) / base <= _MOST_TIMED_ROUNDS:
        per_run = 8.0 * mss / duration * timed_runs(
            start_s=start, duration_s=duration, loss=setting["loss"], cc=steady.cc, segment_s=setting["segment_s"],
            base_s=base, rtt_s=common["rtt_s"] or 0.0, iw=iw,
            queue=setting["queue"], cap=setting["cap"])
        goodput = float(per_run.mean())
        spread = {"std_bps": float(per_run.std(ddof=1)), "q05_bps": float(np.quantile(per_run, 0.05)),
                  "q95_bps": float(np.quantile(per_run, 0.95)), "runs": RUNS}
        how = (f"Linux's rules run by run ({RUNS} seeded runs, model.window_runs; one run "
               f"{spread['q05_bps'] / 1e6:.3f}–{spread['q95_bps'] / 1e6:.3f} Mbit/s, 90 %)")
    else:
        goodput = 8.0 * mss * run.segments(start, duration) / duration
        how = "the window's distribution carried round by round (window_chain)"
    clock = (f"; delayed ACKs: mean round {round_s * 1e3:.1f} ms against R0 = {base * 1e3:.1f} ms" if chain else "")
    notes.append(f"a timed run from {start:g} s to {start + duration:g} s: {how}{clock}: {goodput / 1e6:.3f} "
                 f"Mbit/s, the steady state {steady.goodput_bps / 1e6:.3f}; retransmission timeouts not modelled")
    out = _finish("tcp", rate_bps, stack, packets, limits, steady.binding, goodput, notes, common, cc=steady.cc,
                  steady=(steady.goodput_bps, steady.binding), round_s=round_s)
    return out if spread is None else replace(out, spread=spread)
