"""Captures of any size: streaming in chunks, the parquet dataset, DuckDB and pandas agree, Dask reads it."""
from __future__ import annotations

import io
import json
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wirelab import CaptureError, UsageError
from wirelab.capture import (convert, flows, io_graph, iter_capture, open_dataset, read_capture, read_overhead,
                             retransmission_summary, tcp_analysis)
from wirelab.cli import main

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = sorted((ROOT / "captures").glob("*.pcapng")) + sorted((ROOT / "tests" / "data").glob("*.pcap*"))
IDS = [p.name for p in CAPTURES]


class Pipe(io.RawIOBase):
    """A stream with no file number and no seeking, like stdin."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), len(self.data) - self.at, 1000)       # short reads, as a pipe gives
        b[:n] = self.data[self.at:self.at + n]
        self.at += n
        return n


def _same_frames(a: pd.DataFrame, b: pd.DataFrame):
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_categorical=False)


@pytest.mark.parametrize("path", CAPTURES, ids=IDS)
def test_chunks_are_the_whole_capture_in_pieces(path):
    whole = read_capture(path)
    for source, chunk, window in ((path, 7, 1024), (path, 1000, 1 << 16), (Pipe(path.read_bytes()), 50, 4096)):
        chunks = list(iter_capture(source, chunk_packets=chunk, window_bytes=window))
        assert all(len(c) <= chunk for c in chunks)
        _same_frames(whole, pd.concat(chunks, ignore_index=True).astype(whole.dtypes.to_dict()))
        assert chunks[-1].attrs["capture"]["interfaces"] == whole.attrs["capture"]["interfaces"]
    assert list(read_capture(path, chunk_packets=10**6))[0].shape == whole.shape


def test_streaming_memory_does_not_grow_with_the_file(tmp_path):
    """The same records repeated: 4x the file, the same peak (numpy arrays are traced)."""
    raw = (ROOT / "tests" / "data" / "tcp-loss-usec.pcap").read_bytes()
    head, records = raw[:24], raw[24:]
    peaks = []
    for copies in (150, 600):
        path = tmp_path / f"x{copies}.pcap"
        path.write_bytes(head + records * copies)
        tracemalloc.start()
        packets = sum(len(c) for c in iter_capture(path, chunk_packets=5000, window_bytes=1 << 20))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert packets == 200 * copies
    assert peaks[1] < 1.25 * peaks[0], peaks


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("datasets")
    return {p.name: convert(p, root / p.name, chunk_packets=500, progress=False) for p in CAPTURES}


@pytest.mark.parametrize("path", CAPTURES, ids=IDS)
def test_the_dataset_holds_the_capture(path, datasets):
    out = datasets[path.name]
    df = read_capture(path)
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == -(-len(df) // 500) or (len(df) == 0 and len(parts) == 1)
    info = json.loads((out / "_capture.json").read_text())
    assert info["packets"] == len(df) and info["interfaces"] == df.attrs["capture"]["interfaces"]
    back = pd.read_parquet(out)           # pandas reads the folder: same columns, same types
    assert [str(t) for t in back.dtypes] == [str(t) for t in df.dtypes]
    with open_dataset(out) as ds:
        _same_frames(df, ds.frame())
        assert ds.sql("SELECT count(*) AS n FROM packets")["n"][0] == len(df)


@pytest.mark.parametrize("path", CAPTURES, ids=IDS)
def test_duckdb_and_pandas_give_the_same_answers(path, datasets):
    df = read_capture(path)
    flags = tcp_analysis(df)
    with open_dataset(datasets[path.name]) as ds:
        pd.testing.assert_frame_equal(flows(df), ds.flows(), check_dtype=False)
        pd.testing.assert_frame_equal(flows(df, later_fragments=False, min_packets=3),
                                      ds.flows(later_fragments=False, min_packets=3), check_dtype=False)
        pd.testing.assert_frame_equal(flags, ds.tcp_analysis(), check_dtype=False)
        pd.testing.assert_frame_equal(retransmission_summary(df, flags), ds.retransmission_summary(),
                                      check_dtype=False)
        marks = {"retransmission": flags["retransmission"], "duplicate_ack": flags["duplicate_ack"]}
        pd.testing.assert_frame_equal(io_graph(df, 0.05, marks=marks),
                                      ds.io_graph(0.05, marks=list(marks)), check_dtype=False)
        udp = (df["proto"] == "udp").to_numpy()
        pd.testing.assert_frame_equal(io_graph(df, 0.2, mask=udp), ds.io_graph(0.2, where="proto = 'udp'"),
                                      check_dtype=False)
        try:
            expected = read_overhead(df, flags=flags)
        except CaptureError as err:
            with pytest.raises(CaptureError, match=str(err).split(":")[0]):
                ds.read_overhead()
        else:
            assert ds.read_overhead() == expected


def test_the_analyses_find_something_on_the_lossy_capture(datasets):
    """Equal answers are only worth something if there is something to find."""
    with open_dataset(datasets["tcp-10mbit-loss2.pcapng"]) as ds:
        summary = ds.retransmission_summary()
        assert summary["retransmission"].sum() == 43 and summary["duplicate_ack"].sum() > 0
        assert ds.read_overhead().payload == 1448


def test_dask_reads_the_dataset_on_a_local_cluster(datasets):
    """The recipe of dataset.py's docstring, on a LocalCluster of two workers."""
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("dask.distributed")
    path = datasets["tcp-10mbit-loss2.pcapng"]
    df = read_capture(ROOT / "captures" / "tcp-10mbit-loss2.pcapng")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        packets = dd.read_parquet(str(path))
        assert packets.npartitions >= 2
        per_source = packets.groupby("src", observed=True)["frame_len"].sum().compute()
        payload = packets["payload_len"].sum().compute()
    expected = df.groupby("src", observed=True)["frame_len"].sum()
    assert per_source.sort_index().astype(int).to_dict() == expected.sort_index().astype(int).to_dict()
    assert payload == df["payload_len"].sum()


def test_convert_on_the_command_line_and_analyze_the_dataset(tmp_path, capsys):
    cap = ROOT / "captures" / "tcp-10mbit-loss2.pcapng"
    out = tmp_path / "run.dataset"
    assert main(["capture", "convert", str(cap), str(out), "--chunk-packets", "1000", "--quiet"]) == 0
    assert "2353 packets" in capsys.readouterr().out and len(list(out.glob("part-*.parquet"))) == 3
    assert main(["capture", "convert", str(cap), str(out), "--quiet"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["analyze", str(out), "--rate", "10mbit", "--json"]) == 0
    from_dataset = json.loads(capsys.readouterr().out)
    # PPCB sessions and D-SACK blocks are read from a file only: the dataset answers everything else
    assert main(["analyze", str(cap), "--rate", "10mbit", "--json", "--no-ppcb"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    from_dataset.pop("file"), from_file.pop("file")
    assert from_file["losses"].pop("dsack_read") and not from_dataset["losses"].pop("dsack_read")
    assert from_dataset == from_file


def test_bad_inputs_say_what_to_do(tmp_path):
    with pytest.raises(CaptureError, match="not a pcap"):
        convert(io.BytesIO(b"hello, not a capture"), tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists() and not list(tmp_path.iterdir())
    with pytest.raises(CaptureError, match="not a capture dataset"):
        open_dataset(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    with pytest.raises(UsageError, match="already exists"):
        convert(ROOT / "tests" / "data" / "vlan.pcap", tmp_path / "notes", progress=False)
    with pytest.raises(UsageError, match="not a capture dataset"):
        convert(ROOT / "tests" / "data" / "vlan.pcap", tmp_path / "notes", progress=False, overwrite=True)
    with pytest.raises(UsageError):
        next(iter_capture(ROOT / "tests" / "data" / "vlan.pcap", chunk_packets=0))


def test_a_capture_with_no_packets_is_an_empty_dataset(tmp_path):
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    out = convert(io.BytesIO(header), tmp_path / "empty", progress=False)
    with open_dataset(out) as ds:
        assert len(ds) == 0 and ds.flows().empty and ds.frame().empty
    assert np.array_equal(pd.read_parquet(out).columns, read_capture(header).columns)
