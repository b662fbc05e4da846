"""The kit's Wireshark dissector reads PPCB as PPCB: every packet type over TCP (a stream,
reassembled) and UDP, with the values that were sent; tshark, pyshark, analyze and install.
(The kit's own reader, ``ppcb_reader``, follows the same rules: test_capture_ppcb_reader.py.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ppcb_captures import EXPECTED, by_sender, capture, decoded, without_the_conn
from wirelab.capture.tools.ppcb_dissector import DISSECTOR, install, tshark_options
from wirelab.capture.tools.ppcb_dissector import tshark_ppcb_packets as ppcb_packets
from wirelab.capture.ppcb_reader import ppcb_summary

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "captures" / "ppcb.pcapng"
ALL_TYPES = {"CONN", "CONACC", "CONRJT", "DATA", "ACC", "RJT", "RCVD"}
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")


def tshark(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["tshark", "-n", *args], capture_output=True, text=True, timeout=120, env=env)


def check_every_scenario(path):
    packets = ppcb_packets(path)
    for name, sent in EXPECTED.items():
        seen = by_sender(decoded(packets, name))
        for end, expected in by_sender(sent).items():
            assert seen[end] == expected, (f"{name}, {end} side, in {path}:\n  decoded  {seen[end]}\n"
                                           f"  sent     {expected}")
    for transport in ("tcp", "udp"):
        seen = set(packets.loc[packets["transport"] == transport, "type"])
        assert seen == (ALL_TYPES - {"ACC"} if transport == "tcp" else ALL_TYPES), transport
    return packets


@pytest.fixture(scope="module")
def live_capture(tmp_path_factory):
    """Real transfers (wirelab's clients and servers, and misbehaving peers) captured now."""
    if os.geteuid() != 0 or not shutil.which("dumpcap"):
        pytest.skip("a live capture needs root and dumpcap")
    path = tmp_path_factory.mktemp("ppcb") / "ppcb.pcapng"
    outcomes = capture(path)
    return path, outcomes


@needs_tshark
@pytest.mark.root
def test_real_transfers_decode_with_the_values_sent(live_capture):
    path, outcomes = live_capture
    assert outcomes["tcp"].ok and outcomes["udp"].ok and outcomes["udpr"].ok
    assert not outcomes["udp-conrjt"].ok and "CONRJT" in outcomes["udp-conrjt"].error
    packets = check_every_scenario(path)
    # the session ids the clients chose are the ones their Results keep
    for name in ("tcp", "udp", "udpr"):
        session = outcomes[name].metadata["session_id"]
        assert (packets["session_id"] == session).sum() >= 7, name


@needs_tshark
@pytest.mark.root
def test_tcp_packets_cut_across_segments_are_reassembled(live_capture):
    path, _ = live_capture
    packets = ppcb_packets(path)
    mss = packets[packets["session_id"] == b"TCP-MSS5".hex()]
    stream = mss["sport"].iloc[0]
    lengths = tshark("-r", str(path), "-Y", f"tcp.srcport == {stream} and tcp.len > 0", "-T", "fields",
                     "-e", "tcp.len", *tshark_options()).stdout.split()
    assert len(lengths) >= 2 and max(map(int, lengths)) < sum(mss["data_len"].dropna()) + 18
    split = tshark("-2", "-r", str(path), "-Y", f"tcp.srcport == {stream} and tcp.reassembled_in",
                   *tshark_options())
    assert split.stdout.strip(), "some DATA began in one segment and ended in a later one"
    assert list(mss.loc[mss["type"] == "DATA", "packet_no"]) == [0, 1, 2]


@needs_tshark
def test_the_committed_capture_decodes_with_the_values_sent():
    check_every_scenario(COMMITTED)


@needs_tshark
def test_other_traffic_is_not_claimed():
    for name in ("tcp-10mbit.pcapng", "udp-5mbit-loss2.pcapng", "udp-fragments.pcapng", "ipv6.pcapng"):
        assert ppcb_packets(ROOT / "captures" / name).empty, name


@needs_tshark
@pytest.mark.skipif(not shutil.which("editcap"), reason="editcap not installed (apt-get install tshark)")
def test_a_stream_without_its_conn_decodes_by_port(tmp_path):
    """Heuristics judge a TCP stream by its first bytes; from the middle, a port preference does it."""
    cut = tmp_path / "no-conn.pcapng"
    port = without_the_conn(COMMITTED, cut, ppcb_packets(COMMITTED))
    assert (ppcb_packets(cut)["session_id"] == b"TCP-FILE".hex()).sum() == 0
    by_port = ppcb_packets(cut, tcp_ports=[port])
    data = by_port[(by_port["session_id"] == b"TCP-FILE".hex()) & (by_port["type"] == "DATA")]
    assert list(data["packet_no"]) == [0, 1, 2, 3] and list(data["data_len"]) == [1000, 1000, 1000, 500]


@needs_tshark
def test_summary_and_cli(tmp_path):
    sessions = {s["session_id"]: s for s in ppcb_summary(ppcb_packets(COMMITTED))}
    udpr = sessions[b"UDPRFILE".hex()]
    assert (udpr["protocol"], udpr["total_length"], udpr["data_bytes"], udpr["last_packet_no"]) == \
        ("udpr", 3500, 3500, 3)
    assert udpr["packets"] == {"CONN": 1, "CONACC": 1, "DATA": 4, "ACC": 4, "RCVD": 1}
    assert sessions[b"UDP-LATE".hex()]["refused"] == 1
    run = subprocess.run([sys.executable, "-m", "wirelab", "analyze", str(COMMITTED), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert {s["session_id"] for s in json.loads(run.stdout)["ppcb"]["sessions"]} == set(sessions)
    text = subprocess.run([sys.executable, "-m", "wirelab", "wireshark", "packets", str(COMMITTED),
                           "-Y", "ppcb.type == 6"], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and text.stdout.count("RJT") == 2 and "packet_no=5" in text.stdout


def test_the_dissectors_packet_table_is_the_wire_table():
    from wirelab.wire.ppcb import lua_table
    block = DISSECTOR.read_text().split("-- BEGIN wire table")[1].split("-- END wire table")[0]
    assert "\n".join(block.splitlines()[2:]) == lua_table()


@needs_tshark
def test_pyshark_reads_ppcb_fields():
    from wirelab.capture.tools.pyshark_jupyter import pyshark_packets
    rows = pyshark_packets(COMMITTED, display_filter=f"ppcb.session_id == {b'UDPRFILE'.hex(':')}"
                           " and ppcb.type == 5", fields={"no": "ppcb.packet_no", "type": "ppcb.type"})
    assert list(rows["highest_layer"]) == ["PPCB"] * 4 and list(rows["no"]) == ["0", "1", "2", "3"]


@needs_tshark
def test_install_into_a_home_then_wireshark_loads_it_by_itself(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    run = subprocess.run([sys.executable, "-m", "wirelab", "wireshark", "install"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    copy = Path(run.stdout.split("dissector: ")[1].splitlines()[0])
    assert copy.is_relative_to(tmp_path) and copy.read_bytes() == DISSECTOR.read_bytes()
    alone = tshark("-r", str(COMMITTED), "-Y", "ppcb", env=env)
    assert alone.returncode == 0 and alone.stdout.count("PPCB") >= 40
    both = tshark("-r", str(COMMITTED), "-Y", "ppcb", *tshark_options(), env=env)   # loaded twice: once
    assert both.stdout == alone.stdout and "Lua" not in both.stderr
    assert install(tmp_path / "elsewhere") == tmp_path / "elsewhere" / "ppcb.lua"
