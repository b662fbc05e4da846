"""Linux's own BBR against model.bbr_startup (root): a captured file transfer's segments, counted
every half round trip from its first data segment, follow the modelled paced ramp, and its last data
segment leaves when the model says, closer than slow start's doubling bursts would have it."""
from __future__ import annotations

import numpy as np
import pytest

from wirelab.capture import read_capture
from wirelab.experiment import Experiment, run
from wirelab.model.bbr_startup import bbr_departures
from wirelab.model.slowstart import slow_start_send

pytestmark = [pytest.mark.root, pytest.mark.slow]

MSS = 1448


def _captured_data(row, out) -> tuple[np.ndarray, np.ndarray]:
    """(seconds from the first data segment, full segments sent by then) of the file's direction,
    PPCB's CONN left out (it waits a round trip for CONACC before the data)."""
    frames = read_capture(out / row["capture_file"])
    tcp = frames[(frames["proto"] == "tcp") & (frames["payload_len"] > 0)]
    direction = tcp.groupby(["src", "dst"])["payload_len"].sum().idxmax()
    data = tcp[(tcp["src"] == direction[0]) & (tcp["dst"] == direction[1])].iloc[1:]
    times = data["time"].to_numpy()
    return times - times[0], np.cumsum(data["payload_len"].to_numpy()) / MSS


@pytest.mark.parametrize("rate_bps, delay_s, size", [(15.84e6, 0.0654, 348_174), (30e6, 0.040, 600_000)])
def test_a_bbr_file_follows_the_paced_ramp(tmp_path, rate_bps, delay_s, size):
    exp = Experiment("bbr-ramp", proto="tcp", cc="bbr", size=f"{size}B", rate=f"{rate_bps / 1e6:g}mbit",
                     delay=f"{delay_s * 1e3:g}ms", reps=1, backend="auto", capture=True)
    row = run(exp, out=tmp_path, progress=False).iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["link_counters_a->b_dropped_queue"] == 0          # a ramp without loss, as modelled
    times, sent = _captured_data(row, tmp_path)
    segment = 8 * (MSS + 66) / rate_bps
    rtt = 2 * delay_s + 8 * 66 / rate_bps                         # the ACK's own time on the way back
    starts = bbr_departures(segment, rtt, 10, None, MSS, 4096).leaves - segment
    compared = 0
    for half_rounds in range(3, 40):
        at = half_rounds * rtt / 2
        if at >= times[-1]:
            break
        compared += 1
        captured = sent[np.searchsorted(times, at, side="right") - 1]
        modelled = np.sum(starts <= at)
        assert abs(captured - modelled) <= max(6.0, 0.12 * modelled), (half_rounds, captured, modelled)
    assert compared >= 6                                         # the ramp's rounds, not just its start
    # the whole file: the paced ramp's time, not slow start's (at these RTTs 8-13 % apart)
    file_segments = sent[-1]
    paced = float(np.interp(file_segments, np.arange(1, len(starts) + 1), starts))
    bursts = slow_start_send(file_segments, segment, rtt).send - segment
    assert times[-1] == pytest.approx(paced, rel=0.05)
    assert abs(times[-1] - paced) < abs(times[-1] - bursts)


@pytest.mark.parametrize("size", [600_000, 900_000])
def test_a_queue_too_shallow_for_the_overshoot_drops_what_the_model_drops(tmp_path, size):
    # 10 Mbit/s, 80 ms one way, a queue of 40 frames: the start-up's overshoot (about twice the BDP
    # of 132 segments) overflows it; 600 kB ends soon after (the resent segments cost time), 900 kB
    # long after (they take the link time the dropped ones did not: no cost)
    queue = 40
    exp = Experiment("bbr-overflow", proto="tcp", cc="bbr", size=f"{size}B", rate="10mbit", delay="80ms",
                     queue=queue, reps=1, backend="auto")
    row = run(exp, out=tmp_path, progress=False).iloc[0]
    assert row["status"] == "ok", row["error"]
    segment, rtt = 8 * (MSS + 66) / 10e6, 0.160 + 8 * 66 / 10e6
    segments = int(np.ceil(size * 1.021 / MSS))                  # PPCB's 21 B a 1000 B chunk
    modelled = bbr_departures(segment, rtt, 10, None, MSS, segments, queue=float(queue)).dropped
    measured = row["link_counters_a->b_dropped_queue"]
    assert modelled > 0 and measured > 0
    assert abs(measured - modelled) <= max(8, 0.35 * modelled), (measured, modelled)
    assert row["goodput_bps"] / row["pred_goodput_bps"] == pytest.approx(1.0, abs=0.06)
    assert "dropped there and resent" in row["pred_note"]
