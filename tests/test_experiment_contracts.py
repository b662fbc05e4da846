"""The contracts between the runner and what it runs, written as types: every engine of the kit
satisfies ``Engine``, has no member the contract does not document, and an engine or a link layer
lacking the optional members still runs, with the documented defaults."""
import inspect
from dataclasses import fields

import pytest

import wirelab.link
from wirelab.experiment import Experiment, engine as engine_module, linklayer as layer_module
from wirelab.experiment import run as run_sweep
from wirelab.experiment.engine import Capabilities, Engine, capabilities
from wirelab.experiment.engines import ENGINES, get_engine
from wirelab.experiment.flows import Flows
from wirelab.experiment.hostpairs import HostsLayer
from wirelab.experiment.linklayer import LayerCapabilities, LinkLayer, layer_capabilities
from wirelab.labs.broker import BrokerEngine
from wirelab.labs.peers import PeersEngine
from wirelab.link import contract as link_contract
from wirelab.link.contract import LinkCapabilities, OpenedLink, link_capabilities
from wirelab.link.hosts import HostsLink
from wirelab.link.opened import LoopbackLink, TestbedLink

from fake_links import FakeLink, FakeLinks


def kit_engines():
    """Every engine the kit has: by name (``get_engine``), the flows engine, the labs' own."""
    named = [get_engine(name) for name in ENGINES]
    return named + [Flows(named[0], predict=lambda setting, engine=None: {}), BrokerEngine(), PeersEngine()]


def public_members(obj) -> set[str]:
    """What a class defines for others to read: its attributes and methods, not its own state."""
    return {name for name in dir(type(obj)) if not name.startswith("_")}


@pytest.mark.parametrize("engine", kit_engines(), ids=lambda e: e.name)
def test_every_engine_of_the_kit_is_an_engine_and_defines_only_documented_members(engine):
    assert isinstance(engine, Engine)
    documented = {f.name for f in fields(Capabilities)}
    assert public_members(engine) <= documented, \
        f"{engine.name} has members the engine contract does not document: {public_members(engine) - documented}"


@pytest.mark.parametrize("engine", kit_engines(), ids=lambda e: e.name)
def test_every_engine_runs_with_the_keywords_the_runner_passes(engine):
    can = capabilities(engine)
    parameters = inspect.signature(can.run).parameters
    passed = ["deadline", "seed", "workdir", "capture"] + (["events"] if can.emits_events else [])
    if can.emits_events and engine.name in ENGINES:     # the flows run it, tagging its records with the flow
        passed.append("event_tags")
    assert [p for p in passed if p not in parameters] == []
    assert can.name == engine.name


@pytest.mark.parametrize("contract, module", [(Capabilities, engine_module), (LayerCapabilities, layer_module)])
def test_every_member_of_a_contract_is_documented_in_its_record_and_its_module(contract, module):
    described = contract.describe()
    assert set(described) == {f.name for f in fields(contract)}
    for name, doc in described.items():
        assert doc.split(": ", 1)[1].strip(), f"{name} has no documentation"
        assert name in module.__doc__, f"{module.__name__}'s docstring does not name {name}"
    required = {name for name, doc in described.items() if doc.startswith("required")}
    protocol = Engine if contract is Capabilities else LinkLayer
    assert required == {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)


class Bare:
    """An engine with only what it must have: no framing, no predict, no open, no rows..."""
    name = "bare"

    def run(self, setting, link, *, deadline, seed, workdir):
        return {"goodput_bps": 0.9 * setting["rate_bps"]}


def test_an_engine_without_optional_members_takes_the_documented_defaults():
    can = capabilities(Bare())
    assert (can.predict, can.rows, can.keeps_links, can.measure, can.emits_events, can.times_exchanges) == \
        (None, None, True, "goodput_bps", False, False)
    assert can.info() == {} and can.open() is None and can.close() is None
    setting = Experiment("bare", proto="tcp", size="10KB", rate="10mbit").settings()[0]
    assert can.framing(setting) == {} and can.unsupported(setting) is None and can.topology(setting) is setting.link


class NoUdp(FakeLink):
    def unsupported(self, proto):
        return "this link carries no udp" if proto == "udp" else None


class NoUdpLinks:
    """A link layer with only the required members (no carriage, no meter) whose links refuse UDP."""

    @staticmethod
    def backend_for(specs, requested):
        return "fake-wire"

    @staticmethod
    def open(spec, *, backend, seed, name):
        return NoUdp(spec)

    @staticmethod
    def wire_of(spec):
        return "emulated"


def test_a_bare_engine_on_a_bare_link_layer_runs_and_the_link_decides_what_it_carries(tmp_path):
    resolved = layer_capabilities(NoUdpLinks)
    assert resolved.carriage("fake-wire", "udp") == "packets" and resolved.meter_bytes("fake-wire", None) is None
    df = run_sweep(Experiment("bare", proto=["tcp", "udp"], size="10KB", rate="10mbit", reps=1),
                   out=tmp_path / "b", engine=Bare(), progress=False, link_layer=NoUdpLinks)
    by_proto = df.set_index("proto")
    assert by_proto.loc["tcp", "status"] == "ok" and by_proto.loc["tcp", "goodput_bps"] == 9e6
    assert by_proto.loc["udp", "status"] == "skipped"
    assert by_proto.loc["udp", "error"] == "this link carries no udp"
    assert by_proto.loc["tcp", "pred_goodput_bps"] > 0       # the model's prediction, framed as nothing


@pytest.mark.parametrize("layer", [wirelab.link, HostsLayer([]), FakeLinks], ids=["link", "hosts", "fake"])
def test_every_link_layer_is_a_link_layer_and_resolves_its_optional_members(layer):
    assert isinstance(layer, LinkLayer)
    resolved = layer_capabilities(layer)
    across_hosts = isinstance(layer, HostsLayer)
    assert (resolved.facts is None, resolved.path_params is None) == (not across_hosts, not across_hosts)
    assert resolved.carriage("userspace", "tcp") == layer.carriage("userspace", "tcp")


LINK_CLASSES = [TestbedLink, LoopbackLink, HostsLink]


@pytest.mark.parametrize("cls", LINK_CLASSES, ids=lambda c: c.__name__)
def test_every_kind_of_link_has_the_required_members_and_only_documented_ones(cls):
    required = {n for n in vars(OpenedLink) if not n.startswith("_")} | set(OpenedLink.__annotations__)
    optional = {f.name for f in fields(LinkCapabilities)}
    # spec is set by OpenLink.__init__ (every link is made of one)
    assert [m for m in required - {"spec"} if not hasattr(cls, m)] == []
    own_state = {"seed", "shaped"}      # a backend's own, read by nothing outside it (grep)
    documented = required | optional | own_state
    assert public_members_of_class(cls) <= documented, public_members_of_class(cls) - documented


def public_members_of_class(cls) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_link_contract_is_documented_member_by_member():
    names = ({n for n in vars(OpenedLink) if not n.startswith("_")} | set(OpenedLink.__annotations__)
             | set(LinkCapabilities.describe()))
    for name in names:
        assert f"{name}" in link_contract.__doc__, f"wirelab.link.contract does not document {name}"
    assert all(doc.strip() for doc in LinkCapabilities.describe().values())


def test_a_loopback_link_is_an_opened_link_and_a_stand_in_takes_the_defaults():
    from wirelab.link import LinkSpec
    with LoopbackLink(LinkSpec()) as link:
        assert isinstance(link, OpenedLink)
        can = link_capabilities(link)
        assert (can.renewable, can.can_reshape(LinkSpec()), can.call, can.testbed) == (False, False, None, None)
        assert can.relays is link.relays
    stand_in = link_capabilities(FakeLink(None))
    assert not isinstance(FakeLink(None), OpenedLink)       # it stands in for the runner's view only
    assert (stand_in.renewable, stand_in.renew(1), stand_in.one_queue, stand_in.relays) == (False, None, True, None)
