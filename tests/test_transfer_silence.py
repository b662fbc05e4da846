"""A wait that times out says what happened: a peer that stalled, or one still receiving what this
end queued before its question (issue 32: a timed run blamed a peer that was receiving)."""
import socket
import struct
import threading
import time

import pytest

from wirelab.errors import TransferError
from wirelab.transfer.silence import Snapshot, await_answer, queued_bytes, snapshot, timeout_error
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


class SlowPeer:
    """A peer that reads 64 kB every 20 ms (the slow link) and, once it has read ``answer_after``
    bytes, answers one byte: what this end waits for sits behind everything it queued."""

    def __init__(self, server: socket.socket, answer_after: int | None = None):
        self.server, self.answer_after, self.done = server, answer_after, threading.Event()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        self.thread = threading.Thread(target=self._read, daemon=True)

    def _read(self):
        got = 0
        while not self.done.is_set():
            try:
                chunk = self.server.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            got += len(chunk)
            if self.answer_after is not None and got >= self.answer_after:
                self.server.sendall(b"!")
                return
            time.sleep(0.02)          # pacing the reader (the slow link), not waiting for anyone


def _fill(client: socket.socket, most: int) -> int:
    """Queue up to ``most`` bytes without blocking; the bytes queued."""
    client.setblocking(False)
    queued = 0
    try:
        while queued < most:
            queued += client.send(bytes(min(1 << 20, most - queued)))
    except BlockingIOError:
        pass
    return queued


def test_a_reader_waiting_behind_its_own_queue_says_the_peer_is_receiving():
    """Loopback: the peer reads slowly and never answers; the answer this end waits for would
    come after its megabytes, so the wait times out with the peer busy receiving."""
    client, server = _pair(sndbuf=4 << 20)
    peer = SlowPeer(server)
    with client, server:
        _fill(client, 8 << 20)
        peer.thread.start()
        client.settimeout(0.5)
        assert queued_bytes(client) > 1 << 20 and snapshot(client).acked_bytes is not None
        reader = StreamReader(client, Meter())
        reader.mark("the REPORT")
        with pytest.raises(TransferError) as caught:
            reader.read(1)
        peer.done.set()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.thread.join(2)
    message = str(caught.value)
    assert message.startswith("timeout: still receiving when MAX_WAIT (0.5 s) passed while waiting for the REPORT")
    assert "stalled" not in message and "still queued in this end's socket" in message


def test_a_wait_behind_a_draining_queue_goes_on_and_a_silent_peer_ends_it():
    client, server = _pair(sndbuf=1 << 20)
    with client, server:
        queued = _fill(client, 1 << 20)
        peer = SlowPeer(server, answer_after=queued)
        peer.thread.start()
        waited = await_answer(client, 0.2, "the REPORT")      # the drain outlasts MAX_WAIT: still waits
        assert client.recv(1) == b"!" and waited > 0.2
        peer.thread.join(2)
        with pytest.raises(TransferError, match="nothing arrived within MAX_WAIT .0.2 s. while waiting for RCVD"):
            await_answer(client, 0.2, "RCVD")                  # the peer now says nothing
