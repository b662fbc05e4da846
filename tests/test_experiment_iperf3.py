"""iperf3 as an engine: argv built without running it, JSON parsed from recorded runs."""
import json
import shutil
from pathlib import Path

import pytest

from wirelab.errors import TransferError, UsageError
from wirelab.experiment import Experiment, run, summarize
from wirelab.engines.iperf3 import Iperf3Engine, client_argv, parse, server_argv

DATA = Path(__file__).parent / "data"
needs_iperf3 = pytest.mark.skipif(not shutil.which("iperf3"), reason="iperf3 not installed: apt-get install iperf3")


def setting(**kw):
    args = dict(proto="tcp", size="1MB", rate="10mbit", reps=1, engine="iperf3")
    args.update(kw)
    return Experiment("x", **args).settings()[0]


def test_client_argv_for_each_workload():
    tcp = client_argv(setting(), "10.0.0.2", 5201)
    assert tcp[:3] == ["iperf3", "-c", "10.0.0.2"] and "-J" in tcp and "--get-server-output" in tcp
    assert tcp[tcp.index("-n") + 1] == "1000000" and "-b" not in tcp and "-u" not in tcp
    tuned = client_argv(setting(cc="cubic", sndbuf="64KB"), "127.0.0.1", 1)
    assert "-b" not in tuned and tuned[tuned.index("-C") + 1] == "cubic"      # the link sets the pace
    assert tuned[tuned.index("-w") + 1] == "64000"
    window = client_argv(setting(window="64KiB", workload="time", time="3s", omit="0.5s"), "127.0.0.1", 1)
    assert window[window.index("-w") + 1] == "65536"
    assert window[window.index("-O") + 1] == "1" and window[window.index("-t") + 1] == "3"  # whole seconds
    udp = client_argv(setting(proto="udp", mtu=1492), "127.0.0.1", 1)
    assert "-u" in udp and udp[udp.index("-l") + 1] == "1464" and udp[udp.index("-b") + 1] == "10000000"
    timed = client_argv(setting(proto="udp", workload="load", time="2s", offered="5MB/s", packet=1000),
                        "127.0.0.1", 1)
    assert timed[timed.index("-t") + 1] == "2" and timed[timed.index("-b") + 1] == "40000000"
    with pytest.raises(UsageError, match="udpr"):
        client_argv(setting(proto="udpr"), "127.0.0.1", 1)
    assert server_argv(5201)[:3] == ["iperf3", "-s", "-1"]
    short = client_argv(setting(workload="time", time="0.5s"), "127.0.0.1", 1)
    assert short[short.index("-t") + 1] == "1"              # iperf3 reads -t 0.5 as 0 = forever


def test_parse_recorded_tcp_run():
    r = parse((DATA / "iperf3_tcp_1MB_loopback.json").read_text())
    assert r["ok"] and r["proto"] == "tcp" and r["error"] is None
    assert r["bytes_sent"] == 1048576 and r["bytes_received"] == 917504   # -n: last block uncounted
    assert r["goodput_bps"] == pytest.approx(9994733.04, rel=1e-6)         # the receiver's figure
    assert r["sender_goodput_bps"] == pytest.approx(11425196.8, rel=1e-6)
    assert r["congestion_control"] == "bbr" and r["retransmissions"] == 0
    assert r["rtt_mean_s"] == pytest.approx(363e-6)
    assert r["receiver_series"] and r["receiver_series"][-1]["t_s"] == pytest.approx(0.73439)
    assert "payload" in r["semantics"] and "time workload" in r["warning"]   # 88 % counted
    assert r["outcome"] == "incomplete" and r["outcome_reason"] == r["warning"]   # said in the row


def test_parse_recorded_udp_run():
    r = parse(json.loads((DATA / "iperf3_udp_1MB_10mbit_loopback.json").read_text()))
    assert r["ok"] and r["proto"] == "udp"
    assert r["packets_sent"] == 713 and r["lost"] == 0 and r["packets_received"] == 713
    assert r["goodput_bps"] == pytest.approx(10004370.5, rel=1e-6) and r["packet_bytes"] == 1472
    assert r["jitter_s"] == pytest.approx(7.56e-6, rel=1e-2) and r["loss_fraction"] == 0
    # -n 1 MiB sent 713 whole datagrams (1 049 536 B): what iperf3 sent is what it offered
    assert r["bytes_offered"] == r["bytes_sent"] == 1049536 >= r["bytes_received"]


def test_parse_runs_recorded_on_a_testbed():
    tcp = parse((DATA / "link_iperf3_tcp.json").read_text())
    assert tcp["proto"] == "tcp" and tcp["congestion_control"] == "bbr" and tcp["retransmissions"] == 0
    assert tcp["goodput_bps"] == pytest.approx(8793338.24, rel=1e-6)
    assert tcp["sender_goodput_bps"] > tcp["goodput_bps"]     # a 1 s run: the sender's view is too high
    udp = parse((DATA / "link_iperf3_udp.json").read_text())
    assert udp["proto"] == "udp" and udp["lost"] == 4 and udp["packets_sent"] == 173
    assert udp["loss_fraction"] == pytest.approx(4 / 173)
    assert udp["packets_received"] == 168 == udp["bytes_received"] // 1448   # receiver: 172 numbers seen, 4 lost


def test_parse_errors():
    r = parse((DATA / "iperf3_refused.json").read_text())
    assert not r["ok"] and "Connection refused" in r["error"] and r["goodput_bps"] is None
    with pytest.raises(TransferError, match="no JSON"):
        parse("iperf3: error - unable to connect")


def test_unsupported_settings_have_reasons():
    engine = Iperf3Engine()
    assert "udpr" in engine.unsupported(setting(proto="udpr"))
    assert "echo" in engine.unsupported(setting(workload="echo", echo=3))
    assert engine.unsupported(setting(delay="20ms", loss="1%")) is None   # the link decides that
    assert engine.framing(setting()) == {}


@needs_iperf3
def test_iperf3_sweep_on_loopback_is_in_the_same_table(tmp_path):
    # timed runs: with -n iperf3 stops when the sender has written its last byte, which
    # the relays' buffers can hold entirely (such a run is marked incomplete, tested below)
    exp = Experiment("i", proto=["tcp", "udp", "udpr"], workload="time", time=1.5, rate="20mbit", reps=1,
                     engine="iperf3", backend="loopback", timeout=20)
    df = run(exp, out=tmp_path / "i", progress=False)
    assert dict(zip(df["proto"], df["status"])) == {"tcp": "ok", "udp": "ok", "udpr": "skipped"}
    ok = df[df["status"] == "ok"]
    # the relays shape it to a 20 Mbit/s link (tight figures: bench/)
    assert ok["goodput_bps"].between(8e6, 23e6).all(), ok["goodput_bps"].tolist()
    assert (ok["pred_wire"] == "emulated").all() and (ok["engine"] == "iperf3").all()
    assert ok["link_emulated_by"].str.contains("relay").all()
    assert summarize(df)["measured_over_predicted"].dropna().between(0.5, 1.3).all()


@needs_iperf3
@pytest.mark.root
def test_iperf3_across_a_testbed_sees_the_link(tmp_path):
    exp = Experiment("i", proto=["tcp", "udp"], workload="time", time=1.5, rate="10mbit", reps=1,
                     engine="iperf3", timeout=30)
    df = run(exp, out=tmp_path / "i", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert set(df["backend"]) <= {"namespaces", "userspace"}
    assert df["tc_commands"].str.contains("tbf rate 10000000bit").all()
    # the link, not iperf3, limits the rate: payload goodput below the 10 Mbit/s line rate
    assert df["goodput_bps"].between(6e6, 10.5e6).all(), df["goodput_bps"].tolist()


def test_iperf3s_interval_lines_as_312_flushes_them():
    from wirelab.engines.iperf3_live import parse_server_output, parse_text_line
    text = (DATA / "iperf3_3.12_server_forceflush.txt").read_text()
    intervals = parse_server_output(text)
    assert len(intervals) == 11 and intervals[0]["end_s"] == 0.1 and intervals[-1]["end_s"] == 1.03
    assert intervals[0]["bytes"] == 115 * 1024 and intervals[0]["bps"] == pytest.approx(9.38e6)
    assert parse_text_line("[  5]   0.00-1.03   sec  1.17 MBytes  9.54 Mbits/sec                  receiver") is None
    udp = parse_text_line("[  5]   0.00-0.10   sec   119 KBytes  9.74 Mbits/sec  0.056 ms  0/83 (0%)")
    assert udp["bps"] == pytest.approx(9.74e6) and udp["stream"] == "5"
    total = parse_text_line("[SUM]   0.10-0.20   sec   230 KBytes  18.9 Mbits/sec")
    assert total["stream"] == "SUM" and total["start_s"] == 0.1


def test_iperf3s_json_stream_lines():
    """--json-stream (3.13+) writes each -J interval object as {"event": "interval", "data": ...}: the
    lines here carry a recorded 3.12 run's own interval objects."""
    from wirelab.engines.iperf3_live import parse_server_output, parse_stream_line, server_reporting, streams_json
    text = (DATA / "iperf3_json_stream_from_3.12_intervals.jsonl").read_text()
    intervals = parse_server_output(text)
    assert [i["bytes"] for i in intervals] == [487976, 415576, 325800]
    assert intervals[1]["start_s"] == 0.100086 and intervals[1]["bps"] == pytest.approx(33239764.288)
    assert parse_stream_line('{"event": "end", "data": {}}') is None and parse_stream_line("not json") is None
    assert streams_json((3, 16)) and not streams_json((3, 12)) and not streams_json(None)
    assert "--json-stream" in server_reporting((3, 13)) and "--forceflush" in server_reporting((3, 12))


def test_iperf3_reports_each_interval_while_it_runs(tmp_path):
    """The installed iperf3 (its version asked) streams the server's intervals into the run's stream."""
    from wirelab.experiment import Experiment, run
    from wirelab.experiment.events import read_events
    from wirelab.engines.iperf3_live import installed_version
    if installed_version() is None:
        pytest.skip("iperf3 is not installed")
    exp = Experiment("i", proto="tcp", workload="time", time="2s", rate=None, reps=1, backend="loopback",
                     engine="iperf3")
    frame = run(exp, out=tmp_path, progress=False)
    assert frame["status"].iloc[0] == "ok", frame["error"].iloc[0]
    events = read_events(tmp_path / frame["events_file"].iloc[0])
    intervals = [e for e in events if e["event"] == "interval" and e["source"] == "receiver"]
    assert len(intervals) >= 15 and intervals[-1]["interval_end_s"] >= 1.9
    times = [e["t"] for e in intervals]
    assert times[-1] - times[0] > 1.5                   # they came over the run, not all at its end
    assert intervals[-1]["bytes"] == pytest.approx(frame["bytes_received"].iloc[0], rel=0.02)
