"""Shaping a real host's interface (pure builders), the guard that always undoes it, and the
hosts of an experiment; no root needed (the guard is tested with harmless commands)."""
import json
import subprocess
import sys

import pytest

from wirelab.errors import UsageError
from wirelab.experiment import Experiment
from wirelab.experiment.spec import host_pairs
from wirelab.experiment.status import LOST
from wirelab.experiment.store import ResultStore
from wirelab.link import LinkSpec
from wirelab.link.hostguard import Guard
from wirelab.link.hostshaping import Side, host_commands, refusal
from polling import wait_until

A = Side("pc07", "10.0.0.7", "eth0", netem=True)
B = Side("pc08", "10.0.0.8", "enp3s0", netem=True)


def _text(argvs):
    return [" ".join(argv) for argv in argvs]


def test_only_the_peers_packets_are_shaped_on_each_senders_interface():
    made = host_commands(LinkSpec.parse(rate="10mbit", delay="20ms"), A, B)
    a, b = _text(made["a"]["apply"]), _text(made["b"]["apply"])
    assert a[0] == "tc qdisc replace dev eth0 root handle 7a1: htb"           # no default class: the rest passes
    assert "u32 match ip dst 10.0.0.8/32 flowid 7a1:3" in a[2]                # a → b: packets to b only
    assert "u32 match ip dst 10.0.0.7/32 flowid 7a1:3" in b[2] and "dev enp3s0" in b[2]
    assert a[3].startswith("tc qdisc replace dev eth0 parent 7a1:3 handle 7a2: netem") and "delay 20000us" in a[3]
    assert a[4].startswith("tc qdisc replace dev eth0 parent 7a2:1 handle 7a3: tbf rate 10000000bit")
    assert "burst 2764b " in a[4], "tbf meters: a bucket of one frame and 1 ms of the rate, as in a testbed"
    assert _text(made["a"]["undo"]) == ["tc qdisc del dev eth0 root"]


def test_dasks_own_packets_between_the_two_workers_stay_unshaped():
    # a task's result travels from one worker to the other: on a 100 kbit/s link it starved the run
    a = Side("pc07", "10.0.0.7", "eth0", keep=(40211,))
    b = Side("pc08", "10.0.0.8", "eth0", keep=(38001, 8786))          # b's worker, and the scheduler on b
    made = host_commands(LinkSpec.parse(rate="100kbit", loss="1%"), a, b)
    lines = _text(made["a"]["apply"])
    direct = [line for line in lines if line.endswith("flowid 7a1:")]    # htb's own handle: its direct queue
    assert [line.split("match ip ")[2] for line in direct] == ["sport 40211 0xffff flowid 7a1:",
                                                               "dport 38001 0xffff flowid 7a1:",
                                                               "dport 8786 0xffff flowid 7a1:"]
    assert all(" prio 1 " in line for line in direct)
    assert " prio 2 " in next(line for line in lines if line.endswith("flowid 7a1:3"))     # the rest: shaped
    rules = made["b"]["apply"]                       # loss without netem, on b: Dask's packets accepted first
    assert [r[-1] for r in rules[:4]] == ["ACCEPT"] * 3 + ["DROP"]
    assert ["--sport", "40211"] == rules[0][rules[0].index("--sport"):][:2]
    assert len(made["b"]["undo"]) == 4 + 1 and all(r[3] == "-D" for r in made["b"]["undo"][:4])


def test_loss_without_netem_is_iptables_on_the_receiver_for_the_peer_only_and_undone_exactly():
    a, b = Side("pc07", "10.0.0.7", "eth0"), Side("pc08", "10.0.0.8", "eth0")
    made = host_commands(LinkSpec.parse(loss="2%", loss_reverse="0"), a, b)
    assert made["a"]["apply"] == [] and made["a"]["undo"] == []              # nothing on a: no rate, no reverse loss
    rule, = made["b"]["apply"]
    assert rule[:4] == ["iptables", "-t", "raw", "-A"] and "10.0.0.7/32" in rule and "0.02" in rule
    assert made["b"]["undo"] == [rule[:3] + ["-D"] + rule[4:]]


def test_a_real_wire_restores_the_interfaces_own_segments():
    b = Side("pc08", "10.0.0.8", "eth0", gso_max_segs=128)
    made = host_commands(LinkSpec.parse(rate="10mbit", wire="real"), A, b)
    assert ["ip", "link", "set", "dev", "eth0", "gso_max_segs", "1"] in made["b"]["apply"]
    assert made["b"]["undo"][-1] == ["ip", "link", "set", "dev", "eth0", "gso_max_segs", "128"]
    assert any("stab overhead 24" in line for line in _text(made["a"]["apply"]))


def test_what_an_interface_cannot_do_is_refused_with_the_reason():
    plain = Side("pc07", "10.0.0.7", "eth0", netem=False)
    assert "no netem" in refusal(LinkSpec.parse(delay="20ms"), plain, B)
    assert refusal(LinkSpec.parse(rate="10mbit", loss="1%"), plain, B) is None
    own = Side("pc07", "10.0.0.7", "eth0", netem=True, root_qdisc="htb")
    assert "qdisc of its own (htb)" in refusal(LinkSpec.parse(rate="10mbit"), own, B)


def test_the_guard_undoes_when_released_and_when_its_owner_dies(tmp_path):
    mark = tmp_path / "applied"
    guard = Guard([["touch", str(mark)]], [["rm", "-f", str(mark)]])
    assert guard.error is None and mark.exists()
    assert guard.release()["removed"] is True and not mark.exists()
    failed = Guard([["touch", str(mark)], ["false"]], [["rm", "-f", str(mark)]])
    assert "`false` failed" in failed.error and not mark.exists()        # a failed apply is undone at once
    # an owner killed outright (SIGKILL: no cleanup of its own) still has its guard undo
    owner = subprocess.Popen([sys.executable, "-c", (
        "import sys, json; from wirelab.link.hostguard import Guard\n"
        f"g = Guard([['touch', {str(mark)!r}]], [['rm', '-f', {str(mark)!r}]])\n"
        "print(json.dumps(g.error), flush=True); sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    assert json.loads(owner.stdout.readline()) is None and mark.exists()
    owner.kill()
    owner.wait(timeout=10)
    wait_until(lambda: not mark.exists(), 10, "the guard's undo run after its owner died", every=0.02)


def test_hosts_are_pairs_of_workers_and_need_a_cluster():
    assert host_pairs({"a": "pc07", "b": "pc08"}) == (("pc07", "pc08"),)
    assert host_pairs("a=pc07,b=pc08;a=pc09,b=pc10") == (("pc07", "pc08"), ("pc09", "pc10"))
    exp = Experiment("x", hosts=[("pc07", "pc08")], cluster="tcp://10.0.0.1:8786")
    assert exp.backend == "hosts" and exp.settings()[0].backend == "hosts"
    assert Experiment(**exp.to_dict()).hosts == exp.hosts                  # meta.json's form reads back
    with pytest.raises(UsageError, match="need a cluster"):
        Experiment("x", hosts={"a": "pc07", "b": "pc08"})
    with pytest.raises(UsageError, match="two different workers"):
        Experiment("x", hosts={"a": "pc07", "b": "pc07"}, cluster="tcp://10.0.0.1:8786")
    with pytest.raises(UsageError, match="needs hosts"):
        Experiment("x", backend="hosts")


def test_a_run_whose_host_was_lost_is_not_counted_done(tmp_path):
    rows = [{"run_id": "s1-r0", "setting_id": "s1", "rep": 0, "status": "failed", "error": f"{LOST}: pc08 left"},
            {"run_id": "s2-r0", "setting_id": "s2", "rep": 0, "status": "failed", "error": "TransferError: late"}]
    with ResultStore(tmp_path) as store:
        for row in rows:
            store.record([row], {"run_id": row["run_id"]})
        assert store.done(("ok", "failed"), again=(LOST,)) == {("s2", 0)}
        assert store.done(("ok", "failed")) == {("s1", 0), ("s2", 0)}
