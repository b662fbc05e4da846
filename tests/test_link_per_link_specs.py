"""A spec per link: ``broker_network(links=...)``, ``with_links`` and ``wirelab testbed up --link``."""
import argparse
import json
import os
import subprocess
import sys

import pytest

from wirelab.cli import testbed as cli
from wirelab.errors import UsageError
from wirelab.link import LinkSpec, broker_network, two_hosts
from wirelab.link.keeper import topology_for
from wirelab.link.netns import list_namespaces
from wirelab.link.topology import parse_link_option, with_links

TAG = f"{os.getpid() % 100000}"


def test_document_003_links_each_their_own():
    twenty = LinkSpec.parse(delay="20ms", jitter="5ms")
    topo = broker_network(links={"b-r*": twenty, "r1-d": LinkSpec.parse(delay="1ms"), "d-r2": twenty})
    specs = {l.name: l.spec for l in topo.links}
    assert specs["s-b"] == LinkSpec()                       # the document had no delay on s–b
    assert specs["b-r1"] == specs["b-r2"] == specs["r2-d"] == twenty
    assert specs["r1-d"].forward.delay_s == pytest.approx(0.001)


def test_a_name_that_matches_no_link_is_an_error():
    with pytest.raises(UsageError, match="no link matches"):
        with_links(two_hosts(), {"a-c": LinkSpec()})
    with pytest.raises(UsageError, match="not a LinkSpec"):
        with_links(two_hosts(), {"a-b": "delay=20ms"})


def test_parse_link_option():
    assert parse_link_option("b-r*:delay=20ms, jitter=5ms") == ("b-r*", {"delay": "20ms", "jitter": "5ms"})
    assert parse_link_option("s-b:loss-reverse=0") == ("s-b", {"loss_reverse": "0"})
    for bad in ("b-r1", ":delay=1ms", "b-r1:delay"):
        with pytest.raises(UsageError):
            parse_link_option(bad)


def _args(*argv):
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["testbed", "up", "x", *argv])


def test_cli_link_options_start_from_the_global_ones():
    args = _args("--rate", "10mbit", "--loss", "1%", "--topology", "broker",
                 "--link", "b-r*:delay=20ms,jitter=5ms", "--link", "s-b:rate=100mbit,loss=0")
    links = cli._link_specs(args)
    topo = topology_for("broker", cli._spec(args), links)
    specs = {l.name: l.spec for l in topo.links}
    assert specs["b-r2"].forward.rate_bps == 10e6 and specs["b-r2"].reverse.delay_s == pytest.approx(0.02)
    assert specs["b-r2"].forward.loss == pytest.approx(0.01)
    assert specs["s-b"].forward.rate_bps == 100e6 and specs["s-b"].reverse.loss == 0
    assert specs["r1-d"] == cli._spec(args)
    with pytest.raises(UsageError, match="unknown key"):
        cli._link_specs(_args("--link", "a-b:speed=1"))
    with pytest.raises(UsageError, match="no link matches"):
        topology_for("two_hosts", LinkSpec(), cli._link_specs(_args("--link", "s-b:delay=1ms")))


@pytest.mark.root
def test_testbed_up_builds_each_link_with_its_spec():
    name = f"tlink{TAG}"
    up = subprocess.run([sys.executable, "-m", "wirelab", "testbed", "up", name, "--topology", "broker",
                         "--rate", "50mbit", "--link", "b-r1:delay=20ms", "--json"],
                        capture_output=True, text=True, timeout=90)
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    try:
        assert info["backend"] == "userspace" or "netem" in " ".join(info["tc_commands"])
        delayed = [c for c in info["tc_commands"] if "delay 20000us" in c]
        assert len(delayed) == 2 and all("to-r1" in c or "to-b" in c for c in delayed)
        assert "b–r1: a→b: 50 Mbit/s, delay 20 ms" in info["link"]
        assert "b–r2: a→b: 50 Mbit/s; MTU" in info["link"]
    finally:
        down = subprocess.run([sys.executable, "-m", "wirelab", "testbed", "down", name],
                              capture_output=True, text=True, timeout=60)
    assert down.returncode == 0, down.stderr
    assert not any(ns.startswith(info["testbed"]) for ns in list_namespaces())
