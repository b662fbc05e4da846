"""Labs across hosts with real parts on one machine: each host a network namespace on one switch
running a real ``dask worker`` (``link.room``), the scheduler on the switch. A sweep across two
hosts gives the rows of the same sweep run here; two pairs run side by side and a worker killed
mid-run costs only its run, which resume makes; tc put on a host is gone after the run, after a
lost worker and after a Ctrl-C; a host that is not root runs unshaped and says so; a missing PC
is named; ``wirelab grade --cluster`` grades the example class as expected.

One room for the module (4-15 s to start); 68-85 s in all measured on two cores at a load average of 2-8
(the grading 28 s of it), 215 s with other gradings running on the machine (load near 20)."""
import json
import signal
import subprocess
import sys
import time

import pytest

from wirelab.errors import UsageError
from wirelab.experiment import Experiment, load, run
from wirelab.experiment.events import read_events
from wirelab.experiment.status import LOST
from wirelab.grade import find_submissions, load_catalogue
from wirelab.link.netns import namespace_pids
from wirelab.link.room import Room
from polling import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow]

#: A quick slice of the catalogue with a failing test for the broken submissions it touches.
GRADE_SLICE = ["build-*", "server-udpr-out-of-order"]


@pytest.fixture(scope="module")
def room():
    with Room(["a1", "b1", "a2", "b2", "n1"], name="tcluster", non_root=["n1"]) as made:
        yield made


def _cli(*argv, timeout=180):
    return subprocess.run([sys.executable, "-m", "wirelab", *argv], capture_output=True, text=True, timeout=timeout)


def _unshaped(room, host: str) -> bool:
    return [q["kind"] for q in room.qdisc(host)] == ["noqueue"]       # a veth's own: nothing of ours left


def _program_on(room, host: str, mark: str = "wirelab.transfer.client") -> bool:
    for pid in namespace_pids(room.namespace(host)):
        try:
            if mark in open(f"/proc/{pid}/cmdline").read().replace("\0", " "):
                return True
        except OSError:
            pass
    return False


def test_a_sweep_across_two_hosts_gives_the_rows_of_the_same_sweep_run_here(room, tmp_path):
    # the README's recipe: wirelab run --hosts a=..,b=.. --cluster ADDRESS; CUBIC on both sides, as BBR's
    # start-up (2.89x the rate) overflows tbf's queue by hundreds of segments, a path-independent spread of ±30 %
    done = _cli("run", "--proto", "tcp,udp", "--size", "300KB", "--rate", "4mbit", "--reps", "1", "--cc", "cubic",
                "--hosts", "a=a1,b=b1", "--cluster", room.address, "--out", str(tmp_path / "across"), "--no-progress",
                "--capture")
    assert done.returncode == 0, done.stderr[-2000:]
    across = load(tmp_path / "across")
    here = run(Experiment("here", proto=["tcp", "udp"], size="300KB", rate="4mbit", reps=1, cc="cubic",
                          backend="namespaces"), out=tmp_path / "here", progress=False)
    assert set(across["backend"]) == {"hosts"} and set(here["backend"]) == {"namespaces"}
    assert (across["status"] == "ok").all() and (here["status"] == "ok").all()
    assert set(across["link_host_a"]) == {"a1"} and set(across["link_host_b"]) == {"b1"}     # client on a1,
    assert set(across["link_address_b"]) == {room.ip("b1")}                                 # server on b1
    assert across["link_shaped"].all()
    # the same columns, but for what only a testbed in namespaces has to say about itself
    missing = {c for c in set(here.columns) - set(across.columns) if not c.startswith("link_")}
    assert not missing, missing
    key = ["proto", "rate_bps"]
    both = across.merge(here, on=key, suffixes=("", "_here"))
    for _, row in both.iterrows():
        proto, rate = row["proto"], row["rate_bps"]
        assert row["pred_goodput_bps"] == pytest.approx(row["pred_goodput_bps_here"])     # one model, one link
        assert 0.85 < row["goodput_bps"] / row["pred_goodput_bps"] < 1.10, (proto, rate)
        assert row["goodput_bps"] == pytest.approx(row["goodput_bps_here"], rel=0.10), (proto, rate)
        # two clocks, one fit per run: the namespaces share one clock, so θ is 0 within the rounds' noise
        assert row["link_clock_rounds"] == 32 and abs(row["link_clock_offset_s"]) < 5e-4
        assert abs(row["link_clock_drift_ppm"]) < 300 and 0 < row["link_path_rtt_s"] < 0.01
    pair, = json.loads((tmp_path / "across" / "meta.json").read_text())["sessions"][-1]["hosts"]["pairs"]
    for side, name in (("a", "a1"), ("b", "b1")):
        facts = pair["facts"][side]
        assert facts["interface"] == "eth0" and facts["address"] == room.ip(name) and facts["root"] is True
        assert facts["kernel"].startswith("Linux") and facts["wirelab_version"] and facts["nic_speed_bps"] > 0
        assert facts["sysctls"]["net.ipv4.tcp_congestion_control"] and "eth0" in facts["offloads"]
        assert facts["root_qdisc"] == "noqueue"
    for name in across["capture_file"]:                # each run's capture, taken on b, came back with it
        assert (tmp_path / "across" / name).stat().st_size > 10_000
    assert (across["capture_packets"] > 100).all()
    for name in across["events_file"]:                 # each run's event stream came back with it
        kinds = [e["event"] for e in read_events(tmp_path / "across" / name)]
        assert kinds[0] == "start" and kinds[-1] == "end" and "interval" in kinds
    assert _unshaped(room, "a1") and _unshaped(room, "b1")


def test_two_pairs_side_by_side_a_lost_worker_costs_its_run_and_resume_makes_it(room, tmp_path):
    exp = Experiment("pairs", proto="tcp", size="400KB", rate=["1mbit", "2mbit"], reps=2,
                     hosts=[{"a": "a1", "b": "b1"}, {"a": "a2", "b": "b2"}], cluster=room.address)
    killed = []

    def pull_a2s_plug(row):
        # mid-run on the second pair (its tc on, its client running on a2), after any run that ends
        # before it: pairs take runs as they free up, so a2 may be between two runs just then
        if not killed:
            try:
                wait_until(lambda: _program_on(room, "a2") and not _unshaped(room, "a2"), 10, "a run in flight on a2")
            except AssertionError:
                return
            room.kill("a2")
            killed.append(time.monotonic())

    first = run(exp, out=tmp_path, progress=False, on_row=pull_a2s_plug)
    assert killed and len(first) == 4
    lost = first[first["error"].fillna("").str.startswith(LOST)]
    assert len(lost) == 1 and "a2 left the cluster" in lost["error"].iloc[0]
    assert (first.drop(lost.index)["status"] == "ok").all()                # the rest: all made, on both pairs
    assert set(first["link_host_a"].dropna()) == {"a1", "a2"}
    # the lost host's guard removed its tc as its worker died; its partner was told to let go
    wait_until(lambda: _unshaped(room, "a2") and _unshaped(room, "b2"), 15, "no tc left on a2 and b2")
    wait_until(lambda: not _program_on(room, "a2"), 15, "the lost run's client gone from a2")

    room.start_worker("a2")
    room.wait_for(["a2"])
    again = run(exp, out=tmp_path, progress=False)                        # resume: only the lost run
    made = again[~again["run_id"].isin(first["run_id"])]
    assert len(made) == 1 and (made["status"] == "ok").all()
    assert tuple(made[["setting_id", "rep"]].iloc[0]) == tuple(lost[["setting_id", "rep"]].iloc[0])
    assert (again.groupby(["setting_id", "rep"])["status"].apply(lambda s: "ok" in set(s))).all()
    assert all(_unshaped(room, h) for h in ("a1", "b1", "a2", "b2"))


def test_ctrl_c_removes_the_tc_it_put_on_both_hosts(room, tmp_path):
    sweep = subprocess.Popen([sys.executable, "-m", "wirelab", "run", "--proto", "tcp", "--size", "3MB", "--rate",
                              "1mbit", "--reps", "1", "--hosts", "a=a1,b=b1", "--cluster", room.address,
                              "--out", str(tmp_path), "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: not _unshaped(room, "a1") and not _unshaped(room, "b1") and _program_on(room, "a1"), 60,
               "the run shaped both hosts and started its client")
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 130, err[-2000:]
    assert "interrupted" in err
    wait_until(lambda: _unshaped(room, "a1") and _unshaped(room, "b1"), 10, "no tc left on a1 and b1")
    wait_until(lambda: not _program_on(room, "a1"), 10, "the client gone from a1")


def test_a_host_that_is_not_root_runs_unshaped_and_a_missing_one_is_named(room, tmp_path):
    done = _cli("run", "--proto", "tcp", "--size", "2MB", "--rate", "5mbit", "--reps", "1", "--hosts", "a=a1,b=n1",
                "--cluster", room.address, "--out", str(tmp_path), "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "n1 is not root" in done.stderr and "unshaped" in done.stderr
    row = load(tmp_path).iloc[0]
    assert row["status"] == "ok" and not row["link_shaped"] and "n1 is not root" in row["link_unshaped_reason"]
    # predicted for the real path (the NIC's speed, a cable's framing), and measured there: not 5 Mbit/s
    assert row["pred_wire"] == "real" and row["pred_goodput_bps"] > 100e6 and row["goodput_bps"] > 50e6
    assert _unshaped(room, "a1") and _unshaped(room, "n1")
    with pytest.raises(UsageError, match=r"no worker for pc99.*dask worker .* --name pc99"):
        run(Experiment("missing", hosts={"a": "a1", "b": "pc99"}, cluster=room.address, reps=1),
            out=tmp_path / "missing", progress=False)


def test_grade_on_the_cluster_grades_the_example_class_as_expected(room, project_root, tmp_path):
    class_dir = project_root / "data" / "example-class"
    done = _cli("grade", "--cluster", room.address, "--class", str(class_dir), "--only", ",".join(GRADE_SLICE),
                "--out", str(tmp_path), "--json", "--expect", str(class_dir / "expected.toml"), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]                       # --expect: every failure as expected
    assert "does not grade: not root" in done.stderr                       # n1 is left out, and said so
    subs = {s["name"]: {t["id"]: t for t in s["tests"]} for s in json.loads(done.stdout)["submissions"]}
    assert sorted(subs) == sorted(name for name, _ in find_submissions(class_dir=class_dir))
    assert all(list(tests) == [t.id for t in load_catalogue().select(GRADE_SLICE).tests] for tests in subs.values())
    assert all(t["status"] == "pass" for name in ("correct-c", "correct-python", "handed-in-c")
               for t in subs[name].values())
    assert "not listening" in subs["forks-forever"]["server-udpr-out-of-order"]["reason"]
    assert "expected RJT for packet 2" in subs["accepts-out-of-order"]["server-udpr-out-of-order"]["reason"]
    assert (tmp_path / "index.html").exists() and (tmp_path / "correct-c" / "report.html").exists()
    assert any((tmp_path / "accepts-out-of-order" / "captures").glob("*.pcapng"))
