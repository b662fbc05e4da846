"""The kit's own programs as an engine: on loopback (anyone) and across a testbed (root)."""
import pandas as pd
import pytest

from wirelab.errors import UsageError
from wirelab.experiment import Experiment, run
from wirelab.transfer.client import client_argv
from wirelab.engines.wirelab import WirelabEngine, plan


def one(**kw):
    args = dict(proto="tcp", size="100KB", rate="10mbit", reps=1)
    args.update(kw)
    return Experiment("w", **args).settings()[0]


def test_plan_says_what_each_workload_runs():
    assert plan(one()) == {"call": "file", "mode": "file", "chunk": 1000, "payload": None,
                           "stream_header": 21, "udp_header": 0}
    udp = plan(one(proto="udp"))
    assert udp["call"] == "measure" and udp["mode"] == "load" and udp["rate_bps"] == 10e6
    assert udp["time_s"] == pytest.approx(0.08) and udp["packet"] == 1472
    assert plan(one(proto="udp", rate=None))["call"] == "file"
    assert plan(one(proto="udpr", packet=500))["payload"] == 500
    assert plan(one(workload="echo", echo=5))["count"] == 5
    with pytest.raises(UsageError, match="udpr"):
        plan(one(proto="udpr", workload="time", time="1s"))
    assert client_argv({"call": "measure"})[1:3] == ["-m", "wirelab.transfer.client"]


def test_loopback_runs_every_protocol_and_refuses_what_it_cannot_emulate(tmp_path):
    exp = Experiment("lo", proto=["tcp", "udp", "udpr"], size="50KB", rate=None, reps=1,
                     backend="loopback", max_wait="1s", timeout=20)
    df = run(exp, out=tmp_path / "lo", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert (df["bytes_delivered"] == 50_000).all() and df["metadata_byte_exact"].all()
    assert df["pred_goodput_bps"].isna().all() and df["pred_note"].str.contains("nothing").all()
    assert (df["link_emulated_by"] == "nothing: both ends on 127.0.0.1").all()


def test_loopback_relays_shape_udp_and_udpr_and_skip_lossy_tcp(tmp_path):
    exp = Experiment("lo", proto=["tcp", "udpr"], size="30KB", rate="10mbit", delay="5ms",
                     loss=["0", "1%"], reps=1, backend="loopback", max_wait="0.2s", timeout=20)
    df = run(exp, out=tmp_path / "lo", progress=False)
    lossy_tcp = df[(df["proto"] == "tcp") & (df["loss"] > 0)]
    assert (lossy_tcp["status"] == "skipped").all() and lossy_tcp["error"].str.contains("root").all()
    ran = df[df["status"] != "skipped"]
    assert (ran["status"] == "ok").all(), ran["error"].tolist()
    assert ran["link_emulated_by"].str.contains("relay").all() and (ran["pred_wire"] == "emulated").all()
    # the relays' counters as the other backends give them: one set of columns, not one per relay port
    counters = [c for c in df.columns if c.startswith("link_counters_")]
    assert "link_counters_a->b_packets" in counters and not [c for c in counters if ":" in c], counters
    assert (ran["link_counters_a->b_packets"] > 0).all() and (ran["link_counters_b->a_packets"] > 0).all()
    udpr = ran[(ran["proto"] == "udpr") & (ran["loss"] == 0)].iloc[0]
    # stop-and-wait over a 10 ms RTT: the relay's delay is really there (model: ~0.77 Mbit/s)
    assert 0.3 < udpr["goodput_bps"] / udpr["pred_goodput_bps"] < 1.5, udpr["goodput_bps"]
    assert WirelabEngine().unsupported(one(proto="udpr", workload="time", time="1s"))


@pytest.mark.root
def test_testbed_runs_match_the_model_where_the_model_applies(tmp_path):
    exp = Experiment("tb", proto=["tcp", "udp", "udpr"], size="300KB", rate="10mbit", reps=1,
                     max_wait="0.5s", timeout=30)
    df = run(exp, out=tmp_path / "tb", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert set(df["backend"]) <= {"namespaces", "userspace"}
    assert df["tc_commands"].str.contains("tbf rate 10000000bit").all()
    ratio = (df["goodput_bps"] / df["pred_goodput_bps"]).tolist()
    assert all(0.75 < r < 1.2 for r in ratio), ratio          # tight figures go in bench/
    tcp = df[df["proto"] == "tcp"].iloc[0]
    assert tcp["metadata_byte_exact"] and tcp["pred_note"].startswith("21 B of application framing")


@pytest.mark.root
def test_capture_is_kept_beside_the_results_and_opens(tmp_path):
    from wirelab.capture import read_capture
    exp = Experiment("cap", proto="tcp", size="300KB", rate="10mbit", reps=1, capture=True, timeout=30)
    df = run(exp, out=tmp_path / "cap", progress=False)
    row = df.iloc[0]
    assert row["status"] == "ok", row["error"]
    path = tmp_path / "cap" / row["capture_file"]
    assert path.suffix == ".pcapng" and path.parent.name == "captures"
    frames = read_capture(path)
    data = frames[frames["payload_len"] > 0]
    assert data["payload_len"].sum() >= 300_000          # every byte of the file crossed the link
    assert row["capture_packets"] >= len(frames) * 0.9 and row["capture_dropped"] == 0
    from wirelab.analysis import capture_series
    series = capture_series(tmp_path / "cap", df)
    assert len(series) > 3 and (series["run_id"] == row["run_id"]).all()
    # what the wire carried, per 50 ms: never much above the 10 Mbit/s link (tbf's burst aside)
    assert series["bps"].max() < 12e6 and series["bps"].sum() * 0.05 / 8 >= 300_000


def test_plain_udp_losing_data_is_an_incomplete_run_not_a_failure(tmp_path):
    """No rate: PPCB udp itself; 5 % loss over 200 datagrams loses one almost surely (1 − 0.95^200)."""
    exp = Experiment("lossy", proto=["udp", "udpr"], size="200KB", rate=None, loss="5%", reps=1,
                     backend="loopback", max_wait="0.2s", max_retransmits=10, timeout=60, seed=3)
    df = run(exp, out=tmp_path / "lossy", progress=False)
    udp = df[df["proto"] == "udp"].iloc[0]
    assert udp["status"] == "incomplete" and "plain udp does not resend" in udp["error"]
    assert 0 <= udp["delivered_fraction"] < 1 and udp["bytes_delivered"] < 200_000
    udpr = df[df["proto"] == "udpr"].iloc[0]
    assert udpr["status"] == "ok" and udpr["delivered_fraction"] == 1 and udpr["metadata_byte_exact"]
    from wirelab.experiment import pretty, summarize
    table = pretty(summarize(df))
    assert table["runs"].tolist()[0] == "1 (1 incomplete)"


def test_plain_udp_whose_conn_is_lost_is_an_incomplete_run_not_a_failure(tmp_path):
    """PPCB's udp client sends CONN once: at 99 % loss CONN or CONACC is lost (1 − 0.01² of the time)
    and the run ends as the protocol says. Without loss a missing CONACC stays a failure."""
    exp = Experiment("conn", proto="udp", size="10KB", rate=None, loss="99%", reps=1, backend="loopback",
                     max_wait="0.2s", timeout=30, seed=1)
    udp = run(exp, out=tmp_path / "conn", progress=False).iloc[0]
    assert udp["status"] == "incomplete" and "CONN or its CONACC was lost" in udp["error"]
    assert pd.isna(udp["bytes_delivered"]) or udp["bytes_delivered"] == 0      # nothing was sent


@pytest.mark.root
def test_a_timed_run_on_a_loss_limited_link_measures_its_interval_and_ends(tmp_path):
    """Issue 32: 30 ms one way, 3 % loss and a 4 MB send buffer: Reno delivers ~2 Mbit/s while the
    sender writes megabytes more into its socket. The run counts what the receiver got within its
    2 s (iperf3's way), ends about a round trip later, and discards the queue instead of waiting
    out its ~20 s drain (which used to end in "nothing arrived ...: the peer stalled")."""
    exp = Experiment("drain", proto="tcp", workload="time", time="2s", rate="20mbit", delay="30ms",
                     loss="3%", sndbuf="4MB", cc="reno", reps=1, backend="userspace", seed=5)
    row = run(exp, out=tmp_path / "drain", progress=False).iloc[0]
    assert "stalled" not in str(row["error"]) and row["status"] == "ok", row["error"]
    assert row["interval_s"] == 2.0
    # the goodput's time spans the interval and the first record's trip, no more: nothing counted later
    trip = row["receiver_start_time_s"] - row["first_data_time_s"]
    assert 0 < row["transfer_s"] <= row["interval_s"] + trip + 1e-6
    assert row["goodput_bps"] == pytest.approx(8 * row["bytes_delivered"] / row["transfer_s"])
    # the queue was left behind, not waited out: the run ends within its time plus a bounded wait
    assert row["bytes_delivered"] < row["bytes_sent"] and row["send_queue_bytes"] > 0
    assert row["drain_s"] > row["report_wait_s"]
    assert row["report_wait_s"] < row["max_wait_used_s"] and row["completion_s"] < 2.0 + row["max_wait_used_s"]
