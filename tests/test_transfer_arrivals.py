"""A receiver kept off the CPU does not stretch what it measures: UDP datagrams carry the kernel's
arrival time, and what a UDP socket's full buffer dropped is counted as the host's."""
import select
import socket
import time

import pytest

from wirelab.transfer.arrivals import DatagramReceiver as _arrivals


@pytest.fixture(scope="module", autouse=True)
def stamping_on():
    """The kernel turns stamping on a moment after a socket first asks (net_enable_timestamp defers
    it to a work item): keep one socket asking, and wait until a datagram comes stamped at arrival."""
    keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    keeper.bind(("127.0.0.1", 0))
    receive = _arrivals(keeper, bytearray(64))
    keeper.settimeout(1.0)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        keeper.sendto(b"probe", keeper.getsockname())
        before_read = time.time_ns()
        _, _, arrived = receive()
        if arrived < before_read:
            break
    yield
    keeper.close()


@pytest.fixture
def pair():
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(receiver.getsockname())
    yield sender, receiver
    sender.close()
    receiver.close()


def test_a_datagram_read_late_keeps_its_arrival_time(pair):
    sender, receiver = pair
    receive = _arrivals(receiver, bytearray(2048))
    sent_ns = time.time_ns()
    sender.send(b"x" * 100)
    assert select.select([receiver], [], [], 1.0)[0], "the datagram never arrived"
    # the receiver busy elsewhere for 50 ms before it reads (the stall under test)
    busy_until = time.monotonic() + 0.05
    while time.monotonic() < busy_until:
        sum(range(1000))
    receiver.settimeout(1.0)
    n, _, arrived_ns = receive()
    read_ns = time.time_ns()
    assert n == 100
    assert arrived_ns - sent_ns < 0.02e9 <= read_ns - arrived_ns


def test_the_datagrams_a_full_socket_dropped_are_counted(pair):
    sender, receiver = pair
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    receive = _arrivals(receiver, bytearray(2048))
    for _ in range(200):
        sender.send(b"y" * 1000)
    receiver.settimeout(0.2)
    read = 0
    while True:
        try:
            receive()
        except socket.timeout:
            break
        read += 1
    assert 0 < read < 200
    assert receive.drops == 200 - read


def test_the_drop_count_is_this_session_s_not_the_socket_s_life(pair):
    sender, receiver = pair
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    for _ in range(100):                      # an earlier session's drops
        sender.send(b"z" * 1000)
    receiver.settimeout(0.2)
    try:
        while True:
            receiver.recv(2048)
    except socket.timeout:
        pass
    receive = _arrivals(receiver, bytearray(2048))
    for _ in range(3):
        sender.send(b"w" * 1000)
    for _ in range(3):
        receive()
    assert receive.drops == 0
