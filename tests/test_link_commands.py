"""The argv builders: what a student would type, checked without root."""
import shlex

from wirelab.link import LinkSpec, commands


def test_tbf_writes_exact_bits_and_bytes():
    argv = commands.tbf("ns", "to-b", rate_bps=10e6, burst_bytes=3028, limit_bytes=125000)
    assert shlex.join(argv) == "tc -n ns qdisc replace dev to-b root tbf rate 10000000bit burst 3028b limit 125000b"


def test_netem_carries_delay_jitter_loss_duplicate_reorder():
    spec = LinkSpec.parse(delay="20ms", jitter="2ms", loss="1%", duplicate="0.5%", reorder="25%")
    argv = commands.netem("ns", "to-b", spec.forward)
    text = shlex.join(argv)
    assert "netem limit 1000 delay 20000us 2000us" in text
    assert "loss 1%" in text and "duplicate 0.5%" in text and "reorder 25%" in text


def test_iptables_loss_is_document_004s_statistic_rule():
    argv = commands.iptables_loss("wl-x-1-b", "to-a", 0.05)
    assert argv[:4] == ["ip", "netns", "exec", "wl-x-1-b"]
    assert argv[4:] == ["iptables", "-t", "raw", "-A", "PREROUTING", "-i", "to-a", "-m", "statistic",
                        "--mode", "random", "--probability", "0.05", "-j", "DROP"]


def _shape(spec, netem):
    return [shlex.join(a) for a in commands.shaping_commands(
        spec, spec.forward, sender_ns="A", sender_dev="to-b", receiver_ns="B", receiver_dev="to-a",
        netem_available=netem)]


def test_without_netem_rate_is_tbf_and_loss_is_iptables():
    cmds = _shape(LinkSpec.parse(rate="10mbit", loss="5%"), netem=False)
    assert len(cmds) == 2
    assert cmds[0].startswith("tc -n A qdisc replace dev to-b root tbf rate 10000000bit")
    assert cmds[1].startswith("ip netns exec B iptables") and "--probability 0.05" in cmds[1]


def test_with_netem_tbf_hangs_below_netem():
    cmds = _shape(LinkSpec.parse(rate="10mbit", delay="20ms", loss="1%"), netem=True)
    assert cmds[0].startswith("tc -n A qdisc replace dev to-b root handle 1: netem")
    assert "parent 1:1 handle 2: tbf" in cmds[1]
    assert not any("iptables" in c for c in cmds)


def test_an_unshaped_link_needs_no_commands():
    assert _shape(LinkSpec(), netem=False) == []


def test_host_plumbing_commands():
    assert commands.veth_pair("A", "to-b", "B", "to-a") == [
        "ip", "-n", "A", "link", "add", "to-b", "type", "veth", "peer", "name", "to-a", "netns", "B"]
    assert "gso" in commands.offloads_off("A", "to-b") and "gro" in commands.offloads_off("A", "to-b")
    assert commands.neigh_permanent("A", "to-b", "10.77.0.2", "aa:bb:cc:dd:ee:ff")[-2:] == ["nud", "permanent"]
    assert commands.netns_exec("A", ["iperf3", "-s"]) == ["ip", "netns", "exec", "A", "iperf3", "-s"]


def test_a_real_wire_is_tbf_with_a_size_table_mpu_and_one_segment_per_packet():
    cmds = _shape(LinkSpec.parse(rate="10mbit", wire="real"), netem=False)
    assert cmds == ["ip -n A link set dev to-b gso_max_segs 1",
                    "tc -n A qdisc replace dev to-b root stab overhead 24 linklayer ethernet "
                    "tbf rate 10000000bit burst 2788b limit 125000b mpu 84b"]
    netem = _shape(LinkSpec.parse(rate="10mbit", delay="5ms", wire="real"), netem=True)
    assert "parent 1:1 handle 2: stab overhead 24 linklayer ethernet tbf" in netem[-1]
    pppoe = _shape(LinkSpec.parse(rate="21mbit", wire="real", pppoe=True), netem=False)
    assert "stab overhead 32 " in pppoe[-1] and "mpu 84b" in pppoe[-1]
    emulated_pppoe = _shape(LinkSpec.parse(rate="21mbit", pppoe=True), netem=False)
    assert "stab overhead 8 " in emulated_pppoe[-1] and "mpu" not in emulated_pppoe[-1]


def test_an_emulated_wire_keeps_tbf_as_it_was():
    assert not any("stab" in c or "gso" in c for c in _shape(LinkSpec.parse(rate="10mbit"), netem=False))


def test_undoing_a_real_wire_gives_the_kernel_its_segments_back():
    from wirelab.link.reshape import undo_shaping
    argvs = commands.shaping_commands(LinkSpec.parse(rate="10mbit", wire="real"), LinkSpec.parse(rate="10mbit").forward,
                                      sender_ns="A", sender_dev="to-b", receiver_ns="B", receiver_dev="to-a",
                                      netem_available=False)
    assert [shlex.join(a) for a in undo_shaping(argvs)] == [
        "ip -n A link set dev to-b gso_max_segs 65535", "tc -n A qdisc del dev to-b root"]


def test_show_with_details_reads_the_size_table():
    assert commands.qdisc_show_json("A", stats=True, details=True) == ["tc", "-n", "A", "-j", "-s", "-d", "qdisc", "show"]
