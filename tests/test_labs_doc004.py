"""Document 004's server reads, its 30 s against 60 s runs and its ping, beside ours and the model."""
import pandas as pd
import pytest

from wirelab.labs import doc004
from wirelab.link import open as open_link


def test_the_documents_server_rows_are_a_fixed_time_per_read():
    assert doc004.reader_time_s() == pytest.approx(0.74e-3, rel=0.02)
    server = doc004.sweeps(quick=True)["tasks"]["1.2_length/server"].experiment
    settings = server.settings()
    assert server.engine == "wirelab" and {s["read_bytes"] for s in settings} == {1024, 128 * 1024}
    assert {s["packet_bytes"] for s in settings} == {1 << 20}


def test_the_run_length_table_sets_the_documents_finding_beside_the_intervals():
    frame = pd.DataFrame({"status": ["ok"] * 4, "error": [None] * 4, "loss": [0.05] * 4, "time_s": [30, 30, 60, 60],
                          "goodput_bps": [18e6, 17e6, 17.2e6, 17.4e6], "pred_goodput_bps": [15e6] * 4})
    row = doc004.run_length_table(frame).iloc[0]
    assert row["document_bps"] == 17.6e6 and "mostly" in row["document_finding"]
    assert row["measured_short_higher"] and row["measured_short_bps"] == pytest.approx(17.5e6)
    assert row["difference_within_ci"], "two repetitions of each: 0.2 Mbit/s is well inside their intervals"


def test_the_ping_table_counts_the_delay_once_and_both_echoes():
    spec = doc004.ping_link()
    assert spec.forward.delay_s == 0.08 and spec.forward.jitter_s == 0.01 and spec.reverse.delay_s == 0
    row = doc004.ping_table({"rtt_avg_ms": 81.0, "rtt_min_ms": 71.0, "rtt_max_ms": 90.0, "rtt_mdev_ms": 5.0,
                             "answered": 20}, spec).iloc[0]
    assert row["document_rtt_ms"] == pytest.approx(80.823)
    assert row["predicted_rtt_ms"] == pytest.approx(80 + 2 * 8 * (64 + 28 + 14) / 100e6 * 1e3)


@pytest.mark.root
@pytest.mark.slow
def test_a_ping_over_a_delay_on_one_direction_takes_that_delay_once():
    with open_link(doc004.ping_link(), backend="userspace") as link:
        measured = doc004.ping(link, rounds=20, interval_s=0.1)
    assert measured["lost"] == 0 and measured["backend"] == "userspace"
    # uniform ± 10 ms: no round below 70 ms; 20 rounds average within 5 ms (about 4 standard errors)
    assert measured["rtt_min_ms"] >= 69.5 and measured["rtt_avg_ms"] == pytest.approx(80, abs=5)


def test_the_delay_tasks_delay_one_direction_as_the_documents_netem_did():
    tasks = doc004.sweeps(quick=False)["tasks"]
    for key, delays in (("special_bdp/server", {0.08}), ("2.2_delay/client", {0.001, 0.05, 5.0})):
        settings = tasks[key].experiment.settings()
        assert delays <= {s.link.forward.delay_s for s in settings}
        for s in settings:
            assert s.link.forward.jitter_s == 0.01, "netem delay D 10ms on the client"
            assert s.link.reverse.delay_s == 0 and s.link.reverse.jitter_s == 0, key
    # the model's round trip is the one delay (and both frames' time), not twice it
    runs = pd.DataFrame({"status": ["ok"], "error": [None], "rcvbuf_bytes": [9000.0], "rate_bps": [100e6],
                         "delay_s": [0.08], "delay_reverse_s": [0.0], "jitter_s": [0.01], "jitter_reverse_s": [0.0],
                         "loss": [0.0], "time_s": [10.0], "goodput_bps": [0.8e6]})
    row = doc004.task_rows("special_bdp/server", runs).iloc[0]
    # 9000 B asked: 18000 granted, half of it offered in whole 1448 B segments (8688 B) per 80 ms
    assert row["binds"] == "window" and 8 * 8688 / 0.0812 < row["predicted_bps"] < 8 * 8688 / 0.080


def test_the_documents_rate_above_tbfs_own_says_why():
    table = doc004.document_table({}, doc004.reference())
    row = table[(table["task"] == "2.1_rate") & (table["value"] == 50)].iloc[0]
    assert row["document_bps"] == 51.8e3 and "above tbf's own rate" in row["why"] and "47.8" in row["why"]
    assert "above tbf" not in table[(table["task"] == "2.1_rate") & (table["value"] == 100)].iloc[0]["why"]


def test_the_documents_bdp_is_its_ping_times_its_own_rate_at_80_ms():
    table = doc004.document_table({}, doc004.reference())
    bdp = doc004.bdp_table(table).set_index("bdp")
    assert bdp.loc["document 004", "bdp_kbit"] == pytest.approx(5269.6)
    assert bdp.loc["document 004", "rate_Mbps"] == pytest.approx(65.2, abs=0.05)
    assert bdp.loc["C × RTT", "bdp_bytes"] == pytest.approx(100e6 * 0.080823 / 8)
    measured = {"rtt_avg_ms": 81.0, "rtt_min_ms": 71.0, "rtt_max_ms": 90.0, "rtt_mdev_ms": 5.0, "answered": 20}
    runs = pd.DataFrame({"status": ["ok"], "error": [None], "delay_s": [0.08], "delay_reverse_s": [0.0],
                         "jitter_s": [0.01], "jitter_reverse_s": [0.0], "rate_bps": [100e6], "loss": [0.0],
                         "time_s": [10.0], "goodput_bps": [60e6]})
    here = doc004.bdp_table(doc004.document_table({"2.2_delay/client": runs}, doc004.reference()), measured)
    here = here.set_index("bdp")
    assert here.loc["measured here", "bdp_kbit"] == pytest.approx(60e6 * 0.081 / 1e3)
    assert here.loc["model", "rate_Mbps"] > 0
