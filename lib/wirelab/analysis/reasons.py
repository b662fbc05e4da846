"""The known reasons a measurement differs from its prediction, each quantified from one summary
row of a sweep (``residuals.residual_table`` puts them beside every setting).

The reasons (each a function of one summary row → expected effect, or None):

* ``spread``        too few runs for the tolerance: the 95 % interval of the
                    ratio reaches within the tolerance of 1 (random loss, timeouts,
                    slow-start exits vary from run to run), with the runs it
                    would take (``adaptive.precision_note``); or the interval the
                    model's own spread of one run gives that many runs
                    (``pred_transfer_std_s``), where it is the wider: three runs
                    of a heavy tail often show none of it.
* ``tbf burst``     tbf's bucket starts full: its first ``burst`` bytes leave at
                    the interface's speed, not the rate (where the link says its rate
                    starts with a burst: ``wirelab.link.burst_at_start``, namespaces and
                    hosts): the transfer is shorter by up to burst·8/C (tc-tbf(8)). A
                    bucket of one frame has nothing to say: every shaper lets a busy
                    period's first frame go.
* ``host round trip``  stop-and-wait waits one host round trip per packet; the
                    probe before the setting's runs measured it, the runs' own DATA→ACC
                    samples say what it was during them: N·(their mean cycle −
                    the predicted one).
* ``rare timeouts`` stop-and-wait's predicted mean counts the expected MAX_WAIT
                    timeouts (``pred_time_timeouts_s``), a rare cost where loss is
                    small and the file short: the runs' own resends (each a MAX_WAIT
                    and a cycle) against it, −/+ what their count moves the time.
                    TCP's counts the expected RTO of a lost retransmission
                    (``pred_expected_rto_s``): where the runs more likely than not
                    saw none, a band up to the mean without it.
* ``clock``         time.time()'s resolution, ±2 µs on the two instants.
* ``BBR ProbeRTT``  BBR v1 drains to 4 packets for 200 ms every 10 s (Cardwell
                    et al., ACM Queue 2016): −2 % of a transfer longer than 10 s.
* ``advertised window``  a window-bound setting: Linux doubles the SO_RCVBUF asked
                    for (socket(7)) and advertises a share of it (payload ÷ truesize);
                    the runs' own largest advertised window (iperf3's max_snd_wnd)
                    against the W the model was given.
* ``round trip``    a window- or loss-bound TCP rate is W/RTT: the runs' own mean
                    RTT (the sender's srtt: queueing, the link process, delayed
                    ACKs) against the model's round (2·delay + a segment and an ACK), or
                    the mean round a timed run's prediction already assumed (``pred_round_s``:
                    delayed ACKs counted there, ``model.ackclock``).
* ``slow sender``   udp's sender never waits for the network, so the model has it keep the
                    line busy; its own first to last datagram sent (``first_data_time_s`` …
                    ``last_data_time_s``) says whether it did: a sender kept off the CPU offers
                    less than the link carries, and the last datagram arrives that much later
                    (the span, plus what the model adds after the line: delay, a frame).
* ``receiver drops``  datagrams the receiving host's full socket buffer dropped (socket(7)
                    ``SO_RXQ_OVFL``: a receiver kept off the CPU), not the link: their share of
                    the datagrams is missing from the bytes delivered.
* ``iperf3 omit boundary``  iperf3 counts what its server reads after the omitted
                    seconds end, including a backlog received before (its reads
                    batch a block, 128 kB by default): up to one block more, a band
                    of block·8/(C·time) above the prediction (esnet/iperf#1261 and
                    #236 report -O over-counting).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import transports
from ..errors import WirelabError
from ..link import LinkSpec, burst_at_start
from ..model.stopwait import ACC_WIRE_BYTES, cycle_time
from ..experiment.adaptive import precision_note, runs_needed
from .intervals import WIDEST_INTERVAL, model_spread as _model_spread, number as _number, one_run as _one_run

__all__ = ["Reason", "reasons", "REASONS", "TOLERANCE", "CLOCK_RESOLUTION_S"]

#: The kit's yardstick: a prediction within ±10 % of the measurement agrees.
TOLERANCE = 0.10
CLOCK_RESOLUTION_S = 2e-6
#: iperf3's read and write block for TCP (its -l default, 128 KiB).
IPERF3_BLOCK = 131072
PROBE_RTT_PERIOD_S, PROBE_RTT_S = 10.0, 0.2


@dataclass(frozen=True)
class Reason:
    """One named cause, a sentence with its numbers, and the range [``low``, ``high``] its effect
    on measured ÷ predicted − 1 lies in (equal for an effect of known size)."""
    name: str
    text: str
    low: float = 0.0
    high: float = 0.0

    @classmethod
    def sized(cls, name: str, text: str, effect: float) -> "Reason":
        return cls(name, text, effect, effect)


def _spread(row, tolerance, precision, max_reps) -> Reason | None:
    """Too few runs for the tolerance. A band counts as an explanation only while it is at most
    ``WIDEST_INTERVAL``: a wider one would explain any residual, so it explains none and says how
    many runs would do instead."""
    relative, runs = _number(row, "relative_ci"), int(_number(row, "n", 0))
    model = _model_spread(row, runs)
    if model > max(relative if math.isfinite(relative) else 0.0, tolerance):
        one = _one_run(row)
        band = model if model <= WIDEST_INTERVAL else 0.0
        return Reason("spread", f"the model's own spread: one run varies by {one:.0%} (where the first loss "
                                f"falls, a lost retransmission), so {runs} runs give ±{model:.0%} (the runs' own "
                                f"interval ±{relative:.0%}); about {runs_needed(one, tolerance)} runs would do"
                                + ("" if band else f" (wider than ±{WIDEST_INTERVAL:.0%}: it explains nothing)"),
                      -band, band)
    if not math.isfinite(relative) or relative <= tolerance:
        return None
    note = precision_note(relative, runs, precision or tolerance, max_reps,
                          adaptive=precision is not None, failed=int(_number(row, "n_failed", 0)))
    band = relative if relative <= WIDEST_INTERVAL else 0.0
    return Reason("spread", (note or f"interval ±{relative:.0%}")
                  + ("" if band else f" (wider than ±{WIDEST_INTERVAL:.0%}: it explains nothing)"), -band, band)


def _tbf_burst(row, *_) -> Reason | None:
    rate, seconds = _number(row, "rate_bps"), _number(row, "pred_data_time_s")
    if not (math.isfinite(rate) and rate > 0 and math.isfinite(seconds) and seconds > 0):
        return None
    try:
        spec = LinkSpec.parse(rate=rate, mtu=int(_number(row, "mtu", 1500)))
    except WirelabError:
        return None
    burst = burst_at_start(row.get("backend"), spec)
    if burst <= spec.frame_bytes:
        return None
    saved = min(8.0 * burst / rate, seconds / 2)
    effect = seconds / (seconds - saved) - 1
    return Reason.sized("tbf burst", f"tbf's bucket sends its first {burst:.0f} B at once: "
                               f"{saved * 1e3:.1f} ms less, +{effect:.1%}", effect)


def _transport(row) -> transports.Transport | None:
    """The row's transport (None for a protocol this kit does not know: a folder from elsewhere)."""
    name = row.get("proto")
    return transports.get(name) if name in transports.names() else None


def _stop_and_wait(row) -> bool:
    """One DATA per round trip: an ack-clocked transport without a window of DATA in flight (Go-Back-N's
    ``window_packets`` above 1 queues a window behind each round trip, and a timeout resends N DATA)."""
    transport = _transport(row)
    window = _number(row, "window_packets", 1.0)
    return transport is not None and transport.ack_clocked and not (math.isfinite(window) and window > 1)


def _host_round_trip(row, *_) -> Reason | None:
    if not _stop_and_wait(row):      # each DATA waits for its ACC: the host's own round trip
        return None
    measured, predicted = _number(row, "rtt_mean_s_mean"), _number(row, "pred_rtt_s", 0.0)
    packets, seconds = _number(row, "pred_datagrams"), _number(row, "pred_data_time_s")
    if not all(math.isfinite(v) for v in (measured, predicted, packets, seconds)) or seconds <= 0:
        return None
    # the runs' DATA→ACC samples include both transmissions, as the predicted cycle does (on tbf's
    # meter: what the DATA exceeds the bucket by, or the bucket's refill)
    meter = _number(row, "pred_meter_bytes")
    cycle = cycle_time(_number(row, "pred_wire_bytes", 0), ACC_WIRE_BYTES, _number(row, "rate_bps", math.inf),
                       predicted, meter if math.isfinite(meter) else None)
    extra = packets * (measured - cycle)
    if abs(extra) < 1e-4 * seconds:
        return None
    effect = seconds / (seconds + extra) - 1
    return Reason.sized("host round trip", f"the runs' own cycle was {measured * 1e3:.2f} ms against "
                                     f"{cycle * 1e3:.2f} ms predicted ({row.get('pred_host_rtt_s', 0) * 1e3:.2f} ms "
                                     f"of it the probe's host round trip): {effect:+.1%}", effect)


def _rare_timeouts(row, *_) -> Reason | None:
    transport = _transport(row)
    if transport is not None and transport.stream:
        return _rare_rto(row)
    if transport is None or not transport.retransmits or not _stop_and_wait(row):   # its own MAX_WAIT timeouts
        return None
    expected, seconds = _number(row, "pred_time_timeouts_s"), _number(row, "pred_data_time_s")
    resent, wait = _number(row, "retransmissions_mean"), _number(row, "max_wait_s")
    cycle = _number(row, "pred_rtt_s", 0.0)
    if not all(math.isfinite(v) for v in (expected, seconds, resent, wait)) or seconds <= 0 or expected <= 0:
        return None
    own = resent * (wait + cycle)
    if abs(own - expected) < 1e-4 * seconds:
        return None
    effect = seconds / (seconds - expected + own) - 1
    return Reason.sized("rare timeouts", f"the runs resent {resent:.1f} DATA a run ({own * 1e3:.1f} ms of MAX_WAIT) "
                                   f"where the prediction counts {expected * 1e3:.1f} ms of timeouts: {effect:+.1%}",
                        effect)


def _rare_rto(row) -> Reason | None:
    """TCP's predicted mean counts the expected RTO (the first loss's retransmission lost too,
    ``pred_expected_rto_s``), a long wait in few runs (``pred_rto_run_probability``): when the
    runs more likely than not saw none, the mean without it is what they show, up to that much."""
    expected, share = _number(row, "pred_expected_rto_s"), _number(row, "pred_rto_run_probability")
    seconds, n = _number(row, "pred_data_time_s"), _number(row, "n", 0)
    if not all(math.isfinite(v) for v in (expected, share, seconds)) or not seconds > expected > 1e-3 * seconds:
        return None
    unseen = (1.0 - share) ** n
    if unseen < 0.5:
        return None
    effect = seconds / (seconds - expected) - 1
    return Reason("rare timeouts", f"the prediction counts {expected * 1e3:.1f} ms of RTO (a lost retransmission, "
                                   f"{share:.1%} of runs); {n:.0f} runs see none with probability {unseen:.0%}: "
                                   f"up to {effect:+.1%}", 0.0, effect)


def _clock(row, *_) -> Reason | None:
    seconds = _number(row, "transfer_s_mean")
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    band = 2 * CLOCK_RESOLUTION_S / seconds
    return Reason("clock", f"two instants read to ±{CLOCK_RESOLUTION_S * 1e6:.0f} µs: ±{band:.2%}", -band, band) \
        if band > 1e-4 else None


def _bbr_probe_rtt(row, *_) -> Reason | None:
    seconds = _number(row, "transfer_s_mean", _number(row, "time_s"))
    if row.get("pred_cc") != "bbr" or not math.isfinite(seconds) or seconds < PROBE_RTT_PERIOD_S:
        return None
    share = math.floor(seconds / PROBE_RTT_PERIOD_S) * PROBE_RTT_S / seconds
    return Reason.sized("BBR ProbeRTT", f"BBR drains for {PROBE_RTT_S * 1e3:.0f} ms every "
                                  f"{PROBE_RTT_PERIOD_S:.0f} s: −{share:.1%}", -share)


def _advertised_window(row, *_) -> Reason | None:
    asked, granted = _number(row, "window_bytes"), _number(row, "window_advertised_bytes_mean")
    window_limit, link = _number(row, "pred_limit_window_bps"), _number(row, "pred_limit_link_bps")
    pred = _number(row, "pred_goodput_bps")
    if not all(math.isfinite(v) and v > 0 for v in (asked, granted, window_limit, link, pred)):
        return None
    effect = min(link, window_limit * granted / asked) / pred - 1
    if abs(effect) < 1e-3:
        return None
    return Reason.sized("advertised window", f"the receiver advertised {granted:.0f} B for the {asked:.0f} B asked: "
                                       f"W/RTT {effect:+.1%}", effect)


def _round_trip(row, *_) -> Reason | None:
    bound = row.get("pred_steady_binding") or row.get("pred_binding")
    if row.get("proto") != "tcp" or bound not in ("cubic", "reno", "padhye", "mathis", "window"):
        return None
    measured, rtt = _number(row, "rtt_mean_s_mean"), _number(row, "pred_rtt_s")
    rate = _number(row, "rate_bps")
    if not all(math.isfinite(v) and v > 0 for v in (measured, rtt, rate)):
        return None
    model = _number(row, "pred_round_s")             # a timed run at loss: the chain's mean round
    counted = math.isfinite(model) and model > 0       # (delayed ACKs already in the prediction)
    if not counted:
        model = rtt + 8.0 * (_number(row, "pred_wire_bytes", 1514) + 66) / rate
    effect = model / measured - 1
    if abs(effect) < 1e-3:
        return None
    which = "the model's mean round (delayed ACKs included)" if counted else "the model's round"
    return Reason.sized("round trip", f"the runs' mean RTT was {measured * 1e3:.1f} ms, {which} "
                                f"{model * 1e3:.1f} ms: W/RTT {effect:+.1%}", effect)


def _slow_sender(row, *_) -> Reason | None:
    transport = _transport(row)
    if transport is None or transport.stream or transport.acked or row.get("workload", "file") != "file":
        return None                  # only a sender that never waits for the network keeps the line busy
    span, link, data = (_number(row, name) for name in ("send_span_s_mean", "pred_time_link_s", "pred_data_time_s"))
    if not all(math.isfinite(v) and v > 0 for v in (span, link, data)) or data < link:
        return None
    took = span + (data - link)
    if took <= data * 1.01:
        return None
    effect = data / took - 1
    offered = 8.0 * _number(row, "size_bytes") / span
    return Reason.sized("slow sender", f"the sender took {span * 1e3:.1f} ms from its first datagram to its last "
                                 f"where the link needs {link * 1e3:.1f} ms (it offered {offered / 1e6:.1f} Mbit/s: "
                                 f"kept off the CPU), {effect:+.1%}", effect)


def _receiver_drops(row, *_) -> Reason | None:
    drops, datagrams = _number(row, "receiver_socket_drops_mean"), _number(row, "pred_datagrams")
    if not (math.isfinite(drops) and drops > 0 and math.isfinite(datagrams) and datagrams > 0):
        return None
    effect = -min(drops / datagrams, 1.0)
    return Reason.sized("receiver drops", f"the receiving host's socket dropped {drops:.1f} datagrams a run (its "
                                    f"buffer full: the receiver was kept off the CPU), not the link: {effect:+.1%}",
                        effect)


def _iperf3_omit(row, *_) -> Reason | None:
    seconds, rate = _number(row, "time_s"), _number(row, "rate_bps")
    if row.get("engine") != "iperf3" or not _number(row, "omit_s", 0) or not (seconds > 0 and rate > 0):
        return None
    block = _number(row, "packet_bytes", IPERF3_BLOCK)
    band = min(8.0 * block / (rate * seconds), 1.0)
    return Reason("iperf3 omit boundary", f"a read backlog of up to {block / 1e3:.0f} kB counted after the "
                                          f"omitted seconds: up to +{band:.1%}", 0.0, band)


REASONS = (_spread, _tbf_burst, _host_round_trip, _rare_timeouts, _clock, _bbr_probe_rtt, _advertised_window, _round_trip,
           _slow_sender, _receiver_drops, _iperf3_omit)


def reasons(row, *, tolerance: float = TOLERANCE, precision: float | None = None,
            max_reps: int | None = None) -> list[Reason]:
    """The known reasons that apply to one summary row, each quantified."""
    found = (reason(row, tolerance, precision, max_reps) for reason in REASONS)
    return [r for r in found if r is not None]
