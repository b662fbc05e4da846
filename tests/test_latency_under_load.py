"""Watching a queue fill (root): a TCP run's own stream shows slow start and the RTT growing with
the queue, and a probe's round trips under load meet the model's full-queue delay.

The tolerances are the issue's (15 %); bench/bench_latency.py prints the ratios of every
variant (backends, TCP and UDP loads, median and 95th percentile) for the record."""
from __future__ import annotations

import statistics

import pytest

from wirelab.experiment import Experiment, run
from wirelab.experiment.events import read_events
from wirelab.analysis.latency import loaded_latency
from wirelab.model.delay import loaded_rtt

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_a_tcp_runs_stream_shows_slow_start_and_the_rtt_growing_as_the_queue_fills(tmp_path):
    exp = Experiment("stream", proto="tcp", workload="time", time="2.5s", rate="10mbit", delay="20ms",
                     queue=60, cc="cubic", reps=1)
    frame = run(exp, out=tmp_path, progress=False)
    row = frame.iloc[0]
    assert row["status"] == "ok", row["error"]
    events = read_events(tmp_path / row["events_file"])
    sender = [e for e in events if e["event"] == "interval" and e["source"] == "sender" and e.get("srtt_s")]
    queue = [e for e in events if e["event"] == "queue"]
    assert len(sender) >= 15 and len(queue) >= 15
    # slow start (until a loss or HyStart sets ssthresh): the window only grows, doubling a round
    # trip, from the initial 10 segments (RFC 6928)
    ramp = [e["cwnd_segments"] for e in sender if e["ssthresh_segments"] is None and e["bytes"]]
    assert len(ramp) >= 4 and ramp == sorted(ramp) and ramp[-1] >= 2 * ramp[0] and ramp[-1] >= 4 * 10
    # the RTT grows as the queue fills: the sender's RTT follows the queue's backlog
    limit, rate = queue[0]["limit_bytes"], 10e6
    base = min(e["min_rtt_s"] for e in sender if e.get("min_rtt_s"))
    assert base == pytest.approx(0.040, abs=0.004)
    fullest = max(queue, key=lambda e: e["backlog_bytes"])
    assert fullest["backlog_bytes"] > 0.8 * limit
    before = [e["srtt_s"] for e in sender if e["t"] <= fullest["t"]]
    assert before[-1] > base + 0.5 * 8 * limit / rate and before[-1] > 2 * before[0]
    # an ACK's RTT sample times a segment sent one round trip earlier: the sender's RTT one round
    # trip after a queue sample is that backlog's delay plus the base (median over the run)
    errors = []
    for q in queue:
        expected = loaded_rtt(base, q["backlog_bytes"], rate)
        later = [s["srtt_s"] for s in sender if s["t"] >= q["t"] + expected]
        if later:
            errors.append(abs(later[0] / expected - 1))
    assert len(errors) >= 10 and statistics.median(errors) < 0.15, errors
    # ... up to the full queue's delay, the model's RTT under load
    predicted = loaded_rtt(base, limit, rate)
    assert max(e["srtt_s"] for e in sender) == pytest.approx(predicted, rel=0.15)


def test_a_probes_rtt_under_load_meets_the_full_queues_delay_across_three_queue_sizes(tmp_path):
    """On the namespaces backend (tbf): a UDP load above the link's rate keeps tbf's queue full (its
    socket buffer set above the queue: a sender's own buffer would cap a queue on its own host), and
    the probe's median round trip is the base RTT plus the queue's limit drained at the rate."""
    exp = Experiment("bloat", workload="time", time="3s", rate="10mbit", queue=[20, 50, 100], reps=1,
                     backend="namespaces",
                     flows="udp rate=15mbit window=2MB start=1s time=2s + ping interval=20ms")
    frame = run(exp, out=tmp_path, progress=False)
    assert set(frame["status"]) == {"ok"}, frame["error"].dropna().tolist()
    table = loaded_latency(frame, tmp_path, settle_s=0.5)
    assert list(table["queue_bytes"]) == [20 * 1514, 50 * 1514, 100 * 1514]
    assert (table["base_rounds"] >= 10).all() and (table["loaded_rounds"] >= 40).all()
    assert (table["base_rtt_s"] < 0.002).all()
    for _, row in table.iterrows():
        assert row["loaded_rtt_s"] == pytest.approx(row["pred_loaded_rtt_s"], rel=0.15), row.to_dict()
