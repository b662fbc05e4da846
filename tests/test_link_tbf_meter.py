"""tbf is a meter, not a wire (tc-tbf(8)): the kit keeps its bucket to one frame and 1 ms of the
rate (``LinkSpec.burst_for``), so no run gets more than η·C but for that one bucket, and predicts
UDPR there as tbf meters it (``model.stopwait.cycle_time``). On the namespaces backend: the
qdisc holds what the spec asks for, read back from the kernel; TCP, UDP and UDPR at 1000 B and
64000 B (UDPR's datagrams fragment: η is of the fragments) stay under η·C + the bucket; UDPR
is within ±5 % of its prediction. About 10 s."""
import json
import socket
import subprocess

import pytest

from wirelab.experiment import Experiment, run
from wirelab.link import LinkSpec, meter_bytes
from polling import wait_until

pytestmark = pytest.mark.root


def _tbf(link, host: str) -> dict:
    done = subprocess.run(["tc", "-n", link.testbed.namespaces[host], "-j", "-s", "qdisc", "show"],
                          capture_output=True, text=True, check=True, timeout=10)
    (tbf,) = [q for q in json.loads(done.stdout) if q["kind"] == "tbf"]
    return tbf


def _counted(link, host: str, packets: int) -> dict | None:
    """tbf's counters once it has sent ``packets``, else None."""
    tbf = _tbf(link, host)
    return tbf if tbf["packets"] >= packets else None


def test_the_qdisc_holds_one_frame_and_half_a_millisecond_of_the_rate(testbed):
    spec = LinkSpec.parse(rate="10mbit", rate_reverse="4mbit")
    link = testbed(spec, backend="namespaces")
    for host, direction in (("a", spec.forward), ("b", spec.reverse)):
        options = _tbf(link, host)["options"]
        bucket = spec.burst_for(direction)
        assert bucket == spec.frame_bytes + int(direction.rate_bps * 1e-3 / 8)
        assert options["rate"] * 8 == direction.rate_bps
        assert abs(options["burst"] - bucket) <= 1, options      # tc keeps the bucket as time: ±1 B
    assert f"burst {spec.burst_for(spec.forward)}b" in " ".join(link.describe()["tc_commands"])
    assert meter_bytes("namespaces", spec) == spec.burst_for(spec.forward)
    # the meter at work (tc -s): 30 datagrams handed over at once, 43 kB against a 2.8 kB bucket,
    # all sent, none dropped, most held until the bucket had their length (tbf's overlimits)
    with link.inside("a"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _ in range(30):
                sock.sendto(b"x" * 1400, (link.address("b"), 9))
    counters = wait_until(lambda: _counted(link, "a", 30), 5, "30 datagrams through tbf")
    assert counters["drops"] == 0 and counters["overlimits"] >= 20, counters


def test_no_run_gets_more_than_the_link_but_for_one_bucket_and_udpr_is_predicted_as_tbf_meters(tmp_path):
    exp = Experiment("meter", proto=["tcp", "udp", "udpr"], packet=[1000, 64000], size="600KB", rate="10mbit",
                     reps=1, backend="namespaces", max_wait="1s", timeout=30)
    df = run(exp, out=tmp_path / "meter", progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    spec = exp.settings()[0].link
    bucket = spec.burst_for(spec.forward)
    over = df["goodput_bps"] / df["pred_limit_link_bps"]
    # the bucket, full at the start, is all a run may get beyond η·C: 2764 B of a 600 kB file, 0.5 %
    assert (df["goodput_bps"] <= df["pred_limit_link_bps"] + 8 * bucket / df["transfer_s"]).all(), over.tolist()
    assert (over < 1.006).all(), over.tolist()
    udpr = df[df["proto"] == "udpr"]
    assert (udpr["pred_meter_bytes"] == bucket).all() and udpr["pred_note"].str.contains("tbf meters").all()
    ratio = udpr["goodput_bps"] / udpr["pred_goodput_bps"]
    assert ratio.between(0.95, 1.05).all(), list(zip(udpr["packet_bytes"], ratio))


@pytest.mark.slow
def test_udpr_across_two_hosts_of_a_room_is_predicted_as_tbf_meters_it(tmp_path):
    """The hosts backend shapes each sender's interface with tbf too (``link.hostshaping``): the
    same meter, the same prediction. The room (two namespaces on a switch, a Dask worker each)
    takes most of the time."""
    from wirelab.link.room import Room
    with Room(["a1", "b1"], name="tmeter") as room:
        exp = Experiment("hosts", proto="udpr", packet=1000, size="600KB", rate="10mbit", reps=1,
                         hosts={"a": "a1", "b": "b1"}, cluster=room.address, max_wait="1s", timeout=30)
        df = run(exp, out=tmp_path / "hosts", progress=False)
    row = df.iloc[0]
    assert row["status"] == "ok" and row["backend"] == "hosts", row["error"]
    spec = exp.settings()[0].link
    assert row["pred_meter_bytes"] == spec.burst_for(spec.forward)
    assert row["goodput_bps"] <= row["pred_limit_link_bps"] + 8 * row["pred_meter_bytes"] / row["transfer_s"]
    assert 0.95 <= row["goodput_bps"] / row["pred_goodput_bps"] <= 1.05, (row["goodput_bps"], row["pred_goodput_bps"])
