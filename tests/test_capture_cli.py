"""`wirelab analyze` and `wirelab capture` from the command line."""
from __future__ import annotations

import json
from pathlib import Path

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
