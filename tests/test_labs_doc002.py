"""Document 002 beside our runs: the cable, the FTTC line, nttcp's two lines, its UDP ending.

The tables are checked on canned results (each number traced to the document or the
model); the sweeps once for real on loopback (end markers through the engine) and, as
root, on namespaces (nttcp's sender figure predicted from a short run's held bytes).
"""
import math

import pandas as pd
import pytest

from wirelab.experiment import run
from wirelab.labs import doc002
from wirelab.model import predict


def _runs(**columns):
    n = len(next(iter(columns.values())))
    return pd.DataFrame({"status": ["ok"] * n, "error": [None] * n, **columns})


def test_the_sweeps_are_the_documents_and_tcp_needs_root(monkeypatch):
    lab = doc002.sweeps()
    cable = lab["cable"].experiment.settings()
    assert {s.proto for s in cable} == {"tcp", "udp"} and all(s.link.wire == "real" for s in cable)
    assert all(s.link.forward.rate_bps == 10e6 for s in cable)
    up = lab["fttc-up"].experiment.settings()[0].link
    assert up.pppoe and up.mtu == 1492 and up.forward.rate_bps == 21e6 and up.reverse.rate_bps == 54e6
    assert lab["markers"].engine_options == {"end_markers": 3, "end_marker_gap_s": 2.0}
    assert [s["time_s"] for s in lab["nttcp"].experiment.settings()][:2] == [0.03, 0.03]
    # without root: the relays carry UDP only, and the lab says why TCP is left out
    monkeypatch.setattr(doc002, "capabilities", lambda: type("Caps", (), {"root": False})())
    plain = doc002.sweeps(quick=True)
    assert "nttcp" not in plain and {s.proto for s in plain["cable"].experiment.settings()} == {"udp"}
    assert "TCP" in plain.values["notes"][0] and not plain["markers"].experiment.capture


def test_the_cable_table_sets_nttcp_beside_ours_and_the_model():
    frame = _runs(proto=["tcp", "udp"], backend=["namespaces"] * 2, goodput_bps=[9.43e6, 9.59e6],
                  pred_goodput_bps=[predict("tcp", 10e6, timestamps=True).goodput_bps,
                                    predict("udp", 10e6).goodput_bps], delivered_fraction=[1.0, 1.0])
    table = doc002.wire_table(frame).set_index("proto")
    assert table.loc["tcp", "document_Mbps"] == 9.4149 and table.loc["udp", "document_Mbps"] == 9.57
    assert table.loc["tcp", "predicted_Mbps"] == pytest.approx(9.415, abs=1e-3)
    assert table.loc["udp", "measured/document"] == pytest.approx(9.59 / 9.57)


def test_the_fttc_table_counts_pppoe_and_keeps_the_documents_spread():
    up = _runs(proto=["tcp"], rate_bps=[21e6], goodput_bps=[19.6e6],
               pred_goodput_bps=[predict("tcp", 21e6, timestamps=True, pppoe=True).goodput_bps])
    down = _runs(proto=["udp"], rate_bps=[54e6], goodput_bps=[51.4e6],
                 pred_goodput_bps=[predict("udp", 54e6, pppoe=True).goodput_bps])
    table = doc002.fttc_table(up, down).set_index(["direction", "proto"])
    tcp, udp = table.loc[("up", "tcp")], table.loc[("down", "udp")]
    assert (tcp["document_Mbps"], tcp["document_min_Mbps"], tcp["document_max_Mbps"]) == (19.34, 18.83, 19.80)
    assert tcp["predicted_Mbps"] == pytest.approx(21 * 1440 / 1538) and tcp["document_predicted_Mbps"] == 19.76
    assert udp["document_Mbps"] == 51.29 and udp["predicted_Mbps"] == pytest.approx(54 * 1464 / 1538)
    # the payloads behind the DSLAM (MTU 1492), the document's beside the model's
    assert (tcp["document_payload_bytes"], tcp["payload_bytes"]) == (1440, 1440)
    assert (udp["document_payload_bytes"], udp["payload_bytes"]) == (1464, 1464)


def test_nttcps_own_short_run_predicts_its_long_runs_sender_figure():
    g = predict("tcp", 10e6, timestamps=True).goodput_bps
    # a fixed buffer that held 57 kB after 0.048 s of writes, and again after 2 s
    frame = _runs(proto=["tcp"] * 2, time_s=[0.03, 2.0], sndbuf_bytes=[64000] * 2, rate_bps=[10e6] * 2,
                  backend=["userspace"] * 2, sender_duration_s=[0.048, 2.0], pred_goodput_bps=[g] * 2,
                  goodput_bps=[g] * 2, bytes_offered=[g * 0.048 / 8 + 57e3, g * 2.0 / 8 + 57e3],
                  sender_goodput_bps=[(g * 0.048 / 8 + 57e3) * 8 / 0.048, (g * 2.0 / 8 + 57e3) * 8 / 2.0])
    table = doc002.nttcp_table(frame).set_index(["run", "side"])
    assert table.loc[("short", "sender"), "held_bytes"] == pytest.approx(57e3)
    assert table.loc[("short", "sender"), "document_Mbps"] == 23.8351
    assert table.loc[("short", "sender"), "document_held_bytes"] == pytest.approx(60.5e3, rel=0.01)
    long_sender = table.loc[("long", "sender")]
    assert long_sender["predicted_Mbps"] == pytest.approx(long_sender["measured_Mbps"])
    # nttcp's own numbers: 60.5 kB held predicts 9.53 for its 5 MB run, which read 9.51
    assert long_sender["document_predicted_Mbps"] == pytest.approx(9.53, abs=0.005)
    # the userspace link paces from its first byte: the receiver is predicted η·C
    assert table.loc[("short", "receiver"), "predicted_Mbps"] == pytest.approx(g / 1e6)


def test_the_markers_table_reads_the_capture_and_the_receivers_count():
    run_row = pd.Series({"metadata_end_markers_sent": 3, "metadata_end_markers_received": 3,
                         "metadata_end_marker_gap_s": 0.5})
    times = [0.0, 0.1, 0.1002, 0.6, 1.1]
    capture = pd.DataFrame({"proto": ["udp"] * 5, "src": ["a"] * 5, "sport": [1] * 5, "dst": ["b"] * 5,
                            "dport": [2] * 5, "frag_offset": [0] * 5, "time": times,
                            "payload_len": [1472, 1472, 4, 4, 4], "frame_len": [1514, 1514, 46, 46, 46]})
    table = doc002.markers_table(run_row, capture).set_index("what")
    assert table.loc["end markers", "captured"] == 3 and table.loc["end markers", "document"] == 3
    assert table.loc["frame bytes (Wireshark)", "captured"] == 46
    assert table.loc["gap between markers (s)", "captured"] == pytest.approx(0.5)
    assert table.loc["first marker after the last data (s)", "captured"] == pytest.approx(0.0002)
    assert math.isnan(doc002.markers_table(run_row).set_index("what").loc["end markers", "captured"])


@pytest.mark.slow
def test_the_engine_ends_a_udp_run_with_markers_on_loopback(tmp_path):
    sweep = doc002.sweeps(quick=True, backend="loopback", marker_gap="0.2s", marker_time="0.3s")["markers"]
    row = sweep.run(tmp_path / "m", progress=False).iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["metadata_end_markers_sent"] == 3 and row["metadata_end_marker_gap_s"] == 0.2
    arrived = [int(n) for n in row["metadata_end_marker_numbers"].split()]
    assert len(arrived) == row["metadata_end_markers_received"] and arrived == sorted(set(arrived))
    # the records leave the link's queue full (the sender offers more than 10 Mbit/s): the first
    # marker, sent right after the last record, may be dropped there, as UDP allows; the others
    # come 0.2 s later, when the queue has drained 160 frames, and arrive
    assert arrived[-2:] == [1, 2]
    if arrived[0] != 0:
        assert row["link_counters_a->b_dropped_queue"] > 0


@pytest.mark.root
@pytest.mark.slow
def test_a_fixed_send_buffer_predicts_the_long_runs_sender_figure(tmp_path):
    sweep = doc002.sweeps(quick=True, backend="namespaces", nttcp_times=["0.03s", "2s"])["nttcp"]
    table = doc002.nttcp_table(run(sweep.experiment, out=tmp_path / "n", progress=False)).set_index(["run", "side"])
    # the short run's sender reads far above the cable, the receiver does not
    assert table.loc[("short", "sender"), "measured_Mbps"] > 1.5 * table.loc[("short", "receiver"), "measured_Mbps"]
    for run_name in ("short", "long"):
        receiver = table.loc[(run_name, "receiver")]
        assert receiver["measured_Mbps"] == pytest.approx(receiver["predicted_Mbps"], rel=0.01)
    sender = table.loc[("long", "sender")]
    assert sender["measured_Mbps"] == pytest.approx(sender["predicted_Mbps"], rel=0.01)


def test_every_nttcp_run_of_the_document_and_its_rule():
    table = doc002.nttcp_runs_table().set_index(["scenario", "proto"])
    cable = table.loc[("A_home_10M", "tcp")]
    assert cable["runs"] == 3 and cable["receiver_max_Mbps"] == 9.4149       # the third run: -n 2048 -l 5000
    up = table.loc[("B_internet_up21", "tcp")]
    # the published mean of 7 (19.34, min 18.83, max 19.80) is the mean of its receiver lines
    assert up["runs"] == 7 and up["receiver_mean_Mbps"] == pytest.approx(19.34, abs=0.01)
    assert (up["receiver_min_Mbps"], up["receiver_max_Mbps"]) == (18.8343, 19.8087)
    flood = table.loc[("B_internet_up21", "udp")]
    assert flood["sender_mean_Mbps"] == pytest.approx(956.7, abs=0.1) and flood["receiver_mean_Mbps"] < 20.3
    assert table["network_bound"].all(), "every line: CPU s < Real s, Real-Mbit/s < CPU-Mbit/s"
    lines = doc002.nttcp_lines_table()
    assert len(lines) == 56 and lines["network_bound"].all() and "command" not in lines
    third = lines[(lines["scenario"] == "A_home_10M") & (lines["run"] == 3)].set_index("line")
    assert third.loc["sender", "real_mbps"] == 9.4656 and third.loc["receiver", "real_mbps"] == 9.4149
    cpu_bound = doc002.nttcp_lines_table(lines.assign(cpu_s=lines["real_s"] + 1))
    assert not cpu_bound["network_bound"].any()                 # CPU s above Real s: the application's limit


def test_h2_to_h1_goes_through_a_queue_the_sender_can_outrun_beside_the_nic_queue():
    lab = doc002.sweeps(quick=True)
    adapter, cable = lab["adapter"].experiment.settings(), lab["cable"].experiment.settings()
    assert {s["queue_packets"] for s in adapter} == {20} and {s["queue_packets"] for s in cable} == {1000}
    assert {s["rate_bps"] for s in adapter} == {10e6} and all(s.link.wire == "real" for s in adapter)
    g = predict("udp", 10e6, wire="real").goodput_bps
    short = _runs(proto=["udp"], queue_packets=[20], goodput_bps=[0.8 * g], pred_goodput_bps=[g],
                  delivered_fraction=[0.8])
    nic = _runs(proto=["udp"], queue_packets=[1000], goodput_bps=[g], pred_goodput_bps=[g], delivered_fraction=[1.0])
    table = doc002.adapter_table(short, nic).set_index("direction")
    assert table.loc["H2 → H1, short queue", "delivered"] == 0.8 and "consistent loss" in table.loc[
        "H2 → H1, short queue", "document"]
    assert table.loc["H1 → H2, NIC queue", "measured_Mbps"] == pytest.approx(g / 1e6)
    assert doc002.ADAPTER["tcp"][:2] == (9.39e6, 9.40e6)
