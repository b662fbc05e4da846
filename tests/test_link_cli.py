"""`wirelab testbed up/exec/ls/down` as a student types them."""
import json
import os
import subprocess
import sys

import pytest

from wirelab.cli import main
from wirelab.link import cleanup
from wirelab.link.netns import list_namespaces
from link_probe import UdpEcho, udp_rtts


#: CLI testbeds are found by name: unique names let two test runs share the machine.
TAG = f"{os.getpid() % 100000}"


def _wirelab(*argv, timeout=60):
    return subprocess.run([sys.executable, "-m", "wirelab", *argv], capture_output=True, text=True,
                          timeout=timeout)


def test_bad_arguments_are_one_line_errors(capsys):
    assert main(["testbed", "up", "Bad Name"]) == 2
    assert "lowercase" in capsys.readouterr().err
    assert main(["testbed", "exec", "nosuchtestbed", "a", "--", "true"]) == 2
    assert "no testbed called" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["testbed", "up", "x", "--rate", "10 parsecs"])


def test_caps_reports_every_feature():
    done = _wirelab("testbed", "caps", "--json")
    caps = json.loads(done.stdout)
    assert {"root", "netem", "tbf", "tun", "iptables_statistic", "reasons", "backends"} <= set(caps)
    assert "loopback" in caps["backends"]


def test_loopback_testbed_from_the_command_line():
    with UdpEcho(("127.0.0.1", 0)) as echo:
        up = _wirelab("testbed", "up", f"tclilo{TAG}", "--backend", "loopback", "--delay", "10ms",
                      "--forward", f"udp:{echo.address[1]}", "--json")
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        try:
            rtts = udp_rtts(("127.0.0.1", info["relays"][0]["listen"][1]), 5)
            assert len(rtts) == 5 and min(rtts) >= 0.02
            assert f"tclilo{TAG}" in _wirelab("testbed", "ls").stdout
        finally:
            down = _wirelab("testbed", "down", f"tclilo{TAG}")
    assert down.returncode == 0, down.stderr
    assert not any(e.get("name") == f"tclilo{TAG}" for e in cleanup.testbeds().values())


@pytest.mark.root
@pytest.mark.slow
def test_up_exec_ls_down():
    up = _wirelab("testbed", "up", f"tcli{TAG}", "--rate", "10mbit", "--delay", "5ms", "--loss", "0%", "--json")
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    try:
        assert info["hosts"]["a"]["addresses"] == ["10.77.0.1/24"]
        shown = _wirelab("testbed", "exec", f"tcli{TAG}", "a", "--", "ip", "-br", "addr")
        assert shown.returncode == 0 and "10.77.0.1/24" in shown.stdout
        listing = json.loads(_wirelab("testbed", "ls", "--json").stdout)
        assert any(e.get("name") == f"tcli{TAG}" and e["alive"] for e in listing)
        failing = _wirelab("testbed", "exec", f"tcli{TAG}", "a", "--", "false")
        assert failing.returncode == 1                      # the command's own exit status
    finally:
        down = _wirelab("testbed", "down", f"tcli{TAG}")
    assert down.returncode == 0, down.stderr
    assert not any(ns.startswith(info["testbed"]) for ns in list_namespaces())
    assert cleanup.exited(info["keeper_pid"])


@pytest.mark.root
@pytest.mark.skipif(os.environ.get("WIRELAB_TEST_DOWN_ALL") != "1" and os.environ.get("CI") != "true",
                    reason="`down --all` also removes other users' testbeds on this machine; "
                           "set WIRELAB_TEST_DOWN_ALL=1 on a machine of your own (CI does)")
def test_down_all_removes_everything():
    up = _wirelab("testbed", "up", f"tall{TAG}", "--delay", "1ms")
    assert up.returncode == 0, up.stderr
    assert _wirelab("testbed", "down", "--all").returncode == 0
    assert not [ns for ns in list_namespaces() if ns.startswith("wl-")]
    assert not cleanup.testbeds()


def test_loopback_needs_a_port_to_forward(capsys):
    assert main(["testbed", "up", "x", "--backend", "loopback"]) == 2
    assert "--forward udp:PORT" in capsys.readouterr().err


def test_a_real_wire_with_pppoe_from_the_command_line():
    up = _wirelab("testbed", "up", f"tclireal{TAG}", "--backend", "loopback", "--rate", "21mbit", "--rate-reverse",
                  "54mbit", "--wire", "real", "--pppoe", "--forward", "udp:9", "--json")
    try:
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        assert info["link"].endswith("MTU 1492 B; real wire + PPPoE (46 B a frame)")
        assert sum("stab overhead 32 linklayer ethernet tbf" in c and "mpu 84b" in c for c in info["tc_commands"]) == 2
    finally:
        down = _wirelab("testbed", "down", f"tclireal{TAG}")
    assert down.returncode == 0, down.stderr
