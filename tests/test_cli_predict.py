"""``wirelab predict`` as a student types it: tables, JSON and one-line errors."""
import json
import subprocess
import sys

import pytest

from wirelab.cli import main


def run_cli(*argv):
    return subprocess.run([sys.executable, "-m", "wirelab", *argv], capture_output=True, text=True, timeout=60)


def predict_json(*argv):
    proc = run_cli("predict", *argv, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_table_names_the_binding_limit(capsys):
    assert main(["predict", "--proto", "tcp", "--rate", "10mbit", "--timestamps"]) == 0
    out = capsys.readouterr().out
    assert "1448 B" in out and "9.415 Mbit/s" in out and "binds" in out


@pytest.mark.parametrize("argv, mbps, payload", [
    (["--proto", "udp"], 9.57, 1472), (["--proto", "tcp"], 9.49, 1460),
    (["--proto", "tcp", "--timestamps"], 9.41, 1448), (["--proto", "tcp", "--tcp-options", "12"], 9.41, 1448),
])
def test_json_reproduces_document_002(argv, mbps, payload):
    out = predict_json(*argv, "--rate", "10mbit")
    assert round(out["goodput_bps"] / 1e6, 2) == mbps
    assert out["payload_bytes"] == payload and out["wire_bytes"] == 1538 and out["fragments"] == 1
    assert set(out) >= {"efficiency", "goodput_bps", "payload_bytes", "wire_bytes", "fragments", "limits", "binding"}
    assert out["binding"] == "link" and out["limits"]["link"] == out["goodput_bps"]


def test_json_pppoe_and_gbe():
    assert predict_json("--proto", "udp", "--pppoe", "--rate", "21mbit")["payload_bytes"] == 1464
    assert predict_json("--proto", "tcp", "--pppoe", "--timestamps")["payload_bytes"] == 1440
    assert round(predict_json("--proto", "tcp", "--timestamps", "--rate", "1gbit")["goodput_bps"] / 1e6, 1) == 941.5


def test_json_loss_window_and_udpr():
    out = predict_json("--proto", "tcp", "--rate", "100mbit", "--rtt", "80ms", "--window", "500B")
    assert out["binding"] == "window" and out["limits"]["window"] == pytest.approx(50000)
    udpr = predict_json("--proto", "udpr", "--rate", "1mbit", "--rtt", "100ms", "--loss", "10%", "--payload", "1000")
    assert udpr["binding"] == "stop_and_wait" and udpr["stop_and_wait"]["success_probability"] == pytest.approx(0.81)
    frag = predict_json("--proto", "udp", "--payload", "4000", "--loss", "1%")
    assert frag["fragments"] == 3 and frag["delivery_probability"] == pytest.approx(0.99 ** 3)


@pytest.mark.parametrize("argv, words", [
    (["--mtu", "30"], "smaller than"),
    (["--rate=-5mbit"], "negative"),
    (["--rate", "-5"], "negative"),
    (["--loss", "150%"], "more than 100"),
    (["--rate", "10mbps"], "ambiguous"),
    (["--ip", "5"], "invalid choice"),
    (["--proto", "udp", "--timestamps"], "no TCP options"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, words):
    proc = run_cli("predict", *argv)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_cc_and_size_show_the_transfer_time(capsys):
    assert main(["predict", "--rate", "10mbit", "--rtt", "40ms", "--loss", "1%", "--cc", "cubic",
                 "--size", "200KB", "--timestamps", "--wire", "emulated"]) == 0
    out = capsys.readouterr().out
    assert "transfer of 200 kB with cubic" in out and "transfer time" in out and "slow_start" in out
    assert "RFC 9438" in out and "steady-state goodput" in out and "size / data time" in out
    data = predict_json("--rate", "10mbit", "--rtt", "40ms", "--cc", "bbr", "--size", "50KB")
    t = data["transfer"]
    assert data["cc"] == "bbr" and t["binding"] == "startup" and t["total_s"] > t["data_time_s"] > 0
    assert set(t["setup"]) == {"handshake", "conn"} and set(t["final"]) == {"rcvd"}
    assert data["goodput_bps"] == pytest.approx(8 * 50_000 / t["data_time_s"])


def test_outside_the_model_says_so(capsys):
    assert main(["predict", "--cc", "bbr", "--loss", "30%", "--rtt", "10ms", "--size", "1MB"]) == 0
    out = capsys.readouterr().out
    assert "not predicted: outside the model" in out and "not modelled" in out
    proc = run_cli("predict", "--cc", "vegas")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr and "Traceback" not in proc.stderr
