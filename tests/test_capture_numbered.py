"""``open_capture`` numbers conversations on the reader's columns and makes the frames' table
only when asked (``stats.numbered``): both must equal the eager way, the frames' DataFrame
first (``read_capture`` + ``conversation_ids``), on every committed and public capture."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import capture_paths
from wirelab.capture import open_capture, read_capture
from wirelab.capture.stats.opened import Capture

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("captures/*.pcap*"), *ROOT.glob("tests/data/*.pcap*"),
                *(ROOT / "tests" / "data" / "public").glob("*.pcap*")])
reader_path = capture_paths.reader_path      # a fixture: the numpy and the compiled reader


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_lazy_capture_equals_the_eager_one(path, reader_path):
    """(numbered by the compiled kernel too: its keys are raw IPv4 addresses, up to 2**32)"""
    eager = Capture(read_capture(path), path)
    lazy = open_capture(path)
    assert lazy._numbered is not None and "frames" not in lazy.__dict__      # nothing built yet
    assert len(lazy) == len(eager)
    for kind in ("tcp", "udp"):          # from the columns (or, with IP fragments, the frames)
        pd.testing.assert_frame_equal(lazy.conversations(kind), eager.conversations(kind))
    pd.testing.assert_frame_equal(lazy.frames, eager.frames)
    assert lazy._numbered is None                       # the columns are the table's now
    for kind in ("tcp", "udp", "ip"):
        pd.testing.assert_frame_equal(lazy.conversations(kind), eager.conversations(kind))


def test_the_columns_answer_without_the_frames_where_there_are_no_fragments():
    cap = open_capture(ROOT / "captures" / "tcp-10mbit-loss2.pcapng")
    assert len(cap.conversations("tcp")) and len(cap.conversations("udp")) == 0
    assert "frames" not in cap.__dict__
