"""The fast path for the usual packet (capture.fastpath) gives exactly what the general decoder
gives: same columns, types, values, missing values and notes, on every committed capture, on
the bench's synthetic capture and on a capture mixing every shape of packet."""
from __future__ import annotations

import importlib.util
import struct
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import wirelab.capture.reader.decode as decode
from wirelab.capture import iter_capture, read_capture

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def numpy_path(monkeypatch):
    """These tests are about the numpy fast path: the compiled reader (capture.reader.jit, which would
    take large files) is compared with it in test_capture_jit.py."""
    monkeypatch.setenv("WIRELAB_NO_JIT", "1")
CAPTURES = sorted((ROOT / "captures").glob("*.pcapng")) + sorted((ROOT / "tests" / "data").glob("*.pcap*"))


class Counted:
    """decode_fast, counting the blocks and rows it took and the rows it left to dissect
    (blocks are decoded in two threads: the counts under a lock)."""

    def __init__(self, real):
        self.real, self.blocks, self.rows, self.left, self.declined = real, 0, 0, 0, 0
        self.lock = threading.Lock()

    def __call__(self, out, rows, h, linktype, frame_len):
        misfits = self.real(out, rows, h, linktype, frame_len)
        with self.lock:
            if misfits is None:
                self.declined += 1
            else:
                self.blocks += 1
                self.rows += h.size - misfits.size
                self.left += misfits.size
        return misfits


def both_ways(monkeypatch, source, block: int | None = None):
    """(general, fast, counts): the capture read with the fast path off and on."""
    if block:
        monkeypatch.setattr(decode, "BLOCK_PACKETS", block)
    counted = Counted(decode.decode_fast)
    monkeypatch.setattr(decode, "decode_fast", counted)
    monkeypatch.setattr(decode, "FAST", False)
    general = read_capture(source)
    monkeypatch.setattr(decode, "FAST", True)
    fast = read_capture(source)
    return general, fast, counted


def assert_same(general: pd.DataFrame, fast: pd.DataFrame) -> None:
    """Same columns, dtypes, missing values, values and attrs (a missing value is compared as
    missing: what an integer array keeps under its mask is no value of the DataFrame)."""
    assert list(fast.columns) == list(general.columns)
    for name in general.columns:             # column by column: the first difference is named
        assert fast[name].dtype == general[name].dtype, name
        pd.testing.assert_series_equal(fast[name], general[name], check_exact=True, obj=name)
    assert fast.attrs == general.attrs


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
@pytest.mark.parametrize("block", [None, 7])
def test_committed_captures_read_the_same_both_ways(monkeypatch, path, block):
    """Whole files (one block each) and blocks of 7 packets (most all usual, some mixed)."""
    general, fast, _ = both_ways(monkeypatch, path, block)
    assert_same(general, fast)


def test_the_fast_path_takes_the_usual_packets_of_committed_captures(monkeypatch):
    _, _, counted = both_ways(monkeypatch, ROOT / "captures" / "tcp-10mbit-loss2.pcapng")
    assert counted.blocks == 1 and counted.rows > 1000
    _, _, counted = both_ways(monkeypatch, ROOT / "tests" / "data" / "ip46-null.pcap")
    assert counted.rows > 0                   # BSD loopback: its IPv4 packets too


# ---- a capture of every shape: the packets are built here, byte by byte

def _ipv4(proto: int, l4: bytes, *, options: bytes = b"", frag: int = 0, more: bool = False,
          total: int | None = None, ident: int = 1, src: int = 0x0A000001, dst: int = 0x0A000002) -> bytes:
    ihl = 5 + len(options) // 4
    length = 4 * ihl + len(l4) if total is None else total
    flags = (0x2000 if more else 0) | (frag // 8)
    return struct.pack(">BBHHHBBHII", 0x40 | ihl, 0, length, ident, flags, 64, proto, 0, src, dst) + options + l4


def _tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"",
         options: bytes = b"") -> bytes:
    off = (20 + len(options)) // 4
    return struct.pack(">HHIIHHHH", sport, dport, seq, ack, (off << 12) | flags, 65535, 0, 0) + options + payload


def _udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload


def _eth(ethertype: int, body: bytes, vlan: int | None = None) -> bytes:
    tag = struct.pack(">HH", 0x8100, vlan) if vlan is not None else b""
    return b"\x02" * 6 + b"\x04" * 6 + tag + struct.pack(">H", ethertype) + body


SYN_OPTIONS = b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + bytes(8) + b"\x01\x03\x03\x07"   # MSS, SACK ok, TS, WS


def mixed_frames(n: int, seed: int = 3) -> list[bytes]:
    """Mostly IPv4 TCP and UDP, with IPv6, ARP, VLAN, IP and TCP options, fragments, TSO,
    ICMP, SYNs, and a few frames that are not IP at all."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n):
        data = bytes(int(rng.integers(0, 1400)))
        kind = int(rng.integers(0, 100))
        seq = int(rng.integers(0, 2**32))
        if kind < 60:
            frame = _eth(0x0800, _ipv4(6, _tcp(5201, 40000 + i % 7, seq, 7, 0x10, data), ident=i))
        elif kind < 72:
            src = int(rng.integers(0, 2**32))
            frame = _eth(0x0800, _ipv4(17, _udp(5001, 6000, data[:600]), ident=i, src=src))
        elif kind < 74:
            frame = _eth(0x0800, _ipv4(6, _tcp(40000, 5201, seq, 0, 0x02, options=SYN_OPTIONS)))
        elif kind < 76:
            timestamps = b"\x01\x01\x08\x0a" + bytes(8)
            frame = _eth(0x0800, _ipv4(6, _tcp(40000, 5201, seq, 1, 0x18, data, options=timestamps)))
        elif kind < 78:
            frame = _eth(0x0800, _ipv4(6, _tcp(1, 2, seq, 3, 0x10, data), options=b"\x94\x04\x00\x00"))
        elif kind < 80:
            frame = _eth(0x0800, _ipv4(17, data[:200], frag=1480, ident=i))            # a later fragment
        elif kind < 82:
            frame = _eth(0x0800, _ipv4(17, _udp(7, 8, data[:300]), more=True, ident=i))  # a first fragment
        elif kind < 84:
            frame = _eth(0x0800, _ipv4(6, _tcp(5201, 40000, seq, 9, 0x10, data), total=0))  # TSO
        elif kind < 86:
            frame = _eth(0x0800, _ipv4(1, b"\x08\x00" + bytes(30)))                      # ICMP
        elif kind < 88:
            ip6 = struct.pack(">IHBB", 0x60000000, 20 + len(data[:500]), 6, 64) + bytes(15) + b"\x01" + \
                bytes(15) + b"\x02" + _tcp(443, 50000, seq, 5, 0x10, data[:500])
            frame = _eth(0x86DD, ip6)
        elif kind < 90:
            frame = _eth(0x0806, struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + bytes(20))   # ARP
        elif kind < 92:
            frame = _eth(0x0800, _ipv4(6, _tcp(80, 81, seq, 2, 0x10, data)), vlan=100)
        elif kind < 94:
            frame = _eth(0x0800, _ipv4(6, _tcp(80, 81, seq, 2, 0x10, data), options=bytes(40)))  # longest IHL
        elif kind < 96:
            frame = _eth(0x0800, bytes([0x45]) + bytes(int(rng.integers(0, 40))))    # too short to be IPv4
        elif kind < 98:
            bad = bytearray(_tcp(1, 2, seq, 3, 0x10, data))
            bad[12] = 0x20                                   # data offset of 2 words: no TCP header
            frame = _eth(0x0800, _ipv4(6, bytes(bad)))
        else:
            frame = _eth(0x88CC, bytes(46))                                           # LLDP: not IP
        frames.append(frame)
    return frames


def relink(frames: list[bytes], linktype: int) -> list[bytes]:
    """The Ethernet frames of ``mixed_frames`` as another link type would carry them: raw IP
    (101: the Ethernet header gone), BSD loopback (0: the address family in the host's order,
    108: in network order), Linux cooked capture (113)."""
    out = []
    for frame in frames:
        tagged = frame[12:14] == b"\x81\x00"
        ethertype = frame[16:18] if tagged else frame[12:14]
        body = frame[18:] if tagged else frame[14:]
        family = {b"\x08\x00": 2, b"\x86\xdd": 24}.get(ethertype, 0x1234)
        if linktype == 101:
            out.append(body)
        elif linktype in (0, 108):
            out.append(struct.pack("<I" if linktype == 0 else ">I", family) + body)
        else:
            out.append(struct.pack(">HHH", 0, 1, 6) + frame[6:12] + b"\0\0" + ethertype + body)
    return out


def write_pcap(frames: list[bytes], snaplens: list[int], linktype: int = 1) -> bytes:
    parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype)]
    for i, (frame, snap) in enumerate(zip(frames, snaplens)):
        cap = frame[:snap]
        parts.append(struct.pack("<IIII", 1700000000 + i // 1000, i % 1000 * 1000, len(cap), len(frame)) + cap)
    return b"".join(parts)


def write_pcapng(frames: list[bytes], snaplens: list[int], linktype: int = 1) -> bytes:
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    idb = struct.pack("<IIHHI", 1, 20, linktype, 0, 0) + struct.pack("<I", 20)
    parts = [shb, idb]
    for i, (frame, snap) in enumerate(zip(frames, snaplens)):
        cap = frame[:snap]
        pad = -len(cap) % 4
        blen = 32 + len(cap) + pad
        ts = (1700000000 + i) * 1_000_000
        parts.append(struct.pack("<IIIIIII", 6, blen, 0, ts >> 32, ts & 0xFFFFFFFF, len(cap), len(frame))
                     + cap + bytes(pad) + struct.pack("<I", blen))
    return b"".join(parts)


def mixed_capture(fmt: str, n: int = 3000, linktype: int = 1) -> bytes:
    frames = mixed_frames(n)
    if linktype != 1:
        frames = relink(frames, linktype)
    rng = np.random.default_rng(4)
    # one frame in ten cut by a small snaplen, anywhere in the link, IP or transport header
    snaplens = [int(rng.integers(0, 80)) if rng.random() < 0.1 else 262144 for _ in frames]
    return (write_pcap if fmt == "pcap" else write_pcapng)(frames, snaplens, linktype)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("block", [None, 64, 5])
def test_a_capture_of_every_shape_reads_the_same_both_ways(monkeypatch, fmt, block):
    general, fast, counted = both_ways(monkeypatch, mixed_capture(fmt), block)
    assert_same(general, fast)
    assert counted.rows > 1000 and counted.left > 100     # both paths had work in the same blocks
    if block == 5:
        assert counted.declined > 0                      # and some blocks were mostly unusual
    kinds = general["l3"].value_counts()
    assert kinds["ipv6"] > 0 and kinds["arp"] > 0 and kinds["other"] > 0
    assert general["vlan"].notna().any() and general["tcp_mss"].notna().any()
    assert (general["cap_len"] < general["frame_len"]).sum() > 100


def test_streaming_reads_the_same_both_ways(monkeypatch):
    data = mixed_capture("pcapng")
    monkeypatch.setattr(decode, "FAST", False)
    general = list(iter_capture(data, chunk_packets=700))
    monkeypatch.setattr(decode, "FAST", True)
    fast = list(iter_capture(data, chunk_packets=700))
    assert len(general) == len(fast) == 5
    for g, f in zip(general, fast):
        assert_same(g, f)


@pytest.fixture(scope="module")
def bench_files(tmp_path_factory):
    """The bench's synthetic capture (bench/bench_capture.py), 70,000 packets: pcapng and pcap."""
    spec = importlib.util.spec_from_file_location("bench_capture", ROOT / "bench" / "bench_capture.py")
    bench = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "bench"))        # the script imports its sibling ``peers``
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    bench.WORK = tmp_path_factory.mktemp("bench")
    path = bench.make_file(70_000, None)
    return path, bench.pcap_copy(path)


@pytest.mark.parametrize("which", [0, 1], ids=["pcapng", "pcap"])
def test_the_bench_capture_reads_the_same_both_ways(monkeypatch, bench_files, which):
    general, fast, counted = both_ways(monkeypatch, bench_files[which])
    assert_same(general, fast)
    assert counted.blocks == 3 and counted.rows > 69_000


def test_syn_options_one_by_one_equal_the_numpy_pass(monkeypatch):
    """A few SYNs are read one at a time, many with numpy: both read the same MSS and window
    scale, whatever the option bytes (random kinds and lengths, cut by the header or the snaplen)."""
    import wirelab.capture.reader.dissect as dissect
    rng = np.random.default_rng(8)
    frames, snaplens = [], []
    for i in range(3000):
        words = int(rng.integers(0, 11))             # header length: 20 to 60 bytes
        options = bytearray((SYN_OPTIONS * 3)[:4 * words])
        for at in rng.integers(0, max(len(options), 1), int(rng.integers(0, 4))):   # a few bytes changed
            if at < len(options):
                options[at] = int(rng.choice([0, 1, 2, 3, 4, 255]))
        frames.append(_eth(0x0800, _ipv4(6, _tcp(1, 2, i, 0, 0x02, options=bytes(options)))))
        snaplens.append(int(rng.integers(54, 100)) if rng.random() < 0.2 else 262144)
    data = write_pcap(frames, snaplens)
    monkeypatch.setattr(dissect, "FEW_SYNS", 0)
    vector = read_capture(data)
    monkeypatch.setattr(dissect, "FEW_SYNS", 10 ** 9)
    scalar = read_capture(data)
    assert_same(vector, scalar)
    assert vector["tcp_mss"].notna().sum() > 300 and vector["tcp_wscale"].notna().sum() > 300


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("linktype", [101, 0, 108, 113], ids=["raw-ip", "null", "loop", "sll"])
def test_every_common_link_type_reads_the_same_both_ways(monkeypatch, fmt, linktype):
    general, fast, counted = both_ways(monkeypatch, mixed_capture(fmt, 1500, linktype), 64)
    assert_same(general, fast)
    assert counted.rows > 500 and counted.left > 50       # the fast path took this link's usual packets
    assert (general["l3"] == "ipv4").sum() > 500 and (general["proto"] == "tcp").sum() > 500
