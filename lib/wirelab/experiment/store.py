"""Results on disk: ``data/<experiment>/``, appended atomically, resumable.

Layout of a results folder::

    results.parquet   every run, one row each (the file to reload)
    results.csv       the same table for spreadsheets and other tools
    meta.json         the format version, the experiment as written + one entry per session
                      (kernel, backend, qdiscs, offloads, sysctls, versions, git)
    runs/<run_id>.json   the full record of each run (nested fields, tool output)
    captures/<run_id>.pcapng   when the experiment captures

Every write goes to a temporary file in the same folder and is renamed over
the old one (``os.replace`` is atomic), so an interrupted sweep leaves either
the old table or the new one, never half a file. A lock file keeps two sweeps
from writing one folder at once.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
from pathlib import Path

import pandas as pd

from ..errors import ExperimentError

__all__ = ["ResultStore", "load", "atomic_write", "FORMAT", "folder_format"]

#: Version of the folder's layout, in meta.json's "format". 1: before settings carried a
#: LinkSpec (no "format" key); 2: axes loss_reverse, window, omit, and link_* columns from the
#: link's describe(). Every older folder still loads and resumes (setting ids are unchanged).
FORMAT = 2
RESULTS = "results.parquet"
CSV = "results.csv"
META = "meta.json"


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):          # numpy scalars
        return value.item()
    return str(value)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _column(values: list) -> pd.Series:
    """One column with one type, so parquet stores it and reloads it alike."""
    present = [v for v in values if not _missing(v)]
    complete = len(present) == len(values)
    if not present:
        return pd.Series([math.nan] * len(values), dtype="float64")
    if all(isinstance(v, bool) for v in present):
        return pd.Series([None if _missing(v) else v for v in values], dtype="boolean")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.Series([None if _missing(v) else v for v in values],
                         dtype="int64" if complete else "Int64")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.Series([math.nan if _missing(v) else float(v) for v in values], dtype="float64")
    return pd.Series([None if _missing(v) else v if isinstance(v, str) else str(v)
                      for v in values], dtype=object)


def _table(rows: list[dict]) -> pd.DataFrame:
    """Rows (dicts, maybe with different keys) → a typed table, known columns first."""
    names: dict = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    front = [c for c in COLUMN_ORDER if c in names]
    order = front + [c for c in names if c not in front]
    return pd.DataFrame({c: _column([r.get(c) for r in rows]) for c in order})


def _records(frame: pd.DataFrame) -> list[dict]:
    """A table back to plain Python rows (NaN and NA become None)."""
    return [{k: (None if _missing(v) else v.item() if hasattr(v, "item") else v)
             for k, v in row.items()} for row in frame.to_dict("records")]


def folder_format(folder: str | Path) -> int:
    """The layout version of a results folder (1 when meta.json predates versions)."""
    try:
        return int(json.loads((Path(folder) / META).read_text()).get("format", 1))
    except (OSError, ValueError):
        return 1


def load(path: str | Path) -> pd.DataFrame:
    """Reload a results folder (or its parquet/csv file) into the DataFrame it saved."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if (folder / RESULTS).is_file():
        return pd.read_parquet(folder / RESULTS)
    if (folder / CSV).is_file():
        return _table(_records(pd.read_csv(folder / CSV)))
    raise ExperimentError(f"no results in {folder}", "run the experiment first, or check the path "
                          "(it should contain results.parquet)")


class ResultStore:
    """One results folder. ``append(rows)`` saves at once; ``done()`` says what to skip."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._frame: pd.DataFrame | None = None
        self._rows: list[dict] | None = None
        self._lock = None

    # -- locking ---------------------------------------------------------------
    def __enter__(self) -> "ResultStore":
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.folder / ".lock", "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise ExperimentError(f"another sweep is writing {self.folder}",
                                  "wait for it to finish or use another --out folder") from None
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    # -- reading -----------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            try:
                self._frame = load(self.folder)
            except ExperimentError:
                self._frame = pd.DataFrame()
        return self._frame

    def done(self, statuses=("ok", "failed", "skipped")) -> set[tuple[str, int]]:
        """(setting_id, rep) of the runs already recorded with one of ``statuses``."""
        frame = self.frame()
        if frame.empty:
            return set()
        kept = frame[frame["status"].isin(list(statuses))]
        return {(str(s), int(r)) for s, r in zip(kept["setting_id"], kept["rep"])}

    def meta(self) -> dict:
        try:
            return json.loads((self.folder / META).read_text())
        except FileNotFoundError:
            return {}
        except (OSError, json.JSONDecodeError) as err:
            raise ExperimentError(f"cannot read {self.folder / META}: {err}",
                                  "restore it from git or delete the folder and run again") from None

    # -- writing ----------------------------------------------------------------
    def write_meta(self, meta: dict) -> None:
        text = json.dumps(meta, indent=2, sort_keys=False, default=_json_default)
        atomic_write(self.folder / META, text.encode())

    def start_session(self, experiment: dict, session: dict) -> int:
        """Record the experiment and this session's machine metadata; returns the session number."""
        meta = self.meta()
        if int(meta.get("format", 1)) > FORMAT:
            raise ExperimentError(f"{self.folder} was written by a newer wirelab (format {meta['format']})",
                                  "upgrade wirelab, or use another --out folder")
        meta["format_written"] = sorted(set(meta.get("format_written", [meta.get("format", 1)] if meta else []))
                                        | {FORMAT})
        meta["format"] = FORMAT
        meta["experiment"] = experiment
        sessions = meta.setdefault("sessions", [])
        session = {"session": len(sessions), "experiment": experiment, **session}
        sessions.append(session)
        self.write_meta(meta)
        return session["session"]

    def write_run(self, run_id: str, record: dict) -> Path:
        path = self.folder / "runs" / f"{run_id}.json"
        atomic_write(path, json.dumps(record, indent=1, default=_json_default).encode())
        return path

    def append(self, rows: list[dict]) -> pd.DataFrame:
        """Add rows and rewrite parquet and csv atomically; returns the whole table."""
        if not rows:
            return self.frame()
        if self._rows is None:
            self._rows = _records(self.frame())
        self._rows.extend(rows)
        table = _table(self._rows)
        atomic_write(self.folder / RESULTS, table.to_parquet(index=False))
        atomic_write(self.folder / CSV, table.to_csv(index=False).encode())
        self._frame = pd.read_parquet(self.folder / RESULTS)   # exactly what a reload gives
        return self._frame


#: The first columns of a results table, in this order; the rest follow.
COLUMN_ORDER = ["experiment", "run_id", "setting_id", "rep", "status", "error", "engine",
                "backend", "workload", "proto", "size_bytes", "time_s", "offered_bps",
                "packet_bytes", "echo_count", "rate_bps", "delay_s", "jitter_s", "loss", "loss_reverse",
                "mtu", "queue_packets", "window_bytes", "sndbuf_bytes", "rcvbuf_bytes", "cc", "max_wait_s",
                "max_retransmits", "omit_s", "goodput_bps", "sender_goodput_bps", "pred_goodput_bps",
                "pred_binding"]
