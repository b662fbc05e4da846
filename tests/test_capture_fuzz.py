"""Thousands of truncated and mutated captures: the loader never hangs and raises only CaptureError."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from wirelab import CaptureError
from wirelab.capture import read_capture

DATA = Path(__file__).resolve().parent / "data"
SEEDS = ["tcp-loss-usec.pcap", "tcp-bigendian.pcap", "lo-linux-sll2.pcapng", "vlan.pcap", "ip46-null.pcap",
         "udp-fragments-rawip.pcap", "lo-linux-sll.pcapng"]


def _mutants(rng: np.random.Generator, raw: bytes):
    """Cut anywhere; flip bytes; overwrite length fields with extremes; splice two parts."""
    arr = np.frombuffer(raw, dtype=np.uint8)
    kind = rng.integers(0, 5)
    if kind == 0:
        return raw[: int(rng.integers(0, len(raw)))]
    out = arr.copy()
    if kind == 1:
        idx = rng.integers(0, len(raw), size=int(rng.integers(1, 20)))
        out[idx] = rng.integers(0, 256, size=idx.size, dtype=np.uint8)
    elif kind == 2:       # a 32-bit field somewhere gets 0, 0xFFFFFFFF or a small number
        at = int(rng.integers(0, len(raw) - 4))
        out[at:at + 4] = np.frombuffer(int(rng.choice([0, 0xFFFFFFFF, 12, 13, 65536])).to_bytes(4, "little"),
                                       dtype=np.uint8)
    elif kind == 3:       # header bytes of packets (IP/TCP area) scrambled
        for _ in range(int(rng.integers(1, 50))):
            at = int(rng.integers(24, len(raw)))
            out[at] = rng.integers(0, 256)
    else:
        cut = int(rng.integers(24, len(raw)))
        return raw[:cut] + raw[int(rng.integers(24, len(raw))):]
    return out.tobytes()


def _fuzz(cases: int, seconds: float, seed: int) -> int:
    rng = np.random.default_rng(seed)
    seeds = [(DATA / name).read_bytes() for name in SEEDS]
    deadline = time.monotonic() + seconds
    done = 0
    for i in range(cases):
        if time.monotonic() > deadline:
            break
        data = _mutants(rng, seeds[i % len(seeds)])
        t0 = time.monotonic()
        try:
            df = read_capture(data)
        except CaptureError:
            continue
        finally:
            assert time.monotonic() - t0 < 5, f"case {i} took too long"
        assert (df["cap_len"] >= 0).all()
        assert len(df) <= len(data) // 12 + 1
        done += 1
    return done


def test_fuzz_quick():
    assert _fuzz(300, 15, seed=1) > 100


@pytest.mark.slow
def test_fuzz_thousands():
    assert _fuzz(3000, 60, seed=2) > 1000
