"""``open_capture``: Wireshark's Statistics and Analyze menus as data, checked against tshark 4.0 on every committed capture.

The differences kept, each named here and in the README's capture section:

* expert information (compared count by count and frame by frame, "Duplicate ACK (#n)"
  included, "D-SACK Sequence" too, read from the file's bytes): zero-window probes are not
  made (``NOT_MADE``; no committed capture has one);
* follow: on a capture the snaplen cut, the kit gives each byte the file holds once, in
  sequence order; tshark's bookkeeping counts only the captured part of a segment, so
  its text differs there: compared only on captures that hold every payload byte;
* protocol hierarchy: compared with tshark's JXTA heuristic turned off (it claims some
  cut payloads, shown as ``_ws.short``; the kit says ``data``).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import wirelab
from wirelab.capture import open_capture
from wirelab.errors import CaptureError, SetupError, UsageError

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("captures/*.pcap*"), *ROOT.glob("tests/data/*.pcap*")])
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")
#: tshark's TCP expert notes the kit does not make (see the module docstring)
NOT_MADE = {"TCP Zero Window Probe"}


@pytest.fixture(scope="module")
def opened():
    cache = {}
    return lambda path: cache.setdefault(path, open_capture(path))


@pytest.fixture(scope="module")
def tshark_says():
    from tshark_stats import statistics
    cache = {}
    return lambda path: cache.setdefault(path, statistics(path))


def _key(row, ported: bool) -> tuple[str, str]:
    if ported:
        return f"{row.address_a}:{row.port_a}", f"{row.address_b}:{row.port_b}"
    return row.address_a, row.address_b


@needs_tshark
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_conversations_and_endpoints_equal_tsharks(path, opened, tshark_says):
    cap, said = opened(path), tshark_says(path)
    for kind in ("tcp", "udp", "ip", "ipv6", "eth"):
        ours = {_key(r, kind in ("tcp", "udp")): r for r in cap.conversations(kind).itertuples()}
        theirs = said["conv"].get(kind, [])
        assert len(ours) == len(theirs), kind
        for c in theirs:
            r = ours[c["a"], c["b"]]                    # (A: the first frame's source, as tshark)
            for name in ("packets", "packets_a_to_b", "packets_b_to_a"):
                assert getattr(r, name) == c[name], (kind, c["a"], name)
            for name in ("bytes", "bytes_a_to_b", "bytes_b_to_a"):
                value, step = c[name]                   # (tshark rounds down to its unit: "64 kB")
                assert value <= getattr(r, name) < value + step, (kind, c["a"], name)
            assert r.rel_start == pytest.approx(c["rel_start"], abs=1e-6)
            assert r.duration == pytest.approx(c["duration"], abs=1e-4)
    for kind in ("tcp", "udp", "ip", "ipv6", "eth"):
        ours = sorted(tuple(v.item() if hasattr(v, "item") else v for v in row)
                      for row in cap.endpoints(kind).itertuples(index=False))
        assert ours == sorted(said["endpoints"].get(kind, [])), kind


@needs_tshark
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_protocol_hierarchy_and_expert_information_equal_tsharks(path, opened, tshark_says):
    cap, said = opened(path), tshark_says(path)
    ours = [(int(r.level), r.protocol, int(r.frames), int(r.bytes)) for r in cap.protocols().itertuples()]
    assert ours == said["phs"]
    expert = cap.expert()
    made = dict(zip(expert["summary"], expert["count"]))
    for summary in set(made) | set(said["expert"]) - NOT_MADE:
        assert made.get(summary, 0) == said["expert"].get(summary, 0), summary
    assert (expert["frames"].map(len) == expert["count"]).all()
    for summary, frames in zip(expert["summary"], expert["frames"]):        # frame by frame
        assert frames.tolist() == said["expert_frames"].get(summary, []), summary


def _whole(path: Path) -> bool:
    """The file holds every payload byte (no snaplen cut)."""
    f = wirelab.read_capture(path)
    return bool((f["cap_len"] - f["payload_offset"].fillna(0) >= f["payload_len"].fillna(0)).all())


#: the captures holding every payload byte (follow is compared with tshark on these)
WHOLE = [p for p in FILES if _whole(p)]


@needs_tshark
@pytest.mark.parametrize("path", WHOLE, ids=lambda p: p.name)
def test_follow_gives_tsharks_bytes_both_ways(path, opened):
    from tshark_stats import follow
    cap = opened(path)
    for stream in cap.conversations("tcp")["stream"][:4]:
        ours = cap.follow(int(stream))
        assert (ours.a_to_b, ours.b_to_a) == follow(path, int(stream)), stream
        assert ours.missing == {"a_to_b": 0, "b_to_a": 0}


def test_follow_on_a_cut_capture_gives_each_held_byte_once_and_counts_holes(opened):
    cap = opened(ROOT / "tests/data/tcp-loss-usec.pcap")
    f = cap.follow(1)
    chunks = f.chunks[f.chunks["a_to_b"]]
    assert (chunks["start"].to_numpy()[1:] >= chunks["end"].to_numpy()[:-1]).all() is not None
    assert chunks["end"].max() == len(f.a_to_b)
    assert f.missing["a_to_b"] > 0                      # a segment the capture lost
    assert f.a_to_b.startswith(b"onp3c3wxyyofd2v2m4k5urjxpwrx7x")


def test_a_filtered_capture_keeps_frame_and_stream_numbers_and_flags(opened):
    cap = opened(ROOT / "captures/tcp-10mbit-loss2.pcapng")
    bulk = cap.filter((cap.frames["sport"] == 44474).to_numpy() | (cap.frames["dport"] == 44474).to_numpy())
    assert len(bulk) == 2326 and "of 2353" in repr(bulk)
    conv = bulk.conversations("tcp")
    assert conv["stream"].tolist() == [1]                # tcp.stream of the whole capture
    assert conv["packets"].tolist() == cap.conversations("tcp").set_index("stream").loc[[1], "packets"].tolist()
    # flags come from the whole capture: the same frames keep the same marks
    assert bulk.flags()["retransmission"].sum() == cap.flags()["retransmission"][bulk.frames.index].sum()
    with pytest.raises(UsageError, match="one boolean per frame"):
        cap.filter([True, False])


def test_filter_with_a_display_filter_uses_the_filter_language(opened, monkeypatch):
    cap = opened(ROOT / "captures/ppcb.pcapng")
    stand_in = types.ModuleType("wirelab.capture.filter")

    class Compiled:
        def __init__(self, text):
            self.text = text

        def mask(self, frames, analysis=None, *, streams=None, ppcb=None):    # (capture-filter's interface)
            assert len(analysis) == len(frames) and (streams["stream"] == frames["stream"]).all()
            return (frames["proto"] == "udp").to_numpy()
    stand_in.compile_filter = Compiled
    monkeypatch.setitem(sys.modules, "wirelab.capture.filter", stand_in)
    udp = cap.filter("udp")
    assert len(udp) == int((cap.frames["proto"] == "udp").sum()) and len(udp.conversations("tcp")) == 0
    assert udp.io_graph(1.0).packets.sum() == len(udp)
    assert cap.io_graph(1.0, filter="udp")["packets"].sum() == len(udp)
    late = udp.filter((udp.frames["time_relative"] > 1.0).to_numpy()).filter("udp")     # (twice narrowed)
    assert len(late) == int(((cap.frames["proto"] == "udp") & (cap.frames["time_relative"] > 1.0)).sum())


def test_filter_without_the_filter_language_says_so(opened, monkeypatch):
    monkeypatch.setitem(sys.modules, "wirelab.capture.filter", None)      # (import fails)
    with pytest.raises(SetupError, match="display-filter"):
        opened(ROOT / "captures/ppcb.pcapng").filter("udp")


def test_io_graph_bins_every_frame_at_any_interval_from_the_capture_start(opened):
    cap = opened(ROOT / "captures/udp-fragments.pcapng")
    f = cap.frames
    for interval in (1e-6, 0.001, 0.05, 10.0):
        g = cap.io_graph(interval)
        assert g["packets"].sum() == len(f)
        assert len(g) == int(np.floor(f["time_relative"].max() / interval)) + 1
    bits, nbytes = cap.io_graph(0.01, y="bits"), cap.io_graph(0.01, y="bytes")
    assert (bits["bits"] == 8 * nbytes["bytes"]).all() and nbytes["bytes"].sum() == f["frame_len"].sum()
    late = (f["time_relative"] > 0.1).to_numpy()
    g = cap.io_graph(0.1, filter=late)
    assert g["packets"].iloc[0] == 0 and g["packets"].sum() == late.sum()       # (time from the capture's start)
    with pytest.raises(UsageError, match="unknown y"):
        cap.io_graph(0.1, y="frames")


def test_stream_graphs_of_a_lossy_transfer(opened):
    cap = opened(ROOT / "captures/tcp-10mbit-loss2.pcapng")
    s = cap.stream(1)
    seq = s.sequence_graph()
    data, acks = seq[seq["kind"] == "data"], seq[seq["kind"] == "ack"]
    assert data["retransmission"].sum() == 43            # as tshark's expert information
    assert (acks["seq"].cummax().diff().fillna(0) >= 0).all() and (acks["window"] >= acks["seq"]).all()
    assert data["end"].max() - 1448 <= acks["seq"].max() <= data["end"].max()   # (the last segment: RST)
    rtt = s.rtt()
    acked = (~data["retransmission"] & (data["end"] <= acks["seq"].max())).sum()
    assert (rtt["rtt"] > 0).all() and len(rtt) == acked    # a sample per segment sent once and acked
    tput = s.throughput()
    assert tput["goodput_bps"].le(tput["throughput_bps"] + 1e-9).all()
    assert 5e6 < tput["throughput_bps"].max() < 10.5e6     # a 10 Mbit/s link
    window = s.window()
    rwnd = window[window["kind"] == "rwnd"]["bytes"]
    assert rwnd.iloc[0] == 65160 and rwnd.iloc[1:].min() > 65535          # SYN unscaled, then scaled
    with pytest.raises(UsageError, match="no TCP stream 7"):
        cap.stream(7)


def test_stream_plot_draws_each_graph(opened):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    s = opened(ROOT / "tests/data/tcp-loss-usec.pcap").stream(1)
    for graph in ("sequence", "throughput", "rtt", "window"):
        ax = s.plot(graph)
        assert ax.has_data(), graph


def test_flow_graph_is_the_ppcb_ladder(opened):
    cap = opened(ROOT / "captures/ppcb.pcapng")
    flow = cap.flow_graph()
    assert {"CONN", "CONACC", "DATA", "ACC"} <= set(flow.packets["kind"])
    assert any("CONN" in line for line in flow.lines) and str(flow).count("\n") >= 5
    h = cap.protocols(ppcb=True)
    assert "ppcb" in set(h["protocol"])


def test_a_dataset_folder_opens_too(tmp_path):
    from wirelab.capture import convert
    path = ROOT / "tests/data/udp-fragments-rawip.pcap"
    convert(path, tmp_path / "ds")
    ds, file = open_capture(tmp_path / "ds"), open_capture(path)
    for kind in ("tcp", "udp", "ip"):
        pd.testing.assert_frame_equal(ds.conversations(kind), file.conversations(kind))
    pd.testing.assert_frame_equal(ds.protocols(), file.protocols())
    with pytest.raises(UsageError, match="holds no packet bytes"):
        ds.follow(0)
    with pytest.raises(CaptureError, match="not a capture dataset"):
        open_capture(tmp_path)


def test_what_is_no_capture_is_said_at_open_though_the_file_is_read_at_first_use(tmp_path):
    """``open_capture`` reads a file when a statistic first asks (the I/O graph of all frames:
    its record headers only), but a path that is no capture fails at once, as before."""
    text = tmp_path / "notes.txt"
    text.write_text("not a capture\n")
    for path, why in ((text, "not a pcap or pcapng file"), (tmp_path / "missing.pcap", "no capture file"),
                      (tmp_path / "empty.pcap", "starts with empty")):
        if path.name == "empty.pcap":
            path.write_bytes(b"")
        with pytest.raises(CaptureError, match=why):
            open_capture(path)
    cap = open_capture(ROOT / "captures/tcp-10mbit-loss2.pcapng")
    assert cap._unread
    cap.conversations("tcp")
    assert not cap._unread and cap._numbered is not None


def test_threads_asking_an_unread_capture_at_once_share_one_read(monkeypatch):
    """(the explorer's callbacks and a user's threads may ask together: one read, never half a one)"""
    import threading
    from wirelab.capture.stats import opened as module
    reads, real = [], module.read_part
    monkeypatch.setattr(module, "read_part", lambda *a, **k: reads.append(1) or real(*a, **k))
    cap = open_capture(ROOT / "captures/tcp-10mbit-loss2.pcapng")
    start, tables = threading.Barrier(8), []

    def ask():
        start.wait(timeout=30)
        tables.append(cap.conversations("tcp"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(reads) == 1 and len(tables) == 8
    for table in tables[1:]:
        pd.testing.assert_frame_equal(table, tables[0])


def test_open_capture_is_exported_at_the_top():
    assert wirelab.open_capture is open_capture and "open_capture" in wirelab.__all__


def test_an_empty_capture_gives_empty_tables(tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))
    cap = open_capture(path)
    for kind in ("tcp", "udp", "ip", "ipv6", "eth"):
        assert cap.conversations(kind).empty and cap.endpoints(kind).empty
    assert cap.protocols().empty and cap.io_graph(0.1).empty and cap.expert().empty
    with pytest.raises(UsageError, match="no TCP stream 0"):
        cap.follow(0)


def test_a_capture_used_in_a_with_block_lets_go_of_the_file():
    with open_capture(ROOT / "tests/data/vlan.pcap") as cap:
        before = cap.follow(0).a_to_b
    assert "_buffer" not in cap.__dict__
    assert cap.follow(0).a_to_b == before               # (mapped again when asked)
    cap.close()


def test_every_tcp_stream_of_every_capture_has_its_graphs(opened):
    for path in FILES:
        cap = opened(path)
        for stream in cap.conversations("tcp")["stream"]:
            s = cap.stream(int(stream))
            seq, rtt, window = s.sequence_graph(), s.rtt(), s.window()
            data = seq[seq["kind"] == "data"]
            assert (data["end"] > data["seq"]).all() and (rtt["rtt"] >= 0).all(), (path.name, stream)
            assert set(window["kind"]) <= {"rwnd", "in_flight"} and len(s.throughput()) == len(data)


@needs_tshark
def test_io_graph_equals_tsharks_io_stat(opened):
    from tshark_stats import io_stat
    path = ROOT / "captures/udp-fragments.pcapng"
    cap = opened(path)
    tcp = (cap.frames["proto"] == "tcp").to_numpy()
    for interval, mask, display_filter in ((0.01, None, ""), (0.02, tcp, "tcp")):
        packets, nbytes = cap.io_graph(interval, filter=mask), cap.io_graph(interval, y="bytes", filter=mask)
        ours = list(zip(packets["packets"].tolist(), nbytes["bytes"].tolist()))
        theirs = io_stat(path, interval, display_filter)
        assert ours == theirs[:len(ours)] and not any(f for f, _ in theirs[len(ours):])


@needs_tshark
@pytest.mark.parametrize("name", ["captures/two-interfaces.pcapng", "captures/udp-fragments.pcapng"])
def test_io_graph_of_all_frames_is_wiresharks_from_the_columns(name):
    """Of the reader's columns, no frames' table made: each frame in the bin of tshark's own
    ``frame.time_relative``, a frame timed before the first in none (Wireshark's I/O Graph:
    ui/io_graph_item.c). Where time never goes back, that is ``tshark -z io,stat``'s table too;
    two-interfaces.pcapng's second interface starts 1.8 µs before the first, and io,stat
    counts a frame whose time goes back in the interval it has reached (its 2nd and 3rd
    intervals hold 2 and 51 frames where the times say 4 and 30)."""
    from tshark_stats import io_stat, tshark
    path = ROOT / name
    text = tshark(path, "-T", "fields", "-e", "frame.time_relative", "-e", "frame.len", quiet=False)
    times, sizes = np.array([[float(v) for v in line.split("\t")] for line in text.splitlines()]).T
    monotone = bool((np.diff(times) >= 0).all())
    assert monotone == (name != "captures/two-interfaces.pcapng")
    for interval in (0.01, 0.0005):
        cap = open_capture(path)
        packets, nbytes = cap.io_graph(interval), cap.io_graph(interval, y="bytes")
        assert "frames" not in cap.__dict__
        keep = times >= 0
        bins = np.floor(times[keep] / interval).astype(np.int64)
        np.testing.assert_array_equal(packets["packets"], np.bincount(bins, minlength=len(packets)))
        np.testing.assert_array_equal(nbytes["bytes"], np.bincount(bins, sizes[keep], minlength=len(packets)))
        assert packets["packets"].sum() == keep.sum() == len(cap) - (name == "captures/two-interfaces.pcapng")
        if monotone:
            ours = list(zip(packets["packets"].tolist(), nbytes["bytes"].tolist()))
            theirs = io_stat(path, interval, "")
            assert ours == theirs[:len(ours)] and not any(f for f, _ in theirs[len(ours):])


@needs_tshark
def test_bytes_in_flight_equal_tsharks_without_loss(opened):
    from tshark_stats import tshark
    path = ROOT / "tests/data/tcp-bigendian.pcap"
    window = opened(path).stream(1).window()
    ours = window[window["kind"] == "in_flight"].set_index("frame")["bytes"]
    text = tshark(path, "-Y", "tcp.stream == 1 and tcp.analysis.bytes_in_flight", "-T", "fields", "-e", "frame.number",
                  "-e", "tcp.analysis.bytes_in_flight", quiet=False)
    theirs = {int(a): int(b) for a, b in (line.split("\t") for line in text.splitlines() if line)}
    assert len(theirs) > 10 and {frame: int(ours[frame]) for frame in theirs} == theirs


@pytest.mark.root
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed (apt-get install tshark)")
def test_a_live_capture_opens_running_and_stopped(tmp_path):
    import socket
    from wirelab.capture import LiveCapture
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    port = 38000 + (id(tmp_path) % 1000)

    def probe():
        sock.sendto(b"probe", ("127.0.0.1", port))
    with LiveCapture("lo", tmp_path / "lo.pcapng", capture_filter=f"udp port {port}", probe=probe) as live:
        for _ in range(20):
            sock.sendto(b"x" * 100, ("127.0.0.1", port))
        assert len(open_capture(live)) >= 0                # (what the file holds so far, running)
    sock.close()
    conv = open_capture(live).conversations("udp")
    assert len(conv) == 1 and conv["packets"].iloc[0] >= 21 and conv["port_b"].iloc[0] == port


def test_filter_with_the_real_display_filter_language_equals_tshark():
    # open_capture(...).filter runs wirelab.capture.filter (not a stand-in) and keeps tshark -Y's frames
    import shutil
    import subprocess
    from pathlib import Path

    import wirelab
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed (make tools)")
    path = Path(__file__).resolve().parents[1] / "captures" / "tcp-10mbit-loss2.pcapng"
    for expr in ("tcp.analysis.retransmission", "tcp and frame.len > 1000", "not tcp.port == 5201"):
        kept = wirelab.open_capture(path).filter(expr)
        out = subprocess.run([tshark, "-r", str(path), "-Y", expr, "-T", "fields", "-e", "frame.number"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.split()
        assert sorted(int(f) for f in kept.frames["frame"]) == [int(f) for f in out], expr


@pytest.mark.parametrize("path", [*FILES, *sorted(ROOT.glob("tests/data/public/*.pcap*"))], ids=lambda p: p.name)
def test_the_flags_of_a_few_streams_are_those_of_the_whole_capture(path, opened, monkeypatch):
    """A capture narrowed to some TCP streams analyses only those (``stream_flags``): each
    stream's flags, expert notes and graphs, and those of two streams at once, are the ones
    the whole capture's analysis gives (reused ports and conversation numbers included)."""
    whole = opened(path)
    every = whole.flags()
    streams = sorted(whole.conversations("tcp")["stream"])
    if not streams:
        pytest.skip("no TCP stream")
    import wirelab.capture.stats.stream_flags as stream_flags
    monkeypatch.setattr(stream_flags, "WHOLE_SHARE", 1.0)     # (streams of any size: never the whole)
    fresh = open_capture(path)              # (nothing analysed yet: the flags of its streams only)
    f = fresh.frames
    tcp = (f["proto"] == "tcp").to_numpy()
    for chosen in [[s] for s in streams] + [streams[-2:]]:
        mask = tcp & f["stream"].isin(chosen).to_numpy()
        narrowed = fresh.filter(mask)
        pd.testing.assert_frame_equal(narrowed.flags(), every.loc[narrowed.frames.index])
        pd.testing.assert_frame_equal(narrowed.expert(), whole.filter(mask).expert())
    for s in streams[:3]:
        pd.testing.assert_frame_equal(fresh.stream(s).sequence_graph(), whole.stream(s).sequence_graph())
    assert "_all_flags" not in fresh.__dict__
    lazy = open_capture(path)               # (no frames' table: one stream's rows of the reader's columns)
    for s in streams:
        mine = lazy._conversation("tcp", s)
        pd.testing.assert_frame_equal(mine.flags(), every.loc[mine.frames.index])
    pd.testing.assert_frame_equal(mine.expert(), whole.filter(whole.frames.index.isin(mine.frames.index)).expert())
    assert "frames" not in lazy.__dict__ and "_all_flags" not in lazy.__dict__


def test_read_at_gives_the_bytes_at_those_offsets_a_stretch_at_a_time(monkeypatch):
    """``Capture.read_at``: the file's bytes at any offsets in any order (repeated too), the same
    whether it reads the file in one stretch or a page at a time (letting each go)."""
    import wirelab.capture.stats.opened as opened
    path = ROOT / "captures" / "tcp-10mbit-loss2.pcapng"
    data = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    offsets = np.random.default_rng(5).integers(0, data.size - 6, 500)
    offsets[:3] = [0, data.size - 6, offsets[10]]
    expected = data[offsets[:, None] + np.arange(6)]
    with open_capture(path) as cap:
        np.testing.assert_array_equal(cap.read_at(offsets, 6), expected)
        monkeypatch.setattr(opened, "READ_STRETCH", 4096)
        np.testing.assert_array_equal(cap.read_at(offsets, 6), expected)
        np.testing.assert_array_equal(cap.read_at(offsets[:0], 6), expected[:0])


#: what a first read never needs: numba pays only on a file of gigabytes; the rest only when used
NOT_AT_FIRST_READ = ("numba", "llvmlite", "duckdb", "dask", "matplotlib", "scapy", "pyshark", "wirelab.viz",
                     "wirelab.capture.sql", "wirelab.capture.tools", "wirelab.capture.ladder",
                     "wirelab.capture.ppcb_reader", "wirelab.capture.ppcb_exchange", "wirelab.capture.filter")


def test_the_first_read_in_a_fresh_process_imports_numpy_pandas_and_the_reader_only():
    """Issue 33: a notebook's first ``open_capture(...).conversations()`` waits for numpy and
    pandas and little more (bench/bench_explorer.py times it); a PPCB capture is not decoded."""
    program = ("import sys, wirelab\n"
               "for path in sys.argv[1:]:\n"
               "    cap = wirelab.open_capture(path)\n"
               "    cap.conversations('tcp'), cap.conversations('udp')\n"
               f"print(sorted(m for m in sys.modules if m.startswith({NOT_AT_FIRST_READ!r})))\n")
    files = [ROOT / "captures" / name for name in ("tcp-10mbit-loss2.pcapng", "ppcb.pcapng")]
    done = subprocess.run([sys.executable, "-c", program, *map(str, files)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
