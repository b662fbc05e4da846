"""read_capture against tshark on real captures, every file format and link type, and damaged input.
The tests with ``reader_path`` run on both readers: numpy and compiled (capture.reader.jit)."""
from __future__ import annotations

import io
import shutil
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wirelab import CaptureError
from wirelab.capture import read_capture
from wirelab.capture.reader.decode import ReadState, scans

import capture_paths

reader_path = capture_paths.reader_path      # a fixture: the numpy and the compiled reader

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = sorted((ROOT / "captures").glob("*.pcapng")) + sorted((ROOT / "tests" / "data").glob("*.pcap*"))
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")

#: our column → tshark field (compared where tshark shows a value)
FIELDS = {"frame_len": "frame.len", "cap_len": "frame.cap_len", "ip_len": "ip.len", "ttl": "ip.ttl",
          "ip_id": "ip.id", "tcp_seq": "tcp.seq_raw", "tcp_win": "tcp.window_size_value",
          "tcp_hdr_len": "tcp.hdr_len", "tcp_mss": "tcp.options.mss_val", "frag_offset": "ip.frag_offset"}


def test_there_are_committed_captures():
    assert len(CAPTURES) >= 10


@needs_tshark
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_fields_equal_tshark(path):
    from wirelab.capture import tshark_fields
    df = read_capture(path)
    names = ["frame.time_epoch", "ip.src", "ipv6.src", "ipv6.dst", "tcp.srcport", "tcp.dstport", "udp.srcport",
             "tcp.len", "ipv6.plen", "ipv6.hlim", "vlan.id", "ieee8021ad.id", *FIELDS.values()]
    ts = tshark_fields(path, names, options=("-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"))
    assert len(ts) == len(df)
    assert np.allclose(df["time"], ts["frame.time_epoch"], atol=2e-6, rtol=0)

    def same(ours: pd.Series, theirs: pd.Series, name: str):
        shown = theirs.notna() & (theirs.astype(str) != "")
        a = pd.to_numeric(ours[shown].astype("Float64"), errors="coerce").to_numpy(float)
        b = pd.to_numeric(theirs[shown], errors="coerce").to_numpy(float)
        bad = np.flatnonzero(a != b)
        assert bad.size == 0, f"{name}: frames {bad[:5] + 1}: ours {a[bad[:5]]} tshark {b[bad[:5]]}"

    v4 = df["l3"] == "ipv4"
    for ours, theirs in FIELDS.items():
        col = df[ours].where(v4) if theirs.startswith("ip.") else df[ours]
        if ours == "frag_offset":
            col = col // 8           # tshark 4.0 gives ip.frag_offset in 8-byte units
        same(col, ts[theirs], ours)
    same(df["sport"].where(df["proto"] == "tcp"), ts["tcp.srcport"], "tcp sport")
    same(df["dport"].where(df["proto"] == "tcp"), ts["tcp.dstport"], "tcp dport")
    same(df["sport"].where(df["proto"] == "udp"), ts["udp.srcport"], "udp sport")
    same(df["payload_len"].where(df["proto"] == "tcp"), ts["tcp.len"], "tcp.len")
    same((df["ip_len"] - 40).where(df["l3"] == "ipv6"), ts["ipv6.plen"], "ipv6 plen")
    same(df["ttl"].where(df["l3"] == "ipv6"), ts["ipv6.hlim"], "hop limit")
    outer = ts["ieee8021ad.id"].where(ts["ieee8021ad.id"].astype(str) != "", ts["vlan.id"])
    same(df["vlan"], outer, "vlan")
    src = df["src"].astype(object)
    assert (src[v4] == ts["ip.src"][v4]).all()
    six = df["l3"] == "ipv6"
    assert (src[six] == ts["ipv6.src"][six]).all()
    assert (df["dst"].astype(object)[six] == ts["ipv6.dst"][six]).all()


def test_a_file_object_and_bytes_read_like_the_path():
    path = ROOT / "captures" / "tcp-10mbit-loss2.pcapng"
    a = read_capture(path)
    b = read_capture(io.BytesIO(path.read_bytes()))
    c = read_capture(path.read_bytes())
    pd.testing.assert_frame_equal(a.drop(columns="file_offset"), b.drop(columns="file_offset"))
    pd.testing.assert_frame_equal(b, c)


def test_schema_and_types():
    df = read_capture(ROOT / "tests" / "data" / "tcp-loss-usec.pcap")
    for col in ["time", "frame_len", "cap_len", "l3", "src", "dst", "proto", "sport", "dport", "ip_len", "ttl",
                "frag_offset", "more_frags", "ip_id", "tcp_seq", "tcp_ack", "tcp_flags", "tcp_win",
                "tcp_hdr_len", "tcp_opts_len", "payload_len", "vlan"]:
        assert col in df.columns, col
    assert df["time"].dtype == np.float64
    assert set(df["proto"].dropna().unique()) == {"tcp"}
    assert (df["tcp_opts_len"].dropna() >= 0).all()
    assert df.attrs["capture"]["format"] == "pcap"


def test_microsecond_nanosecond_and_big_endian_pcap_agree():
    d = ROOT / "tests" / "data"
    us, ns, be = (read_capture(d / n) for n in ("tcp-loss-usec.pcap", "tcp-loss-nsec.pcap", "tcp-bigendian.pcap"))
    cols = ["frame_len", "src", "sport", "tcp_seq", "payload_len", "tcp_opts_len"]
    pd.testing.assert_frame_equal(us[cols], ns[cols])
    pd.testing.assert_frame_equal(us[cols].head(60), be[cols])
    assert np.allclose(us["time"], ns["time"], atol=1e-6)


@pytest.mark.parametrize("name,linktype", [("ip46-null.pcap", 0), ("ip46-loop.pcap", 108),
                                           ("udp-fragments-rawip.pcap", 101), ("lo-linux-sll.pcapng", 113),
                                           ("lo-linux-sll2.pcapng", 276)])
def test_link_types(name, linktype):
    df = read_capture(ROOT / "tests" / "data" / name)
    assert (df["linktype"] == linktype).all()
    assert df["l3"].isin(["ipv4", "ipv6"]).all()
    assert df["proto"].notna().all()


def test_vlan_tags_single_and_double():
    df = read_capture(ROOT / "tests" / "data" / "vlan.pcap")
    assert set(df["vlan"].dropna().unique()) == {7, 100}      # Q-in-Q: the outer tag
    assert (df.loc[df["vlan"] == 7, "l3"] == "ipv6").all()
    assert (df.loc[df["vlan"] == 100, "l3"] == "ipv4").all()
    assert df["sport"].notna().all()


def test_ip_fragments_v4_and_v6():
    v4 = read_capture(ROOT / "captures" / "udp-fragments.pcapng")
    frag = v4[v4["more_frags"].fillna(False) | (v4["frag_offset"].fillna(0) > 0)]
    assert len(frag) > 0
    later = frag[frag["frag_offset"] > 0]
    assert later["sport"].isna().all() and (later["proto"] == "udp").all()
    v6 = read_capture(ROOT / "captures" / "ipv6.pcapng")
    f6 = v6[(v6["l3"] == "ipv6") & (v6["frag_offset"].fillna(0) > 0)]
    assert len(f6) > 0 and (f6["proto"] == "udp").all()
    first6 = v6[(v6["l3"] == "ipv6") & (v6["more_frags"].fillna(False)) & (v6["frag_offset"] == 0)]
    assert first6["sport"].notna().all()


def test_two_interfaces_with_their_own_link_types():
    df = read_capture(ROOT / "captures" / "two-interfaces.pcapng")
    info = df.attrs["capture"]
    assert [i["linktype"] for i in info["interfaces"]] == [1, 276]
    assert set(df["iface"]) == {0, 1}
    assert set(df.loc[df["iface"] == 1, "linktype"]) == {276}


def _blocks(data: bytes):
    pos = 0
    while pos < len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        yield btype, data[pos:pos + blen]
        pos += blen


def _swap_block(block: bytes) -> bytes:
    """A little-endian SHB/IDB/EPB/ISB → big-endian (options swapped too)."""
    btype, blen = struct.unpack_from("<II", block)
    body = bytearray(block)
    struct.pack_into(">II", body, 0, btype, blen)
    struct.pack_into(">I", body, blen - 4, blen)
    fixed = {0x0A0D0D0A: ("IHHq", 8), 1: ("HHI", 8), 6: ("IIIII", 8), 5: ("III", 8)}.get(btype)
    opt = 8
    if fixed:
        fmt, at = fixed
        struct.pack_into(">" + fmt, body, at, *struct.unpack_from("<" + fmt, block, at))
        opt = at + struct.calcsize("<" + fmt)
        if btype == 6:
            caplen = struct.unpack_from("<I", block, 20)[0]
            opt = 28 + caplen + (-caplen % 4)
    while opt + 4 <= blen - 4:
        code, length = struct.unpack_from("<HH", block, opt)
        struct.pack_into(">HH", body, opt, code, length)
        if length == 8 and btype in (5, 1) and code in (4, 5, 14):
            struct.pack_into(">Q", body, opt + 4, struct.unpack_from("<Q", block, opt + 4)[0])
        if code == 0:
            break
        opt += 4 + length + (-length % 4)
    return bytes(body)


def test_pcapng_big_endian_unknown_blocks_late_interface_and_two_sections(reader_path):
    raw = (ROOT / "tests" / "data" / "lo-linux-sll2.pcapng").read_bytes()
    blocks = list(_blocks(raw))
    ref = read_capture(raw)
    swapped = b"".join(_swap_block(b) for _, b in blocks if _ in (0x0A0D0D0A, 1, 6, 5))
    be = read_capture(swapped)
    cols = ["time", "frame_len", "src", "dst", "sport", "tcp_seq", "payload_len"]
    pd.testing.assert_frame_equal(ref[cols], be[cols])
    # unknown block types are skipped; an interface described after its packets still counts
    shb = [b for t, b in blocks if t == 0x0A0D0D0A][0]
    idb = [b for t, b in blocks if t == 1][0]
    epbs = [b for t, b in blocks if t == 6]
    unknown = struct.pack("<II", 0x0BAD, 20) + b"\x01\x02\x03\x04\x05\x06\x07\x08" + struct.pack("<I", 20)
    odd = shb + epbs[0] + unknown + idb + b"".join(epbs[1:])
    got = read_capture(odd)
    pd.testing.assert_frame_equal(got[cols], ref[cols])
    # two sections, the second big-endian: interfaces are numbered per section
    two = read_capture(raw + swapped)
    assert len(two) == 2 * len(ref)
    assert len(two.attrs["capture"]["interfaces"]) == 2
    assert set(two["iface"]) == {0, 1}


def test_truncated_file_keeps_what_it_can_read(reader_path):
    raw = (ROOT / "tests" / "data" / "tcp-loss-usec.pcap").read_bytes()
    full = read_capture(raw)
    cut = read_capture(raw[:len(raw) - 700])
    assert 0 < len(cut) <= len(full)
    assert cut.attrs["capture"]["notes"], "a note says where the file ended"
    last = cut.iloc[-1]
    assert last["cap_len"] <= last["frame_len"]


@pytest.mark.parametrize("data", [b"", b"hello world, not a capture", b"\x00" * 100,
                                  b"\xd4\xc3\xb2\xa1\x02\x00"])
def test_not_a_capture_raises_capture_error(data):
    with pytest.raises(CaptureError):
        read_capture(data)


def test_missing_file_is_a_capture_error(tmp_path):
    with pytest.raises(CaptureError, match="no capture file"):
        read_capture(tmp_path / "nope.pcap")
    with pytest.raises(CaptureError):
        read_capture(io.StringIO("text"))


def _scalar_offsets(data: bytes) -> list[int]:
    offs, pos = [], 24
    while pos + 16 <= len(data):
        offs.append(pos)
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return offs


def test_fast_walk_equals_the_one_by_one_walk_on_a_large_file(reader_path):
    """Random sizes, payloads that look like record headers: the multi-chain walk must agree."""
    rng = np.random.default_rng(7)
    parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i in range(60_000):
        n = int(rng.choice([54, 60, 66, 1514, 200, int(rng.integers(0, 300))]))
        payload = bytearray(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        if n >= 32 and i % 7 == 0:   # a fake record header inside the payload
            payload[4:20] = struct.pack("<IIII", 1700000000, 5, 40, 40)
        parts.append(struct.pack("<IIII", 1700000000 + i // 1000, i % 1000000, n, n) + bytes(payload))
    data = b"".join(parts)
    (fb, base, scan), = scans(ReadState.open(data))
    assert scan.offsets.tolist() == _scalar_offsets(data)
    # the same file through windows of 64 KiB (records cut at every window's end)
    found = [base + scan.offsets for _, base, scan in scans(ReadState.open(io.BufferedReader(io.BytesIO(data)),
                                                                            window_bytes=1 << 16))]
    assert np.concatenate(found).tolist() == _scalar_offsets(data)


def _pcapng_offsets(data: bytes) -> list[int]:
    offs, pos = [], 0
    while pos + 12 <= len(data):
        kind, length = struct.unpack_from("<II", data, pos)
        if kind == 6:
            offs.append(pos)
        pos += length
    return offs


def test_walk_with_stretches_of_tiny_and_of_full_size_records(reader_path):
    """Chains over tiny records have many more steps: the walk seeds them again (levels)."""
    rng = np.random.default_rng(11)
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    idb = struct.pack("<IIHHI", 1, 20, 1, 0, 0) + struct.pack("<I", 20)
    parts = [shb, idb]
    for stretch in range(40):
        tiny = stretch % 2 == 0
        for i in range(3000 if tiny else 150):
            n = int(rng.integers(0, 8)) if tiny else 1514
            pad = -n % 4
            blen = 32 + n + pad
            parts.append(struct.pack("<IIIIIII", 6, blen, 0, 0, i, n, n) + bytes(n + pad) + struct.pack("<I", blen))
    data = b"".join(parts)
    (fb, base, scan), = scans(ReadState.open(data))
    assert scan.offsets.tolist() == _pcapng_offsets(data)
    df = read_capture(data)
    assert len(df) == 20 * 3000 + 20 * 150


def test_walk_keeps_the_kind_of_every_block_among_many_packet_blocks(reader_path):
    """The lock-step walk keeps no kinds for steps where every block is of the usual kind:
    the blocks of other kinds (unknown, statistics, simple packets) must keep theirs."""
    rng = np.random.default_rng(12)
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    idb = struct.pack("<IIHHI", 1, 20, 1, 0, 0) + struct.pack("<I", 20)
    parts, kinds = [shb, idb], [0x0A0D0D0A, 1]
    for i in range(40_000):
        odd = rng.random()
        if odd < 0.001:
            parts.append(struct.pack("<II", 0x0BAD, 16) + b"\x00" * 4 + struct.pack("<I", 16))
            kinds.append(0x0BAD)
            continue
        if odd < 0.002:
            parts.append(struct.pack("<IIIII", 5, 24, 0, 0, i) + struct.pack("<I", 24))
            kinds.append(5)
            continue
        spb = odd < 0.003
        n = int(rng.integers(40, 300))
        pad = -n % 4
        blen = (16 if spb else 32) + n + pad
        head = struct.pack("<III", 3, blen, n) if spb else struct.pack("<IIIIIII", 6, blen, 0, 0, i, n, n)
        parts.append(head + bytes(n + pad) + struct.pack("<I", blen))
        kinds.append(3 if spb else 6)
    data = b"".join(parts)
    (fb, base, scan), = scans(ReadState.open(data))
    packets = [k for k in kinds if k in (3, 6)]
    assert scan.kinds.tolist() == packets
    offsets, pos = [], 0
    for part, kind in zip(parts, kinds):
        if kind in (3, 6):
            offsets.append(pos)
        pos += len(part)
    assert scan.offsets.tolist() == offsets


def test_many_addresses_keep_their_order_of_first_appearance():
    """src/dst categories: every address once, in order of first appearance (sources first),
    high addresses (≥ 128.0.0.0) included; each row names its own packet's addresses."""
    import ipaddress
    rng = np.random.default_rng(5)
    pool = [int(a) for a in rng.integers(0, 2**32, 50, dtype=np.int64)]
    parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    rows = []
    for i in range(3000):
        s, d = int(rng.choice(pool)), int(rng.choice(pool))
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, 28, i, 0, 64, 17, 0, s, d) + struct.pack(">HHHH", 1000, 2000, 8, 0)
        frame = b"\x00" * 12 + b"\x08\x00" + ip
        parts.append(struct.pack("<IIII", 1700000000, i, len(frame), len(frame)) + frame)
        rows.append((str(ipaddress.IPv4Address(s)), str(ipaddress.IPv4Address(d))))
    df = read_capture(b"".join(parts))
    assert list(zip(df["src"].astype(str), df["dst"].astype(str))) == rows
    srcs, dsts = [r[0] for r in rows], [r[1] for r in rows]
    expected = list(dict.fromkeys(srcs + dsts))
    assert list(df["src"].cat.categories) == expected
    assert list(df["dst"].cat.categories) == expected


def test_a_packet_naming_an_undescribed_interface_is_kept_and_noted(reader_path):
    raw = bytearray((ROOT / "tests" / "data" / "lo-linux-sll2.pcapng").read_bytes())
    last = [pos for pos, (t, _) in zip(_starts(bytes(raw)), _blocks(bytes(raw))) if t == 6][-1]
    struct.pack_into("<I", raw, last + 8, 7)            # the EPB's interface id: no interface 7
    df = read_capture(bytes(raw))
    assert len(df) == len(read_capture((ROOT / "tests" / "data" / "lo-linux-sll2.pcapng").read_bytes()))
    assert df["iface"].iloc[-1] == -1 and (df["iface"].iloc[:-1] == 0).all()
    assert any("does not describe" in note for note in df.attrs["capture"]["notes"])


def _starts(data: bytes):
    pos = 0
    while pos < len(data):
        yield pos
        pos += struct.unpack_from("<I", data, pos + 4)[0]


class _Stream(io.RawIOBase):
    """A pipe-like file object (no fileno, no seek): read through one reused buffer."""

    def __init__(self, data: bytes):
        self._data, self._at = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, view) -> int:
        n = min(len(view), len(self._data) - self._at, 3000)      # short reads, as a pipe gives
        view[:n] = self._data[self._at:self._at + n]
        self._at += n
        return n


@pytest.mark.parametrize("path", [ROOT / "captures" / "tcp-10mbit-loss2.pcapng",
                                  ROOT / "tests" / "data" / "tcp-loss-usec.pcap"], ids=lambda p: p.name)
def test_many_windows_read_like_one(monkeypatch, path, reader_path):
    """A file larger than a window: the next window is found while the last one is decoded, and
    the DataFrame is the one a single window gives (a stream is read whole first, the same)."""
    import wirelab.capture.reader.loader as loader
    whole = read_capture(path)
    monkeypatch.setattr(loader, "WHOLE_FILE_WINDOW", 4096)
    assert path.stat().st_size > 4 * loader.WHOLE_FILE_WINDOW
    for source in (path, _Stream(path.read_bytes())):
        part = read_capture(source)
        pd.testing.assert_frame_equal(part.drop(columns="file_offset"), whole.drop(columns="file_offset"))
        assert (part["file_offset"] == whole["file_offset"]).all()
        assert part.attrs == whole.attrs


@needs_tshark
@pytest.mark.parametrize("path", [ROOT / "captures" / "two-interfaces.pcapng", ROOT / "captures" / "tcp-10mbit.pcapng",
                                  ROOT / "tests" / "data" / "tcp-loss-nsec.pcap"], ids=lambda p: p.name)
def test_frame_numbers_and_relative_time_are_wiresharks_whole_and_in_chunks(path):
    """Rows had only epoch seconds (1.367526e+09 on every row) and no frame number (issue 33):
    ``frame`` is frame.number, ``time_relative`` frame.time_relative, in any chunk."""
    from wirelab.capture import iter_capture, tshark_fields
    theirs = tshark_fields(path, ["frame.number", "frame.time_relative"])
    for df in (read_capture(path), pd.concat(iter_capture(path, chunk_packets=500), ignore_index=True)):
        assert df["frame"].tolist() == theirs["frame.number"].astype(int).tolist()
        assert np.allclose(df["time_relative"], theirs["frame.time_relative"].astype(float), rtol=0, atol=1e-6)
        assert df["time_relative"].iloc[0] == 0
