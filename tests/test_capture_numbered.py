"""``open_capture`` numbers conversations on the reader's columns and makes the frames' table
only when asked (``stats.numbered``): both must equal the eager way, the frames' DataFrame
first (``read_capture`` + ``conversation_ids``), on every committed and public capture."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import capture_paths
from wirelab.capture import open_capture, read_capture
from wirelab.capture.reader.loader import read_part
from wirelab.capture.reader.records import read_records
from wirelab.capture.stats.opened import Capture

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("captures/*.pcap*"), *ROOT.glob("tests/data/*.pcap*"),
                *(ROOT / "tests" / "data" / "public").glob("*.pcap*")])
reader_path = capture_paths.reader_path      # a fixture: the numpy and the compiled reader


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_lazy_capture_equals_the_eager_one(path, reader_path):
    """(numbered by the compiled kernel too: its keys are raw IPv4 addresses, up to 2**32)"""
    eager = Capture(read_capture(path), path)
    _the_io_graph_of_a_file_not_read_is_the_frames(path, eager)
    lazy = open_capture(path)
    assert lazy._numbered is not None and "frames" not in lazy.__dict__      # nothing built yet
    assert len(lazy) == len(eager)
    for kind in ("tcp", "udp"):          # from the columns (or, with IP fragments, the frames)
        pd.testing.assert_frame_equal(lazy.conversations(kind), eager.conversations(kind))
    built = "frames" in lazy.__dict__       # (IP fragments: the conversations needed the table)
    span = np.nan_to_num(eager._last_time()) or 1.0
    for interval, y in ((span / 7, "packets"), (span / 997, "bytes")):
        pd.testing.assert_frame_equal(lazy.io_graph(interval, y=y), eager.io_graph(interval, y=y))
    assert ("frames" in lazy.__dict__) == built     # (the I/O graph of all frames: two columns, no table)
    _one_conversation_equals_the_filtered_frames(open_capture(path), eager)
    pd.testing.assert_frame_equal(lazy.frames, eager.frames)
    assert lazy._numbered is None                       # the columns are the table's now
    for kind in ("tcp", "udp", "ip"):
        pd.testing.assert_frame_equal(lazy.conversations(kind), eager.conversations(kind))


def test_frames_in_no_conversation_are_numbered_so_while_reading(tmp_path, reader_path):
    """ICMP and ARP among UDP datagrams: no ports, in no conversation (-1), the same both ways
    (the compiled numbering left such a frame's number unwritten: garbage, then an IndexError)."""
    import struct
    udp = bytes(12) + b"\x08\x00" + bytes.fromhex("4500001c000100004011000001020304050607080001000200080000")
    icmp = bytes(12) + b"\x08\x00" + bytes.fromhex("4500001c000100004001000001020304050607080800000000000000")
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate([udp, icmp, arp, udp] * 3):
        data += struct.pack("<IIII", 10, i, len(frame), len(frame)) + frame
    path = tmp_path / "mixed.pcap"
    path.write_bytes(data)
    eager, lazy = Capture(read_capture(path), path), open_capture(path)
    for kind in ("tcp", "udp"):
        pd.testing.assert_frame_equal(lazy.conversations(kind), eager.conversations(kind))
    pd.testing.assert_frame_equal(lazy.frames, eager.frames)
    assert (lazy.frames["conv"] == -1).sum() == 6


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_record_headers_alone_give_the_whole_reads_times_and_lengths(path, reader_path):
    records, (part, _) = read_records(path), read_part(path)
    np.testing.assert_array_equal(records["time"], part["time"])          # (NaN where SPBs have none)
    np.testing.assert_array_equal(records["frame_len"], part["frame_len"])
    assert records["frame_len"].dtype == part["frame_len"].dtype


def _the_io_graph_of_a_file_not_read_is_the_frames(path: Path, eager: Capture) -> None:
    """``open_capture`` reads nothing until asked; the I/O graph of all frames, asked first, reads
    the record headers only (``reader/records.py``): the same bins as the frames' table's."""
    unread = open_capture(path)
    assert unread._unread and unread.__dict__["_columns"] is None
    span = np.nan_to_num(eager._last_time()) or 1.0
    for interval, y in ((span / 7, "packets"), (span / 997, "bytes"), (span / 13, "bits")):
        pd.testing.assert_frame_equal(unread.io_graph(interval, y=y), eager.io_graph(interval, y=y))
    assert unread._unread and "_records" in unread.__dict__
    assert len(unread) == len(eager) and not unread._unread        # (read now: its length asked)


def _one_conversation_equals_the_filtered_frames(lazy: Capture, eager: Capture) -> None:
    """``_conversation``'s rows, made of the reader's columns (the explorer's view of one
    conversation), hold ``filter``'s rows of the whole table: values, index, frame numbers (the
    address and protocol categories: the values there); and the latest time is the table's."""
    text = {"src": object, "dst": object, "proto": object}
    f = eager.frames
    np.testing.assert_equal(lazy._last_time(), eager._last_time())        # (NaN: no frame has a time)
    for kind in ("tcp", "udp"):
        for stream in sorted(set(f["stream"][f["proto"] == kind]))[:3]:
            ours = lazy._conversation(kind, stream)
            theirs = eager.filter((f["proto"] == kind).to_numpy() & (f["stream"] == stream).to_numpy())
            assert ours._root is lazy and len(ours) == len(theirs) > 0
            pd.testing.assert_frame_equal(ours.frames.astype(text), theirs.frames.astype(text))
    assert "frames" not in lazy.__dict__


def test_the_columns_answer_without_the_frames_where_there_are_no_fragments():
    cap = open_capture(ROOT / "captures" / "tcp-10mbit-loss2.pcapng")
    assert len(cap.conversations("tcp")) and len(cap.conversations("udp")) == 0
    assert "frames" not in cap.__dict__


@pytest.mark.parametrize("name", ["captures/tcp-10mbit-loss2.pcapng", "captures/udp-5mbit-loss2.pcapng",
                                  "tests/data/public/http-parallel-loss-client.pcapng",
                                  "tests/data/public/tcp-port-reuse.pcapng"])
def test_numbering_window_by_window_while_reading_gives_the_same_numbers(name, monkeypatch):
    """``stats.numbered.Early``: conversations numbered as each window of the file is decoded
    (windows of 4 KiB here: several; the table of five-tuples carried from one to the next)."""
    import wirelab.capture.reader.loader as loader
    from wirelab.capture.stats import numbered

    path = ROOT / name
    capture_paths.use_path("compiled", monkeypatch)
    monkeypatch.setattr(loader, "WHOLE_FILE_WINDOW", 4 << 10)
    windows, early = [], numbered.Early()
    part, info = loader.read_part(path, then=lambda *a: windows.append(a[1:]) or early(*a))
    assert len(windows) > 1 and early.whole(part)
    lazy, eager = numbered.Numbered(part, info, early=early), Capture(read_capture(path), path)
    for column in ("conv", "a_to_b", "stream"):
        np.testing.assert_array_equal(getattr(lazy, column), eager.frames[column].to_numpy())
    for kind in ("tcp", "udp"):
        pd.testing.assert_frame_equal(lazy.conversations(kind), eager.conversations(kind))
