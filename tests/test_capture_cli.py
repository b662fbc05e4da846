"""`wirelab analyze` and `wirelab capture` from the command line."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wirelab.cli import main

CAP = Path(__file__).resolve().parents[1] / "captures"


def test_analyze_prints_flows_flags_and_overhead(capsys):
    assert main(["analyze", str(CAP / "tcp-10mbit-loss2.pcapng"), "--rate", "10mbit"]) == 0
    out = capsys.readouterr().out
    assert "10.77.1.1" in out and "retransmission 43" in out
    assert "payload 1448" in out and "options 12" in out and "predicted goodput" in out


def test_analyze_json(capsys):
    assert main(["analyze", str(CAP / "udp-fragments.pcapng"), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["packets"] > 0 and r["flows"][0]["proto"] == "udp"
    assert r["overhead"]["fragmented"] is True and r["overhead"]["payload"] == 3000


def test_analyze_a_file_that_is_not_a_capture(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    assert main(["analyze", str(bad)]) == 2
    assert "not a pcap or pcapng file" in capsys.readouterr().err


def test_capture_has_a_help(capsys):
    try:
        main(["capture", "--help"])
    except SystemExit as done:
        assert done.code == 0
    assert "dumpcap" in capsys.readouterr().out


# -- where the losses happened; --expert, --follow, --graph --------------------------------------
SENDER = Path(__file__).resolve().parent / "data" / "tcp-loss-at-sender.pcapng"
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")


def _tshark(path, *args) -> str:
    # (bytes, then text: universal newlines would turn a CR in followed data into LF)
    return subprocess.run(["tshark", "-n", "-r", str(path), "-q", *args], capture_output=True,
                          timeout=120, check=True).stdout.decode("ascii")


def test_analyze_says_where_the_losses_happened(capsys):
    # captured at the receiver (captures/README.md): every original was lost before the capture point
    assert main(["analyze", str(CAP / "tcp-10mbit-loss2.pcapng")]) == 0
    out = capsys.readouterr().out
    assert "of 43 retransmissions: 43 before the capture point" in out
    assert "SYN → SYN-ACK" in out and "SYN-ACK → ACK" in out
    assert main(["analyze", str(SENDER), "--json"]) == 0
    losses = json.loads(capsys.readouterr().out)["losses"]
    assert (losses["after"], losses["spurious"], losses["before"]) == (10, 1, 0)     # (one D-SACKed)
    h = losses["handshakes"][0]
    assert h["initial_rtt_s"] == pytest.approx(h["server_side_s"] + h["client_side_s"])


def test_analyze_filtered_counts_the_losses_of_the_frames_kept(capsys):
    assert main(["analyze", str(SENDER), "--json", "--filter", "tcp.stream == 1"]) == 0
    losses = json.loads(capsys.readouterr().out)["losses"]
    assert (losses["after"], losses["spurious"]) == (10, 0)          # the transfer's, not the control's


@needs_tshark
def test_analyze_expert_prints_tsharks_table(capsys):
    path = CAP / "tcp-10mbit-loss2.pcapng"
    assert main(["analyze", str(path), "--expert"]) == 0
    mine = capsys.readouterr().out
    assert "Warns (43)" in mine and "Previous segment(s) not captured" in mine
    theirs = _tshark(path, "-z", "expert")
    assert [line for line in mine.splitlines() if line] == [line for line in theirs.splitlines() if line]


@needs_tshark
@pytest.mark.parametrize("raw", [False, True], ids=["ascii", "raw"])
def test_analyze_follow_prints_tsharks_follow(capsys, raw):
    path = CAP / "ppcb.pcapng"
    for stream in (0, 3):
        assert main(["analyze", str(path), "--follow", str(stream)] + (["--raw"] if raw else [])) == 0
        mine = capsys.readouterr().out
        assert mine == _tshark(path, "-z", f"follow,tcp,{'raw' if raw else 'ascii'},{stream}")
        assert stream != 0 or ("5443502d46494c45" if raw else "TCP-FILE") in mine


def test_analyze_follow_both_directions_without_tshark(capsys):
    assert main(["analyze", str(CAP / "ppcb.pcapng"), "--follow", "0"]) == 0
    lines = capsys.readouterr().out.split("\n")      # (not splitlines: the data holds CRs)
    assert lines[2] == "Follow: tcp,ascii" and lines[4].startswith("Node 0: 127.0.0.1:")
    assert lines[6] == "18" and lines[8] == "\t9"           # A → B's CONN, B → A's CONACC (tab-indented)


@pytest.mark.parametrize("graph", ["sequence", "io", "rtt"])
def test_analyze_graph_writes_a_picture(tmp_path, capsys, graph):
    from pixels import inked_fraction

    png = tmp_path / f"{graph}.png"
    argv = ["analyze", str(CAP / "tcp-10mbit-loss2.pcapng"), "--graph", graph, "--png", str(png)]
    assert main(argv + (["--interval", "0.01"] if graph == "io" else ["--stream", "1"])) == 0
    assert str(png) in capsys.readouterr().out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and inked_fraction(data) > 0.01


@pytest.mark.parametrize("argv, said", [
    (["--graph", "rtt"], "add --png FILE"),
    (["--graph", "sequence", "--png", "x.png"], "--stream N"),
    (["--png", "x.png"], "add --graph"),
    (["--raw"], "add --follow N"),
    (["--stream", "1"], "add --graph sequence or rtt"),
    (["--follow", "9"], "no TCP stream 9"),
])
def test_analyze_views_say_what_is_missing(tmp_path, capsys, argv, said):
    assert main(["analyze", str(CAP / "tcp-10mbit-loss2.pcapng")] + argv) == 2
    assert said in capsys.readouterr().err
