"""`wirelab serve` / `wirelab send` and `python -m wirelab.transfer.*` as separate processes."""
import json
import re
import subprocess
import sys
import threading

import pytest

from wirelab.cli import main

PY = sys.executable


class Server:
    """A server subprocess; its port is read from its first stderr line (no sleeping)."""

    def __init__(self, argv, out=None):
        self.proc = subprocess.Popen(argv, stdout=out or subprocess.PIPE, stderr=subprocess.PIPE)
        box = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stderr.readline()), daemon=True)
        reader.start()
        reader.join(20)
        match = re.search(rb":(\d+)\s*$", box[0] if box else b"")
        assert match, f"server did not start: {box}"
        self.port = int(match.group(1))

    def stop(self):
        self.proc.terminate()
        try:
            return self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.communicate()


@pytest.mark.parametrize("proto", ["tcp", "udp", "udpr"])
def test_serve_and_send_move_a_file_byte_exact(tmp_path, proto):
    data = bytes(range(256)) * 400
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    server = Server([PY, "-m", "wirelab", "serve", "tcp" if proto == "tcp" else "udp", "0",
                     "--out", str(tmp_path / "out.bin"), "--json", "--max-wait", "2", "--rcvbuf", "4MiB"])
    try:
        sent = subprocess.run([PY, "-m", "wirelab", "send", proto, "127.0.0.1", str(server.port),
                               "--json"], input=data, capture_output=True, timeout=30)
    finally:
        stdout, stderr = server.stop()
    assert sent.returncode == 0, sent.stderr
    result = json.loads(sent.stdout)
    assert result["ok"] and result["bytes_offered"] == len(data) and result["proto"] == proto
    assert (tmp_path / "out.bin").read_bytes() == data
    line = json.loads(stdout.splitlines()[0])            # the server's Result, with --out on stdout
    assert line["bytes_delivered"] == len(data)


def test_module_programs_run_alone_stdin_to_stdout(tmp_path):
    data = b"students read these programs\n" * 100
    # The module programs take a fixed port like the assignment's; find one free.
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([PY, "-m", "wirelab.transfer.udp_server", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(50):                                # the server may need a moment to bind
            sent = subprocess.run([PY, "-m", "wirelab.transfer.udp_client", "udpr", "127.0.0.1", str(port)],
                                  input=data, capture_output=True, timeout=30)
            if sent.returncode == 0:
                break
        assert sent.returncode == 0, sent.stderr
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert out == data


def test_send_errors_are_one_line_and_exit_nonzero(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sent = subprocess.run([PY, "-m", "wirelab", "send", "tcp", "127.0.0.1", str(port), "--max-wait", "0.5"],
                          input=b"x", capture_output=True, timeout=30)
    assert sent.returncode == 1 and sent.stderr.decode().startswith("ERROR: ")
    assert len(sent.stderr.decode().strip().splitlines()) == 1


def test_measurement_options(capsys):
    server = Server([PY, "-m", "wirelab", "serve", "udp", "0", "--max-wait", "2"])
    try:
        assert main(["send", "udp", "127.0.0.1", str(server.port), "--rate", "8mbit", "--packet", "1000",
                     "--time", "0.3s", "--json"]) == 0
        load = json.loads(capsys.readouterr().out)
        assert main(["send", "udp", "127.0.0.1", str(server.port), "--echo", "5", "--json"]) == 0
        echo = json.loads(capsys.readouterr().out)
    finally:
        server.stop()
    assert load["mode"] == "load" and load["packet_bytes"] == 1000 and 0 < load["packets_received"] <= 400
    assert load["delay_method"] == "same host clock" and load["one_way_delay"]["count"] > 0
    assert echo["mode"] == "echo" and len(echo["rtts_s"]) == 5


def test_udpr_measurement_is_refused_with_a_fix(capsys):
    assert main(["send", "udpr", "127.0.0.1", "9", "--time", "1s"]) == 2
    assert "use tcp or udp" in capsys.readouterr().err


def test_help_lists_serve_and_send(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "serve" in text and "send" in text
