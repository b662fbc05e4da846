"""A real wire (document 002): each frame charged 38 B beyond the IP packet, on every backend.

The kernel really holds the size table (read back through ``tc -j -s -d``, polled with
a deadline), and a 10 Mbit/s link then carries TCP at 9.41 and UDP at 9.57 Mbit/s of
goodput, the document's figures and the model's. The ratios are printed by
``bench/bench_realwire.py``; here, 1 %: the difference between a real and an emulated
wire is 1.6 %, so 1 % tells them apart, and the issue asks for it.
"""
import json

import pytest

from wirelab.experiment import Experiment, run
from wirelab.link import LinkSpec
from wirelab.link.buffer_caps import raised_caps
from wirelab.link.netns import run as run_argv
from polling import wait_until

TCP_002, UDP_002 = 9.41e6, 9.57e6      # document 002, receiver's goodput at 10 Mbit/s
REAL = LinkSpec.parse(rate="10mbit", wire="real")


def _tbf(ns: str, dev: str, *, timeout: float = 2.0) -> dict:
    """The tbf on ``dev`` as ``tc -j -s -d qdisc show`` reports it, polled until it shows."""
    def shown():
        qdiscs = json.loads(run_argv(["tc", "-n", ns, "-j", "-s", "-d", "qdisc", "show", "dev", dev]).stdout)
        return [q for q in qdiscs if q["kind"] == "tbf"]
    return wait_until(shown, timeout, f"a tbf on {dev} in {ns}", every=0.02)[0]


def _gso_max_segs(ns: str, dev: str) -> int:
    return json.loads(run_argv(["ip", "-n", ns, "-j", "-d", "link", "show", "dev", dev]).stdout)[0]["gso_max_segs"]


@pytest.mark.root
def test_the_kernel_holds_the_size_table_the_mpu_and_one_segment_a_packet(testbed):
    link = testbed(REAL, backend="namespaces")
    for host, dev in (("a", "to-b"), ("b", "to-a")):
        ns = link.testbed.namespace(host)
        tbf = _tbf(ns, dev)
        assert tbf["stab"]["overhead"] == 24 and tbf["stab"]["linklayer"] == "ethernet"
        assert tbf["options"]["mpu"] == 84 and tbf["options"]["rate"] == 10e6 / 8
        assert _gso_max_segs(ns, dev) == 1


@pytest.mark.root
def test_a_kept_link_takes_a_real_wire_in_place_and_gives_it_back(testbed):
    link = testbed(LinkSpec.parse(rate="10mbit"), backend="namespaces")
    ns = link.testbed.namespace("a")
    assert "stab" not in _tbf(ns, "to-b") and _gso_max_segs(ns, "to-b") == 65535
    assert link.renew(seed=1, spec=REAL) is not None
    assert _tbf(ns, "to-b")["stab"]["overhead"] == 24 and _gso_max_segs(ns, "to-b") == 1
    assert link.renew(seed=2, spec=LinkSpec.parse(rate="20mbit")) is not None
    assert "stab" not in _tbf(ns, "to-b") and _gso_max_segs(ns, "to-b") == 65535


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["namespaces", "userspace"])
def test_tcp_and_udp_measure_document_002s_figures_on_a_real_wire(backend, tmp_path):
    # a queue of 1000 frames, a Linux NIC's txqueuelen, as behind document 002's sender: it holds
    # the UDP sender's whole socket buffer, so the kernel holds the sender back and nothing is lost
    # (the default 100 ms, 125 kB, is less than the ~95 datagrams a 212 kB send buffer lets out:
    # the sender then outruns the queue and 99 % is dropped at it, the goodput still the link's).
    # A receive buffer of 2 MB (1.6 s of this link), as a receiver on its own machine: on two cores
    # the userspace link's sender (~150k datagrams a second) and the link itself can keep the
    # receiver off the CPU for ~0.1 s, and a 212 kB buffer then drops ~30 datagrams at the socket
    # (seen: 9.36-9.51 Mbit/s, the link having carried 9.57); that is the host's loss, not the wire's
    exp = Experiment("real", proto=["tcp", "udp"], workload="time", time="4s", rate="10mbit", wire="real",
                     queue=1000, reps=1, backend=backend, rcvbuf="2MB")
    with raised_caps(2_000_000):        # the kernel's rmem_max, should a machine's be lower
        df = run(exp, out=tmp_path / "real", progress=False).set_index("proto")
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert (df["backend"] == backend).all() and (df["wire"] == "real").all()
    if backend == "namespaces":     # the userspace link's cable never holds a sender back: it drops
        assert df.loc["udp", "delivered_fraction"] > 0.999, "document 002: no loss at S = 1472 B"
    assert (df["rcvbuf_granted_bytes"] >= 2e6).all(), "the kernel's rmem_max held the buffer back"
    for proto, published in (("tcp", TCP_002), ("udp", UDP_002)):
        measured, predicted = df.loc[proto, "goodput_bps"], df.loc[proto, "pred_goodput_bps"]
        # the userspace link's event loop, when it runs late, stretches the receiver's time by up to
        # its worst lateness (which it records): that share is the emulator's, not the wire's
        late = df.loc[proto].get("link_counters_a->b_late_s_max", 0.0) if backend == "userspace" else 0.0
        within = 0.01 + (late or 0.0) / df.loc[proto, "transfer_s"]
        assert predicted == pytest.approx(published, abs=0.005e6), "the model is the document's"
        assert measured == pytest.approx(published, rel=within), f"{proto}: {measured / 1e6:.3f} Mbit/s, late {late}"
        assert measured == pytest.approx(predicted, rel=within)


@pytest.mark.slow
def test_udp_through_the_loopback_relay_measures_9_57(tmp_path):
    exp = Experiment("real-lo", proto="udp", size="2MB", rate="10mbit", wire="real", reps=1, backend="loopback")
    row = run(exp, out=tmp_path / "lo", progress=False).iloc[0]
    assert row["status"] == "ok" and row["wire"] == "real", row["error"]
    assert row["goodput_bps"] == pytest.approx(UDP_002, rel=0.01)
    assert row["goodput_bps"] == pytest.approx(row["pred_goodput_bps"], rel=0.01)


@pytest.mark.root
@pytest.mark.slow
def test_the_fttc_line_both_ways_carries_what_the_model_says(tmp_path):
    """Document 002's FTTC line: 21 Mbit/s up, 54 down, PPPoE (MTU 1492, 8 B a frame) on a real wire.
    The document measured 19.34 / 50.98 (TCP) and 20.2 / 51.29 (UDP) over the Internet; the line's
    own rate varied by ±1 Mbit/s, so the published numbers are set beside, not asserted."""
    for name, rate, back in (("up", "21mbit", "54mbit"), ("down", "54mbit", "21mbit")):
        exp = Experiment(f"fttc-{name}", proto=["tcp", "udp"], workload="time", time="3s", rate=rate,
                         rate_reverse=back, wire="real", pppoe=True, reps=1, backend="namespaces")
        df = run(exp, out=tmp_path / name, progress=False)
        assert (df["status"] == "ok").all(), df["error"].tolist()
        assert (df["mtu"] == 1492).all() and df["tc_commands"].str.contains("stab overhead 32").all()
        ratio = (df["goodput_bps"] / df["pred_goodput_bps"]).tolist()
        assert all(r == pytest.approx(1, abs=0.01) for r in ratio), (name, ratio)
