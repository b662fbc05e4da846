"""One definition of every measured quantity, and the invariants the physics imposes on them."""
import json

import pytest

from wirelab.experiment import Experiment, run
from wirelab.analysis.residuals import CLOCK_RESOLUTION_S as measures_clock_s
from wirelab.transfer import Result, measures, run_pair


def test_goodput_runs_from_the_first_byte_sent_to_the_last_delivered_on_one_clock():
    r = Result("udp", bytes_offered=10_000, bytes_delivered=10_000, clock="one clock",
               sender_start_time_s=99.0, first_data_time_s=100.0, last_data_time_s=100.001,
               receiver_start_time_s=100.010, receiver_end_time_s=100.090, sender_end_time_s=100.1)
    assert r.transfer_s == pytest.approx(0.090) and r.goodput_bps == pytest.approx(80_000 / 0.090)
    assert r.setup_s == pytest.approx(1.0) and r.completion_s == pytest.approx(1.1)
    assert r.sender_duration_s == pytest.approx(0.001) and r.sender_goodput_bps > r.goodput_bps
    assert r.delivered_fraction == 1.0 and r.goodput_clock == "one clock"
    # across hosts the receiver's clock is corrected by the estimated offset
    shifted = Result("udp", bytes_delivered=10_000, clock="offset estimate", clock_offset_s=5.0,
                     first_data_time_s=100.0, receiver_start_time_s=105.01, receiver_end_time_s=105.09)
    assert shifted.transfer_s == pytest.approx(0.090) and shifted.goodput_clock == "offset estimate"
    # no common clock: the receiver's own span, and the row says so
    alone = Result("udp", bytes_delivered=10_000, receiver_start_time_s=5.01, receiver_end_time_s=5.09,
                   first_data_time_s=100.0)
    assert alone.transfer_s == pytest.approx(0.080) and alone.goodput_clock == "receiver only"
    row = r.to_dict(samples=False)
    assert {"transfer_s", "completion_s", "setup_s", "delivered_fraction", "goodput_clock"} <= set(row)


def test_the_receivers_span_starts_at_the_first_byte_delivered_not_at_conn():
    """The glossary's receiver_duration_s: first byte delivered → last, so set-up (CONN ... CONACC,
    the first DATA's way across) is not in it, and it never exceeds transfer_s on one clock."""
    r = Result("tcp", bytes_delivered=3000, clock="one clock", first_data_time_s=100.0,
               receiver_start_time_s=99.990, receive_times_s=[100.020, 100.050, 100.080],
               receiver_end_time_s=100.080)
    assert r.receiver_duration_s == pytest.approx(0.060) and r.transfer_s == pytest.approx(0.080)
    for proto in ("tcp", "udp", "udpr"):
        run = run_pair(proto, data=100_000, chunk=1000, max_wait=2.0, rcvbuf=4 << 20 if proto == "udp" else None)
        assert run.ok and run.goodput_clock == "one clock"
        assert run.receiver_duration_s <= run.transfer_s + 2 * measures_clock_s, proto


def test_every_measured_column_has_one_definition_in_the_glossary(project_root):
    for name in ("goodput_bps", "sender_goodput_bps", "transfer_s", "completion_s", "setup_s",
                 "delivered_fraction", "goodput_clock"):
        assert name in measures.GLOSSARY
    readme = (project_root / "README.md").read_text()
    text = measures.glossary_markdown()
    assert text in readme, "README's glossary is the library's, word for word"
    # notebook 02 shows the glossary built from the library, never a copy of its text
    nb = json.loads(next((project_root / "notebooks").glob("02-*.ipynb")).read_text())
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    every_text = "".join("".join(c["source"]) for c in nb["cells"])
    assert "measures.GLOSSARY" in code
    assert not any(definition[:40] in every_text for definition in measures.GLOSSARY.values())
    assert text.count("\n- ") == len(measures.GLOSSARY) - 1 and "first data byte sent" in text
    assert measures.transfer_time(None, 1.0) is None and measures.goodput(1000, 0) is None
    assert measures.sender_view(1000, 1.0, 1.5) == pytest.approx(16_000)


def test_the_engines_and_the_store_read_the_one_glossary():
    from wirelab.experiment import store
    from wirelab.experiment.engine import MEASURED
    assert MEASURED is measures.GLOSSARY
    assert store.ALWAYS_MEASURED is measures.ALWAYS_MEASURED
    assert set(measures.ALWAYS_MEASURED) <= set(measures.GLOSSARY)


def test_goodput_is_the_same_figure_whichever_engine_measured_it(project_root):
    """bytes delivered × 8 ÷ transfer_s: wirelab's programs on one clock; iperf3 on its receiver's
    own span (no common clock), which is what its ``sum_received`` rate is."""
    from wirelab.engines.iperf3 import parse
    for proto in ("tcp", "udpr"):
        row = run_pair(proto, data=50_000, chunk=1000, max_wait=2.0).to_dict(samples=False)
        assert row["goodput_bps"] == pytest.approx(8 * row["bytes_delivered"] / row["transfer_s"]), proto
    for name in ("iperf3_tcp_P2_10mbit_testbed.json", "iperf3_tcp_reverse_10mbit_testbed.json"):
        r = parse((project_root / "tests" / "data" / name).read_text())
        assert r["goodput_bps"] == pytest.approx(8 * r["bytes_delivered"] / r["receiver_duration_s"]), name


@pytest.mark.root
@pytest.mark.parametrize("delay", ["0", "10ms"])
def test_no_receiver_goodput_above_the_link_and_the_views_in_the_order_physics_allows(tmp_path, delay):
    """Over a 10 Mbit/s link, whatever the protocol: the receiver cannot get more than the link
    carries between the first byte sent and the last delivered (η·C, plus the bytes tbf's full
    bucket lets through at once), and the sender hands bytes to its kernel no slower than
    they arrive (when everything arrives)."""
    exp = Experiment("inv", proto=["tcp", "udp", "udpr"], size="200KB", rate="10mbit", delay=delay,
                     reps=2, max_wait="0.5s", timeout=60)
    df = run(exp, out=tmp_path / "inv", progress=False)
    ok = df[df["status"] == "ok"]
    assert len(ok) == len(df), df["error"].tolist()
    assert (ok["goodput_clock"] == "one clock").all()
    spec = exp.settings()[0].link
    burst = spec.burst_for(spec.forward) * 8 / ok["transfer_s"]   # tbf's bucket (LinkSpec.burst_for)
    limit = ok["pred_limit_link_bps"] + burst
    assert (ok["goodput_bps"] <= limit * 1.001).all(), (ok["goodput_bps"] / ok["pred_limit_link_bps"]).tolist()
    complete = ok[ok["delivered_fraction"] == 1]
    assert (complete["sender_goodput_bps"] >= complete["goodput_bps"]).all()


def test_a_paced_file_is_planned_to_its_last_byte_never_more():
    """A udp file sent as offered load: the records carry exactly the file (issue 28: 341 full
    datagrams of 1472 B once counted 501 952 B for a 500 000 B file)."""
    from wirelab.transfer.measure_client import record_sizes
    from wirelab.transfer.measure_wire import MIN_PACKET
    from wirelab.transfer.pacing import Pacer
    pacer = Pacer(10e6, 1472)
    for size in (500_000, 1472, 1473, 1472 * 3 + 5, 40, MIN_PACKET):
        sizes = record_sizes(1472, size, 0.0, pacer)
        assert sum(sizes) == size and min(sizes) >= MIN_PACKET and max(sizes) <= 1472, (size, sizes[-3:])
    assert len(record_sizes(1472, 500_000, 0.0, pacer)) == 340
    # timed: one record per slot of the time, the slot at the end excluded
    assert len(record_sizes(1000, None, 0.1, Pacer(8e6, 1000))) == 100
    assert record_sizes(1000, None, 0.1, None) is None


def test_delivered_is_never_more_than_offered_for_every_protocol_and_size(tmp_path):
    """What the receiver delivers is the application's bytes, exactly once: never more than the
    sender was given, whatever the size (a whole number of datagrams or not) and protocol."""
    from wirelab.experiment import Experiment, run
    exp = Experiment("offered", proto=["tcp", "udp", "udpr"], size=["50KB", "20001B"], rate="20mbit",
                     reps=1, backend="loopback", max_wait="1s", timeout=30)
    df = run(exp, out=tmp_path / "offered", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert (df["bytes_delivered"] <= df["bytes_offered"]).all(), \
        df[["proto", "size_bytes", "bytes_offered", "bytes_sent", "bytes_delivered"]].to_string()
    assert (df["bytes_offered"] == df["size_bytes"]).all()
    assert (df["delivered_fraction"] <= 1).all()
