"""The compiled reader (capture.walk_jit, capture.decode_jit) gives exactly what the numpy reader
gives (and the compiled conversation numbering, number_jit, what numpy's gives): same DataFrame (columns, types, values, missing values, notes) on every committed capture,
on every link type and file format, on damaged files (or the same CaptureError), read whole or
streamed in small windows. And it stays out of the way: numba is not loaded by the command
line, nor where it cannot cache its work or the address space is limited."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wirelab.capture.reader.decode as decode
import wirelab.capture.reader.jit as jit
from wirelab import CaptureError
from wirelab.capture import iter_capture, read_capture

from capture_mutants import SEEDS, length_fields, mutant
from capture_paths import PATHS, use_path
from test_capture_fastpath import CAPTURES, assert_same, mixed_frames, relink
from test_capture_loader import _blocks, _swap_block

pytest.importorskip("numba")
ROOT = Path(__file__).resolve().parents[1]


class Calls:
    """How many times the compiled walk and decode ran (to know the compiled path was taken)."""

    def __init__(self, monkeypatch):
        self.walks = self.blocks = self.rows = 0
        walk_jit, decode_jit = (jit.kernels(0) or pytest.fail(str(jit.status())))[:2]
        real_walk, real_usual = walk_jit.walk, decode_jit.usual

        def walk(*args):
            self.walks += 1
            return real_walk(*args)

        def usual(out, rows, *args):
            misfits, undescribed = real_usual(out, rows, *args)
            self.blocks += 1
            self.rows += rows.stop - rows.start - misfits.size
            return misfits, undescribed
        monkeypatch.setattr(walk_jit, "walk", walk)
        monkeypatch.setattr(decode_jit, "usual", usual)


def both_paths(monkeypatch, source, block: int | None = None):
    """(numpy's DataFrame, the compiled one's, the compiled calls)."""
    if block:
        monkeypatch.setattr(decode, "BLOCK_PACKETS", block)
    use_path("numpy", monkeypatch)
    reference = read_capture(source)
    use_path("compiled", monkeypatch)
    calls = Calls(monkeypatch)
    return reference, read_capture(source), calls


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
@pytest.mark.parametrize("block", [None, 7])
def test_committed_captures_read_the_same_both_ways(monkeypatch, path, block):
    """Whole files, and blocks of 7 packets (decoded in two threads, some all usual, some not)."""
    reference, compiled, calls = both_paths(monkeypatch, path, block)
    assert_same(reference, compiled)
    assert calls.walks >= 1
    if len(compiled.attrs["capture"]["interfaces"]) == 1:
        assert calls.blocks >= 1                          # (several interfaces: numpy decodes)


# ---- every file format the kernels know, every common link type

def write_pcap(frames: list[bytes], snaplens: list[int], linktype: int, *, order: str = "<",
               magic: int = 0xA1B2C3D4) -> bytes:
    """Classic pcap: either byte order, micro- or nanosecond magic, or the "modified" format
    (magic 0xA1B2CD34: 8 more bytes in every record header)."""
    extra = 8 if magic == 0xA1B2CD34 else 0
    parts = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype)]
    for i, (frame, snap) in enumerate(zip(frames, snaplens)):
        cap = frame[:snap]
        parts.append(struct.pack(order + "IIII", 1700000000 + i // 1000, i % 1000 * 997, len(cap), len(frame))
                     + bytes(extra) + cap)
    return b"".join(parts)


def write_pcapng(frames: list[bytes], snaplens: list[int], linktype: int, *, big: bool = False) -> bytes:
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    idb = struct.pack("<IIHHI", 1, 20, linktype, 0, 0) + struct.pack("<I", 20)
    parts = [shb, idb]
    for i, (frame, snap) in enumerate(zip(frames, snaplens)):
        cap = frame[:snap]
        pad = -len(cap) % 4
        ts = (1700000000 + i) * 1_000_000 + i
        blen = 32 + len(cap) + pad
        parts.append(struct.pack("<IIIIIII", 6, blen, 0, ts >> 32, ts & 0xFFFFFFFF, len(cap), len(frame))
                     + cap + bytes(pad) + struct.pack("<I", blen))
    data = b"".join(parts)
    return b"".join(_swap_block(b) for _, b in _blocks(data)) if big else data


FORMATS = {"pcap": lambda f, s, lt: write_pcap(f, s, lt),
           "pcap-big-endian": lambda f, s, lt: write_pcap(f, s, lt, order=">"),
           "pcap-nanoseconds": lambda f, s, lt: write_pcap(f, s, lt, magic=0xA1B23C4D),
           "pcap-modified": lambda f, s, lt: write_pcap(f, s, lt, magic=0xA1B2CD34),
           "pcapng": lambda f, s, lt: write_pcapng(f, s, lt),
           "pcapng-big-endian": lambda f, s, lt: write_pcapng(f, s, lt, big=True)}


def capture(fmt: str, linktype: int, n: int = 3000) -> bytes:
    frames = mixed_frames(n)
    if linktype != 1:
        frames = relink(frames, linktype)
    rng = np.random.default_rng(4)
    snaplens = [int(rng.integers(0, 80)) if rng.random() < 0.1 else 262144 for _ in frames]
    return FORMATS[fmt](frames, snaplens, linktype)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("linktype", [1, 101, 0, 108, 113], ids=["ethernet", "raw-ip", "null", "loop", "sll"])
def test_every_format_and_link_type_reads_the_same_both_ways(monkeypatch, fmt, linktype):
    reference, compiled, calls = both_paths(monkeypatch, capture(fmt, linktype), 256)
    assert_same(reference, compiled)
    assert len(compiled) == 3000
    assert calls.rows > 1500                  # the kernel decoded the usual packets itself
    assert (reference["proto"] == "tcp").sum() > 1500 and reference["tcp_mss"].notna().any()


def test_two_sections_of_both_byte_orders_and_an_undescribed_interface(monkeypatch):
    """The walk stops at a section header when asked to (byte order may change there)."""
    one = capture("pcapng", 1, 1500)
    raw = bytearray(one + capture("pcapng-big-endian", 1, 1500))
    struct.pack_into("<I", raw, [p for p, (t, _) in zip(_positions(one), _blocks(one)) if t == 6][-1] + 8, 5)
    reference, compiled, calls = both_paths(monkeypatch, bytes(raw))
    assert_same(reference, compiled)
    assert len(compiled) == 3000 and set(compiled["iface"]) == {-1, 0, 1}
    assert any("does not describe" in note for note in compiled.attrs["capture"]["notes"])


def _positions(data: bytes):
    pos = 0
    while pos + 8 <= len(data):
        yield pos
        pos += struct.unpack_from("<I", data, pos + 4)[0]


# ---- the walk: chains started at wrong places still give the plain walk's records

def nested(fmt: str, n: int, seed: int = 5) -> tuple[bytes, list[int]]:
    """Records whose payloads are themselves runs of well-formed records (a capture of captures):
    seeds land inside payloads and chains walk fake records, some ending exactly where a real
    record starts. Returns the file and the true record starts."""
    rng = np.random.default_rng(seed)

    def record(payload: bytes, i: int) -> bytes:
        if fmt == "pcap":
            return struct.pack("<IIII", 1700000000, i % 1000, len(payload), len(payload)) + payload
        pad = -len(payload) % 4
        blen = 32 + len(payload) + pad
        return struct.pack("<IIIIIII", 6, blen, 0, 0, i, len(payload), len(payload)) + payload \
            + bytes(pad) + struct.pack("<I", blen)

    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1) if fmt == "pcap" else \
        struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28) \
        + struct.pack("<IIHHI", 1, 20, 1, 0, 0) + struct.pack("<I", 20)
    parts, starts, at = [head], [], len(head)
    for i in range(n):
        inner = b"".join(record(bytes(int(rng.integers(0, 60))), i) for _ in range(int(rng.integers(0, 6))))
        payload = inner + bytes(int(rng.integers(0, 3)) * 4) if rng.random() < 0.5 else inner
        rec = record(bytes(payload), i)
        starts.append(at)
        parts.append(rec)
        at += len(rec)
    return b"".join(parts), starts


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("chains", [1, 2, 16, 64])
def test_the_walk_is_the_plain_walk_whatever_the_seeds(monkeypatch, fmt, chains):
    data, starts = nested(fmt, 20_000)
    monkeypatch.setattr(jit, "CHAINS", chains)
    offsets = {}
    for name in PATHS:
        use_path(name, monkeypatch)
        (_, _, scan), = decode.scans(decode.ReadState.open(data))
        offsets[name] = scan.offsets.tolist()
    assert offsets["numpy"] == offsets["compiled"] == starts[:len(offsets["numpy"])]
    assert len(offsets["numpy"]) == len(starts)


# ---- damaged files: the same packets and notes, or the same CaptureError

def outcome(data: bytes, window: int, chunk: int):
    try:
        return read_capture(data), list(iter_capture(data, chunk_packets=chunk, window_bytes=window))
    except CaptureError as err:               # (any other exception fails the test)
        return str(err)


@pytest.mark.parametrize("seed", range(4))
def test_damaged_captures_read_the_same_both_ways(monkeypatch, seed):
    """Mutants of bench/fuzz_capture.py (cut, flipped, duplicated, absurd lengths, spliced), read
    whole and streamed through windows of 1 to 64 KiB; bench/fuzz_capture.py runs 100,000."""
    rng = np.random.default_rng(1000 + seed)
    seeds = [p.read_bytes() for p in SEEDS]
    fields = [length_fields(raw) for raw in seeds]
    for i in range(60):
        k = i % len(seeds)
        data = mutant(rng, seeds[k], fields[k])
        window, chunk = int(rng.choice([1024, 4096, 1 << 16])), int(rng.integers(20, 400))
        got = {}
        for name in PATHS:
            use_path(name, monkeypatch)
            got[name] = outcome(data, window, chunk)
        if isinstance(got["numpy"], str):
            assert got["compiled"] == got["numpy"], f"case {i} from {SEEDS[k].name}"
            continue
        (ref, ref_chunks), (comp, comp_chunks) = got["numpy"], got["compiled"]
        assert_same(ref, comp)
        assert len(ref_chunks) == len(comp_chunks)
        for a, b in zip(ref_chunks, comp_chunks):
            assert_same(a, b)


# ---- staying out of the way

PROGRAM = """
import sys, warnings
warnings.simplefilter("default")          # a warning would show on stderr
import wirelab.capture.reader.jit as jit
from wirelab.capture import read_capture
jit.MIN_BYTES = 0
df = read_capture(sys.argv[1])
print(len(df), jit.status())
"""


def run(env: dict, preexec_fn=None) -> subprocess.CompletedProcess:
    capture_file = ROOT / "captures" / "tcp-10mbit.pcapng"
    return subprocess.run([sys.executable, "-c", PROGRAM, str(capture_file)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env}, preexec_fn=preexec_fn)


def test_without_a_writable_cache_the_numpy_path_is_used_silently():
    """numba keeps compiled code in __pycache__ or the user's cache directory; with neither
    (here: no cache locator at all) compiling every session would cost more than it saves."""
    done = run({"NUMBA_CACHE_LOCATOR_CLASSES": "IPythonCacheLocator", jit.ENV_OFF: "0"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "'loaded': False" in done.stdout and "no writable cache directory" in done.stdout


def test_under_an_address_space_limit_numba_is_not_loaded():
    """LLVM ends the process (std::bad_alloc) when an allocation fails: not worth the risk."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    done = run({jit.ENV_OFF: "0"}, limit)
    assert done.returncode == 0, done.stderr
    assert "'loaded': False" in done.stdout and "RLIMIT_AS" in done.stdout


def test_compiled_or_numpy_is_decided_once_per_window_and_the_whole_window_follows(monkeypatch, tmp_path):
    """``decode.scans`` asks ``jit.kernels`` once per window; that window's walk and decode both
    take the answer (``Scan.kernels``), so windows decided differently still read as one file."""
    from test_capture_fastpath import mixed_capture
    data = tmp_path / "mixed.pcapng"                  # (a file: bytes in memory are one window)
    data.write_bytes(mixed_capture("pcapng"))
    use_path("numpy", monkeypatch)
    reference = list(iter_capture(data, chunk_packets=10 ** 6, window_bytes=1 << 16))
    use_path("compiled", monkeypatch)
    calls, loaded, asked = Calls(monkeypatch), jit.kernels(0), []

    def kernels(window_bytes=jit.MIN_BYTES):
        asked.append(window_bytes)
        return loaded if len(asked) % 2 else None      # compiled, numpy, compiled, ...
    monkeypatch.setattr(jit, "kernels", kernels)
    alternating = list(iter_capture(data, chunk_packets=10 ** 6, window_bytes=1 << 16))
    assert len(asked) == len(alternating) == len(reference) > 2
    assert 0 < calls.walks < len(asked) and 0 < calls.blocks < len(asked)
    for numpy_chunk, chunk in zip(reference, alternating):
        assert_same(numpy_chunk, chunk)


def _numbered_both_ways(monkeypatch, f):
    """``conversations._conversations`` of ``f`` by numpy and by the compiled twin (which must run)."""
    import wirelab.capture.conversations as conversations
    use_path("compiled", monkeypatch)
    ran = []
    real = conversations._compiled

    def compiled(frames):
        ran.append(real(frames))
        return ran[-1]
    monkeypatch.setattr(conversations, "_compiled", compiled)
    fast = conversations._conversations(f, True)
    assert ran and ran[0] is not None
    monkeypatch.setattr(conversations, "_compiled", lambda frames: None)
    return conversations._conversations(f, True), fast


@pytest.mark.parametrize("path", sorted([*(ROOT / "captures").glob("*.pcap*"), *(ROOT / "tests/data/public").glob("*.pcap*")]),
                         ids=lambda p: p.name)
def test_conversations_are_numbered_the_same_both_ways(monkeypatch, path):
    """Every committed and public capture (reused ports, IP fragments, IPv6 among them): the same
    conversation per frame, the same direction, the same first frames."""
    from wirelab.capture.reader.frames import Frames
    reference, fast = _numbered_both_ways(monkeypatch, Frames.of(read_capture(path)))
    for a, b in zip(reference, fast):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(6))
def test_conversations_are_numbered_the_same_both_ways_on_crowded_five_tuples(monkeypatch, seed):
    """Random frames over a few addresses and ports, SYNs and sequence numbers drawn from a handful
    (ports reused over and over, missing fields, SYNs resent and not), enough five-tuples to grow
    the compiled twin's table several times: the same numbers, directions and first frames."""
    from wirelab.capture.reader.frames import INTS, Frames
    rng = np.random.default_rng(seed)
    n, few = 20_000, [4, 4, 40, 40] if seed % 2 else [40, 40, 300, 300]
    pick = lambda values, p=None: rng.choice(np.array(values, dtype=np.int64), n, p=p)      # noqa: E731
    ints = {name: np.full(n, -1, dtype=np.int64) for name in INTS}
    ints.update(sport=rng.integers(-1, few[2], n), dport=rng.integers(-1, few[3], n),
                tcp_flags=pick([-1, 0x02, 0x12, 0x10, 0x18], [0.05, 0.1, 0.05, 0.5, 0.3]),
                tcp_seq=pick([-1, 0, 1, 2, 4294967295]), frag_offset=pick([-1, 0], [0.1, 0.9]))
    f = Frames(time=np.arange(n, dtype=float), src=rng.integers(-1, few[0], n), dst=rng.integers(-1, few[1], n),
               addresses=[str(i) for i in range(max(few[:2]))], proto=pick([-1, 0, 1], [0.02, 0.78, 0.2]),
               protocols=["tcp", "udp"], more_frags=np.zeros(n, dtype=bool), l3=np.zeros(n, dtype=np.int8),
               ints=ints)
    reference, fast = _numbered_both_ways(monkeypatch, f)
    assert reference[2].size > 1000                   # (many conversations: the table grew)
    for a, b in zip(reference, fast):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("path", sorted([*(ROOT / "captures").glob("*.pcap*"), *(ROOT / "tests/data/public").glob("*.pcap*")]),
                         ids=lambda p: p.name)
def test_conversation_tables_are_the_same_both_ways(monkeypatch, path):
    """``open_capture(...).conversations(kind)`` with the compiled numbering and sums (number_jit)
    and with numpy's: the same tables, to the last bit."""
    import pandas as pd

    from wirelab import open_capture
    tables, calls = {}, []
    for name in PATHS:
        use_path(name, monkeypatch)
        if name == "compiled":
            number_jit = jit.kernels(0)[2]
            real = number_jit.tally
            monkeypatch.setattr(number_jit, "tally", lambda *args: calls.append(1) or real(*args))
        cap = open_capture(path)
        tables[name] = [cap.conversations(kind) for kind in ("tcp", "udp", "ip", "ipv6")]
    assert calls                                      # (the compiled sums ran)
    for numpy_table, compiled_table in zip(*tables.values()):
        pd.testing.assert_frame_equal(numpy_table, compiled_table)
