"""Interval records while a transfer runs: struct tcp_info read right (checked against `ss`, the
kernel's other road to the same counters), and the programs' records (``transfer.progress``)."""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from wirelab.transfer import send_udp, start_server
from wirelab.transfer import tcp_info
from wirelab.transfer.measure_client import measure
from wirelab.transfer.progress import Progress, datagram_sink

DATA = Path(__file__).parent / "data"


def _ss_fields(text: str) -> dict:
    """The numbers of one `ss -ti` line we compare: cwnd, ssthresh, mss, rtt/rttvar (ms), bytes,
    rates (bit/s), minrtt (ms), snd_wnd."""
    out = {k: int(v) for k, v in re.findall(r"\b(cwnd|ssthresh|mss|bytes_sent|bytes_acked|bytes_received|"
                                           r"snd_wnd|delivered):(\d+)", text)}
    rtt, var = re.search(r"\brtt:([\d.]+)/([\d.]+)", text).groups()
    out.update(rtt_ms=float(rtt), rttvar_ms=float(var), minrtt_ms=float(re.search(r"minrtt:([\d.]+)", text)[1]))
    out.update({k: int(v) for k, v in re.findall(r"\b(pacing_rate|delivery_rate) (\d+)bps", text)})
    return out


def _compare(info: dict, ss: dict) -> None:
    assert info["snd_cwnd"] == ss["cwnd"] and info["snd_mss"] == ss["mss"]
    assert info["snd_ssthresh"] == ss["ssthresh"]
    assert (info["bytes_sent"], info["bytes_acked"], info["bytes_received"]) == \
        (ss["bytes_sent"], ss["bytes_acked"], ss["bytes_received"])
    assert info["rtt"] / 1e3 == pytest.approx(ss["rtt_ms"]) and info["rttvar"] / 1e3 == pytest.approx(ss["rttvar_ms"])
    assert info["min_rtt"] / 1e3 == pytest.approx(ss["minrtt_ms"])
    assert info["delivered"] == ss["delivered"] and info["snd_wnd"] == ss["snd_wnd"]
    assert 8 * info["pacing_rate"] == ss["pacing_rate"] and 8 * info["delivery_rate"] == ss["delivery_rate"]


def test_tcp_info_read_from_recorded_bytes_agrees_with_ss():
    lines = dict(line.split(": ", 1) for line in (DATA / "tcp_info_loopback.txt").read_text().splitlines()
                 if not line.startswith("#"))
    info = tcp_info.parse(bytes.fromhex(lines["raw"]))
    _compare(info, _ss_fields(lines["ss"]))
    assert (info["snd_wscale"], info["rcv_wscale"]) == (10, 10)
    summary = tcp_info.summary(info)
    assert summary["cwnd_bytes"] == 18 * 65483 and summary["srtt_s"] == pytest.approx(158e-6)
    assert summary["pacing_rate_bps"] == 71616850632 and summary["ca_state"] == "open"


def test_a_shorter_struct_from_an_older_kernel_gives_the_fields_it_holds():
    raw = bytes.fromhex((DATA / "tcp_info_loopback.txt").read_text().split("raw: ")[1].split()[0])
    old = tcp_info.parse(raw[:104])          # Linux 3.x: up to total_retrans
    assert old["snd_cwnd"] == 18 and "pacing_rate" not in old and "bytes_sent" not in old
    assert "bytes_acked" not in tcp_info.summary(old) and tcp_info.summary(None) == {}


@pytest.mark.skipif(not shutil.which("ss"), reason="needs ss (iproute2)")
def test_tcp_info_of_a_live_socket_agrees_with_ss():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client, server.accept()[0] as peer:
            sending = threading.Thread(target=client.sendall, args=(bytes(2_000_000),))
            sending.start()
            got = 0
            while got < 2_000_000:
                got += len(peer.recv(1 << 16))
            sending.join(5)
            peer.sendall(b"y" * 100)
            assert client.recv(200)
            argv = ["ss", "-tinH", "state", "established", f"( dport = :{port} )"]
            deadline = time.monotonic() + 30
            while True:                   # until the connection is idle: its counters hold still
                ss = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
                info = tcp_info.read(client)
                fields = _ss_fields(ss)
                if fields == _ss_fields(subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout):
                    break
                assert time.monotonic() < deadline, "the connection never went idle"
    # bytes_sent counts resends too (a busy machine's loopback can time one out): what was sent once is the data
    assert info["bytes_sent"] == fields["bytes_sent"] and info["bytes_sent"] - info["bytes_retrans"] == 2_000_000
    assert info["bytes_received"] == fields["bytes_received"] == 100
    assert info["bytes_acked"] == fields["bytes_acked"] and info["snd_cwnd"] == fields["cwnd"]
    assert info["rtt"] / 1e3 == pytest.approx(fields["rtt_ms"]) and info["snd_mss"] == fields["mss"]


def test_progress_records_each_interval_with_the_kernels_view_of_a_tcp_sender():
    seen = []
    port, stop, thread, results = start_server("tcp")
    try:
        progress = Progress("sender", emit=seen.append, interval_s=0.05, tags={"flow": "f0"})
        result = measure("tcp", "127.0.0.1", port, mode="load", rate_bps=8e6, packet=1000, time_s=0.6,
                         progress=progress)
    finally:
        stop.set()
        thread.join(5)
    assert result.ok
    records = result.metadata["progress"]
    assert records == seen and len(records) >= 8                 # every record emitted live, in order
    assert [r["seq"] for r in records] == list(range(len(records)))
    assert all(r["source"] == "sender" and r["flow"] == "f0" and r["event"] == "interval" for r in records)
    counts = [r["bytes"] for r in records]
    assert counts == sorted(counts) and counts[-1] == result.bytes_sent      # the last at the end
    # each record's rate is its interval's: together they add up to the bytes counted
    covered = sum(b["bps"] * (b["t"] - a["t"]) / 8 for a, b in zip(records, records[1:]))
    assert covered == pytest.approx(records[-1]["bytes"] - records[0]["bytes"], rel=1e-6)
    assert all(r["cwnd_segments"] >= 1 and r["srtt_s"] > 0 for r in records)
    assert records[-1]["bytes_acked"] >= result.bytes_sent                  # TCP_INFO: all acknowledged


def test_the_receiver_counts_a_measurement_live_and_a_probe_reports_each_round():
    recv = Progress("receiver", interval_s=0.05)
    port, stop, thread, results = start_server("udp", progress=recv)
    recv.start()
    try:
        result = measure("udp", "127.0.0.1", port, mode="load", rate_bps=4e6, packet=1000, time_s=0.5)
        records = recv.stop()
        probe = Progress("probe")
        echo = measure("udp", "127.0.0.1", port, mode="echo", count=5, packet=64, progress=probe)
    finally:
        stop.set()
        thread.join(5)
    assert result.ok and echo.ok
    assert records[-1]["bytes"] == result.bytes_received > 0           # the receiver's own count
    assert any(0 < r["bytes"] < result.bytes_received for r in records)  # ... growing while it ran
    rounds = [r for r in echo.metadata["progress"] if r["event"] == "rtt"]
    assert [r["round"] for r in rounds] == list(range(5))
    assert [r["rtt_s"] for r in rounds] == echo.rtts_s


def test_a_file_transfer_reports_the_bytes_handed_to_the_kernel():
    progress = Progress("sender", interval_s=0.01)
    port, stop, thread, _ = start_server("udp")
    try:
        sent = send_udp("127.0.0.1", port, bytes(30_000), proto="udpr", max_wait=0.5, progress=progress)
    finally:
        stop.set()
        thread.join(5)
    assert sent.ok and sent.metadata["progress"][-1]["bytes"] == 30_000


def test_the_datagram_sink_delivers_and_never_blocks(tmp_path):
    path = str(tmp_path / "s")
    reader = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    reader.bind(path)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    send = datagram_sink(path)
    assert send({"event": "interval", "seq": 0})
    assert json.loads(reader.recv(1000)) == {"event": "interval", "seq": 0}
    results = [send({"event": "interval", "seq": i, "pad": "x" * 500}) for i in range(2000)]
    assert results[0] and not all(results)           # the queue filled: records were left out, no wait
    reader.close()
    assert send({"seq": 1}) is False                 # no reader at all: left out too
    send.close()
    assert datagram_sink(None) is None
