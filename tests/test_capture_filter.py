"""Display filters (capture/filter): the parser, its errors, and the frames each filter keeps
against tshark's ``-Y`` on the committed captures, by numpy mask and by DuckDB SQL on a dataset."""
from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from wirelab import UsageError
from wirelab.capture import convert, open_dataset, ppcb_packets, read_capture, tcp_analysis
from wirelab.capture.filter import FIELDS, FilterError, compile_filter
from wirelab.capture.filter.syntax import Binary, Not, FieldTest, parse
from wirelab.cli import main

ROOT = Path(__file__).resolve().parents[1]
T, U, V6, P = "tcp-10mbit-loss2.pcapng", "udp-fragments.pcapng", "ipv6.pcapng", "ppcb.pcapng"
S, R, VL, L = "two-interfaces.pcapng", "udp-fragments-rawip.pcap", "vlan.pcap", "tcp-loss-usec.pcap"
LO = "lo-linux-sll.pcapng"

# (filter, captures): each kept set equals tshark 4.0's, frame by frame
CASES = [
    ("tcp.port == 5201 and frame.len > 100", [T]),
    ("udp", [U, V6, R]),                      # fragments: UDP on the last one, and only when reassembled
    ("udp.length > 1000", [U, R]),            # the whole datagram's length on its last fragment
    ("ip.addr == 10.77.0.0/16 && !tcp", [U]),
    ("ip.addr != 127.0.0.1", [P, LO]),
    ("ip.addr === 127.0.0.1", [LO, P]),
    ("ip.addr !== 127.0.0.1", [LO, P]),
    ("ip.src in {10.77.1.1, 127.0.0.66}", [P, U]),
    ("tcp.port in {22, 5200..5202} and frame.len gt 1000", [T]),
    ("frame.number in {1, 3, 5..10}", [P]),
    ("frame.time_relative >= 0.5 and frame.time_relative < 1.25", [T]),
    ("tcp.stream == 1 or udp.stream == 0", [U, P]),
    ("tcp.analysis.retransmission", [T, L]),
    ("tcp.analysis.duplicate_ack || tcp.analysis.lost_segment", [T]),
    ("tcp.analysis.fast_retransmission or tcp.analysis.out_of_order", [T, L]),
    ("tcp.analysis.flags and not tcp.analysis.window_update", [T, V6]),
    ("tcp.analysis.window_update", [T, L]),
    ("tcp.flags.syn == 1 and tcp.flags.ack == 0", [T, V6]),
    ("tcp.flags.reset == 1 or tcp.flags.fin == 1", [P]),
    ("ipv6.addr == fd77::/16 and tcp.len > 0", [V6, VL]),
    ("ip.proto == 17 or ipv6.nxt == 6", [V6, U]),
    ("vlan.id == 7 and ipv6", [VL]),
    ("frame.cap_len < frame.len", [V6, R]),
    ("ip.flags.mf == 1 or ip.frag_offset > 0", [U]),
    ("tcp or udp and frame.len > 100", [P]),         # "and" binds tighter, as in Wireshark 4.0
    ("frame.interface_id == 1 and tcp.options.mss_val >= 1400", [S]),
    ("not (tcp.port == 5201) and tcp", [S]),
]
#: PPCB fields, against tshark with the kit's Lua dissector (frames only: a dataset has no bytes)
PPCB_CASES = [
    ("ppcb", [P]),
    ("ppcb.type == 6", [P]),
    ("ppcb.type == 1 or ppcb.data_len > 100", [P]),
    ("ppcb.packet_no >= 3 and udp", [P]),
    ("ppcb.session_id == 54:43:50:2d:46:49:4c:45", [P]),
    ('ppcb.session_id contains "FILE" and not ppcb.protocol_id == 2', [P]),
]
#: what the dataset's SQL does not do (frames only): the expert notes beyond the six flags, PPCB
FRAMES_ONLY = {"tcp.analysis.flags and not tcp.analysis.window_update", "tcp.analysis.window_update",
               *(expr for expr, _ in PPCB_CASES)}
PAIRS = [(expr, name) for expr, names in CASES + PPCB_CASES for name in names]
LUA = ROOT / "lib" / "wirelab" / "capture" / "tools" / "ppcb.lua"


def _path(name: str) -> Path:
    return next(p for p in (ROOT / "captures" / name, ROOT / "tests" / "data" / name) if p.exists())


@pytest.fixture(scope="module")
def tshark_sets():
    """tshark's frame numbers for every (filter, capture), two at a time."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")

    def run(pair):
        expr, name = pair
        lua = ["-X", f"lua_script:{LUA}"] if "ppcb" in expr else []
        out = subprocess.run(["tshark", *lua, "-r", str(_path(name)), "-Y", expr, "-T", "fields", "-e", "frame.number"],
                             capture_output=True, text=True, timeout=60, check=True)
        return pair, {int(n) for n in out.stdout.split()}
    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, PAIRS))


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    root = tmp_path_factory.mktemp("filter-datasets")
    names = sorted({name for _, name in PAIRS})
    frames = {name: read_capture(_path(name)) for name in names}
    sets = {name: open_dataset(convert(_path(name), root / name, chunk_packets=500, progress=False)) for name in names}
    yield frames, sets
    for ds in sets.values():
        ds.close()


def test_the_cases_are_not_trivial(tshark_sets, captures):
    """Most cases keep some frames and leave some out (else equality would prove little)."""
    frames, _ = captures
    middling = [0 < len(tshark_sets[pair]) < len(frames[pair[1]]) for pair in PAIRS]
    assert sum(middling) >= 0.8 * len(PAIRS)


@pytest.mark.parametrize("expr,name", PAIRS)
def test_frames_kept_equal_tsharks(expr, name, tshark_sets, captures):
    frames, sets = captures
    want = tshark_sets[(expr, name)]
    f = compile_filter(expr)
    df = frames[name]
    packets = ppcb_packets(_path(name)) if "ppcb" in f.sources else None
    assert set(df["frame"][f.mask(df, ppcb=packets)].tolist()) == want
    assert set((np.flatnonzero(f.mask(df, ppcb=packets)) + 1).tolist()) == want
    ds = sets[name]
    if expr in FRAMES_ONLY:
        with pytest.raises(UsageError, match="frames only|dataset does not hold"):
            f.sql(ds)
        return
    assert set(ds.sql(f"SELECT frame FROM packets WHERE {f.sql(ds)}")["frame"].tolist()) == want


def test_a_precomputed_analysis_is_used_and_the_expert_notes_map_to_its_columns(captures):
    df = captures[0][T]
    flags = tcp_analysis(df, expert=True)
    for name, column in [("tcp.analysis.keep_alive", "keep_alive"), ("tcp.analysis.zero_window", "zero_window"),
                         ("tcp.analysis.ack_lost_segment", "ack_unseen"), ("tcp.analysis.retransmission", "retransmission")]:
        assert np.array_equal(compile_filter(name).mask(df, flags), flags[column].to_numpy())
    fake = flags.assign(retransmission=False)          # given, so not computed again
    assert not compile_filter("tcp.analysis.retransmission").mask(df, fake).any()


def test_ppcb_fields_read_the_packets_table(captures):
    df = captures[0][P]
    packets = ppcb_packets(_path(P))
    conn = compile_filter('ppcb.type == CONN')
    assert set(df["frame"][conn.mask(df, ppcb=packets)]) == set(packets["frame"][packets["type"] == "CONN"])
    assert compile_filter("ppcb").mask(df, ppcb=packets).sum() == packets["frame"].nunique()
    session = packets["session_id"].dropna().iloc[0]
    hexed = ":".join(session[i:i + 2] for i in range(0, len(session), 2))
    kept = compile_filter(f"ppcb.session_id == {hexed}").mask(df, ppcb=packets)
    assert set(df["frame"][kept]) == set(packets["frame"][packets["session_id"] == session])
    assert compile_filter(f"ppcb.session_id contains {hexed[-5:]}").mask(df, ppcb=packets)[kept].all()
    with pytest.raises(UsageError, match="ppcb_packets"):
        conn.mask(df)
    with pytest.raises(UsageError, match="dataset does not hold"):
        conn.sql()


def test_the_tree_binds_not_then_and_then_or():
    tree = parse("a or not b and c")
    assert isinstance(tree, Binary) and tree.op == "or"
    assert isinstance(tree.right, Binary) and tree.right.op == "and" and isinstance(tree.right.left, Not)
    tree = parse("(a || b) && !c")
    assert tree.op == "and" and tree.left.op == "or"


def test_sets_ranges_strings_and_operator_words():
    t = parse('tcp.port in {80, 443, 8000..8080}')
    assert isinstance(t, FieldTest) and t.op == "in" and len(t.members) == 3
    assert [m.text for m in t.members[2]] == ["8000", "8080"]
    assert isinstance(parse("tcp.port not in {80}"), Not)
    for word, op in [("eq", "eq"), ("ne", "ne"), ("===", "all_eq"), ("!==", "any_ne"), ("ge", "ge"), ("lt", "lt")]:
        assert parse(f"tcp.port {word} 80").op == op
    assert parse(r'ppcb.session_id == "a\"b\x41"').value.text == 'a"bA'
    f = compile_filter("ip.addr == 10.0.0.0/8 and (tcp.port == 80 or udp) and frame.len > 0x64")
    assert f.fields == ("ip.addr", "tcp.port", "udp", "frame.len")
    assert f.tree.right.values == (100,)


@pytest.mark.parametrize("expr,where,says", [
    ("tcp.prot == 80", "tcp.prot", "did you mean tcp.port"),
    ("http.host == 1", "http.host", "protocols known here"),
    ("tcp.port == 80 @ udp", "@", "not part of the display-filter language"),
    ("tcp.port = 80", "=", "not part of the display-filter language"),
    ("(tcp or udp", "", "not closed"),
    ("tcp.port == eighty", "eighty", "not a whole number"),
    ("ip.addr == fe80::1", "fe80::1", "IPv6 address"),
    ("ip.addr == 10.0.0.300", "10.0.0.300", "not an address"),
    ("frame.len contains 3", "contains", "no bytes or text"),
    ("tcp.port in {80 443}", "443", "separated by commas"),
    ("tcp == 1", "==", "tested by its name alone"),
    ("tcp and", "", "field name is expected"),
    ("tcp udp", "udp", "not a comparison"),
    ("tcp) and udp", ")", "not expected here"),
    ('ppcb.session_id == "ab', '"ab', "no closing quote"),
])
def test_errors_point_at_the_token(expr, where, says):
    with pytest.raises(FilterError) as err:
        compile_filter(expr)
    text = str(err.value)
    assert says in text
    quoted, caret = text.splitlines()[-2:]
    assert quoted.strip() == expr
    column = caret.index("^")
    assert expr[column - 4:].startswith(where) if where else column - 4 == len(expr)
    assert isinstance(err.value, UsageError)


def test_every_field_of_the_table_runs_on_frames_and_in_sql(captures):
    """Each field, bare and compared, on a capture's frames; and in SQL unless named frames-only."""
    frames, sets = captures
    df, ds, packets = frames[P], sets[P], ppcb_packets(_path(P))
    for name, field in FIELDS.items():
        for expr in [name] + ([] if field.kind == "flag" and not field.columns else
                              [f"{name} == {'10.0.0.0/8' if field.kind == 'addr4' else '::1' if field.kind == 'addr6' else 'ab:cd' if field.kind == 'text' else 1}"]):
            f = compile_filter(expr)
            kept = f.mask(df, ppcb=packets)
            assert kept.dtype == bool and kept.shape == (len(df),)
            try:
                where = f.sql(ds)
            except UsageError as err:
                assert field.source in ("ppcb", "analysis"), (expr, err)
                continue
            assert set(ds.sql(f"SELECT frame FROM packets WHERE {where}")["frame"]) == set(df["frame"][kept]), expr


def test_analyze_filter_narrows_the_report(capsys, captures):
    path = str(_path(T))
    assert main(["analyze", path, "--json", "--filter", "tcp.stream == 1"]) == 0
    r = json.loads(capsys.readouterr().out)
    whole = captures[0][T]
    kept = compile_filter("tcp.stream == 1").mask(whole)
    assert r["packets"] == kept.sum() < r["packets_read"] == len(whole)
    assert [f["packets"] for f in r["flows"]] == [kept.sum()]
    assert r["tcp_analysis"]["retransmission"] == tcp_analysis(whole)["retransmission"][kept].sum() > 0
    assert main(["analyze", str(captures[1][T].path), "--json", "--filter", "tcp.stream == 1"]) == 0
    assert json.loads(capsys.readouterr().out)["flows"] == r["flows"]          # a dataset: the same
    assert main(["analyze", path, "--filter", "tcp.analysis.retransmission"]) == 0
    assert "43 frames of 2353 (display filter: tcp.analysis.retransmission)" in capsys.readouterr().out
    assert main(["analyze", path, "--filter", "tcp.prot == 5201"]) == 2
    assert "did you mean tcp.port" in capsys.readouterr().err


def test_a_narrowed_table_is_filtered_too(captures):
    """Rows of a table already narrowed (an index with gaps, frames left out) keep their numbers."""
    df = captures[0][P]
    part = df[df["frame"] % 2 == 0]
    packets = ppcb_packets(_path(P))
    for expr in ["ppcb", "udp.port == 32975 or ppcb.type == 6", "ip.addr == 127.0.0.66 and frame.len > 100"]:
        f = compile_filter(expr)
        whole = set(df["frame"][f.mask(df, ppcb=packets)])
        assert whole and set(part["frame"][f.mask(part, ppcb=packets)]) == {n for n in whole if n % 2 == 0}
    with pytest.raises(UsageError, match="lacks"):
        compile_filter("tcp.analysis.keep_alive").mask(df, tcp_analysis(df))
