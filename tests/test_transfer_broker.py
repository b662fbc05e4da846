"""Document 003's node programs on loopback: every message stored, forwarded and acknowledged,
the broker alternating r1/r2, one message in flight, 32 bytes on every hop."""
import json
import select
import subprocess
import sys
import time

import pytest

from wirelab.transfer import broker
from wirelab.transfer.broker import MESSAGE_BYTES, MSG, Message, pack, unpack


def test_the_message_is_32_bytes_and_round_trips():
    raw = pack(Message(MSG, 7, 1.5, via=2, dest_rx=2.5, dest_tx=3.5))
    assert len(raw) == MESSAGE_BYTES == 32
    m = unpack(raw)
    assert (m.kind, m.seq, m.via, m.sent, m.dest_rx, m.dest_tx) == (MSG, 7, 2, 1.5, 2.5, 3.5)
    assert unpack(raw[:31]) is None and unpack(b"\x09" + raw[1:]) is None


def _start(role, *args):
    proc = subprocess.Popen([sys.executable, "-m", "wirelab.transfer.broker", role, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 15)
    line = proc.stdout.readline() if ready else ""
    assert line.startswith("ready "), proc.stderr.read() if proc.poll() is not None else line
    return proc, line.split()[1]


@pytest.fixture
def network():
    """d, r1, r2 and b on 127.0.0.1, each on a port the system chose; d's clock 4 s off."""
    procs = []
    try:
        d, d_at = _start("destination", "127.0.0.1:0", "--clock-offset", "4")
        r1, r1_at = _start("router", "127.0.0.1:0", "--next", d_at)
        r2, r2_at = _start("router", "127.0.0.1:0", "--next", d_at)
        procs += [d, r1, r2]
        b, b_at = _start("broker", "127.0.0.1:0", "--routers", r1_at, r2_at)
        procs.append(b)
        yield b_at
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(5)
            proc.stdout.close()
            proc.stderr.close()


def _source(b_at, count, timeout=2.0):
    done = subprocess.run([sys.executable, "-m", "wirelab.transfer.broker", "source", b_at,
                           "--count", str(count), "--timeout", str(timeout)],
                          capture_output=True, text=True, timeout=60)
    return done, [json.loads(line) for line in done.stdout.splitlines()]


def test_every_message_goes_there_and_back_alternating_routers(network):
    done, rows = _source(network, 40)
    assert done.returncode == 0, done.stderr
    assert [r["seq"] for r in rows] == list(range(40))
    assert [r["via"] for r in rows] == [1, 2] * 20
    for r in rows:
        assert r["sent"] <= r["acked"]                              # one clock at s
        assert r["dest_rx"] <= r["dest_tx"]                         # one clock at d
        assert 4.0 <= r["dest_rx"] - r["sent"] < 4.5                # d's clock is 4 s ahead
    for earlier, later in zip(rows, rows[1:]):
        assert earlier["acked"] <= later["sent"]                    # one message in flight


def test_the_broker_serves_the_next_source(network):
    assert _source(network, 3)[0].returncode == 0
    done, rows = _source(network, 3)
    assert done.returncode == 0 and len(rows) == 3 and rows[0]["via"] == 1   # its own turn count


def test_a_lost_message_is_counted_and_the_source_goes_on():
    with _silent_broker() as (address, port):
        started = time.monotonic()
        done, rows = _source(f"{address}:{port}", 2, timeout=0.2)
    assert done.returncode == 1                                       # not every message came back
    assert [r.get("lost") for r in rows] == [True, True]
    assert time.monotonic() - started < 10


class _silent_broker:
    """A TCP listener that accepts and never answers (a broker whose routers are gone)."""

    def __enter__(self):
        import socket
        self.sock = socket.create_server(("127.0.0.1", 0))
        return self.sock.getsockname()

    def __exit__(self, *exc):
        self.sock.close()


def test_bad_addresses_are_usage_errors(capsys):
    with pytest.raises(SystemExit):
        broker.main(["router", "127.0.0.1", "--next", "127.0.0.1:1"])
    assert "HOST:PORT" in capsys.readouterr().err
