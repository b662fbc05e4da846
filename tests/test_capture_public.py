"""``open_capture`` against tshark 4.0 on captures of other software (tests/data/public/: curl, wget,
python's http.server, openssl, iperf3 and the kernel's TCP through a lossy router, taken with dumpcap;
see that folder's README): file by file, the TCP and UDP conversation tables, every TCP analysis
flag frame by frame, the expert counts, the bytes Follow TCP Stream gives for every stream, the
protocol hierarchy and a set of display filters.

tshark runs about 16 times per file (statistics, flags, hierarchy, follow, one per filter), two
files at a time, once per module (``tshark_says``).
Where the kit and tshark differ for a reason, the difference is in ``EXPECTED`` with that reason
(and in the README's capture section); every other difference fails.
"""
from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import wirelab
from wirelab.capture import open_capture

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "tests" / "data" / "public").glob("*.pcap*"))
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")

#: the kit's flag column → tshark's field
FLAG_FIELDS = {"retransmission": "tcp.analysis.retransmission",
               "fast_retransmission": "tcp.analysis.fast_retransmission",
               "spurious_retransmission": "tcp.analysis.spurious_retransmission",
               "out_of_order": "tcp.analysis.out_of_order", "lost_segment": "tcp.analysis.lost_segment",
               "duplicate_ack": "tcp.analysis.duplicate_ack", "keep_alive": "tcp.analysis.keep_alive",
               "zero_window": "tcp.analysis.zero_window", "window_update": "tcp.analysis.window_update",
               "ack_unseen": "tcp.analysis.ack_lost_segment", "keep_alive_ack": "tcp.analysis.keep_alive_ack",
               "window_full": "tcp.analysis.window_full", "reused_ports": "tcp.analysis.reused_ports"}
#: display filters run on every file
FILTERS = ["tcp.analysis.retransmission or tcp.analysis.fast_retransmission",
           "tcp.analysis.duplicate_ack and tcp.port == 8080",
           "tcp.analysis.lost_segment or tcp.analysis.ack_lost_segment",
           "tcp.flags.syn == 1 and tcp.flags.ack == 0",
           "tcp.flags.reset == 1 or tcp.flags.fin == 1",
           "tcp.len > 1000 and not tcp.analysis.flags",
           "udp and frame.len > 500",
           "ip.flags.mf == 1 or ip.frag_offset > 0",
           "ipv6 and (tcp.srcport == 5201 or udp)",
           "ip.addr == 10.78.2.0/24 and tcp.stream in {0, 1}",
           "frame.cap_len < frame.len",
           "tcp.window_size_value == 0 or tcp.analysis.window_update"]
#: the captures the filters run on (a tshark run each: all 25 would double the module's time)
FILTER_FILES = {"http-parallel-loss-client.pcapng", "http-parallel-loss-server.pcapng", "iperf3-reordered.pcapng",
                "iperf3-reverse-loss-sender.pcapng", "iperf3-ipv6-loss.pcapng", "tcp-zero-window.pcapng",
                "http-curl-frames-deleted.pcapng", "udp-fragments-ipv4.pcap", "udp-fragments-ipv6.pcapng",
                "tcp-reset-sll.pcapng", "loopback-sll2.pcapng", "tcp-port-reuse.pcapng", "tcp-in-ip-fragments.pcapng"}
#: the application protocols tshark finds in these captures (the kit says ``data``)
APPLICATIONS = ["http", "tls", "iperf3", "data-text-lines"]
#: (file, check, key) → why the kit differs from tshark there
EXPECTED: dict[tuple[str, str, str], str] = {}
#: tshark's TCP expert notes the kit does not make (none on these captures: zero-window probes
#: are not made, and none of them has one)
NOT_MADE: set[str] = set()


def _tshark(path, *args) -> str:
    from tshark_stats import tshark
    return tshark(path, *args, quiet=not {"-T", "-Y"} & set(args))


def _flags(path) -> dict[str, set[int]]:
    """Each TCP analysis flag → the frames tshark sets it on."""
    fields = list(FLAG_FIELDS.values())
    text = _tshark(path, "-T", "fields", "-e", "frame.number", *[a for f in fields for a in ("-e", f)],
                   "-Y", " or ".join(fields))
    out = {name: set() for name in FLAG_FIELDS}
    for line in text.splitlines():
        number, *values = line.split("\t")
        for name, value in zip(FLAG_FIELDS, values):
            if value:
                out[name].add(int(number))
    return out


_GAP = re.compile(rb"\[(\d+) bytes missing in capture file\]\x00")


def _follow_all(path, streams: int) -> dict[int, tuple[bytes, bytes, int, int]]:
    """``-z follow,tcp,raw,N`` for every stream in one run: stream → (node 0's bytes, node 1's,
    and the bytes each lacks). tshark writes "[N bytes missing in capture file]" and a NUL into
    the raw bytes at a hole; the kit counts holes apart (``Followed.missing``): taken out here."""
    if not streams:
        return {}
    text = _tshark(path, *[a for s in range(streams) for a in ("-z", f"follow,tcp,raw,{s}")])
    out = {}
    for block in re.split(r"^Follow: tcp,raw$", text, flags=re.M)[1:]:
        stream = int(re.search(r"^Filter: tcp.stream eq (\d+)$", block, re.M)[1])
        sent = {0: [], 1: []}
        body = block.split("Node 1:", 1)[1].split("\n", 1)[1]
        for line in body.splitlines():
            if line.startswith("====="):
                break
            if line.strip():
                sent[1 if line.startswith("\t") else 0].append(bytes.fromhex(line.strip()))
        raw = [b"".join(sent[0]), b"".join(sent[1])]
        holes = [sum(int(n) for n in _GAP.findall(r)) for r in raw]
        out[stream] = (_GAP.sub(b"", raw[0]), _GAP.sub(b"", raw[1]), *holes)
    return out


def _filter_frames(path) -> dict[str, set[int]]:
    """Each filter of FILTERS → the frames tshark's ``-Y`` keeps."""
    out = {}
    for expr in FILTERS:
        out[expr] = {int(n) for n in _tshark(path, "-Y", expr, "-T", "fields", "-e", "frame.number").split()}
    return out


def _hierarchy(path) -> list[tuple]:
    """``-z io,phs`` of what the kit decodes: tshark with its application dissectors and TCP
    reassembly off, so a payload is ``data`` (as the kit says) and not ``http``/``tls``/``iperf3``."""
    from tshark_stats import _blocks
    apps = [a for p in APPLICATIONS for a in ("--disable-protocol", p)]
    text = _tshark(path, "-T", "fields", "-e", "frame.number", *apps, "-o", "tcp.desegment_tcp_streams:FALSE",
                   "-z", "io,phs")       # (with -q, tshark leaves out the "frame" row)
    lines = next(v for k, v in _blocks(text).items() if k.startswith("Protocol Hierarchy"))
    rows = [re.match(r"^(\s*)(\S+)\s+frames:(\d+) bytes:(\d+)", line) for line in lines[2:]]
    return [(len(m[1]) // 2, m[2], int(m[3]), int(m[4])) for m in rows if m]


def _whole(path: Path) -> bool:
    """The file holds every payload byte (follow is compared with tshark on these)."""
    f = wirelab.read_capture(path)
    return bool((f["cap_len"] - f["payload_offset"].fillna(0) >= f["payload_len"].fillna(0)).all())


def _says(path: Path) -> dict:
    from tshark_stats import statistics
    said = statistics(path)
    said["flags"], said["phs"] = _flags(path), _hierarchy(path)
    said["follow"] = _follow_all(path, len(said["conv"].get("tcp", []))) if _whole(path) else None
    said["filters"] = _filter_frames(path) if path.name in FILTER_FILES else None
    return said


@pytest.fixture(scope="module")
def tshark_says():
    if not shutil.which("tshark"):
        pytest.skip("tshark not installed (apt-get install tshark)")
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(FILES, pool.map(_says, FILES)))


@pytest.fixture(scope="module")
def opened():
    cache = {}
    return lambda path: cache.setdefault(path, open_capture(path))


def _unexpected(path: Path, check: str, diffs: dict[str, object]) -> dict[str, object]:
    """The differences EXPECTED does not name (and EXPECTED's entries that no longer occur)."""
    named = {key for (name, c, key) in EXPECTED if name == path.name and c == check}
    out = {k: v for k, v in diffs.items() if k not in named}
    out.update({f"fixed? {k}": "named in EXPECTED but equal" for k in named - set(diffs)})
    return out


def test_there_are_enough_captures_of_other_software():
    assert len(FILES) >= 20
    assert all(p.stat().st_size < 200_000 for p in FILES)


# -- what these captures taught the kit (frame numbers as tshark 4.0 shows them) ----------------
def _marked(cap, name: str) -> set[int]:
    return set(cap.frames["frame"][cap.flags()[name].to_numpy()].tolist())


def test_a_header_the_snaplen_cut_moves_the_analysis_but_shows_no_flag_and_no_conversation_packet(opened):
    cap = opened(ROOT / "tests/data/public/iperf3-mss536-loss.pcapng")
    cut = cap.frames.set_index("frame").loc[[85, 87, 89]]
    assert (cut["payload_offset"] > cut["cap_len"]).all()       # 52-byte headers behind an 80-byte snaplen
    assert not cap.flags().loc[cut.index.map(lambda n: n - 1)].drop(columns=["conv", "a_to_b"]).to_numpy().any()
    data = cap.conversations("tcp").set_index("port_a").loc[57788]
    assert data["packets_b_to_a"] == 226                         # 229 frames, 3 of them cut
    rows = {r.protocol: r.frames for r in cap.protocols().itertuples() if r.level == 4}
    assert rows["_ws.short"] == 3
    # the cut duplicate ACKs are counted: the next one's number goes on from theirs
    cap = opened(ROOT / "tests/data/public/iperf3-reordered.pcapng")
    number = dict(zip(cap.frames["frame"], cap.flags()["dupack_num"]))
    assert (number[351], number[353], number[355], number[357]) == (1, 0, 3, 4)     # 353 is cut


def test_the_handshake_rtt_runs_from_the_latest_syn(opened):
    """Stream 1's SYN was lost and resent after 1 s: the RTT (the out-of-order threshold) is
    the resent SYN's 89 µs, so the server's resends 25 ms apart are retransmissions."""
    cap = opened(ROOT / "tests/data/public/http-parallel-loss-client.pcapng")
    assert {618, 670, 720} <= _marked(cap, "retransmission")
    assert not {618, 670, 720} & _marked(cap, "out_of_order")


def test_a_syn_on_reused_ports_begins_a_new_conversation(opened):
    """Three GETs from client port 40000 one after another: three conversations, the second
    and third SYN marked (they were one conversation with 4 "previous segment not captured")."""
    cap = opened(ROOT / "tests/data/public/tcp-port-reuse.pcapng")
    table = cap.conversations("tcp")
    assert len(table) == 3 and (table["port_a"] == 40000).all() and (table["packets"] == 12).all()
    syn = cap.frames["frame"][(cap.frames["tcp_flags"] & 0x12) == 0x02].tolist()
    assert sorted(_marked(cap, "reused_ports")) == syn[1:]
    assert not _marked(cap, "lost_segment") and not _marked(cap, "ack_unseen")


def test_a_resend_of_acknowledged_bytes_within_the_rtt_is_spurious_not_out_of_order(opened):
    """Frame 362 comes 2.7 µs after the highest segment (the RTT is 6.6 µs) with bytes the
    receiver had ACKed: tshark 4.0.17 checks spurious first."""
    cap = opened(ROOT / "tests/data/public/iperf3-reordered-run2.pcapng")
    assert 362 in _marked(cap, "spurious_retransmission") and 362 not in _marked(cap, "out_of_order")


def test_after_a_reset_without_ack_no_resend_is_spurious(opened):
    """The receiver's RSTs carry no ACK (ack 0): Wireshark's lastack is then unset."""
    cap = opened(ROOT / "tests/data/public/iperf3-reordered.pcapng")
    assert 443 in _marked(cap, "retransmission")
    assert 443 not in _marked(cap, "spurious_retransmission")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_tcp_and_udp_conversations_equal_tsharks(path, opened, tshark_says):
    cap, said = opened(path), tshark_says[path]
    diffs = {}
    for kind in ("tcp", "udp"):
        table = cap.conversations(kind)
        # (a 4-tuple used again is another conversation: told apart by its start)
        ours: dict[tuple, list] = {}
        for r in table.itertuples():
            ours.setdefault((f"{r.address_a}:{r.port_a}", f"{r.address_b}:{r.port_b}"), []).append(r)
        theirs = said["conv"].get(kind, [])
        if len(table) != len(theirs):
            diffs[f"{kind} count"] = (len(table), len(theirs))
        for c in theirs:
            same = [r for r in ours.get((c["a"], c["b"]), []) if abs(r.rel_start - c["rel_start"]) < 1e-5]
            r = same[0] if same else None
            if r is None:
                diffs[f"{kind} {c['a']}"] = "missing"
                continue
            for name in ("packets", "packets_a_to_b", "packets_b_to_a"):
                if getattr(r, name) != c[name]:
                    diffs[f"{kind} {c['a']} {name}"] = (getattr(r, name), c[name])
            for name in ("bytes", "bytes_a_to_b", "bytes_b_to_a"):
                value, step = c[name]                   # (tshark rounds down to its unit: "64 kB")
                if not value <= getattr(r, name) < value + step:
                    diffs[f"{kind} {c['a']} {name}"] = (getattr(r, name), value)
    assert _unexpected(path, "conversations", diffs) == {}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_tcp_analysis_flag_frame_by_frame_equals_tsharks(path, opened, tshark_says):
    cap, said = opened(path), tshark_says[path]
    flags, numbers = cap.flags(), cap.frames["frame"].to_numpy()
    diffs = {}
    for name, want in said["flags"].items():
        got = set(numbers[flags[name].to_numpy()].tolist())
        if got != want:
            diffs[name] = {"kit only": sorted(got - want), "tshark only": sorted(want - got)}
    assert _unexpected(path, "flags", diffs) == {}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_expert_counts_equal_tsharks(path, opened, tshark_says):
    expert, said = opened(path).expert(), tshark_says[path]["expert"]
    made = dict(zip(expert["summary"], expert["count"]))
    diffs = {s: (made.get(s, 0), said.get(s, 0)) for s in (set(made) | set(said)) - NOT_MADE
             if made.get(s, 0) != said.get(s, 0)}
    frames = tshark_says[path]["expert_frames"]
    diffs.update({f"{s} frames": "differ" for s, f in zip(expert["summary"], expert["frames"])
                  if s not in diffs and f.tolist() != frames.get(s, [])})
    assert _unexpected(path, "expert", diffs) == {}
    assert (expert["frames"].map(len) == expert["count"]).all()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_follow_gives_tsharks_bytes_for_every_stream(path, opened, tshark_says):
    said = tshark_says[path]["follow"]
    if said is None:
        pytest.skip("the snaplen cut the payloads (follow compared on whole captures; see test_capture_open)")
    cap = opened(path)
    assert set(said) == set(cap.conversations("tcp")["stream"].astype(int))
    diffs = {}
    for stream, (a_to_b, b_to_a, lacks_a, lacks_b) in said.items():
        ours = cap.follow(stream)
        if (ours.a_to_b, ours.b_to_a) != (a_to_b, b_to_a):
            diffs[str(stream)] = ((len(ours.a_to_b), len(ours.b_to_a)), (len(a_to_b), len(b_to_a)))
        if ours.missing != {"a_to_b": lacks_a, "b_to_a": lacks_b}:
            diffs[f"{stream} missing"] = (ours.missing, (lacks_a, lacks_b))
    assert _unexpected(path, "follow", diffs) == {}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_protocol_hierarchy_equals_tsharks(path, opened, tshark_says):
    ours = [(int(r.level), r.protocol, int(r.frames), int(r.bytes)) for r in opened(path).protocols().itertuples()]
    theirs = tshark_says[path]["phs"]
    diffs = {} if ours == theirs else {"rows": {"kit only": sorted(set(ours) - set(theirs)),
                                                "tshark only": sorted(set(theirs) - set(ours))}}
    assert _unexpected(path, "protocols", diffs) == {}


@pytest.mark.parametrize("path", [p for p in FILES if p.name in FILTER_FILES], ids=lambda p: p.name)
def test_display_filters_keep_tsharks_frames(path, opened, tshark_says):
    cap, said = opened(path), tshark_says[path]["filters"]
    diffs = {}
    for expr, want in said.items():
        got = set(cap.filter(expr).frames["frame"].tolist())
        if got != want:
            diffs[expr] = {"kit only": sorted(got - want)[:10], "tshark only": sorted(want - got)[:10]}
    assert _unexpected(path, "filters", diffs) == {}


def test_the_filters_are_not_trivial(tshark_says):
    """Each filter keeps some frames somewhere and leaves some out (else equality proves little)."""
    for expr in FILTERS:
        kept = [len(s["filters"][expr]) for s in tshark_says.values() if s["filters"]]
        assert any(kept), expr
    assert np.mean([0 < len(s["filters"][e]) for s in tshark_says.values() if s["filters"] for e in FILTERS]) > 0.3


@pytest.mark.parametrize("name", ["iperf3-mss536-loss.pcapng", "iperf3-reordered.pcapng",
                                  "http-parallel-loss-client.pcapng", "tcp-port-reuse.pcapng",
                                  "iperf3-reordered-run2.pcapng"])
def test_the_datasets_sql_gives_the_same_flags_and_flows(name, tmp_path):
    """The DuckDB twin (capture/sql/) follows the same rules: header cut, RTT from the latest
    SYN, lastack without ACK, reused ports, spurious before out-of-order."""
    import pandas as pd
    from wirelab.capture import convert, flows, open_dataset, read_capture, tcp_analysis
    path = ROOT / "tests/data/public" / name
    df = read_capture(path)
    with open_dataset(convert(path, tmp_path / name, chunk_packets=300, progress=False)) as ds:
        pd.testing.assert_frame_equal(tcp_analysis(df), ds.tcp_analysis(), check_dtype=False)
        pd.testing.assert_frame_equal(flows(df), ds.flows(), check_dtype=False)
