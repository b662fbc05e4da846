"""A capture as a parquet dataset, queried with DuckDB: captures larger than memory.

``convert(capture, out_dir)`` reads the capture in chunks (``stream``) and
writes one parquet file per chunk, with the columns and types of
``read_capture``, plus ``_capture.json`` (format, interfaces, drops, notes)::

    out_dir/part-00000.parquet, part-00001.parquet, ...   the packets, in file order
    out_dir/_capture.json                                  the file-level facts

Memory stays flat in the capture's size (one window of the file and one
chunk). ``open_dataset(out_dir)`` gives a ``CaptureDataset``: DuckDB
(embedded; it spills to disk when a query needs more than memory) with a
view ``packets`` over the parts. Its ``flows``, ``tcp_analysis``,
``retransmission_summary``, ``io_graph`` and ``read_overhead`` give the same
answers as the pandas functions of the same names on ``read_capture``
(``flows``, ``tcp``, ``io_graph``, ``overhead`` beside it hold their SQL). File order is
``file_offset`` order.

When one machine is not enough, the same dataset is a Dask DataFrame
(``pip install -e ".[cluster]"``: Dask is an extra)::

    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=4) as cluster, Client(cluster):   # or Client("scheduler:8786")
        packets = dd.read_parquet("run.dataset/")
        per_source = packets.groupby("src", observed=True)["frame_len"].sum().compute()
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa

from ...errors import CaptureError, UsageError
from ..reader.columns import COLUMNS, INT_COLUMNS
from ..reader.stream import CHUNK_PACKETS, iter_capture
from ..._plain import is_numpy_scalar
from ..rfc6349 import rfc6349_of_dataset
from .flows import flows
from .io_graph import io_graph
from .overhead import read_overhead
from .tcp import tcp_analysis, retransmission_summary

__all__ = ["convert", "open_dataset", "CaptureDataset", "arrow_schema", "INFO"]

INFO = "_capture.json"  # a leading _ : parquet readers of the folder skip it
SCHEMA_VERSION = 1
_TEXT = ("l3", "src", "dst", "proto")


def arrow_schema(columns=COLUMNS):
    """The parquet schema: one type per column whatever the chunk (text as dictionaries);
    ``columns``: those a dataset holds (one written before ``frame`` was a column lacks it)."""
    types = {"time": pa.float64(), "time_relative": pa.float64(), "more_frags": pa.bool_()}
    types.update({c: pa.dictionary(pa.int32(), pa.string()) for c in _TEXT})
    return pa.schema([(c, types.get(c, pa.int64())) for c in columns])


def _size(source) -> int | None:
    try:
        return os.path.getsize(source)
    except (TypeError, OSError):
        return None


def convert(source, out_dir, *, chunk_packets: int = CHUNK_PACKETS, overwrite: bool = False,
            progress: bool = True) -> Path:
    """Write capture ``source`` as a parquet dataset in ``out_dir``; returns its path.

    The dataset appears whole or not at all (written beside it, then renamed).
    """
    # start-up: pyarrow, tqdm only when convert() runs
    import pyarrow.parquet as pq
    from tqdm.auto import tqdm

    out = Path(out_dir)
    if out.exists() and not (out.is_dir() and not any(out.iterdir())):
        if not overwrite:
            raise UsageError(f"{out} already exists", "give a new folder, or overwrite=True (--overwrite)")
        if not (out / INFO).is_file():
            raise UsageError(f"{out} is not a capture dataset; not overwriting it", "give a new folder")
    chunks = iter_capture(source, chunk_packets=chunk_packets)
    first = next(chunks, None)                 # not a capture: CaptureError before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    schema = arrow_schema()
    info: dict = {}
    packets = parts = 0
    total = _size(source)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="convert", disable=not progress)
    try:
        for chunk in _chain(first, chunks):         # (a capture without packets: one empty chunk)
            table = pa.Table.from_pandas(chunk, schema=schema, preserve_index=False)
            pq.write_table(table, tmp / f"part-{parts:05d}.parquet", compression="zstd")
            parts += 1
            packets += len(chunk)
            info = chunk.attrs["capture"]
            if len(chunk):
                done = int(chunk["file_offset"].iloc[-1] + chunk["cap_len"].iloc[-1])
                bar.update(max(done - bar.n, 0))
        facts = {"schema_version": SCHEMA_VERSION, "source": str(source) if total is not None else None,
                 "format": info.get("format"), "packets": packets, "parts": parts,
                 "interfaces": info.get("interfaces", []), "notes": info.get("notes", []),
                 "columns": COLUMNS}
        (tmp / INFO).write_text(json.dumps(facts, indent=1, default=_plain))
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
        if total:
            bar.update(total - bar.n)          # the file's last bytes (trailing blocks) are read too
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        bar.close()
    return out


def _chain(first, rest):
    if first is not None:
        yield first
        yield from rest


def _plain(value):
    return value.item() if is_numpy_scalar(value) else str(value)


def open_dataset(path, *, memory_limit: str | None = None) -> "CaptureDataset":
    """A dataset written by ``convert`` (a folder), ready for DuckDB queries."""
    return CaptureDataset(path, memory_limit=memory_limit)


class CaptureDataset:
    """A converted capture: ``sql(query)`` over the view ``packets``, and the analyses."""

    def __init__(self, path, *, memory_limit: str | None = None):
        # start-up: duckdb only when one is made
        import duckdb
        self.path = Path(path)
        info = self.path / INFO
        if not info.is_file():
            raise CaptureError(f"{self.path} is not a capture dataset (no {INFO})",
                               "make one with `wirelab capture convert CAPTURE OUT/`")
        self.info = json.loads(info.read_text())
        parts = sorted(str(p) for p in self.path.glob("part-*.parquet"))
        if len(parts) != self.info.get("parts", len(parts)) or not parts:
            raise CaptureError(f"{self.path} lacks some of its parquet parts",
                               "convert the capture again")
        self._tmp = tempfile.TemporaryDirectory(prefix="wirelab-duckdb-")
        self.con = duckdb.connect()
        self.con.execute(f"SET temp_directory = '{self._tmp.name}'")
        self.con.execute("SET enable_progress_bar = false")
        if memory_limit:
            self.con.execute("SET memory_limit = ?", [memory_limit])
        files = ", ".join("'" + p.replace("'", "''") + "'" for p in parts)
        self.con.execute(f"CREATE VIEW packets AS SELECT * FROM read_parquet([{files}])")
        self._tables: set[str] = set()

    def __repr__(self) -> str:
        return f"CaptureDataset({str(self.path)!r}: {self.info['packets']} packets, {self.info['format']})"

    def __len__(self) -> int:
        return int(self.info["packets"])

    def table(self, name: str, query: str) -> str:
        """``name``, a temporary table holding ``query``'s result, made on first use (the
        conversations and TCP flags several analyses share are computed once)."""
        if name not in self._tables:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {query}")
            self._tables.add(name)
        return name

    def sql(self, query: str, params=None) -> pd.DataFrame:
        """Run a query (the table is ``packets``) and return its result as a DataFrame."""
        return self.con.execute(query, params or []).df()

    def frame(self, filters=None) -> pd.DataFrame:
        """The dataset as ``read_capture`` gives it: all of it (only when it fits in memory), or
        the rows a ``pyarrow.dataset`` expression ``filters`` keeps (one conversation, say)."""
        # start-up: pyarrow only when frame() runs
        import pyarrow.parquet as pq
        held = [c for c in COLUMNS if c in self.info.get("columns", COLUMNS)]
        df = pq.read_table(self.path, schema=arrow_schema(held), filters=filters).to_pandas()
        df = df.sort_values("file_offset", kind="stable").reset_index(drop=True)
        for c in INT_COLUMNS:
            df[c] = df[c].astype("Int64")
        for c in ("src", "dst"):           # addresses as read_capture gives them (object categories)
            df[c] = df[c].cat.set_categories(pd.Index(df[c].cat.categories, dtype=object))
        df["more_frags"] = df["more_frags"].astype("boolean")
        df.attrs["capture"] = {k: self.info[k] for k in ("format", "packets", "notes", "interfaces")}
        return df

    # the analyses (SQL in flows, tcp, io_graph, overhead beside this module)
    def flows(self, *, min_packets: int = 1, later_fragments: bool = True) -> pd.DataFrame:
        return flows(self, min_packets=min_packets, later_fragments=later_fragments)

    def io_graph(self, interval: float = 0.1, *, where: str | None = None, marks=()) -> pd.DataFrame:
        return io_graph(self, interval, where=where, marks=marks)

    def tcp_analysis(self) -> pd.DataFrame:
        return tcp_analysis(self)

    def retransmission_summary(self) -> pd.DataFrame:
        return retransmission_summary(self)

    def rfc6349(self, *, achievable_bps: float | None = None) -> dict | None:
        return rfc6349_of_dataset(self, achievable_bps=achievable_bps)

    def read_overhead(self, *, conv: int | None = None):
        return read_overhead(self, conv=conv)

    def close(self) -> None:
        self.con.close()
        self._tmp.cleanup()

    def __enter__(self) -> "CaptureDataset":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
