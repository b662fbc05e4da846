"""nttcp's UDP ending (document 002): three 4-byte datagrams after the records, when asked."""
import json
import shutil
import socket
import subprocess
import sys

import pandas as pd
import pytest

from wirelab.capture.udp_ending import udp_end_markers
from wirelab.errors import UsageError
from wirelab.transfer import measure

from test_transfer_cli import PY, Server


@pytest.fixture
def server():
    running = Server([PY, "-m", "wirelab", "serve", "udp", "0", "--max-wait", "1"])
    yield running
    running.stop()


def test_the_sender_ends_with_markers_and_the_receiver_counts_them(server):
    result = measure("udp", "127.0.0.1", server.port, mode="bulk", time_s=0.2, packet=646,
                     end_markers=3, end_marker_gap_s=0.3)
    assert result.ok, (result.error, result.receiver_error)
    assert result.metadata["end_markers_sent"] == 3 and result.metadata["end_markers_received"] == 3
    assert result.metadata["end_marker_numbers"] == "0 1 2"   # no queue between them: all, in order
    # the first marker arrives after the last record, and the gaps make the session last longer
    assert result.metadata["end_marker_first_s"] >= result.receiver_end_time_s
    assert result.completion_s >= 2 * 0.3
    plain = measure("udp", "127.0.0.1", server.port, mode="bulk", time_s=0.1, packet=646)
    assert plain.ok and "end_markers_sent" not in plain.metadata and "end_markers_received" not in plain.metadata


def test_markers_only_follow_udp_records():
    with pytest.raises(UsageError):
        measure("tcp", "127.0.0.1", 9, mode="bulk", end_markers=3)
    with pytest.raises(UsageError):
        measure("udp", "127.0.0.1", 9, mode="echo", end_markers=3)


def test_markers_are_found_only_after_a_flows_last_data():
    rows = [(0.0, 646), (0.1, 646), (0.5, 4), (2.5, 4), (4.5, 4)]
    df = pd.DataFrame({"time": [t for t, _ in rows], "proto": "udp", "src": "10.0.0.1", "dst": "10.0.0.2",
                       "sport": 5000, "dport": 5039, "frag_offset": 0, "payload_len": [n for _, n in rows]})
    (found,) = udp_end_markers(df)
    assert found["markers"] == 3 and found["gaps_s"] == [0.4, 2.0, 2.0] and found["dst"] == "10.0.0.2:5039"
    assert udp_end_markers(df[df["payload_len"] > 4]) == []


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed (apt-get install tshark)")
def test_markers_show_in_a_capture_and_in_wirelab_analyze(server, tmp_path):
    from wirelab.capture.tools.live import LiveCapture
    probe_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe_port = 39000 + (id(tmp_path) % 1000)
    with LiveCapture("lo", tmp_path / "markers.pcapng", capture_filter=f"udp port {server.port} or udp port {probe_port}",
                     snaplen=128, probe=lambda: probe_sock.sendto(b"probe", ("127.0.0.1", probe_port))) as cap:
        result = measure("udp", "127.0.0.1", server.port, mode="bulk", time_s=0.2, packet=646,
                         end_markers=3, end_marker_gap_s=0.25)
    probe_sock.close()
    assert result.ok and cap.dropped == 0
    (found,) = udp_end_markers(cap.read())
    assert found["markers"] == 3 and found["dst"].endswith(f":{server.port}")
    assert all(g == pytest.approx(0.25, abs=0.1) for g in found["gaps_s"][1:])
    done = subprocess.run([sys.executable, "-m", "wirelab", "analyze", str(cap.path), "--no-ppcb", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["udp_end_markers"][0]["markers"] == 3
    text = subprocess.run([sys.executable, "-m", "wirelab", "analyze", str(cap.path), "--no-ppcb"],
                          capture_output=True, text=True, timeout=120).stdout
    assert "UDP end markers (nttcp's 4 B datagrams)" in text
    # a dataset of the same capture (out of core, DuckDB) finds the same markers
    from wirelab.capture import convert
    from wirelab.capture.report import report
    convert(cap.path, tmp_path / "markers-dataset", chunk_packets=64, progress=False)
    from_dataset = report(tmp_path / "markers-dataset", ppcb=False)["udp_end_markers"]
    assert from_dataset == json.loads(done.stdout)["udp_end_markers"]
