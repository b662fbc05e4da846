"""Damaged captures for the fuzz test and bench/fuzz_capture.py: both readers, in memory and
streaming, must give packets or a CaptureError, nothing else, and never hang.

Mutations: cut anywhere; flip bytes; duplicate a range of bytes; set a record's
length field (found by walking the file) or any 32-bit field to an absurd value;
scramble packet headers; splice two parts of the file.
"""
from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
CAPTURES = Path(__file__).resolve().parents[1] / "captures"
SEEDS = [DATA / n for n in ("tcp-loss-usec.pcap", "tcp-bigendian.pcap", "lo-linux-sll2.pcapng", "vlan.pcap",
                            "ip46-null.pcap", "udp-fragments-rawip.pcap", "lo-linux-sll.pcapng")] + \
        [CAPTURES / n for n in ("two-interfaces.pcapng", "ipv6.pcapng", "udp-fragments.pcapng")]
ABSURD = [0, 1, 11, 12, 13, 16, 0x7FFFFFFF, 0x80000000, 0xFFFFFFF0, 0xFFFFFFFF, 65536, 1 << 24]


def length_fields(raw: bytes) -> list[tuple[int, str]]:
    """Positions (and byte order) of the record length fields of a well-formed file."""
    out = []
    magic = raw[:4]
    if magic == b"\x0a\x0d\x0d\x0a":
        pos, order = 0, "<"
        while pos + 12 <= len(raw):
            if raw[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":
                order = "<" if raw[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            length = struct.unpack_from(order + "I", raw, pos + 4)[0]
            out += [(pos + 4, order), (pos + length - 4, order)]
            if length < 12:
                break
            pos += length
    else:
        order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        pos = 24
        while pos + 16 <= len(raw):
            out += [(pos + 8, order), (pos + 12, order)]
            pos += 16 + struct.unpack_from(order + "I", raw, pos + 8)[0]
    return out


def mutant(rng: np.random.Generator, raw: bytes, fields: list) -> bytes:
    """One damaged copy of ``raw``."""
    kind = int(rng.integers(0, 7))
    n = len(raw)
    if kind == 0:                                   # truncated anywhere
        return raw[:int(rng.integers(0, n))]
    if kind == 1:                                   # bytes flipped
        out = bytearray(raw)
        for at in rng.integers(0, n, size=int(rng.integers(1, 20))):
            out[int(at)] ^= int(rng.integers(1, 256))
        return bytes(out)
    if kind == 2:                                   # a range duplicated
        a = int(rng.integers(0, n))
        b = min(n, a + int(rng.integers(1, 4096)))
        at = int(rng.integers(0, n))
        return raw[:at] + raw[a:b] + raw[at:]
    if kind == 3 and fields:                        # a record length made absurd
        out = bytearray(raw)
        for _ in range(int(rng.integers(1, 3))):
            at, order = fields[int(rng.integers(0, len(fields)))]
            value = int(rng.choice(ABSURD)) if rng.random() < 0.7 else int(rng.integers(0, 1 << 32))
            struct.pack_into(order + "I", out, at, value)
        return bytes(out)
    if kind == 4:                                   # any 32-bit field set to an extreme
        out = bytearray(raw)
        at = int(rng.integers(0, n - 4))
        out[at:at + 4] = int(rng.choice(ABSURD)).to_bytes(4, "little")
        return bytes(out)
    if kind == 5:                                   # packet header bytes scrambled
        out = bytearray(raw)
        for _ in range(int(rng.integers(1, 50))):
            out[int(rng.integers(min(24, n - 1), n))] = int(rng.integers(0, 256))
        return bytes(out)
    cut = int(rng.integers(min(24, n), n))           # two parts spliced
    return raw[:cut] + raw[int(rng.integers(min(24, n), n)):]


def fuzz(cases: int, *, seed: int, seconds: float = float("inf"), case_seconds: float = 5.0,
         streaming: bool = True) -> dict:
    """Run ``cases`` mutants through ``read_capture`` and ``iter_capture`` (small windows and
    chunks). Returns counts (``slowest_s``: CPU seconds of the slowest case); any exception but
    CaptureError propagates with the case number."""
    from wirelab import CaptureError
    from wirelab.capture import iter_capture, read_capture

    rng = np.random.default_rng(seed)
    seeds = [p.read_bytes() for p in SEEDS]
    fields = [length_fields(raw) for raw in seeds]
    counts = {"cases": 0, "read": 0, "capture_error": 0, "packets": 0, "slowest_s": 0.0}
    deadline = time.monotonic() + seconds
    for i in range(cases):
        if time.monotonic() > deadline:
            break
        k = i % len(seeds)
        data = mutant(rng, seeds[k], fields[k])
        t0 = time.process_time()             # CPU time: a busy machine does not make a case "hang"
        try:
            df = read_capture(data)
            assert (df["cap_len"] >= 0).all() and len(df) <= len(data) // 12 + 1, f"case {i}"
            if streaming:
                window = int(rng.choice([1024, 4096, 1 << 16]))
                chunks = list(iter_capture(data, chunk_packets=int(rng.integers(20, 400)), window_bytes=window))
                streamed = sum(len(c) for c in chunks)
                assert streamed <= len(data) // 12 + 1, f"case {i}"
            counts["read"] += 1
            counts["packets"] += len(df)
        except CaptureError:
            counts["capture_error"] += 1
        except Exception as err:                        # noqa: BLE001 - the finding to report
            raise AssertionError(f"case {i} (seed {seed}, from {SEEDS[k].name}): "
                                 f"{type(err).__name__}: {err}") from err
        took = time.process_time() - t0
        counts["slowest_s"] = max(counts["slowest_s"], took)
        assert took < case_seconds, f"case {i} took {took:.1f} s of CPU"
        counts["cases"] += 1
    return counts
