"""Backend choice follows what the machine can do; without root only loopback is offered."""
import importlib

import pytest

from wirelab.errors import BackendUnavailableError, UsageError
from wirelab.link import LinkSpec, Testbed
from wirelab.link.detect import Capabilities, backend_for, choose_backend

caps_module = importlib.import_module("wirelab.link.detect")
DELAY = LinkSpec.parse(rate="10mbit", delay="20ms")
RATE_ONLY = LinkSpec.parse(rate="10mbit", loss="1%")


def _caps(root=True, netem=False):
    return Capabilities(root=root, netns=root, veth=root, tbf=root, netem=netem, tun=root,
                        packet_socket=root, iptables_statistic=root, reasons={"root": "r", "netns": "n",
                                                                                "netem": "no sch_netem"})


def test_without_root_only_loopback_and_every_reason_says_why(monkeypatch):
    monkeypatch.setattr(caps_module, "is_root", lambda: False)
    caps = caps_module._probe.__wrapped__()
    assert caps.backends == ["loopback"] and not caps.netem and not caps.tbf
    assert all("root" in caps.reasons[k] for k in ("netns", "netem", "tbf", "tun"))
    assert "root" in caps.describe()


def test_best_available_backend():
    assert choose_backend(RATE_ONLY, caps=_caps()) == "namespaces"       # tbf + iptables suffice
    assert choose_backend(DELAY, caps=_caps()) == "userspace"            # delay needs netem or us
    assert choose_backend(DELAY, caps=_caps(netem=True)) == "namespaces"
    assert choose_backend(DELAY, caps=_caps(root=False)) == "loopback"


def test_one_rule_for_a_sweep_a_topology_and_a_link():
    # the spec that needs the most decides for all of them: runs of a sweep never mix kinds of link
    assert backend_for([RATE_ONLY, DELAY], caps=_caps()) == "userspace"
    assert backend_for([RATE_ONLY, None], caps=_caps()) == "namespaces"
    assert backend_for([], caps=_caps()) == "namespaces"
    whole = LinkSpec.parse(rate="10mbit", loss="1%", loss_unit="datagram")    # only the userspace link does it
    assert backend_for([RATE_ONLY, whole], caps=_caps(netem=True)) == "userspace"
    # a name already chosen is only checked, whichever spec comes with it
    assert backend_for([DELAY], "userspace", caps=_caps()) == "userspace"
    with pytest.raises(BackendUnavailableError, match="netem"):
        backend_for([RATE_ONLY, DELAY], "namespaces", caps=_caps())


def test_link_open_and_testbed_ask_the_same_rule(monkeypatch):
    asked = []

    def rule(specs, requested="auto", caps=None):
        asked.append(requested)
        raise UsageError("stop here", "a test")
    monkeypatch.setattr(importlib.import_module("wirelab.link.opened"), "backend_for", rule)
    monkeypatch.setattr(importlib.import_module("wirelab.link.testbed"), "backend_for", rule)
    import wirelab.link as links
    for build in (lambda: links.open(DELAY, backend="userspace"), lambda: Testbed(DELAY, backend="userspace").up()):
        with pytest.raises(UsageError, match="stop here"):
            build()
    assert asked == ["userspace", "userspace"]


def test_asking_for_what_cannot_run_is_an_error_with_a_fix():
    with pytest.raises(BackendUnavailableError, match="netem"):
        choose_backend(DELAY, "namespaces", caps=_caps())
    with pytest.raises(BackendUnavailableError, match="loopback"):
        choose_backend(DELAY, "userspace", caps=_caps(root=False))
    with pytest.raises(UsageError):
        choose_backend(DELAY, "ethernet")


def test_a_testbed_of_hosts_refuses_the_loopback_backend():
    with pytest.raises(UsageError, match="UdpRelay"):
        Testbed(DELAY, backend="loopback").up()
    with pytest.raises(UsageError):
        Testbed(DELAY, name="Bad Name")


def test_threads_asking_at_once_share_one_probe():
    import threading
    from wirelab.link import capabilities as probe
    from wirelab.link.detect import _probe
    _probe.cache_clear()
    answers, threads = [], [threading.Thread(target=lambda: answers.append(probe())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(answers) == 4 and all(a is answers[0] for a in answers)
