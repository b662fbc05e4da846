"""A wait that times out says what happened: a peer that stalled, or one still receiving what this
end queued before its question (issue 32: a timed run blamed a peer that was receiving)."""
import socket
import threading
import time

import pytest

from wirelab.errors import TransferError
from wirelab.transfer.silence import Snapshot, queued_bytes, snapshot, timeout_error
from wirelab.transfer.sockets import Meter
from wirelab.transfer.tcp import StreamReader


def test_a_peer_that_acknowledged_nothing_stalled():
    before, after = Snapshot(10.0, 5_000, 2_000_000), Snapshot(15.0, 5_000, 2_000_000)
    err = timeout_error(5.0, before, after, waiting_for="the REPORT")
    assert err.problem == "timeout: nothing arrived within MAX_WAIT (5 s) while waiting for the REPORT"
    assert err.fix == "the peer stalled; check it is running"
    # the kernel could not say (no TCP_INFO, a receiver that queued nothing): no claim of progress
    assert "stalled" in str(timeout_error(5.0, None, None)) and "while" not in str(timeout_error(5.0, None, None))


def test_a_peer_still_draining_the_send_buffer_is_not_called_stalled():
    # 2.5 MB acknowledged in 5 s (4 Mbit/s) and 5 MB still queued: 10 s more at that rate
    before, after = Snapshot(10.0, 1_000_000, 7_500_000), Snapshot(15.0, 3_500_000, 5_000_000)
    err = timeout_error(5.0, before, after, waiting_for="the REPORT")
    assert "stalled" not in str(err) and err.problem.startswith("timeout: still receiving when MAX_WAIT (5 s)")
    assert "acknowledged 2500000 B in the last 5.0 s (4.00 Mbit/s)" in err.problem
    assert "5000000 B are still queued in this end's socket (about 10.0 s more" in err.problem
    assert "send buffer" in err.fix and "sndbuf" in err.fix and "MAX_WAIT" in err.fix


def _pair(sndbuf: int | None = None):
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    if sndbuf:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


def test_a_reader_whose_peer_says_nothing_reports_a_stall():
    client, server = _pair()
    with client, server:
        client.settimeout(0.2)
        reader = StreamReader(client, Meter())
        reader.mark("RCVD")
        with pytest.raises(TransferError, match="nothing arrived within MAX_WAIT .0.2 s. while waiting for RCVD"):
            reader.read(1)


def test_a_reader_waiting_behind_its_own_queue_says_the_peer_is_receiving():
    """Loopback: the peer reads 64 kB every 20 ms and never answers; the answer this end waits
    for would come after its 8 MB, so the wait times out with the peer busy receiving."""
    client, server = _pair(sndbuf=4 << 20)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    done = threading.Event()

    def slow_reader():
        while not done.is_set():
            try:
                if not server.recv(65536):
                    return
            except OSError:
                return
            time.sleep(0.02)          # pacing the reader (the slow link), not waiting for anyone

    thread = threading.Thread(target=slow_reader, daemon=True)
    with client, server:
        client.setblocking(False)
        queued = 0
        try:
            while queued < 8 << 20:
                queued += client.send(bytes(1 << 20))
        except BlockingIOError:
            pass
        thread.start()
        client.settimeout(0.5)
        assert queued_bytes(client) > 1 << 20 and snapshot(client).acked_bytes is not None
        reader = StreamReader(client, Meter())
        reader.mark("the REPORT")
        with pytest.raises(TransferError) as caught:
            reader.read(1)
        done.set()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    thread.join(2)
    message = str(caught.value)
    assert message.startswith("timeout: still receiving when MAX_WAIT (0.5 s) passed while waiting for the REPORT")
    assert "stalled" not in message and "still queued in this end's socket" in message
