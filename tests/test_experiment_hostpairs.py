"""The pairs of a sweep across hosts, without a cluster: what each side keeps unshaped, and what a
pair that cannot be shaped is predicted for (its real path: 941 Mbit/s on 1 GbE, not the rate asked)."""
import pytest

from wirelab.errors import UsageError
from wirelab.experiment import Experiment, predict_columns
from wirelab.experiment.hostpairs import HostsLayer, Pair, hosts_table
from wirelab.link.workers import Worker


def _pair(b_root: bool) -> Pair:
    facts = {"a": {"root": True, "nic_speed_bps": 1e9, "address": "10.0.0.7", "interface": "eth0",
                   "root_qdisc": "fq_codel", "host": "pc07", "offloads": {"eth0": {"generic-receive-offload": True}},
                   "sysctls": {"net.ipv4.tcp_congestion_control": "cubic"}},
             "b": {"root": b_root, "nic_speed_bps": 1e9, "address": "10.0.0.8", "interface": "enp3s0",
                   "root_qdisc": "htb", "root_handle": "7a1:", "gso_max_segs": 1, "host": "pc08"}}
    return Pair(Worker("tcp://10.0.0.7:40211", "pc07", "10.0.0.7"), Worker("tcp://10.0.0.8:38001", "pc08", "10.0.0.8"),
                facts, rtt_s=0.0004, scheduler="tcp://10.0.0.8:8786")


def _setting(rate="10mbit"):
    return Experiment("x", rate=rate, workload="time", time=10, hosts={"a": "pc07", "b": "pc08"},
                      cluster="tcp://10.0.0.8:8786").settings()[0]


def test_each_side_keeps_dasks_own_ports_and_knows_a_concurrent_runs_qdisc_for_its_own():
    pair = _pair(b_root=True)
    assert pair.side("a").keep == (40211,)
    assert pair.side("b").keep == (38001, 8786)                 # the scheduler lives on b
    b = pair.side("b")
    assert b.root_qdisc is None and b.gso_max_segs == 65535    # another sweep's htb in flight: ours, not theirs
    assert pair.side("a").root_qdisc == "fq_codel"


def test_a_pair_that_cannot_be_shaped_is_predicted_for_its_real_path():
    setting = _setting()
    shaped = HostsLayer([_pair(True)]).bound(_pair(True), "t")
    assert shaped.path_params(setting) == (setting.params, "emulated")
    unshaped = HostsLayer([_pair(False)]).bound(_pair(False), "t")
    params, wire = unshaped.path_params(setting)
    assert wire == "real" and params["rate_bps"] == 1e9 and params["delay_s"] == pytest.approx(0.0002)
    predicted = predict_columns(params, wire=wire, timestamps=True)["pred_goodput_bps"]
    assert predicted == pytest.approx(1e9 * 1448 / 1538, rel=1e-3)      # document 002's η on a real wire
    assert HostsLayer([_pair(False)]).path_params(setting) == (setting.params, "emulated")   # no pair: as asked
    # tbf shapes a pair that can be shaped: a meter with the spec's bucket; the real path is a cable
    assert shaped.meter_bytes("hosts", setting.link) == setting.link.burst_for(setting.link.forward)
    assert unshaped.meter_bytes("hosts", setting.link) is None


def test_the_layer_runs_on_the_hosts_backend_only_and_opens_on_b():
    layer = HostsLayer([_pair(True)])
    assert layer.backend_for([_setting().link]) == "hosts"
    with pytest.raises(UsageError, match="hosts backend"):
        layer.backend_for([], "namespaces")
    with pytest.raises(UsageError, match="on host b's worker"):
        layer.open(_setting().link)
    assert layer.sender_sysctls()["net.ipv4.tcp_congestion_control"] == "cubic"


def test_the_hosts_table_has_a_row_a_side():
    meta = {"sessions": [{"hosts": HostsLayer([_pair(False)]).facts()}]}
    table = hosts_table(meta)
    assert list(table["host"]) == ["pc07", "pc08"] and list(table["root"]) == [True, False]
    assert table.loc[0, "offloads_on"] == "generic-receive-offload" and table.loc[1, "interface"] == "enp3s0"
