"""The tables of documents 000 and 004: measurement, model and the document's numbers joined."""
import math

import pandas as pd
import pytest

from wirelab.errors import UsageError
from wirelab.labs.doc004 import document_table, interval_narrowing, task_rows
from wirelab.labs.doc000 import buffers_table, load_prediction, offered_load_table, transmission_table
from wirelab.model import predict
from wirelab.reference import load_reference


def test_load_prediction_below_and_above_the_link():
    below = load_prediction("udp", 65000, 80e6, 1e9)
    assert below["pred_received_bps"] == 80e6 and below["pred_undelivered"] == 0
    assert below["pred_fragments"] == 44
    assert below["pred_delay_s"] == pytest.approx(8 * below["pred_wire_bytes"] / 1e9)
    above = load_prediction("udp", 65000, 8e9, 1e9, sndbuf=212992)
    assert above["pred_received_bps"] == pytest.approx(above["pred_efficiency"] * 1e9)
    assert above["pred_received_independent_bps"] < 1e-20                 # 44 fragments, 1 in 8 survive each
    # the sender's own interface is the bottleneck: the backlog is its send buffer
    assert above["pred_delay_s"] == pytest.approx(8 * (above["pred_wire_bytes"] + 212992) / 1e9)
    assert math.isnan(load_prediction("tcp", 1400, 8e9, 1e9)["pred_delay_s"])


def _runs(**columns):
    n = len(next(iter(columns.values())))
    base = {"status": ["ok"] * n, "error": [None] * n}
    return pd.DataFrame({**base, **columns})


def test_offered_load_table_joins_the_document_at_the_same_setting():
    frame = _runs(proto=["udp", "udp"], packet_bytes=[65000, 65000], offered_bps=[800e6, 800e6],
                  rate_bps=[1e9, 1e9], goodput_bps=[790e6, 770e6], bytes_offered=[100e6, 100e6],
                  bytes_sent=[99e6, 98e6], bytes_received=[98.75e6, 96.25e6], packets_sent=[1523, 1508],
                  lost=[3, 27], one_way_delay_mean_s=[0.0004, 0.0005])
    table = offered_load_table(frame, load_reference("seed000_offered_load"))
    row = table.iloc[0]
    assert row["offered_MBps"] == 100 and row["n"] == 2
    assert row["received_MBps"] == pytest.approx(97.5) and row["received_MBps_ci"] > 0
    assert row["doc_received_MBps"] == 100 and row["doc_echo_ms"] == 1.84 and row["pred_received_MBps"] == 100
    assert row["lost_fraction"] == pytest.approx((3 / 1523 + 27 / 1508) / 2)
    assert row["undelivered"] == pytest.approx(1 - 97.5 / 100)


def test_buffers_table_says_what_the_kernel_grants_and_what_cannot_be_sent():
    frame = _runs(proto=["udp", "udp"], packet_bytes=[64000, 64000], sndbuf_bytes=[163840, 1500],
                  rcvbuf_bytes=[163840, 163840], rate_bps=[1e9, 1e9], goodput_bps=[800e6, math.nan],
                  bytes_sent=[100e6, math.nan], bytes_received=[90e6, math.nan],
                  sndbuf_granted_bytes=[327680, math.nan], rcvbuf_granted_bytes=[327680, math.nan])
    frame.loc[1, ["status", "error"]] = ["failed", "No buffer space available: a 64000 B datagram ..."]
    table = buffers_table(frame, load_reference("seed000_buffers"), rmem_max=4194304, wmem_max=4194304)
    big, small = table.iloc[0], table.iloc[1]
    assert big["pred_rcvbuf_granted"] == big["rcvbuf_granted"] == 327680 and big["pred_datagrams_buffered"] == 3
    assert big["doc_rate_Mbps"] == 920 and big["doc_received_pct"] == pytest.approx(96.2)
    assert big["received_pct"] == pytest.approx(90)
    assert small["n"] == 0 and "cannot be sent" in small["pred_note"] and "No buffer space" in small["first_error"]
    assert small["pred_sndbuf_granted"] == 4608 and small["doc_rate_Mbps"] == 130


def test_transmission_table_is_size_over_rate():
    frame = _runs(backend=["userspace"] * 2, proto=["udp"] * 2, rate_bps=[10e6] * 2, packet_bytes=[65000] * 2,
                  one_way_delay_min_s=[0.0532, 0.0531], one_way_delay_median_s=[0.0533, 0.0534])
    row = transmission_table(frame).iloc[0]
    wire = predict("udp", 10e6, payload=65000, wire="emulated").wire_bytes
    assert row["pred_fragments"] == 44 and row["pred_ms"] == pytest.approx(8 * wire / 10e6 * 1e3)
    assert row["median_over_pred"] == pytest.approx(53.35 / row["pred_ms"])


def test_document_004_rows_stand_beside_measurement_and_model():
    windows = _runs(rcvbuf_bytes=[100.0, 100.0, 10000.0], rate_bps=[100e6] * 3, delay_s=[0.0] * 3,
                    loss=[0.0] * 3, time_s=[10.0] * 3, goodput_bps=[50e6, 60e6, 94e6])
    loss = _runs(loss=[0.05] * 2, rate_bps=[100e6] * 2, delay_s=[0.0] * 2, time_s=[10.0] * 2,
                 goodput_bps=[14e6, 16e6])
    table = document_table({"1.1_window/server": windows, "2.3_loss/server": loss}, load_reference("seed004_iperf"))
    row = table[(table["task"] == "1.1_window") & (table["side"] == "server") & (table["value"] == 100)].iloc[0]
    assert row["document_bps"] == 21.9e6 and row["measured_bps"] == 55e6 and row["n"] == 2
    assert row["binds"] == "window" and "2304 B" in row["why"]
    assert row["predicted_bps"] == pytest.approx(8 * 1152 / (8 * 1580 / 100e6))   # one 1152 B window per RTT
    lossy = table[(table["task"] == "2.3_loss") & (table["value"] == 0.05)].iloc[0]
    assert lossy["document_bps"] == 17.6e6 and lossy["binds"] in ("padhye", "mathis") and "PFTK" in lossy["why"]
    # every published row is there, measured or not; what was not run says so
    published = table["document_bps"].notna() | table["document_min_bps"].notna() | table["document_note"].str.len().gt(0)
    assert len(table[published]) >= len(load_reference("seed004_iperf"))
    # the text's ranges: 20-23.1 Mbit/s for 200-1000 B, 91.2-94.2 from 10 kB; none tied to one window
    ten = table[(table["task"] == "1.1_window") & (table["side"] == "server") & (table["value"] == 10000)].iloc[0]
    assert ten["document_bps"] != ten["document_bps"] and (ten["document_min_bps"], ten["document_max_bps"]) == (91.2e6, 94.2e6)
    assert "91.2-94.2 Mbit/s" in ten["why"]
    beside_udp = table[(table["task"] == "4_with_udp")].set_index("value")["document_udp_loss"]
    assert beside_udp.loc[[1.0, 2.0, 10.0]].tolist() == [0.0, 0.00075, 0.0021]
    unmeasured = table[table["measured_bps"].isna()]
    assert unmeasured["why"].str.contains("not measured").all()
    with pytest.raises(UsageError):
        task_rows("9_nope/client", windows)


def test_interval_narrowing_orders_by_run_length():
    frame = _runs(loss=[0.01] * 6, time_s=[30.0] * 3 + [60.0] * 3,
                  goodput_bps=[80e6, 90e6, 85e6, 84e6, 86e6, 85e6])
    table = interval_narrowing(frame)
    assert list(table["time_s"]) == [30.0, 60.0]
    assert table["ci_relative"].iloc[1] < table["ci_relative"].iloc[0]


def test_plot_against_document_draws_measured_predicted_and_published(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from wirelab.viz import plot_against_document
    windows = _runs(rcvbuf_bytes=[100.0, 10000.0], rate_bps=[100e6] * 2, delay_s=[0.0] * 2, loss=[0.0] * 2,
                    time_s=[10.0] * 2, goodput_bps=[50e6, 94e6])
    client = windows.rename(columns={"rcvbuf_bytes": "sndbuf_bytes"})
    table = document_table({"1.1_window/server": windows, "1.1_window/client": client,
                            "special_bdp/client": client.assign(delay_s=0.04)}, load_reference("seed004_iperf"))
    # measured; only published (no runs at all); a side the document gave no number for
    for task in ("1.1_window", "3_parallel", "special_bdp"):
        ax = plot_against_document(table[table["task"] == task], log_x=True)
        assert ax.get_lines()


def test_a_tick_waits_for_its_burst_and_the_pacing_table_sets_both_side_by_side():
    from wirelab.labs.doc000 import maxima_table, pacing_table
    even = load_prediction("udp", 1400, 80e6, 1e9)
    tick = load_prediction("udp", 1400, 80e6, 1e9, pacing="tick")
    assert tick["pred_received_bps"] == even["pred_received_bps"]
    assert even["pred_delay_s"] == pytest.approx(8 * 1442 / 1e9)
    assert 100 * even["pred_delay_s"] < tick["pred_delay_s"] <= 8 * (212992 + 1442) / 1e9
    frame = _runs(proto=["udp"], packet_bytes=[65000], offered_bps=[4e9], rate_bps=[1e9], time_s=[2.0],
                  goodput_bps=[830e6], bytes_offered=[1e9], bytes_sent=[0.24e9], bytes_received=[0.21e9],
                  packets_sent=[3700], lost=[370], one_way_delay_mean_s=[0.0016])
    doc = load_reference("seed000_offered_load")
    evenly = offered_load_table(frame, doc)
    ticked = offered_load_table(frame, doc, pacing="tick")
    # a tick's bytes are counted per second of the run, as the thesis counted them
    assert ticked["received_MBps"].iloc[0] == pytest.approx(0.21e9 / 2 / 1e6)
    both = pacing_table(evenly, ticked).iloc[0]
    assert both["received_MBps_even"] == pytest.approx(830 / 8) and both["doc_received_MBps"] == 117.6
    maxima = maxima_table(evenly, ticked).set_index(["proto", "packet_bytes"])
    assert maxima.loc[("udp", 65000), "doc_received_MBps"] == 117.6
    assert maxima.loc[("tcp", 40000), "doc_received_MBps"] == 118.9 and len(maxima) == 6
    # 1400 B: the most arrived at 100 MB/s offered, where the CPU, not the link, gave out
    assert maxima.loc[("tcp", 1400), ["doc_received_MBps", "doc_at_offered_MBps"]].tolist() == [37.92, 100]
    assert maxima.loc[("udp", 65000), "at_offered_MBps_even"] == 500
    assert maxima.loc[("udp", 65000), "pred_real_wire_MBps"] < maxima.loc[("udp", 65000), "pred_received_MBps"]


def test_the_partition_table_stands_the_theses_example_beside_the_model():
    from wirelab.labs.doc000 import partition_table
    table = partition_table((3, 4), goodput_bps=960e6).set_index(["method", "boards"])
    assert table.loc[("parallel", 3), "doc_overlap_MB"] == table.loc[("parallel", 3), "overlap_MB"] == 1.5
    assert table.loc[("round robin", 4), "worst_latency_ms"] == pytest.approx(300)
    assert table.loc[("round robin", 4), "doc_latency_ms"] == 300
    assert math.isnan(table.loc[("parallel", 4), "doc_overlap_MB"])
    assert table.loc[("parallel", 4), "link_s"] == pytest.approx(8 * 12e6 / 960e6)


def test_the_documents_crosses_name_the_sides_it_gave_them_never_iperf3s_both():
    import matplotlib
    matplotlib.use("Agg")
    from wirelab.viz import plot_against_document
    windows = _runs(rcvbuf_bytes=[100.0], rate_bps=[100e6], delay_s=[0.0], loss=[0.0], time_s=[10.0],
                    goodput_bps=[50e6])
    both = windows.rename(columns={"rcvbuf_bytes": "window_bytes"})
    table = document_table({"1.1_window/server": windows, "1.1_window/both": both}, load_reference("seed004_iperf"))
    ax = plot_against_document(table[table["task"] == "1.1_window"], log_x=True)
    labels = [line.get_label() for line in ax.get_lines() if line.get_label().startswith("document")]
    assert labels == ["document, client or server"]
    crosses = [line for line in ax.get_lines() if line.get_label().startswith("document")][0]
    assert sorted(crosses.get_xdata()) == [100, 100000]       # 10 kB on: a range in its text, drawn as bars
    assert "document, a range in its text" in [c.get_label() for c in ax.collections]


def test_document_000s_tables_show_every_published_row_the_run_did_not_measure_after_the_measured():
    frame = _runs(proto=["udp"], packet_bytes=[65000], offered_bps=[80e6], rate_bps=[1e9], time_s=[1.0],
                  goodput_bps=[79e6], bytes_offered=[10e6], bytes_sent=[10e6], bytes_received=[9.9e6],
                  packets_sent=[154], lost=[1], one_way_delay_mean_s=[0.0006])
    doc = load_reference("seed000_offered_load")
    measured = offered_load_table(frame, doc)
    every = offered_load_table(frame, doc, every_document_row=True)
    assert len(measured) == 1 and len(every) == len(doc) == 36     # 65000 B UDP at 10 MB/s is Appendix B's
    assert every["measured"].tolist() == [True] + [False] * 35
    assert every.iloc[0].drop("measured").equals(measured.iloc[0])
    rest = every[~every["measured"]]
    assert rest["n"].isna().all() and rest["doc_received_MBps"].notna().all()
    assert set(zip(every["proto"], every["packet_bytes"], every["offered_MBps"])) == \
        set(zip(doc["protocol"], doc["packet_bytes"], doc["offered_MBps"]))
    buffers = buffers_table(_runs(proto=["udp"], packet_bytes=[64000], sndbuf_bytes=[163840], rcvbuf_bytes=[163840],
                                  rate_bps=[1e9], goodput_bps=[8e8], bytes_sent=[1e8], bytes_received=[9e7],
                                  sndbuf_granted_bytes=[327680], rcvbuf_granted_bytes=[327680]),
                            load_reference("seed000_buffers"))
    assert len(buffers) == 10 and buffers["measured"].sum() == 1 and buffers["doc_rate_Mbps"].notna().all()
    # the model is filled for the settings only the document ran
    assert buffers["pred_rcvbuf_granted"].notna().all()
    from wirelab.labs.doc000 import buffers_1s_table
    burst = buffers_1s_table(_runs(proto=["tcp"], packet_bytes=[1400], sndbuf_bytes=[2240], rcvbuf_bytes=[2240],
                                   bytes_offered=[1e7], bytes_sent=[1e7], bytes_received=[9.9e6],
                                   one_way_delay_mean_s=[0.0003], rcvbuf_granted_bytes=[4608]),
                             load_reference("seed000_buffers_1s"))
    assert len(burst) == 16 and burst["measured"].sum() == 1          # 8 settings × tcp and udp
    assert burst.iloc[0][["doc_received_MB", "doc_echo_ms"]].tolist() == [9.909172, 0.32]
