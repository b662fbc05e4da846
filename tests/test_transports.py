"""A transport is one module: the registry finds it, its facts are complete and documented, and the
rest of the kit asks it instead of comparing its name (issue 35)."""
import ast
import dataclasses
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wirelab import transports
from wirelab.errors import UsageError
from wirelab.wire.ppcb import PROTOCOL_IDS

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "wirelab"
PACKAGE = LIB / "transports"


def _docstrings(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def modules_with_literal(text: str) -> dict[str, list[int]]:
    """Modules of lib/ with ``text`` as a string constant in code (docstrings and their examples may name it)."""
    found = {}
    for path in sorted(LIB.rglob("*.py")):
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree)
        lines = [n.lineno for n in ast.walk(tree)
                 if isinstance(n, ast.Constant) and n.value == text and id(n) not in skip]
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    return found


def test_the_name_udpr_is_a_literal_in_at_most_six_modules():
    found = modules_with_literal("udpr")
    assert len(found) <= 6, "\n".join(f"{m}: lines {lines}" for m, lines in found.items())
    assert "lib/wirelab/transports/udpr.py" in found           # where its name lives


def test_hasattr_is_called_at_most_ten_times_in_lib():
    calls = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted(LIB.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hasattr"]
    assert len(calls) <= 10, "\n".join(calls)


def _documented_fields(cls_name: str) -> dict[str, bool]:
    """Each field of ``cls_name`` in transports/__init__.py: has a ``#:`` comment right above it."""
    source = (PACKAGE / "__init__.py").read_text()
    lines = source.splitlines()
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    out = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign):
            above = lines[node.lineno - 2].strip()
            out[node.target.id] = above.startswith("#:")
    return out


@pytest.mark.parametrize("cls", [transports.Transport, transports.Option])
def test_every_member_of_the_contract_is_documented(cls):
    documented = _documented_fields(cls.__name__)
    assert set(documented) == {f.name for f in dataclasses.fields(cls)}
    assert [name for name, ok in documented.items() if not ok] == []
    assert transports.MEMBERS == tuple(f.name for f in dataclasses.fields(transports.Transport))


def test_the_registry_finds_one_module_per_transport_in_the_kits_order():
    modules = [p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")]
    packages = [p.parent.name for p in PACKAGE.glob("*/__init__.py")]       # a transport with its own subpackage
    assert sorted(transports.names()) == sorted(modules + packages)
    assert transports.names()[:3] == ("tcp", "udp", "udpr")
    assert [t.name for t in transports.transports()] == list(transports.names())
    for name in transports.names():
        assert transports.get(name) is transports.get(transports.get(name))
        assert transports.get(name).name == name


@pytest.mark.parametrize("name", transports.names())
def test_each_transport_has_every_fact_and_its_behaviour_resolves(name):
    t = transports.get(name)
    front = PACKAGE / f"{name}.py" if (PACKAGE / f"{name}.py").exists() else PACKAGE / name / "__init__.py"
    assert front.read_text().startswith('"""')                                # a module a student reads
    assert t.socket in transports.SOCKETS and "file" in t.modes and set(t.modes) <= set(transports.MODES)
    assert isinstance(t.protocol_id, int) and 0 < t.protocol_id < 256         # CONN's protocol_id is a u8
    assert t.header_layers and all(isinstance(size, int) and size > 0 for _, size in t.header_layers)
    assert t.summary and t.label
    assert not (t.retransmits and t.stream), "a stream's resends are the kernel's"
    for ref in (t.sender, t.receiver, t.model):
        assert callable(ref.resolve()), ref.target
    assert set(t.peer_scenarios) <= {"client_dies", "server_dies", "silent_client", "silent_server",
                                     "foreign_data", "second_client"}
    assert t.give_up_s(0.5, 5) == (3.0 if t.retransmits else 0.5)
    from wirelab.transfer import Result
    results = {f.name for f in dataclasses.fields(Result)}
    assert set(t.columns) <= results | {o.column for o in t.options}, "a column its runs add is a Result's"


def test_protocol_ids_agree_with_the_wire_and_are_unique():
    assert {n: transports.get(n).protocol_id for n in PROTOCOL_IDS} == PROTOCOL_IDS
    ppcb = {t.name for t in transports.transports() if t.ppcb}
    assert ppcb == set(PROTOCOL_IDS)                                          # the assignment's three
    ids = transports.protocol_ids()
    assert len(set(ids.values())) == len(ids)
    assert transports.protocol_names() == {i: n for n, i in ids.items()}
    assert transports.by_protocol_id(PROTOCOL_IDS["udp"]).name == "udp" and transports.by_protocol_id(200) is None


def test_an_unknown_name_is_a_clear_error_naming_the_known_ones():
    with pytest.raises(UsageError) as err:
        transports.get("sctp")
    assert "unknown protocol 'sctp'" in str(err.value)
    assert all(name in err.value.fix for name in transports.names())
    with pytest.raises(UsageError, match="no transport has the option"):
        transports.option("no-such-option")


def test_options_do_not_take_a_name_the_kit_uses():
    from wirelab.experiment.axes import AXES
    import inspect
    from wirelab.model import predict
    taken = set(inspect.signature(predict).parameters)
    for option in transports.options().values():
        assert option.name not in taken
        assert option.cli_flag.startswith("--")
        assert AXES[option.name][0] == option.column if option.sweep else option.name not in AXES


FAKE = '''
"""A transport that exists only in this test: it proves a new one is its own module only."""
from wirelab.transports import Option, Ref, Transport
from wirelab.wire.headers import UDP_HEADER
from wirelab.wire.ppcb import DATA_HEADER, MAX_DATA


def _whole(value):
    return int(float(value))


TRANSPORT = Transport(
    name="fakegbn", protocol_id=199, socket="udp", summary="a test's transport", reliable=True,
    retransmits=True, acked=True, ack_clocked=True,
    header_layers=(("UDP", UDP_HEADER), ("PPCB DATA", DATA_HEADER)), max_payload=MAX_DATA,
    sender=Ref("wirelab.transfer.udp_client:send_udp", {"proto": "udpr"}),
    receiver=Ref("wirelab.transfer.udp_server:serve_session"),
    model=Ref("fakemodel:model"),
    options=(Option("fakewin", parse=_whole, default=1, help="DATA in flight", column="fakewin_packets",
                    flag="--window", choices=(1, 2, 4)),),
    ppcb=False, label="FAKE", order=50)
'''


FAKE_MODEL = '''
import dataclasses
from wirelab.model.datagram import stop_and_wait_model


def model(stack, packets, rate_bps, *, fakewin, **parameters):
    """stop-and-wait's prediction times the option: shows the option's value reached the model."""
    p = stop_and_wait_model(stack, packets, rate_bps, **parameters)
    return dataclasses.replace(p, goodput_bps=p.goodput_bps * fakewin)
'''


def test_a_new_transport_is_one_module_and_the_kit_picks_up_its_option(tmp_path):
    """A module dropped beside the others (here: a folder added to the package's path before anything
    asks the registry) is a protocol of the CLI, the model and Experiment, and its option a flag (shared
    with predict's own --window) and an axis."""
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "fakegbn.py").write_text(FAKE)
    (tmp_path / "fakemodel.py").write_text(FAKE_MODEL)          # its model, on a floor of its own
    script = textwrap.dedent(f"""
        import json, contextlib, io, sys
        sys.path.append({str(tmp_path)!r})
        import wirelab.transports as t
        t.__path__.append({str(tmp_path / "package")!r})
        from wirelab.cli import main
        from wirelab.experiment import Experiment
        from wirelab.model import predict
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["predict", "--proto", "fakegbn", "--window", "4", "--rate", "10mbit", "--rtt", "20ms",
                         "--json"])
        exp = Experiment("x", proto=["udpr", "fakegbn"], fakewin=[1, 4])
        try:
            predict("udpr", 1e7, fakewin=4)
            refused = False
        except Exception as err:
            refused = "no option fakewin" in str(err)
        udpr = predict("udpr", 1e7, rtt_s=0.02).goodput_bps
        print(json.dumps({{"names": t.names(), "code": code,
                          "ratio": json.loads(out.getvalue())["goodput_bps"] / udpr,
                          "settings": sorted((s.proto, s.get("fakewin_packets")) for s in exp.settings()),
                          "refused": refused}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(LIB.parent), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["names"] == [*transports.names(), "fakegbn"]         # after every transport of the kit
    assert seen["code"] == 0 and seen["ratio"] == pytest.approx(4.0)        # --window 4 reached its model
    # the option sweeps its own transport only: udpr once, fakegbn at each window
    assert seen["settings"] == [["fakegbn", 1], ["fakegbn", 4], ["udpr", None]]
    assert seen["refused"]


def test_a_module_whose_transport_has_another_name_is_refused(tmp_path, monkeypatch):
    (tmp_path / "wrongname.py").write_text(FAKE)
    monkeypatch.setattr(transports, "__path__", [*transports.__path__, str(tmp_path)])
    transports._forget()
    try:
        with pytest.raises(UsageError, match=re.escape("transports/wrongname.py holds transport 'fakegbn'")):
            transports.names()
    finally:
        monkeypatch.undo()
        sys.modules.pop("wirelab.transports.wrongname", None)
        transports._forget()
    assert "fakegbn" not in transports.names()


def test_a_transport_module_that_asks_the_registry_while_imported_is_told_why(tmp_path, monkeypatch):
    (tmp_path / "asking.py").write_text("from wirelab import transports\n\nKNOWN = transports.names()\n")
    monkeypatch.setattr(transports, "__path__", [*transports.__path__, str(tmp_path)])
    transports._forget()
    try:
        with pytest.raises(UsageError, match="asked the registry while it was being imported") as err:
            transports.names()
        assert "Ref(" in err.value.fix
    finally:
        monkeypatch.undo()
        sys.modules.pop("wirelab.transports.asking", None)
        transports._forget()
    assert transports.names()[:3] == ("tcp", "udp", "udpr")
