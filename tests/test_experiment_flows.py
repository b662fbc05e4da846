"""Several flows on one link: how they are written, run, saved and judged for fairness."""
import json
import random
import shutil
from pathlib import Path

import pytest

from wirelab.errors import UsageError
from wirelab.experiment import Experiment, run, summarize
from wirelab.experiment.flows import Flow, canonical, fairness, flow_setting, flows_of
from wirelab.engines.iperf3 import client_argv, parse

from fake_links import FakeLink, FakeLinks

DATA = Path(__file__).parent / "data"
needs_iperf3 = pytest.mark.skipif(not shutil.which("iperf3"), reason="iperf3 not installed: apt-get install iperf3")


def test_a_flow_is_written_and_read_back():
    flow = Flow.parse("udp rate=1.05mbit packet=1470 streams=2 dir=b>a start=2s engine=iperf3")
    assert (flow.proto, flow.offered_bps, flow.packet_bytes, flow.streams) == ("udp", 1.05e6, 1470, 2)
    assert flow.direction == "b>a" and flow.start_s == 2.0 and flow.engine == "iperf3"
    assert Flow.parse(flow.text) == flow
    assert canonical("tcp + tcp") == "tcp + tcp" and canonical([Flow(), "udp rate=1000kbit"]) == "tcp + udp rate=1mbit"
    for bad in ("sctp", "tcp rate", "tcp colour=red", "tcp dir=a<b", "tcp streams=0", ""):
        with pytest.raises(UsageError):
            canonical(bad)


def test_an_experiment_holds_flows_per_setting():
    exp = Experiment("f", flows=["tcp + tcp", "tcp streams=4 + udp rate=1mbit"], workload="time", time="3s",
                     rate="10mbit", reps=2, engine="iperf3")
    settings = exp.settings()
    assert [s["flows"] for s in settings] == ["tcp + tcp", "tcp streams=4 + udp rate=1mbit"]
    assert exp.swept() == ["flows"] and len(exp.runs()) == 4
    assert settings[0].label().startswith("[tcp + tcp]")
    assert Experiment("g", flows="tcp, udp", workload="time", time=1).axis_values("flows") == ("tcp", "udp")
    # a sweep without flows keeps its setting ids (folders saved before flows existed resume)
    assert Experiment("h", rate="10mbit").settings()[0].setting_id == Experiment(
        "h", rate="10mbit", flows=None).settings()[0].setting_id
    with pytest.raises(UsageError, match="workload='time'"):
        Experiment("bad", flows="tcp + tcp")
    second = flow_setting(settings[1], flows_of(settings[1])[1])
    assert (second.proto, second.workload, second["offered_bps"], second["time_s"]) == ("udp", "load", 1e6, 3)
    assert second.link is settings[1].link and second.engine == "iperf3"


def test_iperf3_argv_for_parallel_reverse_and_slow_links():
    setting = Experiment("x", engine="iperf3", workload="time", time="2s", delay="2500ms", reps=1).settings()[0]
    argv = client_argv(flow_setting(setting, Flow("tcp", streams=4, direction="b>a")), "10.77.0.2", 5201)
    assert argv[argv.index("-P") + 1] == "4" and "-R" in argv
    assert argv[argv.index("--connect-timeout") + 1] == "15000"      # 5 s + two 5 s round trips
    plain = client_argv(flow_setting(setting, Flow("udp", offered_bps=1e6, packet_bytes=1470)), "h", 1)
    assert "-P" not in plain and "-R" not in plain and plain[plain.index("-l") + 1] == "1470"
    with pytest.raises(UsageError, match="parallel"):
        client_argv(flow_setting(setting, Flow("tcp", streams=500)), "h", 1)


def test_iperf3_parallel_streams_each_report_their_goodput():
    tcp = parse((DATA / "iperf3_tcp_P2_10mbit_testbed.json").read_text())
    assert [s["stream"] for s in tcp["streams"]] == [0, 1]
    assert sum(s["goodput_bps"] for s in tcp["streams"]) == pytest.approx(tcp["goodput_bps"], rel=0.01)
    assert tcp["streams_jain_index"] == pytest.approx(1.0, abs=1e-6)        # 4.651 and 4.651 Mbit/s
    assert tcp["streams"][0]["retransmissions"] == 1 and tcp["streams"][0]["rtt_mean_s"] == pytest.approx(0.075689)
    udp = parse((DATA / "iperf3_udp_P2_1mbit_testbed.json").read_text())
    assert [s["lost"] for s in udp["streams"]] == [0, 0]
    assert udp["streams"][0]["goodput_bps"] == pytest.approx(179 * 1400 * 8 / 2.000074)   # -b is per stream
    reverse = parse((DATA / "iperf3_tcp_reverse_10mbit_testbed.json").read_text())
    assert reverse["reverse"] and reverse["goodput_bps"] == pytest.approx(9573702.1, rel=1e-6)


class ShareEngine:
    """Goodput: a UDP stream gets what it offers, TCP streams split the rest (± 2 %, seeded)."""
    name = "share"

    def __init__(self):
        self.calls = []

    def unsupported(self, setting):
        return None

    def run(self, setting, link, *, deadline, seed, workdir):
        assert link.spec is setting.link and setting.workload in ("time", "load")
        self.calls.append((setting.proto, setting["streams"], seed))
        if setting.proto == "udp":
            return {"ok": True, "goodput_bps": setting["offered_bps"], "lost": 0, "proto": "udp"}
        noise = random.Random(seed).uniform(-0.02, 0.02)
        return {"ok": True, "goodput_bps": 4.5e6 * (1 + noise), "retransmissions": 1, "proto": "tcp"}


def test_flows_are_rows_per_stream_sharing_a_run(tmp_path):
    engine = ShareEngine()
    exp = Experiment("share", flows=["tcp streams=2 + udp rate=1mbit"], workload="time", time="2s",
                     rate="10mbit", reps=2, engine="share")
    df = run(exp, out=tmp_path / "s", engine=engine, progress=False, link_layer=FakeLinks)
    assert len(df) == 2 * 3 and (df["status"] == "ok").all(), df["error"].tolist()
    # not iperf3: each TCP stream is its own engine run (its own connection), seeded apart
    tcp_calls = [c for c in engine.calls if c[0] == "tcp"]
    assert len(tcp_calls) == 4 and {c[1] for c in tcp_calls} == {1} and len({c[2] for c in tcp_calls}) == 4
    assert df.groupby("run_id").size().tolist() == [3, 3]
    one = df[df["rep"] == 0]
    assert list(one["flow_id"]) == ["f0", "f0", "f1"] and list(one["stream"]) == [0, 1, 0]
    assert list(one["proto"]) == ["tcp", "tcp", "udp"] and (df["flows"] == "tcp streams=2 + udp rate=1mbit").all()
    assert one["total_goodput_bps"].iloc[0] == pytest.approx(one["goodput_bps"].sum())
    # max-min: UDP keeps its 1 Mbit/s (its wire cost), the two TCP streams split the rest
    udp, tcp = one[one["proto"] == "udp"].iloc[0], one[one["proto"] == "tcp"]
    assert udp["pred_loss"] == 0 and udp["pred_goodput_bps"] == pytest.approx(1e6)
    assert (tcp["pred_binding"] == "share").all() and tcp["pred_goodput_bps"].nunique() == 1
    wire_udp = 1e6 / udp["pred_efficiency"]
    assert tcp["pred_limit_share_bps"].iloc[0] == pytest.approx((10e6 - wire_udp) / 2 * tcp["pred_efficiency"].iloc[0])
    # Jain on raw goodputs (4.5, 4.5, 1) is low; on goodput ÷ fair share it is near 1
    assert one["jain_index"].iloc[0] == pytest.approx(0.80, abs=0.02) and one["jain_index_share"].iloc[0] > 0.98
    # one row per run, and intervals per stream and per run
    runs = fairness(df)
    assert len(runs) == 2 and (runs["n_streams"] == 3).all() and (runs["status"] == "ok").all()
    per_run = summarize(runs, metrics=["total_goodput_bps", "jain_index_share"])
    assert len(per_run) == 1 and per_run["n"].iloc[0] == 2
    per_stream = summarize(df)
    assert len(per_stream) == 3 and (per_stream["n"] == 2).all()
    # resume: nothing left to do
    assert len(run(exp, out=tmp_path / "s", engine=engine, progress=False, link_layer=FakeLinks)) == 6
    raw = json.loads((tmp_path / "s" / df["raw_file"].iloc[0]).read_text())
    assert set(raw["result"]["flows"]) == {"f0.0", "f0.1", "f1.0"}     # every engine's record: "result"


def test_flows_that_cannot_run_here_say_why(tmp_path):
    class OneShaperPerPort(FakeLink):
        one_queue = False

    class Links(FakeLinks):
        @staticmethod
        def open(spec, *, backend, seed, name):
            return OneShaperPerPort(spec)

    exp = Experiment("lo", flows=["tcp dir=b>a", "tcp + tcp"], workload="time", time="1s", reps=1, engine="share")
    df = run(exp, out=tmp_path / "lo", engine=ShareEngine(), progress=False, link_layer=Links)
    assert (df["status"] == "skipped").all()
    reverse, shared = df[df["flows"] == "tcp dir=b>a"], df[df["flows"] == "tcp + tcp"]
    assert reverse["error"].str.contains("iperf3").all() and shared["error"].str.contains("bottleneck").all()
    assert fairness(df)["status"].eq("skipped").all()


@pytest.mark.root
def test_two_tcp_flows_share_a_10mbit_link_about_equally(tmp_path):
    """The issue's criterion: two concurrent TCP flows on 10 Mbit/s, each near 5 Mbit/s.
    Tolerance for a shared 2-core machine: each 3.5–6.5 Mbit/s (tight figures: bench/).
    The userspace link: its queue is a node between the hosts, like a switch. (tbf on the
    sender's own egress, the namespaces backend, answers a full queue with local back-pressure
    that the first flow to fill it survives best: 4 s runs split 7.5 / 2.1 Mbit/s there.)"""
    exp = Experiment("two", flows="tcp + tcp", workload="time", time="4s", rate="10mbit", cc="cubic",
                     reps=1, timeout=40, backend="userspace")
    df = run(exp, out=tmp_path / "two", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert set(df["backend"]) == {"userspace"} and df["run_id"].nunique() == 1
    assert list(df["flow_id"]) == ["f0", "f1"]
    assert df["goodput_bps"].between(3.5e6, 6.5e6).all(), df["goodput_bps"].tolist()
    assert df["total_goodput_bps"].iloc[0] > 8.0e6 and df["jain_index"].iloc[0] > 0.95
    assert df["pred_goodput_bps"].round(0).eq(round(df["pred_limit_share_bps"].iloc[0])).all()
    assert df["pred_limit_share_bps"].iloc[0] == pytest.approx(9.564e6 / 2, rel=1e-3)


@needs_iperf3
@pytest.mark.root
def test_iperf3_parallel_streams_and_a_udp_flow_beside_them(tmp_path):
    exp = Experiment("mix", flows="tcp streams=2 + udp rate=1mbit", workload="time", time="3s",
                     rate="10mbit", cc="cubic", reps=1, engine="iperf3", timeout=40, backend="userspace")
    df = run(exp, out=tmp_path / "mix", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    tcp, udp = df[df["proto"] == "tcp"], df[df["proto"] == "udp"].iloc[0]
    assert list(tcp["stream"]) == [0, 1] and tcp["flow_goodput_bps"].nunique() == 1
    assert tcp["goodput_bps"].sum() == pytest.approx(tcp["flow_goodput_bps"].iloc[0], rel=0.02)
    assert 0.7e6 < udp["goodput_bps"] < 1.05e6 and udp["loss_fraction"] < 0.2
    assert tcp["goodput_bps"].sum() > 6e6 and df["jain_index_share"].iloc[0] > 0.8
