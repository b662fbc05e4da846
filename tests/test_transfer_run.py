"""run_pair, the Result record and the measurement modes on loopback."""
import json

import pytest

from wirelab.errors import TransferError, UsageError
from wirelab.transfer import Result, merge, run_pair
from wirelab.transfer.pacing import Pacer, TickPacer, pacer
from wirelab.transfer.result import summarize


@pytest.mark.parametrize("proto", ["tcp", "udpr"])
def test_run_pair_file_transfer_is_byte_exact_and_counts_add_up(proto):
    r = run_pair(proto, data=200_000, chunk=1000, max_wait=2.0)
    assert r.ok and r.metadata["byte_exact"]
    assert r.bytes_offered == r.bytes_delivered == 200_000
    assert r.packets_sent == 200 + r.retransmissions and r.lost == 0
    assert r.receiver_start_time_s <= r.receiver_end_time_s
    assert r.sender_start_time_s <= r.receiver_start_time_s <= r.sender_end_time_s
    assert r.goodput_bps > 0 and r.sender_goodput_bps > 0
    assert r.delay_method == "same host clock" and len(r.one_way_delays_s) == 200
    assert all(d > -1e-3 for d in r.one_way_delays_s)
    assert r.sender_cpu_s >= 0 and r.receiver_cpu_s >= 0 and r.sender_syscalls >= 200
    assert r.sndbuf_granted_bytes > 0 and r.rcvbuf_granted_bytes > 0 and r.max_wait_s == 2.0
    if proto == "tcp":
        assert r.congestion_control
    else:
        assert len(r.rtts_s) >= 1 and r.max_retransmits == 5


def test_run_pair_udp_with_a_large_receive_buffer_delivers():
    r = run_pair("udp", data=100_000, rcvbuf=4 << 20, max_wait=2.0)
    assert r.ok and r.metadata["byte_exact"] and r.rcvbuf_requested_bytes == 4 << 20
    assert r.rcvbuf_granted_bytes >= 4 << 20            # Linux grants twice the request, up to rmem_max


def test_run_pair_accepts_bytes_and_rejects_bad_input():
    r = run_pair("tcp", data=b"hello world", chunk=3, max_wait=2.0)
    assert r.ok and r.packets_sent == 4 and r.metadata["byte_exact"]
    with pytest.raises(UsageError):
        run_pair("sctp", data=10)
    with pytest.raises(UsageError):
        run_pair("udpr", mode="bulk")


def test_result_to_dict_is_json_with_si_units_and_derived_figures():
    r = run_pair("udpr", data=5000, max_wait=2.0)
    d = json.loads(r.to_json())
    for key in ("goodput_bps", "sender_goodput_bps", "receiver_duration_s", "bytes_delivered",
                "one_way_delay", "rtt", "metadata", "max_wait_s", "rcvbuf_granted_bytes"):
        assert key in d
    assert "send_times_s" not in r.to_dict(samples=False)
    assert Result.from_dict(d).bytes_delivered == r.bytes_delivered
    assert "receiver:" in r.summary() and "sender's view" in r.summary()


def test_merge_keeps_each_ends_own_fields():
    s = Result("udpr", ok=True, bytes_offered=10, send_times_s=[1.0, 2.0], metadata={"a": 1})
    rcv = Result("udpr", ok=True, bytes_delivered=10, receive_times_s=[1.5, 2.25], metadata={"b": 2})
    m = merge(s, rcv, same_clock=True)
    assert m.ok and m.bytes_offered == 10 and m.bytes_delivered == 10
    assert m.one_way_delays_s == [0.5, 0.25] and m.metadata == {"a": 1, "b": 2}
    assert merge(s, Result("udpr", receiver_error="x")).ok is False


def test_summarize():
    assert summarize([]) is None
    s = summarize([3.0, 1.0, 2.0])
    assert s["count"] == 3 and s["min_s"] == 1.0 and s["median_s"] == 2.0 and s["max_s"] == 3.0


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_offered_load_is_paced_and_carries_seq_and_timestamps(proto):
    r = run_pair(proto, mode="load", rate_bps=8e6, packet=1000, time_s=0.5, max_wait=2.0, rcvbuf=1 << 20)
    assert r.ok, (r.error, r.receiver_error)
    assert 0.4 * 500 <= r.packets_sent <= 1.1 * 500           # 1000 packets/s for 0.5 s (never more)
    assert r.packets_received == r.packets_sent - (r.lost or 0)
    assert 0.4 * 8e6 < r.goodput_bps < 1.5 * 8e6
    assert len(r.one_way_delays_s) == r.packets_received and r.delay_method == "same host clock"
    assert r.bytes_offered == 500_000
    # the client's start and end bracket the whole exchange (HELLO before, REPORT after: completion_s)
    assert r.sender_start_time_s < min(r.receiver_start_time_s, r.first_data_time_s)
    assert max(r.last_data_time_s, r.receiver_end_time_s) < r.sender_end_time_s


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_bulk_and_echo(proto):
    bulk = run_pair(proto, mode="bulk", packet=8000, time_s=0.3, max_wait=2.0, rcvbuf=1 << 20)
    assert bulk.ok and bulk.packets_sent > 0 and bulk.bytes_delivered > 0
    assert bulk.bytes_delivered <= bulk.bytes_sent
    echo = run_pair(proto, mode="echo", count=20, packet=64, max_wait=2.0)
    assert echo.ok and len(echo.rtts_s) == 20 and all(0 <= x < 1 for x in echo.rtts_s)


def test_udp_bulk_with_a_tiny_receive_buffer_loses_and_says_so():
    r = run_pair("udp", mode="bulk", packet=1400, time_s=0.3, rcvbuf=2048, max_wait=2.0)
    assert r.ok and r.lost > 0 and r.packets_received + r.lost == r.packets_sent


def test_pacer_spacing_and_late_accounting():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s
    def clock():                    # a fake clock that ticks 0.1 ms per reading
        now[0] += 1e-4
        return now[0]
    p = Pacer(8000, 1000, clock=clock, sleep=sleep)   # 1 packet/s
    first = p.wait()
    due = p.wait()                  # the next one is due 1 s later
    assert due == pytest.approx(first + 1.0) and now[0] >= due and slept
    now[0] = 100.0                  # far behind: no unbounded burst
    assert p.wait() >= 100.0 - p.max_burst * p.interval_s and p.late == 1
    with pytest.raises(UsageError):
        Pacer(0, 1000)


def test_deadline_raises_transfer_error():
    with pytest.raises(TransferError, match="deadline"):
        run_pair("tcp", mode="load", rate_bps=8000, packet=1000, time_s=5, deadline=0.3, max_wait=0.5)


def test_clock_offset_estimate_is_named_and_near_zero_on_one_host():
    from wirelab.transfer import measure, start_server
    port, stop, thread, _ = start_server("udp", max_wait=2.0)
    try:
        r = measure("udp", "127.0.0.1", port, mode="load", rate_bps=4e6, packet=500, time_s=0.2,
                    same_clock=False, offset_rounds=8)
    finally:
        stop.set()
        thread.join(3)
    assert r.ok, (r.error, r.receiver_error)
    assert r.delay_method.startswith("ntp-style") and len(r.rtts_s) >= 1 and r.one_way_delays_s
    # the echo rounds that estimate the offset are not data packets
    assert r.packets_sent == r.packets_received + r.lost and r.bytes_sent == r.packets_sent * 500
    # one clock really: the estimate is within the (loaded, shared machine's) round-trip noise
    assert abs(r.clock_offset_s) < max(0.05, max(r.rtts_s)), (r.clock_offset_s, r.rtts_s)


def test_udp_gso_fast_path_delivers_records():
    try:
        r = run_pair("udp", mode="bulk", packet=1472, time_s=0.2, rcvbuf=4 << 20, max_wait=2.0)
        from wirelab.transfer import measure, start_server
        port, stop, thread, _ = start_server("udp", max_wait=2.0, rcvbuf=4 << 20)
        try:
            fast = measure("udp", "127.0.0.1", port, mode="bulk", packet=1472, time_s=0.2, gso=True)
        finally:
            stop.set()
            thread.join(3)
    except OSError as err:                                    # kernel without UDP_SEGMENT
        pytest.skip(f"no UDP GSO here: {err}")
    assert r.ok and fast.ok and fast.packets_received > 0
    assert fast.packets_received + fast.lost == fast.packets_sent and fast.duplicates == 0


def test_a_server_keeps_nothing_per_client():
    """Hundreds of failing clients: the server's memory does not grow with them."""
    import socket
    import threading
    import tracemalloc

    import ppcb_raw as raw
    from wirelab.transfer import listen_tcp, serve_tcp
    sock = listen_tcp()
    stop = threading.Event()
    thread = threading.Thread(target=serve_tcp, args=(sock,), kwargs={"max_wait": 1.0, "stop": stop},
                              daemon=True)
    thread.start()
    port = sock.getsockname()[1]

    def bad_clients(n):
        for _ in range(n):
            with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
                c.sendall(raw.conn(proto=1, total=2 ** 63) + raw.data(5, b"x" * 100))
                while c.recv(100):
                    pass
    try:
        bad_clients(50)                         # warm up caches
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        bad_clients(300)
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    finally:
        stop.set()
        thread.join(3)
        sock.close()
    assert grown < 200_000, f"server grew by {grown} B over 300 clients"


def test_public_api_and_module_programs():
    import subprocess
    import sys

    import wirelab.transfer as transfer
    for name in transfer.__all__:
        assert getattr(transfer, name) is not None
    out = subprocess.run([sys.executable, "-m", "wirelab.transfer.ppcb"], capture_output=True, timeout=30)
    assert out.returncode == 0 and b"CONN" in out.stdout and not out.stderr


def test_congestion_control_is_chosen_per_socket_and_recorded():
    from pathlib import Path
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    choice = "cubic" if "cubic" in available else available[0]
    r = run_pair("tcp", data=10_000, congestion=choice, max_wait=2.0)
    assert r.ok and r.congestion_control == choice
    with pytest.raises(UsageError, match="congestion control"):
        run_pair("tcp", data=10, congestion="no-such-cc", max_wait=1.0)


def test_a_stop_flag_wakes_a_select_the_moment_it_is_set():
    import select

    from wirelab.transfer.sockets import Stop

    stop = Stop()
    assert not select.select([stop], [], [], 0)[0], "nothing to wake for yet"
    stop.set()
    assert stop.is_set() and select.select([stop], [], [], 0)[0]
    stop.close()
    stop.set()                      # after the server closed it: harmless
    assert stop.is_set()


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_a_server_selects_on_its_stop_flag_and_ends_when_it_is_set(proto):
    from wirelab.transfer import start_server
    from wirelab.transfer.sockets import Stop, waiting_on

    port, stop, thread, _ = start_server(proto)
    assert isinstance(stop, Stop) and stop in waiting_on(object(), stop)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_tick_pacer_sends_each_seconds_packets_at_once_and_cuts_a_tick_at_one_second():
    now = [0.0]

    def sleep(s):
        now[0] += s

    def clock():                   # a fake clock that ticks 0.1 ms per reading
        now[0] += 1e-4
        return now[0]
    p = TickPacer(8 * 3000, 1000, clock=clock, sleep=sleep)     # 3 packets a tick
    assert p.per_tick == 3 and p.slots(2.0) == 6 and p.interval_s == pytest.approx(1 / 3)
    start = p.wait()
    assert [p.wait() for _ in range(2)] == [start, start] and now[0] < start + 0.01    # back to back
    assert p.wait() == pytest.approx(start + 1.0) and now[0] >= start + 1.0          # the next tick
    p.wait()
    now[0] = start + 2.5           # the tick's sending took over a second: its last packet is never sent
    assert p.wait() == pytest.approx(start + 2.0) and p.skipped == 1 and p.late == 1  # late: runs at once
    assert pacer("tick", 8e6, 1400).per_tick == 715 and isinstance(pacer("even", 8e6, 1400), Pacer)
    with pytest.raises(UsageError, match="pacing"):
        pacer("burst", 8e6, 1400)


def test_a_tick_paced_udp_run_sends_in_bursts_and_reports_its_pacing():
    from wirelab.transfer import measure, start_server
    port, stop, thread, _ = start_server("udp", host="127.0.0.1", max_wait=2.0)
    try:
        r = measure("udp", "127.0.0.1", port, mode="load", rate_bps=8 * 140_000, packet=1400, time_s=1.0,
                    pacing="tick", rcvbuf=4 << 20)
    finally:
        stop.set()
        thread.join(3)
    assert r.ok and r.metadata["pacing"] == "tick" and r.metadata["skipped_packets"] == 0
    assert r.packets_sent == 100 and r.bytes_offered == 140_000
    assert r.last_data_time_s - r.first_data_time_s < 0.5, "one tick's packets leave at once, not over the second"
    with pytest.raises(UsageError, match="pacing"):
        measure("udp", "127.0.0.1", port, mode="bulk", pacing="tick")


def test_a_tcp_reader_reads_at_most_its_length_per_recv():
    from wirelab.transfer import measure, start_server
    port, stop, thread, _ = start_server("tcp", host="127.0.0.1", max_wait=2.0)
    try:
        whole = measure("tcp", "127.0.0.1", port, mode="bulk", time_s=0.2, packet=65536)
        short = measure("tcp", "127.0.0.1", port, mode="bulk", time_s=0.2, packet=65536, read_bytes=1024)
    finally:
        stop.set()
        thread.join(3)
    assert whole.ok and short.ok and 0 < short.bytes_delivered <= short.bytes_offered
    assert short.interval_s == 0.2        # a timed run: the receiver counts its 0.2 s, as iperf3
    # each recv of the short reader takes at most 1 KiB: at least one call per KiB delivered, but
    # for what came in with the HELLO (read before its length is known, up to one 256 KiB recv)
    assert short.receiver_syscalls >= (short.bytes_delivered - 262144) / 1024
    assert whole.receiver_syscalls < whole.bytes_delivered / 8192
    with pytest.raises(UsageError, match="reader"):
        measure("udp", "127.0.0.1", port, mode="bulk", read_bytes=1024)
