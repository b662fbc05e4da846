"""Document 003 end to end: the five-node network, an engine of the one runner, against the
store-and-forward path prediction."""
from pathlib import Path

import pandas as pd
import pytest

from wirelab.labs.broker import FRAME_BYTES, BrokerEngine, _delays, predict_route, run_across
from wirelab.labs import doc003
from wirelab.labs.doc003 import delay_table, summarize_delays
from wirelab.link import LinkSpec, broker_network
from wirelab.link.userspace import EARLY_S
from wirelab.model import path_delay


def test_prediction_follows_each_link_of_the_route():
    twenty = LinkSpec.parse(delay="20ms")
    topo = broker_network(LinkSpec.parse(rate="1mbit"), twenty, twenty)
    pred = predict_route(topo)
    tcp_hop = FRAME_BYTES["tcp"] * 8 / 1e6                 # 98 B at 1 Mbit/s on s–b, both ways
    assert FRAME_BYTES == {"tcp": 32 + 14 + 20 + 32, "udp": 32 + 14 + 20 + 8}
    assert pred["pred_one_way_s"] == pytest.approx(0.04 + tcp_hop)
    assert pred["pred_way_back_s"] == pytest.approx(0.04 + tcp_hop)
    slow_r2 = broker_network(links={"b-r2": LinkSpec.parse(delay="60ms")})
    assert predict_route(slow_r2)["pred_one_way_s"] == pytest.approx(0.03)      # r1 0, r2 60 ms: mean
    assert path_delay(32, [(None, 0.06)]) == pytest.approx(0.06)


def test_three_ways_to_the_one_way_delay():
    # there 40 ms, back 10 ms, d's clock 4 s ahead, d holds each message 1 ms
    frame = pd.DataFrame({"sent": [100.0, 101.0], "dest_rx": [104.04, 105.04], "dest_tx": [104.041, 105.041],
                          "acked": [100.051, 101.051]})
    out = _delays(frame, clock_offset_s=4.0)
    assert out["same_clock_s"].tolist() == pytest.approx([0.04, 0.04])
    assert out["rtt_half_s"].tolist() == pytest.approx([0.0255, 0.0255])       # wrong: asymmetric path
    assert out["offset_estimate_s"].iloc[0] == pytest.approx(4.015)            # off by half the asymmetry
    assert out["offset_est_s"].tolist() == pytest.approx([0.025, 0.025])


@pytest.mark.root
def test_five_nodes_with_20ms_on_each_udp_link_match_the_path_prediction(testbed):
    """The median message. On this shared 2-core machine the programs (and the userspace link,
    when other real-time work throttles it) now and then wake late: runs were seen where 1 to
    29 in 100 messages came 1 to 27 ms late while other test suites ran, which moves the mean
    by up to several ms but leaves the median alone. The mean is in the failure message."""
    twenty = LinkSpec.parse(delay="20ms")
    topology = broker_network(LinkSpec(), twenty, twenty)
    net = testbed(topology)
    frame = run_across(net, messages=100, clock_offset_s=4.0)
    info = net.describe()
    pred = predict_route(topology)["pred_one_way_s"]
    # the hosts' own cost on this route (programs, broker, the link's forwarding), measured beside
    # on the same backend with no delay: what the path model leaves out, not the links' share
    bare = testbed(broker_network(LinkSpec(), LinkSpec(), LinkSpec()), backend=net.backend)
    host_s = run_across(bare, messages=100, clock_offset_s=4.0)["same_clock_s"].median()
    assert pred == pytest.approx(0.04)
    assert not frame["lost"].any() and len(frame) == 100
    assert frame["via"].tolist() == ["r1", "r2"] * 50
    early = 2 * EARLY_S if net.backend == "userspace" else 0.0        # its timer slack, per delayed hop
    assert (frame["same_clock_s"] >= 0.04 - early).all()           # the link never delivers earlier
    for method in ("same_clock_s", "rtt_half_s", "offset_est_s"):
        # RTT / 2 also counts half of d's own time between the message and its ACK (hold_s)
        delays = frame[method] - (frame["hold_s"] / 2 if method == "rtt_half_s" else 0.0)
        # the round trip crosses the delayed links four times, the one-way methods twice: on the
        # userspace link each crossing can wake late (CI saw RTT / 2 at 1.2 ms over, one-way within 1)
        within = 0.002 if method == "rtt_half_s" and net.backend == "userspace" else 0.001
        assert abs(delays.median() - host_s - pred) < within, (f"{method}: median {delays.median()}, mean "
                                                              f"{delays.mean()}, the hosts' own {host_s}")
    assert frame["offset_estimate_s"].iloc[0] == pytest.approx(4.0, abs=0.001)
    assert "b–r1" in info["link"]


def test_the_configurations_are_one_sweep_of_the_runner():
    lab = doc003.sweeps(quick=True, configs=[["0ms", "0ms"], ["1ms", "5ms"]])
    exp = lab["delays"].experiment
    assert exp.engine == "broker" and lab.values["messages"] == doc003.QUICK["messages"]
    settings = exp.settings()
    assert [(s["delay_s"], s["jitter_s"]) for s in settings] == [(0.0, 0.0), (0.001, 0.005)]
    assert {s["echo_count"] for s in settings} == {40} and {s["rate_bps"] for s in settings} == {None}
    assert lab["delays"].engine_options == {"source_link": {}, "clock_offset_s": 4.0}
    # nobody computes the run's deadline by hand: the engine predicts every message's round trip
    pred = BrokerEngine().predict(settings[1])
    assert pred["pred_transfer_time_s"] == pytest.approx(40 * 2 * pred["pred_rtt_half_s"])


def test_a_sweep_saved_before_the_one_runner_loads_into_the_same_tables():
    folder = Path(__file__).parent / "data" / "before-one-runner" / "broker"
    frame = doc003.load_delays(folder)
    summary = summarize_delays(frame)
    assert set(summary["config"]) == {"0 s", "1 ms"} and (summary["n"] == 10).all()
    assert len(delay_table(summary, doc003.reference())) == 2


@pytest.mark.root
def test_sweep_saves_each_configuration_and_resumes(tmp_path):
    lab = doc003.sweeps(configs=[["0ms", "0ms"], ["1ms", "5ms"]], messages=20)
    frame = lab["delays"].run(tmp_path, progress=False)
    assert set(frame["config"]) == {"0 s", "1 ms ± 5 ms"} and len(frame) == 40
    assert (frame["status"] == "ok").all() and frame["run_id"].nunique() == 2
    assert (tmp_path / "results.parquet").exists() and frame["deadline_s"].notna().all()
    again = lab["delays"].run(tmp_path, progress=False)
    assert again["sent"].tolist() == frame["sent"].tolist()           # loaded, not measured again
    summary = summarize_delays(again)
    jittered = summary[(summary["config"] == "1 ms ± 5 ms") & (summary["method"] == "same_clock")].iloc[0]
    assert jittered["pred_s"] == pytest.approx(2 * 0.0018)            # netem's clipped jitter, two hops
    assert jittered["n"] == 20 and jittered["ci_s"] > 0
    # the columns of the lab's own folder format before: all there, beside the runner's
    before = pd.read_parquet(Path(__file__).parent / "data" / "before-one-runner" / "broker" / "messages.parquet")
    assert set(before.columns) <= set(frame.columns)


def test_a_network_that_cannot_be_built_is_one_failed_row_with_the_prediction(tmp_path):
    lab = doc003.sweeps(configs=[["20ms", "0ms"]], messages=5, backend="loopback")
    frame = lab["delays"].run(tmp_path, progress=False)
    assert len(frame) == 1 and frame["status"].iloc[0] == "failed" and "namespaces" in frame["error"].iloc[0]
    assert frame["pred_one_way_s"].iloc[0] == pytest.approx(0.04) and frame["config"].iloc[0] == "20 ms"
    assert "not measured" in delay_table(summarize_delays(frame)).columns


def test_the_documents_interval_is_z_1_95_and_its_widest_bar_stands_beside_ours():
    from wirelab.experiment.stats import t_quantile
    frame = doc003.load_delays(Path(__file__).parent / "data" / "before-one-runner" / "broker")
    summary = summarize_delays(frame)
    row = summary[summary["method"] == "rtt_half"].iloc[0]
    assert row["ci_doc_s"] == pytest.approx(1.95 * row["std_s"] / row["n"] ** 0.5)
    assert row["ci_s"] / row["ci_doc_s"] == pytest.approx(t_quantile(0.975, row["n"] - 1) / 1.95)
    table = delay_table(summary, doc003.reference())
    assert "RTT/2 ± 1.95·s/√n, the document's interval (ms)" in table
    assert table.set_index("link delay").loc["0 s", "document's error bar"].startswith("widest")
    widest = doc003.widest_interval(summary, doc003.reference())
    assert widest["widest here"].sum() == 1 and widest["interval_ms"].is_monotonic_decreasing
    assert widest.set_index("emulated_delay_ms").loc[0.0, "document"].startswith("widest")
