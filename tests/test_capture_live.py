"""dumpcap: argv building and stats parsing without root; a real capture on lo with root."""
from __future__ import annotations

import shutil
import socket

import pytest

from wirelab.capture import LiveCapture, dumpcap_argv
from wirelab.capture.tools.live import parse_dumpcap_stats

#: dumpcap 4.0's stderr at the end of a capture (recorded)
STDERR = ("Capturing on 'Loopback: lo'\nFile: /tmp/x.pcapng\n\rPackets: 5 \rPackets captured: 5\n"
          "Packets received/dropped on interface 'Loopback: lo': 5/0 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0) (100.0%)\n")
TWO = ("Packets received/dropped on interface 'wlcap-b0': 120/3 (pcap:3/dumpcap:0/flushed:0/ps_ifdrop:2) (97.6%)\n"
       "Packets received/dropped on interface 'any': 240/0 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0) (100.0%)\n")


def test_argv_has_every_bound_and_the_namespace_prefix():
    argv = dumpcap_argv("wl-a0", "/tmp/c.pcapng", capture_filter="tcp port 5201", snaplen=128, duration=5,
                        filesize_kb=1000, packets=10, buffer_mb=8, prefix=["ip", "netns", "exec", "wl-a"])
    assert argv[:5] == ["ip", "netns", "exec", "wl-a", "dumpcap"]
    for pair in (["-i", "wl-a0"], ["-f", "tcp port 5201"], ["-s", "128"], ["-a", "duration:5"],
                 ["-a", "filesize:1000"], ["-c", "10"], ["-B", "8"], ["-w", "/tmp/c.pcapng"]):
        i = argv.index(pair[0], argv.index(pair[0]) if pair[0] != "-a" else 0)
        assert pair[1] in argv[i:], pair


def test_argv_for_two_interfaces_repeats_per_interface_options():
    argv = dumpcap_argv(["eth0", "any"], "x.pcapng", capture_filter="udp", snaplen=96)
    assert argv.count("-i") == 2 and argv.count("-f") == 2 and argv.count("-s") == 2


def test_parse_stats():
    (lo,) = parse_dumpcap_stats(STDERR)
    assert (lo.interface, lo.received, lo.dropped) == ("Loopback: lo", 5, 0)
    a, b = parse_dumpcap_stats(TWO)
    assert (a.received, a.dropped, a.kernel_dropped, a.if_dropped) == (120, 3, 3, 2)
    assert b.interface == "any"


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed (apt-get install tshark)")
def test_live_capture_on_loopback_waits_and_counts(tmp_path):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    port = 39000 + (id(tmp_path) % 1000)

    def probe():
        sock.sendto(b"probe", ("127.0.0.1", port))

    with LiveCapture("lo", tmp_path / "lo.pcapng", capture_filter=f"udp port {port}", snaplen=96,
                     probe=probe) as cap:
        assert cap.packets >= 1
        for _ in range(50):
            sock.sendto(b"x" * 200, ("127.0.0.1", port))
    sock.close()
    assert cap.stats and cap.stats[0].received >= 51 and cap.dropped == 0
    df = cap.read()
    assert (df["payload_len"] == 200).sum() == 50
    assert (df["cap_len"] <= 96).all()


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed (apt-get install tshark)")
def test_a_bad_interface_is_a_capture_error(tmp_path):
    from wirelab import CaptureError
    with pytest.raises(CaptureError):
        with LiveCapture("wl-no-such-if0", tmp_path / "x.pcapng", ready_timeout=5):
            pass


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap") or not shutil.which("ip"), reason="needs dumpcap and ip")
def test_live_capture_inside_a_network_namespace(tmp_path):
    """The argv prefix runs dumpcap inside a testbed host; its own lo is captured."""
    import os
    import subprocess
    ns = f"wlcap-t{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        send = ["ip", "netns", "exec", ns, "python3", "-c",
                "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                "[s.sendto(b'n' * 64, ('127.0.0.1', 9777)) for _ in range(5)]"]
        with LiveCapture("lo", tmp_path / "ns.pcapng", capture_filter="udp port 9777",
                         prefix=["ip", "netns", "exec", ns],
                         probe=lambda: subprocess.run(send, check=True, timeout=10)) as cap:
            assert cap.packets >= 5
        df = cap.read()
        assert len(df) >= 5 and (df["payload_len"] == 64).all()
        assert cap.stats and cap.stats[0].dropped == 0
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed (apt-get install tshark)")
def test_wirelab_udp_records_captured_live_count_no_loss_on_loopback(tmp_path):
    """wirelab's own UDP measurement records (type 0x82 · u64 seq) read back from a live capture."""
    from wirelab.capture import read_capture, udp_loss
    from wirelab.transfer.run import run_pair
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    path = tmp_path / "records.pcapng"
    with LiveCapture("lo", path, capture_filter="udp and host 127.0.0.78", snaplen=96,
                     probe=lambda: sock.sendto(b"probe", ("127.0.0.78", 9))):
        run_pair("udp", mode="load", rate_bps=2e6, packet=500, count=200, host="127.0.0.78")
    sock.close()
    loss = udp_loss(read_capture(path), path, format="wirelab")
    assert len(loss) >= 1, "the records were captured and recognised"
    row = loss.sort_values("received").iloc[-1]
    assert row["received"] >= 100 and row["duplicates"] == 0
    assert row["lost"] <= 0.05 * row["expected"]        # loopback at 2 Mbit/s: (almost) nothing lost


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap") or not shutil.which("runuser"), reason="needs dumpcap and runuser")
def test_no_permission_to_capture_says_so(tmp_path):
    """dumpcap run as an unprivileged user prints "Capturing on" and then fails: NeedsRootError."""
    from wirelab import NeedsRootError
    tmp_path.chmod(0o777)
    with pytest.raises(NeedsRootError):
        with LiveCapture("lo", tmp_path / "x.pcapng", prefix=["runuser", "-u", "nobody", "--"], ready_timeout=10):
            pass


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed (apt-get install tshark)")
def test_a_probe_that_never_matches_times_out_and_stops_dumpcap(tmp_path):
    from wirelab import CaptureError
    cap = LiveCapture("lo", tmp_path / "x.pcapng", capture_filter="udp port 9", ready_timeout=1.5,
                      probe=lambda: None)
    with pytest.raises(CaptureError, match="probe"):
        cap.start()
    assert not cap.running
