"""Every setting's measured ÷ predicted, with the named reason for what is left over.

A residual is measured ÷ predicted − 1 (``stats.summarize``: a file's size ÷ mean
transfer time against the predicted one, like with like). Within ``tolerance``
it needs no reason. Beyond it, each candidate reason below is *quantified* from
the setting's own parameters and measurements, never fitted to the residual; a
residual is explained when what the reasons account for brings it back within
the tolerance (a band wider than ±25 % accounts for nothing: "the data cannot tell" is
said, with the runs it would take, not taken as an explanation). Each reason gives the range its effect
lies in (a size, or a band); ``left`` is how far the ratio lies outside the range
they span together. Whatever is left beyond the tolerance is not explained: where the
runs are too few to tell (an interval wider than ±25 % that reaches the prediction) the
row's ``verdict`` is "needs runs" and it says how many would do; otherwise it is
**unexplained**, and ``check`` raises: a gap between model and measurement nobody can
name, in runs precise enough to show it, is a bug in one of them.

Where the prediction comes with an interval of its own (``pred_goodput_low_bps`` …
``_high_bps``: UDPR at the ends of the host round trip's probe range, ``calibration``;
TCP at loss: the model's spread of one run, ``pred_transfer_std_s`` for a file or
``pred_goodput_std_bps`` for a timed run (``model.window_runs``), over the setting's
runs), the test is whether the measured mean lies inside that interval (``overlap``), not a
fixed ±10 %: the row says so, with both. An interval explains only while it is at most
``WIDEST_INTERVAL`` (±25 %) either side of the prediction, and no interval has an infinite end
(a file's time never below the fastest run the model allows); a wider one explains nothing and
the row says how many runs would make it narrow enough. The same holds for every reason's band.

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
* ``iperf3 omit boundary``  iperf3 counts what its server reads after the omitted
                    seconds end, including a backlog received before (its reads
                    batch a block, 128 kB by default): up to one block more, a band
                    of block·8/(C·time) above the prediction (esnet/iperf#1261 and
                    #236 report -O over-counting).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from .. import transports
from ..errors import ExperimentError, WirelabError
from ..link import LinkSpec, burst_at_start
from ..model.stopwait import ACC_WIRE_BYTES, cycle_time
from ..experiment.adaptive import precision_note, runs_needed
from ..experiment.stats import summarize
from .intervals import WIDEST_INTERVAL, model_spread as _model_spread, number as _number, \
    one_run as _one_run, predicted_interval, within_interval as _overlap

__all__ = ["Reason", "reasons", "residual_table", "check", "ResidualError", "TOLERANCE"]

#: The kit's yardstick: a prediction within ±10 % of the measurement agrees.
TOLERANCE = 0.10
CLOCK_RESOLUTION_S = 2e-6
#: iperf3's read and write block for TCP (its -l default, 128 KiB).
IPERF3_BLOCK = 131072
PROBE_RTT_PERIOD_S, PROBE_RTT_S = 10.0, 0.2


class ResidualError(ExperimentError):
    """A residual beyond the tolerance that no known reason explains."""


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


def _host_round_trip(row, *_) -> Reason | None:
    transport = _transport(row)
    if transport is None or not transport.ack_clocked:      # each DATA waits for its ACC: the host's own round trip
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
    if transport is None or not transport.retransmits:       # the programs' own MAX_WAIT timeouts
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


def _iperf3_omit(row, *_) -> Reason | None:
    seconds, rate = _number(row, "time_s"), _number(row, "rate_bps")
    if row.get("engine") != "iperf3" or not _number(row, "omit_s", 0) or not (seconds > 0 and rate > 0):
        return None
    block = _number(row, "packet_bytes", IPERF3_BLOCK)
    band = min(8.0 * block / (rate * seconds), 1.0)
    return Reason("iperf3 omit boundary", f"a read backlog of up to {block / 1e3:.0f} kB counted after the "
                                          f"omitted seconds: up to +{band:.1%}", 0.0, band)


REASONS = (_spread, _tbf_burst, _host_round_trip, _rare_timeouts, _clock, _bbr_probe_rtt, _advertised_window, _round_trip,
           _iperf3_omit)


def reasons(row, *, tolerance: float = TOLERANCE, precision: float | None = None,
            max_reps: int | None = None) -> list[Reason]:
    """The known reasons that apply to one summary row, each quantified."""
    found = (reason(row, tolerance, precision, max_reps) for reason in REASONS)
    return [r for r in found if r is not None]


def _label(row) -> str:
    parts = [str(row.get("proto", ""))]
    for column, fmt in (("cc", str), ("size_bytes", lambda v: f"{v / 1e3:g} kB"),
                        ("rate_bps", lambda v: f"{v / 1e6:g} Mbit/s"), ("delay_s", lambda v: f"{v * 1e3:g} ms"),
                        ("loss", lambda v: f"{v:.1%} loss"), ("max_wait_s", lambda v: f"MAX_WAIT {v:g} s")):
        value = row.get(column)
        if value is not None and not (isinstance(value, float) and math.isnan(value)) and value != "":
            if column in ("loss", "delay_s") and not value:
                continue
            parts.append(fmt(value))
    return " ".join(parts)


def residual_table(runs: pd.DataFrame, *, tolerance: float = TOLERANCE, precision: float | None = None,
                   max_reps: int | None = None) -> pd.DataFrame:
    """One row per setting of a sweep's ``runs``: measured ÷ predicted, the residual, its
    interval, the reasons with their numbers, what is left after them, and ``explained``
    (module docstring). Settings the model does not cover say so and are not residuals."""
    summary = summarize(runs, metrics=("goodput_bps", "rtt_mean_s", "window_advertised_bytes",
                                                   "retransmissions"))
    rows = []
    for _, row in summary.iterrows():
        ratio = _number(row, "measured_over_predicted")
        out = {"setting": _label(row), "n": int(_number(row, "n", 0)), "measured/predicted": ratio,
               "residual": ratio - 1, "±interval": _number(row, "relative_ci"), "basis": row.get("measured_basis")}
        if not math.isfinite(ratio):
            why = row.get("first_error") if not _number(row, "n", 0) else row.get("pred_note")
            out.update(reasons=f"not compared: {why or 'no prediction'}", left=math.nan, explained=True,
                       within=None, overlap=None)
            rows.append(out)
            continue
        found = reasons(row, tolerance=tolerance, precision=precision, max_reps=max_reps)
        low = math.prod(1 + r.low for r in found)            # what the reasons allow the ratio to be
        high = math.prod(1 + r.high for r in found)
        left = ratio / low - 1 if ratio < low else ratio / high - 1 if ratio > high else 0.0
        within = abs(ratio - 1) <= tolerance
        overlap, says = _overlap(row, ratio)
        explained = within or bool(overlap) or abs(left) <= tolerance
        out.update(within=within, left=left, overlap=overlap, explained=explained,
                   verdict="within" if within else "explained" if explained
                   else "needs runs" if _cannot_tell(row, ratio, tolerance) else "unexplained",
                   reasons="; ".join([says] * bool(says) + [f"{r.name}: {r.text}" for r in found]))
        if not explained:
            out["reasons"] = (out["reasons"] + "; " if out["reasons"] else "") + (
                "NOT EXPLAINED: the runs cannot tell yet (an interval wider than "
                f"±{WIDEST_INTERVAL:.0%} reaches the prediction): more runs" if out["verdict"] == "needs runs"
                else f"UNEXPLAINED: {left:+.1%} after the known reasons")
        rows.append(out)
    return pd.DataFrame(rows)


def _cannot_tell(row, ratio: float, tolerance: float) -> bool:
    """Whether the runs are too few to say the model is wrong: the measured mean's 95 % interval, or
    the model's own for the runs made, is wider than ``WIDEST_INTERVAL`` and reaches within the
    tolerance of the prediction. Such a row is not explained (it says how many runs would do), and
    ``check`` does not call it a defect either: only a row precise enough to miss is one."""
    relative = _number(row, "relative_ci")
    if math.isfinite(relative) and relative > WIDEST_INTERVAL:
        if ratio * (1 - relative) <= 1 + tolerance and (relative >= 1 or ratio * (1 + relative) >= 1 - tolerance):
            return True
    low, high, sources = predicted_interval(row)
    pred = _number(row, "pred_goodput_bps")
    if not sources or not (math.isfinite(pred) and pred > 0) or low == high:
        return False
    wide = max(1 - low / pred, high / pred - 1) > WIDEST_INTERVAL
    return wide and low <= ratio * pred <= high


def check(table: pd.DataFrame) -> pd.DataFrame:
    """The table back unless a residual is beyond the tolerance with no known reason while its runs
    are precise enough to tell (``verdict`` "unexplained"): then ``ResidualError``. Rows whose runs
    cannot tell yet ("needs runs") are not explained, and say so in the table, but are no defect."""
    verdict = table["verdict"] if "verdict" in table else table["explained"].map({True: "explained", False: "unexplained"})
    bad = table[verdict == "unexplained"]
    if len(bad):
        lines = "; ".join(f"{r['setting']}: measured/predicted {r['measured/predicted']:.3f}" for _, r in bad.iterrows())
        raise ResidualError(f"{len(bad)} residual(s) beyond the tolerance with no known reason: {lines}",
                            "find the cause: fix the model (with a source) or the measurement, or name the "
                            "reason in wirelab.analysis.residuals with its size")
    return table
