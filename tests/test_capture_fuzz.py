"""Thousands of damaged captures (cut, flipped, duplicated ranges, absurd lengths): both readers,
in memory (read_capture) and streaming (iter_capture, small windows), never hang and raise
nothing but CaptureError. bench/fuzz_capture.py runs 100,000 of them."""
from __future__ import annotations

import struct

import pytest

from capture_mutants import SEEDS, fuzz, length_fields
from wirelab import CaptureError
from wirelab.capture import iter_capture, read_capture


def test_the_mutator_finds_every_record_length():
    for path in SEEDS:
        raw = path.read_bytes()
        fields = length_fields(raw)
        assert len(fields) >= 2 * len(read_capture(raw)), path.name


def test_fuzz_quick():
    counts = fuzz(300, seed=1)
    assert counts["cases"] == 300 and counts["read"] > 100


@pytest.mark.slow
def test_fuzz_two_thousand_seeded():
    counts = fuzz(2000, seed=2)
    assert counts["cases"] == 2000 and counts["read"] > 1000


def test_pcapng_without_any_readable_block_after_the_section_header():
    """The escape once found by fuzzing: no block left where a section header was expected."""
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    for damaged in (shb[:12], shb[:8] + b"\xff" * 8, shb[:4] + struct.pack("<I", 5) + shb[8:]):
        for read in (read_capture, lambda d: list(iter_capture(d, window_bytes=1024))):
            try:
                read(damaged)
            except CaptureError:
                pass
